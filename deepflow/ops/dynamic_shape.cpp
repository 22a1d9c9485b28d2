// SPDX-License-Identifier: Apache-2.0
// Run-time shapes: ops whose output shape is another tensor's shape as it is when
// the graph runs (TensorFlow spells these with tf.shape(like) as an input).
//
// Gradients and composites built inside graphs with unknown (-1) dims cannot put a
// static shape into an attribute; they use these instead:
//   broadcast_like(x, like)  x broadcast to like's shape       (vjp: sum_to_like)
//   reshape_like(x, like)    x viewed with like's shape        (vjp: reshape_like)
//   sum_to_like(g, like)     g summed down to like's shape     (vjp: broadcast_like)
//   size(x)                  x's element count, an int scalar  (no gradient)
#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/ops.h"

namespace deepflow {

namespace {

bool known(int64_t d) { return d >= 0; }

// --- broadcast_like --- x, like -> like's shape, dtype of x (x must broadcast to it).
// Where like's dim is unknown and x's is known and not 1, the output takes x's.
void infer_broadcast_like(const OpCall& c, TypeList& out) {
  const Shape &x = c.in(0).shape(), &like = c.in(1).shape();
  bool ok = x.rank() <= like.rank();
  Shape s = like;
  for (int i = 0; ok && i < x.rank(); ++i) {
    const int j = like.rank() - x.rank() + i;
    const int64_t a = x[i], t = like[j];
    ok = a == 1 || !known(a) || !known(t) || a == t;
    if (!known(t) && known(a) && a != 1) s[j] = a;
  }
  DF_CHECK(ok, "[broadcast_like] cannot broadcast ", x, " to the shape of like ", like);
  out.push_back({c.in(0).dtype(), s});
}

// --- reshape_like --- x, like -> like's shape, dtype of x (same element count).
void infer_reshape_like(const OpCall& c, TypeList& out) {
  const Shape &x = c.in(0).shape(), &like = c.in(1).shape();
  Shape s = like;
  const int64_t n = x.num_elements();
  if (n >= 0 && like.is_fully_defined()) {
    DF_CHECK(n == like.num_elements(), "[reshape_like] cannot reshape ", x, " (", n, " elements) to the shape of like ",
             like, " (", like.num_elements(), " elements)");
  } else if (n >= 0) {
    // One unknown dim of like follows from x's element count.
    int unknown = -1, count = 0;
    int64_t product = 1;
    for (int i = 0; i < like.rank(); ++i) {
      if (known(like[i])) product *= like[i];
      else unknown = i, ++count;
    }
    if (count == 1 && product > 0 && n % product == 0) s[unknown] = n / product;
  }
  out.push_back({c.in(0).dtype(), s});
}

// --- sum_to_like --- g, like -> like's shape, dtype of g: g summed over the dims that
// broadcasting like to g's shape would add (leading dims, and like's 1s against g's n).
void infer_sum_to_like(const OpCall& c, TypeList& out) {
  const Shape &g = c.in(0).shape(), &like = c.in(1).shape();
  DF_CHECK(c.in(0).dtype() != DType::Bool, "[sum_to_like] does not take bool tensors");
  bool ok = like.rank() <= g.rank();
  for (int i = 0; ok && i < like.rank(); ++i) {
    const int64_t t = like[i], d = g[g.rank() - like.rank() + i];
    ok = t == 1 || !known(t) || !known(d) || t == d;
  }
  DF_CHECK(ok, "[sum_to_like] cannot sum ", g, " down to the shape of like ", like,
           " (like must broadcast to g's shape)");
  out.push_back({c.in(0).dtype(), like});
}

// --- size --- x -> out_type scalar: the number of elements (tf.size).
void infer_size(const OpCall& c, TypeList& out) {
  const DType t = c.attr_dtype("out_type");
  DF_CHECK(t == DType::Int32 || t == DType::Int64, "[size] out_type must be int32 or int64, got ", dtype_name(t));
  out.push_back({t, Shape{}});
}


}  // namespace

DF_DEFINE_OP(BroadcastLike, {.num_inputs = 2, .infer = infer_broadcast_like,
                             .vjp = [](const OpCall& c, const TensorList& g) {
                               return TensorList{sum_to(g[0], c.in(0)), Tensor()};
                             }, .strings = true});
DF_DEFINE_OP(ReshapeLike, {.num_inputs = 2, .infer = infer_reshape_like,
                           .vjp = [](const OpCall& c, const TensorList& g) {
                             return TensorList{reshape_like(g[0], c.in(0)), Tensor()};
                           },
                           .view_output = true, .strings = true});
DF_DEFINE_OP(SumToLike, {.num_inputs = 2, .infer = infer_sum_to_like,
                         .vjp = [](const OpCall& c, const TensorList& g) {
                           return TensorList{broadcast_like(g[0], c.in(0)), Tensor()};
                         },
                         .view_output = true});  // with no dims to sum, a view of g
DF_DEFINE_OP(Size, {.attrs = {{"out_type", DType::Int64}}, .infer = infer_size, .non_differentiable = true,
                    .strings = true});

Tensor broadcast_like(const Tensor& x, const Tensor& like) { return dispatch1(OpId::BroadcastLike, {x, like}); }
Tensor reshape_like(const Tensor& x, const Tensor& like) { return dispatch1(OpId::ReshapeLike, {x, like}); }
Tensor sum_to_like(const Tensor& g, const Tensor& like) { return dispatch1(OpId::SumToLike, {g, like}); }
Tensor size(const Tensor& x, DType out_type) { return dispatch1(OpId::Size, {x}, {{"out_type", out_type}}); }

// Static when like's shape is known (a reduce_sum and reshape with fixed attributes, which
// also work on a g with unknown dims); otherwise decided when the graph runs.
Tensor sum_to(const Tensor& g, const Tensor& like) {
  if (like.shape().is_fully_defined()) return sum_to(g, like.shape());
  return sum_to_like(g, like);
}

}  // namespace deepflow
