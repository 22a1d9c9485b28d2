// SPDX-License-Identifier: Apache-2.0
// What the binding files of deepflow._deepflow share: conversion of Python values to
// tensors (TensorFlow's rules), tensors to numpy, and the error classes.
//
// The bindings are thin: every op runs through the C++ dispatch(); Python keeps only
// TensorFlow's namespaces, AutoGraph and the subclassing hooks (python/deepflow/).
#pragma once

#include <nanobind/nanobind.h>

#include <optional>

#include "deepflow/core/tensor.h"
#include "deepflow/ops/variable.h"

namespace deepflow::data {
class Iterator;
}

namespace deepflow::py {

namespace nb = nanobind;

/// The dtype numbers Python sees are DType's enum values (python/deepflow/dtypes.py).
inline DType dtype_of_int(int v) {
  if (v < 0 || v >= kNumDTypes) throw nb::value_error("[dtype] unknown dtype number");
  return DType(v);
}

/// Python value -> Tensor, as tf.convert_to_tensor does for the cases worth doing in C++:
/// a Tensor (or Variable: its value), a Python bool/int/float, a numpy array or numpy
/// scalar (zero-copy when C-contiguous and aligned; the array is kept alive). With
/// `dtype`, a Python number takes it (a float into an integer dtype is a TypeError, as in
/// TF) and an array of another dtype is cast. Returns nullopt for anything else (lists,
/// strings): python/deepflow/_convert.py handles those.
std::optional<Tensor> try_to_tensor(nb::handle obj, std::optional<DType> dtype);

/// try_to_tensor, raising TypeError naming the value when it returns nullopt.
Tensor to_tensor(nb::handle obj, std::optional<DType> dtype = std::nullopt);

/// An op argument that takes any value to_tensor() converts (numpy arrays, Python numbers
/// and lists), so bound functions accept what TensorFlow's ops accept.
struct TensorArg {
  Tensor t;
  operator const Tensor&() const { return t; }  // NOLINT: used where a Tensor is
};

/// A numpy array viewing t's buffer (zero-copy, read-only unless writable), keeping t's
/// storage alive. String tensors are copied into an object array of bytes.
nb::object to_numpy(const Tensor& t, bool writable = false);

/// A Storage release function for storage that holds a reference to the Python object
/// `ctx` (a numpy array's buffer, a callable in an attribute): drops it with the GIL.
void release_pyobject(void* ctx, void* data);

/// A 0-element uint8 tensor whose storage owns `object` (released by `release(object,
/// object)`): how the ops of python/src carry a callable, a dataset or an iterator in an
/// attribute or a value; `object_of` gives it back.
Tensor object_tensor(void* object, void (*release)(void*, void*));
void* object_of(const Tensor& t, const char* who);

/// The dtypes and shapes of an int64 "type code" attribute: per entry, dtype number, rank,
/// then the dims (-1 unknown); python/deepflow/_op_util.py's type_code writes it.
std::vector<TensorType> types_of_code(const Tensor& code);

/// Sets the Python error (a tf.errors.* class, chosen from the message) for a core error.
void raise_error(const std::exception& e);

void init_convert(nb::module_& m);
void init_tensor(nb::module_& m);
void init_ops(nb::module_& m);
void init_autodiff(nb::module_& m);
void init_function(nb::module_& m);
void init_py_ops(nb::module_& m);
void init_data(nb::module_& m);
void init_keras(nb::module_& m);
void init_saving(nb::module_& m);
void init_lite(nb::module_& m);  // lite.cpp: deepflow_lite for tf.lite.Interpreter
void init_lite_convert(nb::module_& m);  // lite_convert.cpp: deepflow_quantize for tf.lite.TFLiteConverter
void init_serving_optimizer(nb::module_& m);  // serving_optimizer.cpp: TF-TRT's converter on deepflow_quantize
/// Dataset passes inside graphs (data_graph.cpp), into the `data` submodule.
void init_data_graph(nb::module_& d);

/// The C++ iterator of a Python dataset iterator (tf.data's Iterator binding), or nullptr
/// when `obj` is not one; for checkpoints, which save its position.
data::Iterator* iterator_of(nb::handle obj);

}  // namespace deepflow::py

namespace nanobind::detail {
template <> struct type_caster<deepflow::py::TensorArg> {
  NB_TYPE_CASTER(deepflow::py::TensorArg, const_name("Tensor"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    try {
      value.t = deepflow::py::to_tensor(src);
      return true;
    } catch (...) {
      PyErr_Clear();
      return false;
    }
  }
  static handle from_cpp(const deepflow::py::TensorArg& v, rv_policy p, cleanup_list* c) noexcept {
    return make_caster<deepflow::Tensor>::from_cpp(v.t, p, c);
  }
};
}  // namespace nanobind::detail
