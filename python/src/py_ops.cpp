// SPDX-License-Identifier: Apache-2.0
// Ops whose meaning involves Python, registered by the module with the custom-op path
// (register_custom_op + register_kernel, as examples/custom_op.cpp):
//   py_custom_gradient  outputs = its first n inputs (the forward results); its vjp calls
//                       the user's Python grad_fn (tf.custom_gradient).
//   py_print            writes its inputs' values (tf.print): stateful, so it runs on
//                       every call of a traced function, not only while tracing.
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
namespace {

Tensor callable_tensor(nb::handle fn) {
  auto impl = std::make_shared<TensorImpl>();
  PyObject* p = fn.ptr();
  Py_INCREF(p);
  impl->storage = std::make_shared<Storage>(p, 0, release_pyobject, p);
  impl->shape = Shape{0};
  impl->dtype = DType::UInt8;
  impl->id = TensorImpl::next_id();
  return Tensor(std::move(impl));
}

nb::handle callable_of(const Tensor& t) { return nb::handle(reinterpret_cast<PyObject*>(t.impl()->storage->data())); }

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

}  // namespace

void init_py_ops(nb::module_& m) {
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
