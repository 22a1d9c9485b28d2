// SPDX-License-Identifier: Apache-2.0
// Python values <-> tensors. numpy arrays cross without a copy where their layout
// allows: an op's input views the array (kept alive by the tensor's storage), and
// np.asarray(t) views the tensor (kept alive by a capsule holding its storage).
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <limits>

#include "bind.h"
#include "deepflow/ops/ops.h"

namespace deepflow::py {
namespace {

std::optional<DType> dtype_of_ndarray(const nb::dlpack::dtype& d) {
  using nb::dlpack::dtype_code;
  const auto code = dtype_code(d.code);
  if (d.lanes != 1) return std::nullopt;
  if (code == dtype_code::Float && d.bits == 32) return DType::Float32;
  if (code == dtype_code::Float && d.bits == 64) return DType::Float64;
  if (code == dtype_code::Float && d.bits == 16) return DType::Float16;
  if (code == dtype_code::Bfloat && d.bits == 16) return DType::BFloat16;
  if (code == dtype_code::Int && d.bits == 8) return DType::Int8;
  if (code == dtype_code::UInt && d.bits == 8) return DType::UInt8;
  if (code == dtype_code::Int && d.bits == 32) return DType::Int32;
  if (code == dtype_code::Int && d.bits == 64) return DType::Int64;
  if (code == dtype_code::Bool && d.bits == 8) return DType::Bool;
  return std::nullopt;
}

nb::dlpack::dtype ndarray_dtype_of(DType t) {
  using nb::dlpack::dtype_code;
  auto make = [](dtype_code c, uint8_t bits) { return nb::dlpack::dtype{uint8_t(c), bits, 1}; };
  switch (t) {
    case DType::Float32: return make(dtype_code::Float, 32);
    case DType::Float64: return make(dtype_code::Float, 64);
    case DType::Float16: return make(dtype_code::Float, 16);
    case DType::BFloat16: return make(dtype_code::Bfloat, 16);
    case DType::Int8: return make(dtype_code::Int, 8);
    case DType::UInt8: return make(dtype_code::UInt, 8);
    case DType::Int32: return make(dtype_code::Int, 32);
    case DType::Int64: return make(dtype_code::Int, 64);
    case DType::Bool: return make(dtype_code::Bool, 8);
    default: fail("[numpy] no numpy dtype for ", dtype_name(t));
  }
}

Tensor from_ndarray(nb::handle obj, std::optional<DType> dtype) {
  if (nb::cast<int64_t>(obj.attr("size")) == 0) {  // DLPack gives no buffer for empty arrays
    Shape shape;
    for (nb::handle d : obj.attr("shape")) shape.push_back(nb::cast<int64_t>(d));
    nb::object np = nb::module_::import_("numpy");
    nb::ndarray<nb::ro, nb::device::cpu> probe;
    DType dt = DType::Float32;
    if (nb::try_cast(np.attr("zeros")(1, obj.attr("dtype")), probe, false))
      if (auto d = dtype_of_ndarray(probe.dtype())) dt = *d;
    return Tensor(shape, dtype.value_or(dt));
  }
  nb::ndarray<nb::ro, nb::device::cpu> a;
  if (!nb::try_cast(obj, a, false)) {
    // Not exportable as is (non-contiguous, object dtype, ...): numpy makes a C copy.
    nb::object np = nb::module_::import_("numpy");
    nb::object c = np.attr("ascontiguousarray")(obj);
    if (!nb::try_cast(c, a, false))
      throw nb::type_error(("[convert_to_tensor] cannot convert an array of dtype " +
                            nb::cast<std::string>(nb::str(c.attr("dtype"))) + " to a tensor").c_str());
    return from_ndarray(c, dtype);
  }
  std::optional<DType> dt = dtype_of_ndarray(a.dtype());
  if (!dt) throw nb::type_error("[convert_to_tensor] unsupported array dtype");
  Shape shape;
  for (size_t i = 0; i < a.ndim(); ++i) shape.push_back(int64_t(a.shape(i)));
  bool contiguous = true;
  int64_t expect = 1;
  for (int i = int(a.ndim()) - 1; i >= 0; --i) {
    if (a.shape(size_t(i)) != 1 && a.stride(size_t(i)) != expect) contiguous = false;
    expect *= int64_t(a.shape(size_t(i)));
  }
  const size_t nbytes = size_t(shape.num_elements()) * dtype_size(*dt);
  Tensor t;
  if (contiguous && reinterpret_cast<uintptr_t>(a.data()) % dtype_size(*dt) == 0) {
    auto impl = std::make_shared<TensorImpl>();
    PyObject* owner = obj.ptr();
    Py_INCREF(owner);
    impl->storage = std::make_shared<Storage>(const_cast<void*>(a.data()), nbytes, release_pyobject, owner);
    impl->shape = shape;
    impl->dtype = *dt;
    impl->id = TensorImpl::next_id();
    t = Tensor(std::move(impl));
  } else {
    nb::object np = nb::module_::import_("numpy");
    return from_ndarray(np.attr("ascontiguousarray")(obj), dtype);
  }
  // A requested dtype casts on the numpy side, so the result is concrete even while a
  // graph is built (Session feeds, constants).
  if (dtype && *dtype != *dt) {
    if (*dtype == DType::BFloat16) return cast(t, *dtype);
    return from_ndarray(obj.attr("astype")(nb::str(dtype_name(*dtype))), dtype);
  }
  return t;
}

Tensor scalar_of(nb::handle obj, std::optional<DType> dtype) {
  if (PyBool_Check(obj.ptr())) {
    DType dt = dtype.value_or(DType::Bool);
    return scalar(obj.ptr() == Py_True ? 1.0 : 0.0, dt);
  }
  if (PyLong_Check(obj.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    if (overflow) throw nb::value_error("[convert_to_tensor] the integer does not fit int64");
    DType dt = dtype.value_or(v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()
                                  ? DType::Int32 : DType::Int64);
    if (dt == DType::Int64) {
      Tensor t({}, DType::Int64);
      *t.data<int64_t>() = v;
      return t;
    }
    return scalar(double(v), dt);
  }
  double v = PyFloat_AsDouble(obj.ptr());
  DType dt = dtype.value_or(DType::Float32);
  if (!is_floating(dt)) {
    nb::str r = nb::repr(obj);
    throw nb::type_error(("Cannot convert " + std::string(r.c_str()) + " to EagerTensor of dtype " +
                          dtype_name(dt)).c_str());
  }
  return scalar(v, dt);
}

}  // namespace

void release_pyobject(void* ctx, void*) {
  // Storage may die on any thread (an executor worker, a prefetch thread): take the GIL.
  if (!Py_IsInitialized()) return;
  PyGILState_STATE s = PyGILState_Ensure();
  Py_DECREF(reinterpret_cast<PyObject*>(ctx));
  PyGILState_Release(s);
}

std::optional<Tensor> try_to_tensor(nb::handle obj, std::optional<DType> dtype) {
  Tensor t;
  if (nb::try_cast(obj, t, false)) {
    // Tensors never change dtype silently (TensorFlow's rule).
    if (dtype && t.dtype() != *dtype)
      throw nb::value_error(("Tensor conversion requested dtype " + std::string(dtype_name(*dtype)) +
                             " for Tensor with dtype " + dtype_name(t.dtype()) + ": " + t.shape().to_string())
                                .c_str());
    return t;
  }
  if (nb::isinstance<Variable>(obj)) {
    Variable v = nb::cast<Variable>(obj);
    Tensor value = v.value();
    if (dtype && value.dtype() != *dtype)
      throw nb::value_error(("Tensor conversion requested dtype " + std::string(dtype_name(*dtype)) +
                             " for variable with dtype " + dtype_name(value.dtype())).c_str());
    return value;
  }
  PyObject* p = obj.ptr();
  // Exact types: numpy.float64 subclasses float but keeps its dtype (TensorFlow's rule).
  if (PyBool_Check(p) || PyLong_CheckExact(p) || PyFloat_CheckExact(p)) return scalar_of(obj, dtype);
  if (PyBytes_Check(p) || PyUnicode_Check(p)) return std::nullopt;  // strings: the Python side
  if (nb::ndarray_check(obj)) {
    // A numpy scalar (np.float32(1)) reports no buffer through DLPack; np.asarray makes it 0-d.
    if (!nb::hasattr(obj, "__dlpack__") && nb::hasattr(obj, "dtype")) {
      nb::object np = nb::module_::import_("numpy");
      return from_ndarray(np.attr("asarray")(obj), dtype);
    }
    nb::object kind = obj.attr("dtype").attr("kind");
    std::string k = nb::cast<std::string>(kind);
    if (k == "O" || k == "S" || k == "U") return std::nullopt;  // strings: the Python side
    return from_ndarray(obj, dtype);
  }
  return std::nullopt;
}

Tensor to_tensor(nb::handle obj, std::optional<DType> dtype) {
  if (auto t = try_to_tensor(obj, dtype)) return *t;
  // The general case (nested lists, strings, objects with __array__) lives in Python.
  nb::object convert = nb::module_::import_("deepflow._convert").attr("convert_to_tensor");
  return nb::cast<Tensor>(dtype ? convert(obj, int(*dtype)) : convert(obj));
}

nb::object to_numpy(const Tensor& t, bool writable) {
  DF_CHECK(!t.is_symbolic(), "[numpy] a symbolic tensor has no value: ", t.to_string());
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  if (t.dtype() == DType::String) {
    nb::object np = nb::module_::import_("numpy");
    nb::list items;
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < t.size(); ++i) items.append(nb::bytes(s[i].data(), s[i].size()));
    nb::object a = np.attr("array")(items, "object");
    nb::tuple sh = nb::steal<nb::tuple>(PyTuple_New(Py_ssize_t(shape.size())));
    for (size_t i = 0; i < shape.size(); ++i) PyTuple_SET_ITEM(sh.ptr(), Py_ssize_t(i), PyLong_FromSize_t(shape[i]));
    return a.attr("reshape")(sh);
  }
  // The capsule owns a reference to the tensor's storage: the array outlives the Tensor.
  auto* keep = new std::shared_ptr<TensorImpl>(t.impl_ptr());
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<std::shared_ptr<TensorImpl>*>(p); });
  nb::ndarray<nb::numpy> a(t.raw_data(), shape.size(), shape.data(), owner, nullptr, ndarray_dtype_of(t.dtype()));
  nb::object arr = nb::cast(a, nb::rv_policy::reference);
  if (!writable) arr.attr("flags").attr("writeable") = false;
  return arr;
}

void init_convert(nb::module_& m) {
  m.def("to_tensor", [](nb::handle obj, std::optional<int> dtype) {
    return to_tensor(obj, dtype ? std::optional<DType>(dtype_of_int(*dtype)) : std::nullopt);
  }, nb::arg("value"), nb::arg("dtype") = nb::none());
  m.def("try_to_tensor", [](nb::handle obj, std::optional<int> dtype) -> nb::object {
    auto t = try_to_tensor(obj, dtype ? std::optional<DType>(dtype_of_int(*dtype)) : std::nullopt);
    return t ? nb::cast(*t) : nb::none();
  }, nb::arg("value"), nb::arg("dtype") = nb::none());
  // A string tensor from a flat list of bytes (the Python side flattens nested lists).
  m.def("string_tensor", [](nb::handle items, const std::vector<int64_t>& shape) {
    Shape s(shape);
    const size_t n = nb::len(items);
    DF_CHECK(s.num_elements() == int64_t(n), "[convert_to_tensor] ", n, " strings for shape ", s.to_string());
    Tensor t(s, DType::String);
    std::string* out = t.data<std::string>();
    size_t i = 0;
    for (nb::handle x : items) {
      if (PyBytes_Check(x.ptr())) out[i++] = std::string(PyBytes_AS_STRING(x.ptr()), size_t(PyBytes_GET_SIZE(x.ptr())));
      else out[i++] = nb::cast<std::string>(x);
    }
    return t;
  }, "A string tensor from a flat list of bytes or str (the Python side flattens nested lists).");
  m.def("to_numpy", [](const Tensor& t, bool writable) { return to_numpy(t, writable); },
        nb::arg("tensor"), nb::arg("writable") = false);
}

}  // namespace deepflow::py
