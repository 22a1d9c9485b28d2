// SPDX-License-Identifier: Apache-2.0
// Datasets inside graphs: Dataset.reduce and `for x in dataset` in a tf.function. Two
// stateful ops carry a pass over a dataset through a traced while loop:
//   py_make_iterator   () -> handle: a new pass over the dataset in its attribute, each
//                      time the graph runs (the handle is a 0-element uint8 tensor whose
//                      storage owns the data::Iterator, as py_ops.cpp carries callables)
//   py_iterator_next   handle -> (has_value: bool scalar, components...): the next
//                      element, or false and zeros (unknown dims 0) at the end
// python/deepflow/data/_dataset.py builds the loop around them (reduce).
#include <nanobind/stl/vector.h>

#include <memory>

#include "bind.h"
#include "deepflow/data/dataset.h"
#include "deepflow/ops/kernel.h"
#include "deepflow/ops/op.h"
#include "deepflow/ops/ops.h"

namespace deepflow::py {
namespace {

template <class T>
Tensor owning_tensor(std::unique_ptr<T> object) {
  return object_tensor(object.release(), [](void* ctx, void*) { delete static_cast<T*>(ctx); });
}

template <class T>
T* owned_by(const Tensor& t, const char* who) {
  return static_cast<T*>(object_of(t, who));
}

OpId make_iterator_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "py_make_iterator",
        .num_inputs = 0,
        .attrs = {AttrSpec::required_of("dataset", AttrKind::Tensor)},
        .infer = [](const OpCall&, TypeList& out) { out.push_back(TensorType{DType::UInt8, Shape{0}}); },
        .non_differentiable = true,
        .stateful = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = [](const OpCall& c, TensorList& out) {
                      const auto* ds = owned_by<data::Dataset>(c.attr_tensor("dataset"), "py_make_iterator");
                      out[0] = owning_tensor(std::make_unique<data::Iterator>(ds->iter()));
                    }});
    return op;
  }();
  return id;
}

// The next element, or the zeros that stand for it at the end (unknown dims 0).
TensorList next_values(const OpCall& c) {
  auto* it = owned_by<data::Iterator>(c.in(0), "py_iterator_next");
  const std::vector<TensorType> specs = types_of_code(c.attr_tensor("spec"));
  std::optional<data::Element> e;
  if (PyGILState_Check()) {  // the pipeline may need it (a generator)
    nb::gil_scoped_release nogil;
    e = it->next();
  } else {
    e = it->next();
  }
  TensorList out{scalar(e.has_value(), DType::Bool)};
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!e) {
      std::vector<int64_t> dims = specs[i].shape.to_vector();
      for (int64_t& d : dims) d = d < 0 ? 0 : d;
      out.push_back(zeros(Shape(dims), specs[i].dtype));
      continue;
    }
    const Tensor& t = (*e)[i];
    DF_CHECK(t.dtype() == specs[i].dtype && t.shape().compatible_with(specs[i].shape), "[Dataset.reduce] element ",
             "component ", i, " is ", dtype_name(t.dtype()), t.shape(), ", the dataset's spec says ",
             dtype_name(specs[i].dtype), specs[i].shape);
    out.push_back(t);
  }
  return out;
}

// An element's shapes are known only once it is read: at run time (a concrete handle) the
// shape inference reads it and keeps it here for the kernel, which runs next on this thread.
thread_local TensorList t_next_element;

OpId iterator_next_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "py_iterator_next",
        .num_inputs = 1,
        .attrs = {AttrSpec::required_of("spec", AttrKind::Tensor)},
        .infer = [](const OpCall& c, TypeList& out) {
          if (c.in(0).is_symbolic()) {
            out.push_back(TensorType{DType::Bool, Shape{}});
            for (const TensorType& t : types_of_code(c.attr_tensor("spec"))) out.push_back(t);
            return;
          }
          t_next_element = next_values(c);
          for (const Tensor& t : t_next_element) out.push_back(TensorType{t.dtype(), t.shape()});
        },
        .non_differentiable = true,
        .stateful = true,
        .strings = true,
    });
    register_kernel(op, KernelDef{.name = "ref", .run = [](const OpCall& c, TensorList& out) {
                      TensorList values = t_next_element.empty() ? next_values(c) : std::move(t_next_element);
                      t_next_element.clear();
                      for (size_t i = 0; i < out.size(); ++i) out[i] = values[i];
                    }});
    return op;
  }();
  return id;
}

}  // namespace

void init_data_graph(nb::module_& d) {
  d.def("make_iterator_op", [](const data::Dataset& ds) {
    Tensor holder = owning_tensor(std::make_unique<data::Dataset>(ds));
    return dispatch1(make_iterator_op(), {}, {{"dataset", holder}});
  }, "In a graph: a new pass over the dataset each time the graph runs (its handle).");
  d.def("iterator_next_op", [](const TensorArg& handle, const std::vector<int64_t>& spec) {
    return dispatch(iterator_next_op(), {handle.t}, {{"spec", constant(spec)}});
  }, "In a graph: (has_value, components...) of the next element of a pass.");
}

}  // namespace deepflow::py
