// SPDX-License-Identifier: Apache-2.0
// Reductions (sum, max, min, prod), argmax / argmin, cumsum and top_k, and the
// composites built on them: reduce_mean, reduce_logsumexp and moments.
#include <limits>

#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

// The dims of a rank-`rank` tensor that `axes` reduces (empty axes: all of them).
// Negative axes count from the end; an axis named twice reduces once (we pick
// deduplication over TensorFlow's error).
std::vector<bool> axes_mask(const char* op, const Axes& axes, int rank) {
  std::vector<bool> m(size_t(rank), axes.empty());
  for (int64_t a : axes) {
    DF_CHECK(a >= -rank && a < rank, "[", op, "] axis ", a, " out of range for rank ", rank);
    m[size_t(a < 0 ? a + rank : a)] = true;
  }
  return m;
}

Shape reduced_shape(const Shape& s, const std::vector<bool>& m, bool keepdims) {
  Shape r;
  for (int i = 0; i < s.rank(); ++i) {
    if (!m[size_t(i)]) r.push_back(s[i]);
    else if (keepdims) r.push_back(1);
  }
  return r;
}

// t (of the reduced shape) with the reduced dims back as size 1, ready to broadcast against x.
Tensor with_kept_dims(const Tensor& t, const Shape& x_shape, const std::vector<bool>& m) {
  Shape kept = reduced_shape(x_shape, m, true);
  if (t.shape() == kept) return t;
  if (kept.is_fully_defined()) return reshape(t, kept);
  Tensor r = t;  // unknown dims: a reshape could not tell them apart
  for (int i = 0; i < x_shape.rank(); ++i)
    if (m[size_t(i)]) r = expand_dims(r, i);
  return r;
}

// t (with kept dims) without the reduced dims.
Tensor drop_kept_dims(const Tensor& t, const Shape& x_shape, const std::vector<bool>& m) {
  Shape dropped = reduced_shape(x_shape, m, false);
  if (t.shape() == dropped) return t;
  if (dropped.is_fully_defined()) return reshape(t, dropped);
  Axes axes;
  for (int i = 0; i < x_shape.rank(); ++i)
    if (m[size_t(i)]) axes.push_back(i);
  return squeeze(t, axes);
}

std::vector<bool> call_mask(const OpCall& c) { return axes_mask(c.name(), c.attr_ints("axes"), c.in(0).rank()); }

void check_not_bool(const OpCall& c) {
  DF_CHECK(c.in(0).dtype() != DType::Bool, "[", c.name(), "] does not take bool tensors");
}

// Axis attribute of argmax / argmin / cumsum, normalized.
int call_axis(const OpCall& c) {
  const int rank = c.in(0).rank();
  const int64_t a = c.attr_int("axis");
  DF_CHECK(rank >= 1, "[", c.name(), "] expects a tensor of rank >= 1, got a scalar");
  DF_CHECK(a >= -rank && a < rank, "[", c.name(), "] axis ", a, " out of range for rank ", rank);
  return int(a < 0 ? a + rank : a);
}

const std::vector<AttrSpec> kReduceAttrs = {{"axes", std::vector<int64_t>{}}, {"keepdims", false}};

// x [d0..dn], axes -> the reduced shape (reduced dims kept as 1 with keepdims), dtype of x.
void infer_reduce(const OpCall& c, TypeList& out) {
  check_not_bool(c);
  out.push_back({c.in(0).dtype(), reduced_shape(c.in(0).shape(), call_mask(c), c.attr_bool("keepdims"))});
}

// The gradient of reduce_max / reduce_min: ties share it equally (TensorFlow's rule).
TensorList vjp_extremum(const OpCall& c, const TensorList& g) {
  const Tensor& x = c.in(0);
  auto m = call_mask(c);
  Tensor y = with_kept_dims(c.out(0), x.shape(), m);
  Tensor hit = cast(equal(x, y), x.dtype());
  Tensor count = reduce_sum(hit, c.attr_ints("axes"), true);
  return {mul(hit, div(with_kept_dims(g[0], x.shape(), m), count))};
}

}  // namespace

// --- reduce_sum --- x [d0..dn] -> reduced shape; integers sum in their own type.
DF_DEFINE_OP(ReduceSum, {.attrs = kReduceAttrs, .infer = infer_reduce,
                         .vjp = [](const OpCall& c, const TensorList& g) {
  const Tensor& x = c.in(0);
  Tensor gk = with_kept_dims(g[0], x.shape(), call_mask(c));
  return TensorList{x.shape().is_fully_defined() ? broadcast_to(gk, x.shape()) : broadcast_like(gk, x)};
}});
Tensor reduce_sum(const Tensor& x, const Axes& axes, bool keepdims) {
  return dispatch1(OpId::ReduceSum, {x}, {{"axes", axes}, {"keepdims", keepdims}});
}

// --- reduce_max / reduce_min --- x [d0..dn] -> reduced shape; NaN propagates.
DF_DEFINE_OP(ReduceMax, {.attrs = kReduceAttrs, .infer = infer_reduce, .vjp = vjp_extremum});
DF_DEFINE_OP(ReduceMin, {.attrs = kReduceAttrs, .infer = infer_reduce, .vjp = vjp_extremum});
Tensor reduce_max(const Tensor& x, const Axes& axes, bool keepdims) {
  return dispatch1(OpId::ReduceMax, {x}, {{"axes", axes}, {"keepdims", keepdims}});
}
Tensor reduce_min(const Tensor& x, const Axes& axes, bool keepdims) {
  return dispatch1(OpId::ReduceMin, {x}, {{"axes", axes}, {"keepdims", keepdims}});
}

// --- reduce_prod --- x [d0..dn] -> reduced shape.
// The gradient is exact where zeros occur: with no zero in a slice, d/dx_i = prod / x_i;
// with exactly one, only the zero gets the product of the others; with more, all get 0.
// (Its own derivative is exact away from zeros; TensorFlow's cumprod form is exact everywhere.)
DF_DEFINE_OP(ReduceProd, {.attrs = kReduceAttrs, .infer = infer_reduce,
                          .vjp = [](const OpCall& c, const TensorList& g) {
  const Tensor& x = c.in(0);
  const Axes& axes = c.attr_ints("axes");
  Tensor zero = scalar_like(x, 0), one = scalar_like(x, 1);
  Tensor is_zero = equal(x, zero);
  Tensor zeros_in_slice = reduce_sum(cast(is_zero, x.dtype()), axes, true);
  Tensor x_safe = where(is_zero, one, x);
  Tensor prod_nonzero = reduce_prod(x_safe, axes, true);
  Tensor w = where(is_zero, cast(equal(zeros_in_slice, one), x.dtype()),
                   div(cast(equal(zeros_in_slice, zero), x.dtype()), x_safe));
  Tensor gk = with_kept_dims(g[0], x.shape(), call_mask(c));
  return TensorList{mul(mul(gk, prod_nonzero), w)};
}});
Tensor reduce_prod(const Tensor& x, const Axes& axes, bool keepdims) {
  return dispatch1(OpId::ReduceProd, {x}, {{"axes", axes}, {"keepdims", keepdims}});
}

// --- argmax / argmin --- x [.., d_axis, ..] -> output_type [.., ..]; the first index on ties.
// NaN counts as the extremum (numpy's rule), so the first NaN wins.
static void infer_arg(const OpCall& c, TypeList& out) {
  check_not_bool(c);
  const int axis = call_axis(c);
  const DType ot = c.attr_dtype("output_type");
  DF_CHECK(ot == DType::Int32 || ot == DType::Int64, "[", c.name(), "] output_type must be int32 or int64, got ",
           dtype_name(ot));
  DF_CHECK(c.in(0).dim(axis) != 0, "[", c.name(), "] reduction axis ", axis, " is empty in shape ", c.in(0).shape());
  Shape s = c.in(0).shape();
  s.erase(axis);
  out.push_back({ot, s});
}
DF_DEFINE_OP(ArgMax, {.attrs = {{"axis", 0}, {"output_type", DType::Int64}}, .infer = infer_arg,
                      .non_differentiable = true});
DF_DEFINE_OP(ArgMin, {.attrs = {{"axis", 0}, {"output_type", DType::Int64}}, .infer = infer_arg,
                      .non_differentiable = true});
Tensor argmax(const Tensor& x, int64_t axis, DType output_type) {
  return dispatch1(OpId::ArgMax, {x}, {{"axis", axis}, {"output_type", output_type}});
}
Tensor argmin(const Tensor& x, int64_t axis, DType output_type) {
  return dispatch1(OpId::ArgMin, {x}, {{"axis", axis}, {"output_type", output_type}});
}

// --- cumsum --- x -> same shape: running sum along axis; `exclusive` leaves out the
// element itself, `reverse` runs from the end.
static void infer_cumsum(const OpCall& c, TypeList& out) {
  check_not_bool(c);
  call_axis(c);
  out.push_back({c.in(0).dtype(), c.in(0).shape()});
}
DF_DEFINE_OP(Cumsum, {.attrs = {{"axis", 0}, {"exclusive", false}, {"reverse", false}}, .infer = infer_cumsum,
                      .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{cumsum(g[0], c.attr_int("axis"), c.attr_bool("exclusive"), !c.attr_bool("reverse"))};
}});
Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive, bool reverse) {
  return dispatch1(OpId::Cumsum, {x}, {{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}});
}

// --- top_k --- x [..., n] -> values [..., k], indices int32 [..., k]: the k largest,
// largest first, the lower index first among equal values. sorted=false returns them
// sorted too (TensorFlow leaves that order unspecified).
static void infer_top_k(const OpCall& c, TypeList& out) {
  const Tensor& x = c.in(0);
  check_not_bool(c);
  DF_CHECK(x.rank() >= 1, "[top_k] expects a tensor of rank >= 1, got a scalar");
  const int64_t k = c.attr_int("k");
  DF_CHECK(k >= 0, "[top_k] k must be non-negative, got ", k);
  DF_CHECK(x.dim(-1) < 0 || k <= x.dim(-1), "[top_k] k ", k, " is larger than the last dimension ", x.dim(-1),
           " of input ", x.shape());
  Shape s = x.shape();
  s[s.rank() - 1] = k;
  out.push_back({x.dtype(), s});
  out.push_back({DType::Int32, s});
}
// The values' gradient goes back to the chosen positions (the indices get none).
static TensorList vjp_top_k(const OpCall& c, const TensorList& g) {
  const Tensor& x = c.in(0);
  const Tensor& idx = c.out(1);
  const int64_t n = x.dim(-1), k = idx.dim(-1);
  DF_CHECK(n >= 0 && k >= 0, "[top_k] the gradient needs a known last dimension, got ", x.shape());
  if (!x.shape().is_fully_defined()) {
    // Unknown batch dims: one-hot rows keep them symbolic (costs [..., k, n]).
    Tensor oh = one_hot(idx, n, 1, 0, -1, x.dtype());
    return {reduce_sum(mul(expand_dims(g[0], -1), oh), {-2})};
  }
  // Scatter into the flat input: position = row * n + index.
  int64_t rows = 1;
  for (int i = 0; i + 1 < x.rank(); ++i) rows *= x.shape()[i];
  Tensor offsets = reshape(arange(0, double(rows), 1, DType::Int64) * double(n), Shape{rows, 1});
  Tensor flat = add(reshape(cast(idx, DType::Int64), Shape{rows, k}), offsets);
  Tensor scattered = scatter_nd(reshape(flat, Shape{rows * k, 1}), reshape(g[0], Shape{rows * k}), Shape{rows * n});
  return {reshape(scattered, x.shape())};
}
DF_DEFINE_OP(TopK, {.attrs = {{"k", 1}, {"sorted", true}}, .infer = infer_top_k, .vjp = vjp_top_k});
std::pair<Tensor, Tensor> top_k(const Tensor& x, int64_t k, bool sorted) {
  TensorList r = dispatch(OpId::TopK, {x}, {{"k", k}, {"sorted", sorted}});
  return {r[0], r[1]};
}

// --- composites ---

// x [d0..dn] -> reduced shape; integers divide truncating (as TensorFlow does).
Tensor reduce_mean(const Tensor& x, const Axes& axes, bool keepdims) {
  Tensor s = reduce_sum(x, axes, keepdims);
  if (x.shape().is_fully_defined()) {
    const int64_t count = s.size() == 0 ? 1 : x.size() / s.size();
    return div(s, scalar_like(s, double(count)));
  }
  // Known reduced dims (a global pool over a dynamic batch): a constant divisor, so the
  // graph has no size/cast/maximum/div chain to run per call.
  const auto mask = axes_mask("reduce_mean", axes, x.rank());
  int64_t count = 1;
  for (int d = 0; d < x.rank() && count >= 0; ++d) {
    if (mask[size_t(d)]) count = x.shape()[d] < 0 ? -1 : count * x.shape()[d];
  }
  if (count >= 0) return div(s, scalar_like(s, double(count)));
  // Unknown dims: count the reduced elements when the graph runs.
  Tensor n = size(x), m = size(s);
  return div(s, cast(div(n, maximum(m, scalar_like(m, 1))), x.dtype()));
}

// log(sum(exp(x))) shifted by the max; a non-finite max shifts by 0 instead, so
// all -inf gives -inf and an inf gives inf (TensorFlow's rule).
Tensor reduce_logsumexp(const Tensor& x, const Axes& axes, bool keepdims) {
  auto m = axes_mask("reduce_logsumexp", axes, x.rank());
  Tensor raw = reduce_max(x, axes, true);
  Tensor finite = less(abs(raw), scalar_like(raw, std::numeric_limits<double>::infinity()));
  Tensor shift = stop_gradient(where(finite, raw, scalar_like(raw, 0)));
  Tensor r = add(log(reduce_sum(exp(sub(x, shift)), axes, true)), shift);
  return keepdims ? r : drop_kept_dims(r, x.shape(), m);
}

// mean and variance over axes (tf.nn.moments). 16-bit inputs are computed in float32.
// Unlike TensorFlow, the mean inside the variance is not wrapped in stop_gradient:
// first derivatives agree, and higher ones stay exact.
std::pair<Tensor, Tensor> moments(const Tensor& x, const Axes& axes, bool keepdims) {
  auto m = axes_mask("moments", axes, x.rank());
  const bool narrow = x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16;
  Tensor y = narrow ? cast(x, DType::Float32) : x;
  Tensor mean = reduce_mean(y, axes, true);
  Tensor variance = reduce_mean(square(sub(y, mean)), axes, keepdims);
  if (!keepdims) mean = drop_kept_dims(mean, x.shape(), m);
  if (narrow) return {cast(mean, x.dtype()), cast(variance, x.dtype())};
  return {mean, variance};
}

}  // namespace deepflow
