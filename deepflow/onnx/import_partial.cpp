// SPDX-License-Identifier: Apache-2.0
// Shape values partly known at import time. torch exports `x.view(x.size(0), ...)` as
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape; with a dynamic batch the Shape is not
// a constant, and deepflow has no run-time Shape op. Folding the vector element by element
// keeps every known dim and marks the others unknown, so Reshape (one unknown -> -1) and
// Expand (an unknown that provably keeps the input's dim) can still take it.
#include <algorithm>
#include <string>
#include <vector>

#include "deepflow/core/error.h"
#include "deepflow/onnx/import_internal.h"
#include "deepflow/ops/op.h"

namespace deepflow::onnx::detail {
namespace {

constexpr const char* kPrefix = "[onnx::import] ";
using Outputs = std::optional<std::vector<PartialOutput>>;

// Input i as a partial value: a partial input itself, or a known integer scalar/vector
// (all elements known). nullopt for anything else (a traced tensor, a float, rank > 1).
std::optional<PartialValue> as_partial(const GraphNodeContext& c, size_t i) {
  if (const PartialValue* p = c.partial_input(i)) return *p;
  std::optional<Tensor> t = c.known_input(i);
  if (!t || t->rank() > 1 || !is_integer(t->dtype())) return std::nullopt;
  PartialValue v;
  v.dtype = t->dtype();
  v.scalar = t->rank() == 0;
  for (int64_t x : t->to_vector<int64_t>()) v.elems.push_back(PartialElem{x});
  return v;
}

// A fully known result becomes a concrete tensor (so every other importer can fold it).
PartialOutput finish(PartialValue v) {
  if (!v.fully_known()) return PartialOutput{Tensor(), std::move(v)};
  std::vector<int64_t> vals;
  for (const auto& e : v.elems) vals.push_back(*e.value);
  BuildScopeGuard eager(nullptr);
  Tensor t = v.scalar ? constant(vals, Shape{}) : constant(vals);
  if (v.dtype != DType::Int64) t = cast(t, v.dtype);
  return PartialOutput{t, std::nullopt};
}
Outputs one(PartialValue v) { return std::vector<PartialOutput>{finish(std::move(v))}; }

std::optional<std::vector<int64_t>> known_ints(const GraphNodeContext& c, size_t i) {
  std::optional<Tensor> t = c.known_input(i);
  if (!t || !is_integer(t->dtype())) return std::nullopt;
  return t->to_vector<int64_t>();
}

bool axis_is_0(int64_t axis, int64_t rank) { return axis == 0 || axis == -rank; }

Outputs fold_shape(const GraphNodeContext& c) {
  // Shape of a partial value itself: its length is known.
  std::vector<int64_t> dims;
  if (const PartialValue* p = c.partial_input(0)) {
    if (!p->scalar) dims.push_back(int64_t(p->elems.size()));
    const int64_t r = int64_t(dims.size());
    const auto [start, end] = shape_range(c, r);
    PartialValue v;
    for (int64_t d = start; d < end; ++d) v.elems.push_back(PartialElem{dims[size_t(d)]});
    return one(v);
  }
  Tensor x = c.input(0);
  if (!x.defined() || x.shape().is_fully_defined()) return std::nullopt;
  const int64_t r = x.rank();
  const auto [start, end] = shape_range(c, r);
  PartialValue v;
  for (int64_t d = start; d < end; ++d) {
    const int64_t n = x.shape()[int(d)];
    if (n >= 0) v.elems.push_back(PartialElem{n});
    else {
      const auto root = dim_root(c, x.id(), int(d));
      v.elems.push_back(PartialElem{std::nullopt, root.first, root.second});
    }
  }
  return one(v);
}

Outputs fold_gather(const GraphNodeContext& c) {
  const PartialValue* data = c.partial_input(0);
  if (data == nullptr || data->scalar) return std::nullopt;
  if (!axis_is_0(c.attr_int("axis", 0), 1)) return std::nullopt;
  std::optional<Tensor> idx = c.known_input(1);
  if (!idx || idx->rank() > 1 || !is_integer(idx->dtype())) return std::nullopt;
  const int64_t n = int64_t(data->elems.size());
  PartialValue v;
  v.dtype = data->dtype;
  v.scalar = idx->rank() == 0;
  for (int64_t i : idx->to_vector<int64_t>()) {
    DF_CHECK(i >= -n && i < n, kPrefix, c.describe(), ": index ", i, " out of range for a shape value of ", n,
             " elements ", data->to_string());
    v.elems.push_back(data->elems[size_t(i < 0 ? i + n : i)]);
  }
  return one(v);
}

Outputs fold_slice(const GraphNodeContext& c) {
  const PartialValue* data = c.partial_input(0);
  if (data == nullptr || data->scalar) return std::nullopt;
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.attr_ints("starts");
    ends = c.attr_ints("ends");
    axes = c.attr_ints("axes");
  } else {
    auto s = known_ints(c, 1), e = known_ints(c, 2);
    if (!s || !e) return std::nullopt;
    starts = *s;
    ends = *e;
    if (c.num_inputs() > 3 && !c.node().input(3).empty()) {
      auto a = known_ints(c, 3);
      if (!a) return std::nullopt;
      axes = *a;
    }
    if (c.num_inputs() > 4 && !c.node().input(4).empty()) {
      auto st = known_ints(c, 4);
      if (!st) return std::nullopt;
      steps = *st;
    }
  }
  if (starts.size() != 1 || ends.size() != 1) return std::nullopt;
  if (!axes.empty() && (axes.size() != 1 || !axis_is_0(axes[0], 1))) return std::nullopt;
  const int64_t step = steps.empty() ? 1 : steps[0];
  DF_CHECK(step != 0, kPrefix, c.describe(), ": step 0");
  const int64_t d = int64_t(data->elems.size());
  const auto [s, e] = slice_bounds(starts[0], ends[0], step, d);
  PartialValue v;
  v.dtype = data->dtype;
  for (int64_t i = s; step > 0 ? i < e : i > e; i += step) v.elems.push_back(data->elems[size_t(i)]);
  return one(v);
}

// Only scalar <-> 1-element vector: a partial value is at most 1-D.
Outputs fold_unsqueeze(const GraphNodeContext& c) {
  const PartialValue* data = c.partial_input(0);
  if (data == nullptr || !data->scalar) return std::nullopt;
  std::vector<int64_t> axes;
  if (c.opset() < 13) {
    axes = c.attr_ints("axes");
  } else {
    auto a = known_ints(c, 1);
    if (!a) return std::nullopt;
    axes = *a;
  }
  if (axes.size() != 1 || (axes[0] != 0 && axes[0] != -1)) return std::nullopt;
  PartialValue v = *data;
  v.scalar = false;
  return one(v);
}

Outputs fold_squeeze(const GraphNodeContext& c) {
  const PartialValue* data = c.partial_input(0);
  if (data == nullptr || data->scalar || data->elems.size() != 1) return std::nullopt;
  std::vector<int64_t> axes;
  if (c.opset() < 13) {
    axes = c.attr_ints("axes");
  } else if (c.num_inputs() > 1 && !c.node().input(1).empty()) {
    auto a = known_ints(c, 1);
    if (!a) return std::nullopt;
    axes = *a;
  }
  if (!axes.empty() && (axes.size() != 1 || (axes[0] != 0 && axes[0] != -1))) return std::nullopt;
  PartialValue v = *data;
  v.scalar = true;
  return one(v);
}

Outputs fold_concat(const GraphNodeContext& c) {
  if (!axis_is_0(c.attr_int("axis", 0), 1)) return std::nullopt;
  PartialValue v;
  bool first = true;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (c.node().input(int(i)).empty()) continue;
    auto p = as_partial(c, i);
    if (!p || p->scalar) return std::nullopt;
    if (first) v.dtype = p->dtype;
    first = false;
    DF_CHECK(p->dtype == v.dtype, kPrefix, c.describe(), ": inputs of different dtypes (", v.dtype, ", ", p->dtype,
             ")");
    v.elems.insert(v.elems.end(), p->elems.begin(), p->elems.end());
  }
  return one(v);
}

Outputs fold_cast(const GraphNodeContext& c) {
  const PartialValue* data = c.partial_input(0);
  if (data == nullptr) return std::nullopt;
  const DType to = dtype_from_onnx(int32_t(c.attr_int("to", 0)));
  if (!is_integer(to)) return std::nullopt;
  PartialValue v = *data;
  v.dtype = to;
  return one(v);
}

Outputs fold_identity(const GraphNodeContext& c) {
  const PartialValue* data = c.partial_input(0);
  if (data == nullptr) return std::nullopt;
  return one(*data);
}

// Element-wise integer arithmetic with ONNX broadcasting of scalars and 1-element vectors.
// An element is known where both operands' are; x+0, x-0, x*1, x/1 keep an unknown's origin.
Outputs fold_arith(const GraphNodeContext& c, char op) {
  auto a = as_partial(c, 0), b = as_partial(c, 1);
  if (!a || !b || a->dtype != b->dtype) return std::nullopt;
  const size_t na = a->elems.size(), nb = b->elems.size();
  if (na != nb && na != 1 && nb != 1) return std::nullopt;
  PartialValue v;
  v.dtype = a->dtype;
  v.scalar = a->scalar && b->scalar;
  const size_t n = std::max(na, nb);
  for (size_t i = 0; i < n; ++i) {
    const PartialElem& x = a->elems[na == 1 ? 0 : i];
    const PartialElem& y = b->elems[nb == 1 ? 0 : i];
    PartialElem r;
    if (x.value && y.value) {
      const int64_t p = *x.value, q = *y.value;
      switch (op) {
        case '+': r.value = p + q; break;
        case '-': r.value = p - q; break;
        case '*': r.value = p * q; break;
        default:
          DF_CHECK(q != 0, kPrefix, c.describe(), ": integer division by 0 in a shape value");
          r.value = p / q;  // ONNX integer Div truncates like C
      }
    } else if (!x.value && y.value && (((op == '+' || op == '-') && *y.value == 0) || ((op == '*' || op == '/') && *y.value == 1))) {
      r = x;
    } else if (!y.value && x.value && ((op == '+' && *x.value == 0) || (op == '*' && *x.value == 1))) {
      r = y;
    }
    v.elems.push_back(r);
  }
  return one(v);
}

// Equal folds only when every compared pair is known (the result is then a constant).
Outputs fold_equal(const GraphNodeContext& c) {
  auto a = as_partial(c, 0), b = as_partial(c, 1);
  if (!a || !b) return std::nullopt;
  const size_t na = a->elems.size(), nb = b->elems.size();
  if (na != nb && na != 1 && nb != 1) return std::nullopt;
  const size_t n = std::max(na, nb);
  std::vector<int64_t> out;
  for (size_t i = 0; i < n; ++i) {
    const PartialElem& x = a->elems[na == 1 ? 0 : i];
    const PartialElem& y = b->elems[nb == 1 ? 0 : i];
    if (!x.value || !y.value) return std::nullopt;
    out.push_back(*x.value == *y.value);
  }
  BuildScopeGuard eager(nullptr);
  Tensor t = a->scalar && b->scalar ? constant(out, Shape{}) : constant(out);
  return std::vector<PartialOutput>{PartialOutput{cast(t, DType::Bool), std::nullopt}};
}

// Where with a known condition picks element by element.
Outputs fold_where(const GraphNodeContext& c) {
  std::optional<Tensor> cond = c.known_input(0);
  if (!cond || cond->rank() > 1) return std::nullopt;
  auto a = as_partial(c, 1), b = as_partial(c, 2);
  if (!a || !b || a->dtype != b->dtype) return std::nullopt;
  std::vector<int64_t> k = cast(*cond, DType::Int64).to_vector<int64_t>();
  const size_t nc = k.size(), na = a->elems.size(), nb = b->elems.size();
  const size_t n = std::max({nc, na, nb});
  if ((nc != n && nc != 1) || (na != n && na != 1) || (nb != n && nb != 1)) return std::nullopt;
  PartialValue v;
  v.dtype = a->dtype;
  v.scalar = cond->rank() == 0 && a->scalar && b->scalar;
  for (size_t i = 0; i < n; ++i) {
    v.elems.push_back(k[nc == 1 ? 0 : i] ? a->elems[na == 1 ? 0 : i] : b->elems[nb == 1 ? 0 : i]);
  }
  return one(v);
}

}  // namespace

bool PartialValue::fully_known() const {
  return std::all_of(elems.begin(), elems.end(), [](const PartialElem& e) { return e.value.has_value(); });
}

std::string PartialValue::to_string() const {
  std::string s;
  for (size_t i = 0; i < elems.size(); ++i) {
    if (i) s += ",";
    s += elems[i].value ? std::to_string(*elems[i].value) : "?";
  }
  return scalar ? s : "[" + s + "]";
}

std::optional<std::vector<PartialOutput>> fold_partial(const GraphNodeContext& c) {
  const std::string& op = c.node().op_type();
  if (op == "Shape") return fold_shape(c);
  if (op == "Gather") return fold_gather(c);
  if (op == "Slice") return fold_slice(c);
  if (op == "Unsqueeze") return fold_unsqueeze(c);
  if (op == "Squeeze") return fold_squeeze(c);
  if (op == "Concat") return fold_concat(c);
  if (op == "Cast") return fold_cast(c);
  if (op == "Identity") return fold_identity(c);
  if (op == "Add") return fold_arith(c, '+');
  if (op == "Sub") return fold_arith(c, '-');
  if (op == "Mul") return fold_arith(c, '*');
  if (op == "Div") return fold_arith(c, '/');
  if (op == "Equal") return fold_equal(c);
  if (op == "Where") return fold_where(c);
  return std::nullopt;
}

}  // namespace deepflow::onnx::detail
