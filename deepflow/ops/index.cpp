// SPDX-License-Identifier: Apache-2.0
// Indexing primitives (gather, gather_nd, scatter_nd, unsorted_segment_sum) and one_hot.
// Index values are checked by the kernels (before writing), since infer sees only shapes.
#include "deepflow/ops/index_util.h"
#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

using detail::check_index;

bool known(int64_t d) { return d >= 0; }

}  // namespace

// --- gather ---
// params [p0..pn], indices int [i..] -> params[:axis] + indices[batch_dims:] + params[axis+1:].
static void infer_gather(const OpCall& c, TypeList& out) {
  const Tensor &params = c.in(0), &indices = c.in(1);
  check_index(c, indices, "indices");
  const int pr = params.rank(), ir = indices.rank();
  DF_CHECK(pr >= 1, "[gather] params must be at least 1-D, got ", params.shape());
  int64_t bd = c.attr_int("batch_dims");
  if (bd < 0) bd += ir;
  DF_CHECK(bd >= 0 && bd <= ir, "[gather] batch_dims ", c.attr_int("batch_dims"), " out of range for indices ",
           indices.shape());
  const int axis = normalize_axis("gather", c.attr_int("axis"), pr);
  DF_CHECK(bd <= axis, "[gather] batch_dims (", bd, ") must be <= axis (", axis, ")");
  for (int d = 0; d < bd; ++d) {
    const int64_t a = params.shape()[d], b = indices.shape()[d];
    DF_CHECK(!known(a) || !known(b) || a == b, "[gather] params ", params.shape(), " and indices ", indices.shape(),
             " differ in batch dim ", d, " (batch_dims ", bd, ")");
  }
  Shape s;
  for (int d = 0; d < axis; ++d) s.push_back(params.shape()[d]);
  for (int d = int(bd); d < ir; ++d) s.push_back(indices.shape()[d]);
  for (int d = axis + 1; d < pr; ++d) s.push_back(params.shape()[d]);
  out.push_back({params.dtype(), s});
}
// With B = batch, O = params dims between batch and axis, N = params.dim(axis), K = index
// count per batch and I = trailing params dims, g is [B, O, K, I]: it is summed into
// [B, N, O, I] by segment id b * N + index, then laid out as params.
// With unknown dims (batch_dims 0 only): g [P.., K.., I..] (P: params dims before axis, K:
// indices dims) is transposed to [K.., P.., I..], summed by index into [N, P.., I..] and
// transposed back; no reshape, so the unknown dims stay symbolic. N must be known.
static Tensor gather_grad_unknown_dims(const OpCall& c, const Tensor& g) {
  const Tensor &params = c.in(0), &indices = c.in(1);
  const int pr = params.rank(), kr = indices.rank();
  const int axis = normalize_axis("gather", c.attr_int("axis"), pr);
  int64_t bd = c.attr_int("batch_dims");
  if (bd < 0) bd += kr;
  const int64_t n = params.shape()[axis];
  DF_CHECK(bd == 0 && known(n), "[gather] the gradient with unknown dims needs batch_dims 0 and a known params dim ",
           axis, ", got params ", params.shape(), ", indices ", indices.shape(), " and batch_dims ", bd);
  Axes to_front, to_back;
  for (int i = axis; i < axis + kr; ++i) to_front.push_back(i);
  for (int i = 0; i < axis; ++i) to_front.push_back(i);
  for (int i = axis + kr; i < g.rank(); ++i) to_front.push_back(i);
  for (int i = 1; i <= axis; ++i) to_back.push_back(i);
  to_back.push_back(0);
  for (int i = axis + 1; i < pr; ++i) to_back.push_back(i);
  Tensor sums = unsorted_segment_sum(axis == 0 ? g : transpose(g, to_front), indices, n);
  return axis == 0 ? sums : transpose(sums, to_back);
}
static TensorList vjp_gather(const OpCall& c, const TensorList& g) {
  const Tensor &params = c.in(0), &indices = c.in(1);
  const Shape& ps = params.shape();
  if (!ps.is_fully_defined() || !indices.shape().is_fully_defined())
    return {gather_grad_unknown_dims(c, g[0]), Tensor()};
  // Named fields, not a structured binding: clang 14 cannot capture those in lambdas.
  const detail::GatherGeometry geo = detail::gather_geometry(c);
  const int64_t B = geo.B, O = geo.O, N = geo.N, I = geo.I, K = geo.K;
  if (ps.num_elements() == 0) return {zeros(ps, params.dtype()), Tensor()};
  Tensor gg = reshape(g[0], {B, O, K, I});
  if (O != 1) gg = transpose(gg, {0, 2, 1, 3});
  gg = reshape(gg, {B * K, O, I});
  Tensor ids = reshape(indices, {B, K});
  if (B > 1) ids = add(ids, reshape(arange(0, double(B * N), double(N), indices.dtype()), {B, 1}));
  Tensor sums = reshape(unsorted_segment_sum(gg, reshape(ids, {B * K}), B * N), {B, N, O, I});
  if (O != 1) sums = transpose(sums, {0, 2, 1, 3});
  return {reshape(sums, ps), Tensor()};
}
DF_DEFINE_OP(Gather, {.num_inputs = 2,
                      .attrs = {{"axis", int64_t(0)}, {"batch_dims", int64_t(0)}},
                      .infer = infer_gather,
                      .vjp = vjp_gather, .strings = true});
Tensor gather(const Tensor& params, const Tensor& indices, int64_t axis, int64_t batch_dims) {
  return dispatch1(OpId::Gather, {params, indices}, {{"axis", axis}, {"batch_dims", batch_dims}});
}

// --- gather_nd --- params [p..], indices int [..., q] -> indices[:-1] + params[q:].
static void infer_gather_nd(const OpCall& c, TypeList& out) {
  const Tensor &params = c.in(0), &indices = c.in(1);
  check_index(c, indices, "indices");
  DF_CHECK(indices.rank() >= 1, "[gather_nd] indices must be at least 1-D, got ", indices.shape());
  const int64_t q = indices.dim(-1);
  DF_CHECK(known(q), "[gather_nd] the last dim of indices ", indices.shape(), " must be known");
  DF_CHECK(q <= params.rank(), "[gather_nd] index depth ", q, " (indices ", indices.shape(),
           ") exceeds the rank of params ", params.shape());
  Shape s;
  for (int d = 0; d + 1 < indices.rank(); ++d) s.push_back(indices.shape()[d]);
  for (int d = int(q); d < params.rank(); ++d) s.push_back(params.shape()[d]);
  out.push_back({params.dtype(), s});
}
DF_DEFINE_OP(GatherNd, {.num_inputs = 2, .infer = infer_gather_nd, .vjp = [](const OpCall& c, const TensorList& g) {
                          return TensorList{scatter_nd(c.in(1), g[0], c.in(0).shape()), Tensor()};
                        }, .strings = true});
Tensor gather_nd(const Tensor& params, const Tensor& indices) { return dispatch1(OpId::GatherNd, {params, indices}); }

// --- scatter_nd --- indices [..., q], updates indices[:-1] + shape[q:] -> shape; duplicates add.
static void infer_scatter_nd(const OpCall& c, TypeList& out) {
  const Tensor &indices = c.in(0), &updates = c.in(1);
  check_index(c, indices, "indices");
  const auto& sv = c.attr_ints("shape");
  for (int64_t d : sv) DF_CHECK(d >= 0, "[scatter_nd] shape must be known and >= 0, got dim ", d);
  const Shape shape(sv);
  DF_CHECK(indices.rank() >= 1, "[scatter_nd] indices must be at least 1-D, got ", indices.shape());
  const int64_t q = indices.dim(-1);
  DF_CHECK(known(q), "[scatter_nd] the last dim of indices ", indices.shape(), " must be known");
  DF_CHECK(q <= shape.rank(), "[scatter_nd] index depth ", q, " (indices ", indices.shape(),
           ") exceeds the rank of shape ", shape);
  Shape want;
  for (int d = 0; d + 1 < indices.rank(); ++d) want.push_back(indices.shape()[d]);
  for (int d = int(q); d < shape.rank(); ++d) want.push_back(shape[d]);
  DF_CHECK(updates.shape().compatible_with(want), "[scatter_nd] updates ", updates.shape(),
           " must have shape indices.shape[:-1] + shape[q:] = ", want, " (indices ", indices.shape(), ", shape ", shape,
           ")");
  out.push_back({updates.dtype(), shape});
}
DF_DEFINE_OP(ScatterNd, {.num_inputs = 2,
                         .attrs = {AttrSpec::required_of("shape", AttrKind::Ints)},
                         .infer = infer_scatter_nd,
                         .vjp = [](const OpCall& c, const TensorList& g) {
                           return TensorList{Tensor(), gather_nd(g[0], c.in(0))};
                         }});
Tensor scatter_nd(const Tensor& indices, const Tensor& updates, const Shape& shape) {
  return dispatch1(OpId::ScatterNd, {indices, updates}, {{"shape", shape.to_vector()}});
}

// --- unsorted_segment_sum ---
// data [n.., rest..], segment_ids int [n..] (a prefix of data's shape) -> [num_segments, rest..].
// Ids outside [0, num_segments) are dropped (TF drops negative ids, and on GPU all of them).
static void infer_segment_sum(const OpCall& c, TypeList& out) {
  const Tensor &data = c.in(0), &ids = c.in(1);
  check_index(c, ids, "segment_ids");
  DF_CHECK(data.dtype() != DType::Bool, "[unsorted_segment_sum] does not take bool data");
  const int64_t num = c.attr_int("num_segments");
  DF_CHECK(num >= 0, "[unsorted_segment_sum] num_segments must be >= 0, got ", num);
  bool prefix = ids.rank() <= data.rank();
  for (int d = 0; prefix && d < ids.rank(); ++d) {
    const int64_t a = data.shape()[d], b = ids.shape()[d];
    prefix = !known(a) || !known(b) || a == b;
  }
  DF_CHECK(prefix, "[unsorted_segment_sum] segment_ids ", ids.shape(), " must be a prefix of data's shape ",
           data.shape());
  Shape s{num};
  for (int d = ids.rank(); d < data.rank(); ++d) s.push_back(data.shape()[d]);
  out.push_back({data.dtype(), s});
}
// d data = g[ids] where the id is valid, 0 where it was dropped.
static TensorList vjp_segment_sum(const OpCall& c, const TensorList& g) {
  const Tensor &data = c.in(0), &ids = c.in(1);
  const int64_t num = c.attr_int("num_segments");
  if (num == 0) return {zeros_like(data), Tensor()};
  Tensor valid = logical_and(greater_equal(ids, scalar_like(ids, 0)), less(ids, scalar_like(ids, double(num))));
  Tensor picked = gather(g[0], where(valid, ids, scalar_like(ids, 0)));
  Shape mask_shape = ids.shape();
  for (int d = ids.rank(); d < data.rank(); ++d) mask_shape.push_back(1);
  Tensor mask = valid;
  if (mask_shape.is_fully_defined()) mask = reshape(valid, mask_shape);
  else
    for (int d = ids.rank(); d < data.rank(); ++d) mask = expand_dims(mask, -1);  // keeps unknown dims
  return {where(mask, picked, scalar_like(picked, 0)), Tensor()};
}
DF_DEFINE_OP(UnsortedSegmentSum, {.num_inputs = 2,
                                  .attrs = {AttrSpec::required_of("num_segments", AttrKind::Int)},
                                  .infer = infer_segment_sum,
                                  .vjp = vjp_segment_sum});
Tensor unsorted_segment_sum(const Tensor& data, const Tensor& segment_ids, int64_t num_segments) {
  return dispatch1(OpId::UnsortedSegmentSum, {data, segment_ids}, {{"num_segments", num_segments}});
}

// --- one_hot (composite) --- indices int [..] -> depth inserted at axis; out-of-range
// indices (negative or >= depth) give a row of off_value, as in TensorFlow.
Tensor one_hot(const Tensor& indices, int64_t depth, double on_value, double off_value, int64_t axis, DType dtype) {
  DF_CHECK(is_integer(indices.dtype()), "[one_hot] expects integer indices, got ", dtype_name(indices.dtype()));
  DF_CHECK(depth >= 0, "[one_hot] depth must be >= 0, got ", depth);
  const int r = indices.rank();
  DF_CHECK(axis >= -1 && axis <= r, "[one_hot] axis ", axis, " must be -1 or in [0, ", r, "] for indices ",
           indices.shape());
  const int a = axis == -1 ? r : int(axis);
  Shape range_shape{depth};
  for (int d = a; d < r; ++d) range_shape.push_back(1);
  Tensor range = reshape(arange(0, double(depth), 1, indices.dtype()), range_shape);
  Tensor hit = equal(expand_dims(indices, a), range);
  return where(hit, scalar(on_value, dtype), scalar(off_value, dtype));
}

}  // namespace deepflow
