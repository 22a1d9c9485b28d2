// SPDX-License-Identifier: Apache-2.0
// Neural-network composites (tf.nn): softmax, cross-entropies, normalizations,
// dropout. Each is built from public ops, so gradients of every order follow.
#include "deepflow/ops/op.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

void check_floating(const char* op, const Tensor& t, const char* what) {
  DF_CHECK(is_floating(t.dtype()), "[", op, "] expects a floating dtype for ", what, ", got ",
           dtype_name(t.dtype()));
}

// Checks the rank and returns the normalized axis, with the error naming `op`.
int64_t class_axis(const char* op, const Tensor& logits, int64_t axis) {
  DF_CHECK(logits.rank() >= 1, "[", op, "] logits must have rank >= 1, got shape ", logits.shape());
  return normalize_axis(op, axis, logits.rank());
}

// logits - max(logits) along axis; the max is a constant for autodiff (it cancels out).
Tensor shift_by_max(const Tensor& logits, int64_t axis) {
  return logits - stop_gradient(reduce_max(logits, {axis}, /*keepdims=*/true));
}

void check_same_shape(const char* op, const Tensor& labels, const Tensor& logits) {
  DF_CHECK(labels.shape().compatible_with(logits.shape()), "[", op, "] labels ", labels.shape(), " and logits ",
           logits.shape(), " differ");
  DF_CHECK(labels.dtype() == logits.dtype(), "[", op, "] labels are ", dtype_name(labels.dtype()),
           " but logits are ", dtype_name(logits.dtype()));
}

// gamma or beta as a [c] vector for the fused layer_norm primitive (ones / zeros when
// undefined), or an undefined tensor when it is not one value per channel of x.
Tensor per_channel(const Tensor& t, const Tensor& x, double fill) {
  const int64_t c = x.dim(-1);
  if (!t.defined()) return c >= 0 && !x.is_symbolic() ? deepflow::fill(Shape{c}, fill, x.dtype()) : Tensor();
  // An unknown dim of t is taken to be c (layer_norm's infer checks it when the graph runs).
  if (t.dtype() != x.dtype() || t.rank() > x.rank() || t.rank() == 0 || c < 0 || (t.dim(-1) >= 0 && t.dim(-1) != c))
    return Tensor();
  for (int i = 0; i + 1 < t.rank(); ++i)
    if (t.dim(i) != 1) return Tensor();  // (an unknown dim may not be 1: the composite path)
  return t.rank() == 1 ? t : reshape(t, Shape{c});
}

}  // namespace

// --- softmax --- logits [..] -> same shape; exp(x - max) / sum(exp(x - max)) along axis.
Tensor softmax(const Tensor& logits, int64_t axis) {
  check_floating("softmax", logits, "logits");
  int64_t a = class_axis("softmax", logits, axis);
  Tensor e = exp(shift_by_max(logits, a));
  return e / reduce_sum(e, {a}, true);
}

// --- log_softmax --- logits [..] -> same shape; (x - max) - log(sum(exp(x - max))).
Tensor log_softmax(const Tensor& logits, int64_t axis) {
  check_floating("log_softmax", logits, "logits");
  int64_t a = class_axis("log_softmax", logits, axis);
  Tensor s = shift_by_max(logits, a);
  return s - log(reduce_sum(exp(s), {a}, true));
}

// --- softmax_cross_entropy_with_logits --- labels, logits [..., c] -> [...].
// Labels are probabilities and get a gradient too (tf.nn v2).
Tensor softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits) {
  constexpr const char* kOp = "softmax_cross_entropy_with_logits";
  check_floating(kOp, logits, "logits");
  class_axis(kOp, logits, -1);
  check_same_shape(kOp, labels, logits);
  return neg(reduce_sum(labels * log_softmax(logits, -1), {-1}));
}

// --- sparse_softmax_cross_entropy_with_logits --- labels int [...], logits [..., c] -> [...].
Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits) {
  constexpr const char* kOp = "sparse_softmax_cross_entropy_with_logits";
  check_floating(kOp, logits, "logits");
  class_axis(kOp, logits, -1);
  DF_CHECK(labels.dtype() == DType::Int32 || labels.dtype() == DType::Int64, "[", kOp,
           "] expects int32 or int64 labels, got ", dtype_name(labels.dtype()));
  Shape batch = logits.shape();
  batch.erase(batch.rank() - 1);
  DF_CHECK(labels.shape().compatible_with(batch), "[", kOp, "] labels ", labels.shape(),
           " must have the shape of logits ", logits.shape(), " without its last dim");
  const int64_t classes = logits.dim(-1);
  DF_CHECK(classes >= 0, "[", kOp, "] needs a known number of classes, logits are ", logits.shape());
  // Concrete labels are checked here; symbolic ones would give a zero row (one_hot).
  if (!labels.is_symbolic()) {
    for (int64_t v : labels.to_vector<int64_t>())
      DF_CHECK(v >= 0 && v < classes, "[", kOp, "] received a label value of ", v,
               " which is outside the valid range of [0, ", classes, ")");
  }
  Tensor target = one_hot(labels, classes, 1, 0, -1, logits.dtype());
  return neg(reduce_sum(target * log_softmax(logits, -1), {-1}));
}

// --- sigmoid_cross_entropy_with_logits --- labels, logits same shape -> same shape.
// max(x, 0) - x * z + log1p(exp(-|x|)), with TF's selects so that the gradient
// at x = 0 is sigmoid(0) - z (relu and abs would give 0 there).
Tensor sigmoid_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits) {
  constexpr const char* kOp = "sigmoid_cross_entropy_with_logits";
  check_floating(kOp, logits, "logits");
  check_same_shape(kOp, labels, logits);
  Tensor zero = scalar_like(logits, 0);
  Tensor cond = greater_equal(logits, zero);
  Tensor relu_logits = where(cond, logits, zero);
  Tensor neg_abs_logits = where(cond, neg(logits), logits);
  return relu_logits - logits * labels + log1p(exp(neg_abs_logits));
}

// --- batch_normalization --- (x - mean) * scale / sqrt(variance + eps) + offset, broadcast.
// As tf.nn.batch_normalization: x * inv + (offset - mean * inv); offset or scale may be undefined.
Tensor batch_normalization(const Tensor& x, const Tensor& mean, const Tensor& variance, const Tensor& offset,
                           const Tensor& scale, double variance_epsilon) {
  check_floating("batch_normalization", x, "x");
  Tensor inv = rsqrt(variance + variance_epsilon);
  if (scale.defined()) inv = inv * scale;
  Tensor shift = offset.defined() ? offset - mean * inv : neg(mean * inv);
  return x * inv + shift;
}

// --- layer_normalization --- x -> same shape; moments over axes (kept), then gamma and beta.
Tensor layer_normalization(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Axes& axes,
                           double epsilon) {
  check_floating("layer_normalization", x, "x");
  DF_CHECK(!axes.empty(), "[layer_normalization] needs at least one axis");
  Axes norm;
  for (int64_t a : axes) norm.push_back(normalize_axis("layer_normalization", a, x.rank()));
  if (norm.size() == 1 && norm[0] == x.rank() - 1) {
    // The last axis alone with per-channel gamma and beta: the fused primitive (one pass, oneDNN).
    Tensor g = per_channel(gamma, x, 1.0), b = per_channel(beta, x, 0.0);
    if (g.defined() && b.defined()) return dispatch(OpId::LayerNorm, {x, g, b}, {{"epsilon", epsilon}})[0];
  }
  auto [mean, variance] = moments(x, norm, /*keepdims=*/true);
  Tensor y = (x - mean) * rsqrt(variance + epsilon);
  if (gamma.defined()) y = y * gamma;
  if (beta.defined()) y = y + beta;
  return y;
}

// --- dropout --- x -> same shape; keeps each element with probability 1 - rate, scaled by 1 / (1 - rate).
Tensor dropout(const Tensor& x, double rate, std::optional<int64_t> seed) {
  check_floating("dropout", x, "x");
  DF_CHECK(rate >= 0 && rate < 1, "[dropout] rate must be in [0, 1), got ", rate);
  if (rate == 0) return x;
  Tensor keep = greater_equal(random_uniform_like(x, 0, 1, x.dtype(), seed), scalar_like(x, rate));
  return where(keep, x * (1.0 / (1.0 - rate)), scalar_like(x, 0));
}

}  // namespace deepflow
