// SPDX-License-Identifier: Apache-2.0
// Ops whose meaning involves Python, registered by the module with the custom-op path
// (register_custom_op + register_kernel, as examples/custom_op.cpp):
//   py_custom_gradient  outputs = its first n inputs (the forward results); its vjp calls
//                       the user's Python grad_fn (tf.custom_gradient).
//   py_print            writes its inputs' values (tf.print): stateful, so it runs on
//                       every call of a traced function, not only while tracing.
//   py_function         outputs = func(inputs), run by Python (tf.py_function in a graph or
//                       a traced tf.data map): the GIL is held only while func runs.
// A Python callable rides in an attribute as a 0-element uint8 tensor whose data pointer
// is the PyObject and whose storage holds a reference to it: it lives exactly as long as
// the graph nodes and tape entries that use it.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <iostream>

#include "bind.h"
#include "deepflow/ops/kernel.h"
#include "deepflow/ops/op.h"

namespace deepflow::py {

Tensor object_tensor(void* object, void (*release)(void*, void*)) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(object, 0, release, object);
  impl->shape = Shape{0};
  impl->dtype = DType::UInt8;
  impl->id = TensorImpl::next_id();
  return Tensor(std::move(impl));
}

void* object_of(const Tensor& t, const char* who) {
  DF_CHECK(t.dtype() == DType::UInt8 && t.size() == 0 && t.impl()->storage, "[", who, "] not an object handle: ",
           dtype_name(t.dtype()), t.shape());
  return t.impl()->storage->data();
}

std::vector<TensorType> types_of_code(const Tensor& code) {
  std::vector<TensorType> out;
  const int64_t* p = code.data<int64_t>();
  for (int64_t i = 0; i < code.size(); i += 2 + p[i + 1])
    out.push_back(TensorType{dtype_of_int(int(p[i])), Shape(std::vector<int64_t>(p + i + 2, p + i + 2 + p[i + 1]))});
  return out;
}

namespace {

Tensor callable_tensor(nb::handle fn) {
  PyObject* p = fn.ptr();
  Py_INCREF(p);
  return object_tensor(p, release_pyobject);
}

nb::handle callable_of(const Tensor& t) { return nb::handle(reinterpret_cast<PyObject*>(object_of(t, "py_op"))); }

void copy_into(const Tensor& from, Tensor& to) {
  if (from.dtype() == DType::String) {
    const std::string* a = from.data<std::string>();
    std::string* b = to.data<std::string>();
    for (int64_t i = 0; i < from.size(); ++i) b[i] = a[i];
  } else {
    std::memcpy(to.raw_data(), from.raw_data(), from.nbytes());
  }
}

OpId custom_gradient_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "py_custom_gradient",
        .num_inputs = -1,
        .attrs = {{"num_outputs", int64_t(1)}, AttrSpec::required_of("grad_fn", AttrKind::Tensor)},
        .infer = [](const OpCall& c, TypeList& out) {
          const int64_t n = c.attr_int("num_outputs");
          DF_CHECK(n >= 1 && n <= c.num_inputs(), "[py_custom_gradient] num_outputs ", n, " of ", c.num_inputs(),
                   " inputs");
          for (int64_t i = 0; i < n; ++i) out.push_back(TensorType{c.in(int(i)).dtype(), c.in(int(i)).shape()});
        },
        .vjp = [](const OpCall& c, const TensorList& g) {
          const int64_t n = c.attr_int("num_outputs");
          nb::gil_scoped_acquire gil;
          nb::list dys;
          for (int64_t i = 0; i < n; ++i) dys.append(nb::cast(g[size_t(i)]));
          nb::object r = nb::borrow(callable_of(c.attr_tensor("grad_fn")))(dys);
          TensorList grads(size_t(c.num_inputs()));  // the forward results get none
          size_t k = size_t(n);
          for (nb::handle x : r) {
            DF_CHECK(k < grads.size(), "[tf.custom_gradient] grad_fn returned more gradients than inputs (",
                     c.num_inputs() - n, ")");
            if (!x.is_none()) grads[k] = to_tensor(x);
            ++k;
          }
          return grads;
        },
        .strings = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = [](const OpCall& c, TensorList& out) {
                      for (size_t i = 0; i < out.size(); ++i) copy_into(c.in(int(i)), out[i]);
                    }});
    return op;
  }();
  return id;
}

OpId print_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "py_print",
        .num_inputs = -1,
        .attrs = {AttrSpec::required_of("format", AttrKind::Tensor)},
        .infer = [](const OpCall&, TypeList&) {},
        .non_differentiable = true,
        .stateful = true,
        .strings = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = [](const OpCall& c, TensorList&) {
                      nb::gil_scoped_acquire gil;
                      nb::list values;
                      for (int i = 0; i < c.num_inputs(); ++i) values.append(nb::cast(c.in(i)));
                      nb::borrow(callable_of(c.attr_tensor("format")))(values);
                    }});
    return op;
  }();
  return id;
}

// py_function's outputs are known only once Python ran: at run time (concrete inputs)
// the shape inference calls func and keeps its results here for the kernel, which the
// dispatcher runs next on the same thread.
thread_local TensorList t_py_function_results;

void run_py_function(const OpCall& c, const std::vector<TensorType>& specs) {
  nb::gil_scoped_acquire gil;
  nb::list args;
  for (int i = 0; i < c.num_inputs(); ++i) args.append(nb::cast(c.in(i)));
  nb::object r = nb::borrow(callable_of(c.attr_tensor("func")))(args);
  TensorList results;
  for (nb::handle x : r) results.push_back(to_tensor(x));
  DF_CHECK(results.size() == specs.size(), "[tf.py_function] func returned ", results.size(), " values, Tout has ",
           specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const Tensor& t = results[i];
    DF_CHECK(t.dtype() == specs[i].dtype && t.shape().compatible_with(specs[i].shape), "[tf.py_function] output ",
             i, " is ", dtype_name(t.dtype()), t.shape(), ", Tout says ", dtype_name(specs[i].dtype), specs[i].shape);
  }
  t_py_function_results = std::move(results);
}

OpId py_function_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "py_function",
        .num_inputs = -1,
        .attrs = {AttrSpec::required_of("func", AttrKind::Tensor), AttrSpec::required_of("spec", AttrKind::Tensor)},
        .infer = [](const OpCall& c, TypeList& out) {
          const std::vector<TensorType> specs = types_of_code(c.attr_tensor("spec"));
          bool concrete = true;
          for (int i = 0; i < c.num_inputs(); ++i) concrete &= !c.in(i).is_symbolic();
          if (!concrete) {
            for (const TensorType& t : specs) out.push_back(t);
            return;
          }
          run_py_function(c, specs);
          for (const Tensor& t : t_py_function_results) out.push_back(TensorType{t.dtype(), t.shape()});
        },
        .non_differentiable = true,
        .stateful = true,
        .strings = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = [](const OpCall& c, TensorList& out) {
                      // A caller that allocated the outputs without running the inference
                      // first (shapes it knew) gets func run here.
                      if (t_py_function_results.empty()) {
                        std::vector<TensorType> specs;
                        for (const Tensor& o : out) specs.push_back(TensorType{o.dtype(), o.shape()});
                        run_py_function(c, specs);
                      }
                      TensorList results = std::move(t_py_function_results);
                      t_py_function_results.clear();
                      for (size_t i = 0; i < out.size(); ++i) copy_into(results[i], out[i]);
                    }});
    return op;
  }();
  return id;
}

}  // namespace

void init_py_ops(nb::module_& m) {
  m.def("py_function_call", [](nb::object func, nb::handle inputs, const std::vector<int64_t>& spec) {
    TensorList in;
    for (nb::handle x : inputs) in.push_back(to_tensor(x));
    Tensor spec_t = constant(spec);
    return dispatch(py_function_op(), in, {{"func", callable_tensor(func)}, {"spec", spec_t}});
  }, "tf.py_function in a graph: an op whose kernel calls func(inputs) with the GIL held.");
  m.def("custom_gradient_call", [](nb::handle outputs, nb::handle inputs, nb::object grad_fn) {
    TensorList in;
    for (nb::handle y : outputs) in.push_back(to_tensor(y));
    const int64_t n = int64_t(in.size());
    for (nb::handle x : inputs) in.push_back(to_tensor(x));
    return dispatch(custom_gradient_op(), in, {{"num_outputs", n}, {"grad_fn", callable_tensor(grad_fn)}});
  }, "Outputs equal to `outputs`, whose gradient with respect to `inputs` is grad_fn(dys).");
  m.def("print_call", [](nb::handle inputs, nb::object format) {
    TensorList in;
    for (nb::handle x : inputs) in.push_back(to_tensor(x));
    dispatch(print_op(), in, {{"format", callable_tensor(format)}});
  }, "Calls format(values) with the inputs' values when the op runs (tf.print).");
}

}  // namespace deepflow::py
