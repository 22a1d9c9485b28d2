// SPDX-License-Identifier: Apache-2.0
// deepflow.Tensor: the C++ Tensor handle as a Python object. The operators that run in
// tight Python loops (+ - * / @, comparisons, unary minus) are bound here so `a + b`
// costs one call into C++; the rest of the Tensor API (repr, indexing, __bool__, ...) is
// added by python/deepflow/_tensor.py.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bind.h"
#include "deepflow/ops/ops.h"

namespace deepflow::py {
namespace {

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);

// The other operand of a binary operator: a tensor as is (a dtype mismatch is the op's
// error, as in TensorFlow), anything else converted to this tensor's dtype. nullopt when
// it is not convertible, so Python tries the reflected operator.
std::optional<Tensor> operand(const Tensor& self, nb::handle other) {
  if (nb::isinstance<Tensor>(other)) return *nb::inst_ptr<Tensor>(other);
  if (nb::isinstance<Variable>(other)) return nb::cast<Variable>(other).value();
  if (other.is_none()) return std::nullopt;
  if (auto c = try_to_tensor(other, self.dtype())) return c;
  nb::object convert = nb::module_::import_("deepflow._convert").attr("try_convert_to_tensor");
  nb::object r = convert(other, int(self.dtype()));
  if (r.is_none()) return std::nullopt;
  return nb::cast<Tensor>(r);
}

template <BinaryFn F>
nb::object binary(const Tensor& self, nb::handle other) {  // other may be None: NotImplemented
  std::optional<Tensor> b = operand(self, other);
  if (!b) return nb::borrow(Py_NotImplemented);
  return nb::cast(F(self, *b));
}

template <BinaryFn F>
nb::object reflected(const Tensor& self, nb::handle other) {
  std::optional<Tensor> a = operand(self, other);
  if (!a) return nb::borrow(Py_NotImplemented);
  return nb::cast(F(*a, self));
}

Tensor matmul2(const Tensor& a, const Tensor& b) { return matmul(a, b); }

// True division as TensorFlow's truediv: integers become floats first (8- and 16-bit
// ones float32, 32- and 64-bit ones float64).
Tensor truediv(const Tensor& a, const Tensor& b) {
  if (!is_integer(a.dtype())) return div(a, b);
  DType to = (a.dtype() == DType::Int32 || a.dtype() == DType::Int64) ? DType::Float64 : DType::Float32;
  return div(cast(a, to), cast(b, to));
}

// The number slots of + - * / @: Python calls them directly for `a + b` (no method
// lookup, no argument parsing), the path eager code takes most. Either operand may be
// the tensor (the other is converted to its dtype); errors become Python exceptions here,
// since no binding layer sits between.
// The Tensor type object, set when the class is made: an exact type check is a pointer
// compare, and results are made without nanobind's type lookup.
PyTypeObject* g_tensor_type = nullptr;

bool is_tensor(PyObject* o) {
  return Py_TYPE(o) == g_tensor_type || nb::isinstance<Tensor>(nb::handle(o));
}

PyObject* new_tensor_object(Tensor&& t) {
  nb::object o = nb::inst_alloc(nb::handle(reinterpret_cast<PyObject*>(g_tensor_type)));
  new (nb::inst_ptr<Tensor>(o)) Tensor(std::move(t));
  nb::inst_mark_ready(o);
  return o.release().ptr();
}

template <BinaryFn F>
PyObject* number_slot(PyObject* a, PyObject* b) noexcept {
  try {
    const bool left = is_tensor(a);
    const Tensor& self = left ? *nb::inst_ptr<Tensor>(a) : *nb::inst_ptr<Tensor>(b);
    PyObject* o = left ? b : a;
    if (Py_TYPE(o) == g_tensor_type) {  // the common case: two tensors, no conversion
      const Tensor& other = *nb::inst_ptr<Tensor>(o);
      return new_tensor_object(left ? F(self, other) : F(other, self));
    }
    std::optional<Tensor> other = operand(self, nb::handle(o));
    if (!other) return Py_NewRef(Py_NotImplemented);
    return new_tensor_object(left ? F(self, *other) : F(*other, self));
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const nb::builtin_exception& e) {
    PyErr_SetString(e.type() == nb::exception_type::type_error ? PyExc_TypeError : PyExc_ValueError, e.what());
  } catch (const Error& e) {
    raise_error(e);
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyType_Slot kTensorSlots[] = {
    {Py_nb_add, reinterpret_cast<void*>(&number_slot<static_cast<BinaryFn>(&add)>)},
    {Py_nb_subtract, reinterpret_cast<void*>(&number_slot<static_cast<BinaryFn>(&sub)>)},
    {Py_nb_multiply, reinterpret_cast<void*>(&number_slot<static_cast<BinaryFn>(&mul)>)},
    {Py_nb_true_divide, reinterpret_cast<void*>(&number_slot<&truediv>)},
    {Py_nb_matrix_multiply, reinterpret_cast<void*>(&number_slot<&matmul2>)},
    {0, nullptr}};

nb::tuple shape_tuple(const Shape& s) {
  nb::tuple t = nb::steal<nb::tuple>(PyTuple_New(s.rank()));
  for (int i = 0; i < s.rank(); ++i) {
    PyObject* d = s[i] < 0 ? (Py_INCREF(Py_None), Py_None) : PyLong_FromLongLong(s[i]);
    PyTuple_SET_ITEM(t.ptr(), i, d);
  }
  return t;
}

}  // namespace

void init_tensor(nb::module_& m) {
  nb::class_<Tensor> cls(m, "Tensor", nb::is_weak_referenceable(), nb::type_slots(kTensorSlots));
  g_tensor_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  cls.def_prop_ro("_dtype", [](const Tensor& t) { return int(t.dtype()); })
      .def_prop_ro("_shape", [](const Tensor& t) { return shape_tuple(t.shape()); })
      .def_prop_ro("ndim", &Tensor::rank)
      .def_prop_ro("_id", &Tensor::id)
      .def_prop_ro("_is_symbolic", &Tensor::is_symbolic)
      .def_prop_ro("_num_elements", &Tensor::size)
      .def("_same", [](const Tensor& a, const Tensor& b) { return a.impl() == b.impl(); })
      .def("_to_string", &Tensor::to_string)
      .def("_numpy_view", [](const Tensor& t) { return to_numpy(t); })
      .def("__len__", [](const Tensor& t) {
        if (t.rank() == 0) throw nb::type_error("Scalar tensor has no `len()`");
        if (t.dim(0) < 0) throw nb::type_error("len is not well defined for a tensor whose first dimension is unknown");
        return t.dim(0);
      })
      .def("__pow__", &binary<static_cast<BinaryFn>(&pow)>, nb::arg("other").none())
      .def("__rpow__", &reflected<static_cast<BinaryFn>(&pow)>, nb::arg("other").none())
      .def("__lt__", &binary<&less>, nb::arg("other").none())
      .def("__le__", &binary<&less_equal>, nb::arg("other").none())
      .def("__gt__", &binary<&greater>, nb::arg("other").none())
      .def("__ge__", &binary<&greater_equal>, nb::arg("other").none())
      .def("__neg__", [](const Tensor& t) { return neg(t); })
      .def("__abs__", [](const Tensor& t) { return abs(t); })
      .def("__hash__", [](nb::handle self) -> Py_hash_t {
        // Symbolic tensors hash by identity (feed_dict keys in tf.compat.v1 graphs), eager
        // ones are unhashable, as in TensorFlow 2.
        if (nb::cast<const Tensor&>(self).is_symbolic()) return Py_hash_t(reinterpret_cast<uintptr_t>(self.ptr()) >> 4);
        throw nb::type_error("Tensor is unhashable. Instead, use tensor.ref() as the key.");
      });
  // numpy's operators defer to ours (ndarray + Tensor -> Tensor.__radd__), as for TF's tensors.
  cls.attr("__array_priority__") = 100;
}

}  // namespace deepflow::py
