// SPDX-License-Identifier: Apache-2.0
// Fused normalization primitives: TensorFlow's FusedBatchNormV3 (channels last,
// any rank >= 2) and layer normalization over the last axis, each with a
// gradient primitive whose own vjp is its closed-form derivative in public ops,
// so gradients of every order follow.
//
// Saved statistics: fused_batch_norm's 4th output is the biased variance used to
// normalize (the batch's in training, the given one in inference); layer_norm's
// 2nd and 3rd outputs are the per-row mean and inverse standard deviation.
// Statistics and batch-norm parameters are float32 for 16-bit x (TF's U), else x's dtype.
#include <algorithm>

#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

using detail::check_float;

DType stat_dtype(DType x) { return x == DType::Float16 || x == DType::BFloat16 ? DType::Float32 : x; }

Tensor cast_to(const Tensor& t, DType dt) { return t.dtype() == dt ? t : cast(t, dt); }

// Every dim of x but the last: the batch-norm reduction axes.
Axes leading_axes(int rank) {
  Axes a;
  for (int i = 0; i + 1 < rank; ++i) a.push_back(i);
  return a;
}

// True when t is concrete and all zeros: the tape's gradient of an unused output. Lets the
// vjps skip the statistics terms, which cost full passes over x, in the common case. Never
// while a tape records: a higher-order gradient may depend on the skipped terms.
bool all_zero(const Tensor& t) {
  if (t.is_symbolic() || detail::any_tape_recording()) return false;
  bool zero = true;
  DF_DISPATCH_FLOAT(t.dtype(), "all_zero", [&] {
    const scalar_t* p = t.data<scalar_t>();
    for (int64_t i = 0; i < t.size() && zero; ++i) zero = float(p[i]) == 0.0f;
  });
  return zero;
}

// The number of elements of x reduced into each element of stat, as a dtype scalar
// computed when the graph runs (x's shape is not fully known).
Tensor run_time_count(const Tensor& x, const Tensor& stat, DType dtype) {
  Tensor m = size(stat);
  return cast(div(size(x), maximum(m, scalar_like(m, 1))), dtype);
}

void check_x(const OpCall& c, const Tensor& x, int min_rank) {
  check_float(c, x, "x");
  DF_CHECK(x.rank() >= min_rank, "[", c.name(), "] x must have rank >= ", min_rank, " (channels last), got shape ",
           x.shape());
}

// A per-channel input [c] of dtype dt; `may_be_empty` also allows [0] (TF's empty training stats).
void check_channel(const OpCall& c, const Tensor& x, int i, const char* what, DType dt, bool may_be_empty = false) {
  const Tensor& t = c.in(i);
  DF_CHECK(t.dtype() == dt, "[", c.name(), "] ", what, " must be ", dtype_name(dt), " for ", dtype_name(x.dtype()),
           " x, got ", dtype_name(t.dtype()));
  if (may_be_empty && t.rank() == 1 && t.dim(0) == 0) return;
  DF_CHECK(t.shape().compatible_with(Shape{x.dim(-1)}), "[", c.name(), "] ", what, " has shape ", t.shape(),
           ", expected ", Shape{x.dim(-1)}, " (the channels of x ", x.shape(), ")");
}

// A per-row statistic: x [..., c] -> [...].
void check_rows(const OpCall& c, int i, const char* what, DType dt) {
  const Tensor& t = c.in(i);
  const Shape& x = c.in(1).shape();
  const Shape rows(x.begin(), x.end() - 1);
  DF_CHECK(t.dtype() == dt, "[", c.name(), "] ", what, " must be ", dtype_name(dt), ", got ", dtype_name(t.dtype()));
  DF_CHECK(t.shape().compatible_with(rows), "[", c.name(), "] ", what, " has shape ", t.shape(), ", expected ", rows,
           " (x ", x, " without its last dim)");
}

void check_dy(const OpCall& c) {
  const Tensor &dy = c.in(0), &x = c.in(1);
  DF_CHECK(dy.dtype() == x.dtype() && dy.shape().compatible_with(x.shape()), "[", c.name(), "] y_backprop ",
           dtype_name(dy.dtype()), dy.shape(), " does not match x ", dtype_name(x.dtype()), x.shape());
}

Shape channels_of(const Tensor& x) { return Shape{x.dim(-1)}; }

}  // namespace

// --- fused_batch_norm --- x [..., c] (T); scale, offset, mean, variance [c] (U; mean and
// variance may be [0] in training) -> y [..., c] (T), batch_mean, batch_variance, saved_variance [c] (U).
// training: batch statistics over every dim but the last; y uses the biased variance and
// batch_variance is corrected by n / max(n - 1, 1) (TF's FusedBatchNormV3); the stats of an
// empty x are NaN. inference: y uses mean and variance; the stat outputs are copies of them.
// Unlike TF, gradients reaching batch_mean / batch_variance flow back exactly (TF drops them).
DF_DEFINE_OP(FusedBatchNorm, {.num_inputs = 5, .attrs = {{"epsilon", 1e-3}, {"is_training", true}},
  .infer = [](const OpCall& c, TypeList& out) {
    const Tensor& x = c.in(0);
    check_x(c, x, 2);
    const DType u = stat_dtype(x.dtype());
    const bool training = c.attr_bool("is_training");
    check_channel(c, x, 1, "scale", u);
    check_channel(c, x, 2, "offset", u);
    check_channel(c, x, 3, "mean", u, training);
    check_channel(c, x, 4, "variance", u, training);
    out.push_back({x.dtype(), x.shape()});
    for (int i = 0; i < 3; ++i) out.push_back({u, channels_of(x)});
  },
  .vjp = [](const OpCall& c, const TensorList& g) {
    const Tensor &x = c.in(0), &scale = c.in(1);
    const bool training = c.attr_bool("is_training");
    const double eps = c.attr_float("epsilon");
    TensorList d = dispatch(OpId::FusedBatchNormGrad, {g[0], x, scale, c.out(1), c.out(3)},
                            {{"epsilon", eps}, {"is_training", training}});
    if (!training) {
      // y = (x - mean) * r * scale + offset with r = rsqrt(variance + eps); the stat outputs are copies.
      Tensor r = rsqrt(c.in(4) + eps);
      Tensor dmean = g[1] - d[2] * scale * r;
      Tensor dvar = g[2] + g[3] - 0.5 * d[1] * scale * square(r);
      return TensorList{d[0], d[1], d[2], dmean, dvar};
    }
    const bool gm = !all_zero(g[1]), gv = !all_zero(g[2]) || !all_zero(g[3]);
    if (gm || gv) {
      const DType u = scale.dtype();
      Tensor bessel, two_over_n, inv_n;
      if (x.shape().is_fully_defined()) {
        const double n = double(x.size() / std::max<int64_t>(x.dim(-1), 1));
        bessel = scalar(n / std::max(n - 1, 1.0), u), two_over_n = scalar(2.0 / n, u), inv_n = scalar(1.0 / n, u);
      } else {
        Tensor n = run_time_count(x, c.out(1), u);
        bessel = n / maximum(n - 1.0, scalar_like(n, 1)), two_over_n = 2.0 / n, inv_n = 1.0 / n;
      }
      // d mean / dx = 1 / n; d biased_variance / dx = 2 (x - mean) / n.
      Tensor coef = (g[2] * bessel + g[3]) * two_over_n;
      Tensor extra = (cast_to(x, scale.dtype()) - c.out(1)) * coef + g[1] * inv_n;
      d[0] = d[0] + cast_to(extra, x.dtype());
    }
    return TensorList{d[0], d[1], d[2], Tensor(), Tensor()};
  }});

FusedBatchNormResult fused_batch_norm(const Tensor& x, const Tensor& scale, const Tensor& offset, const Tensor& mean,
                                      const Tensor& variance, double epsilon, bool training) {
  DF_CHECK(x.defined() && scale.defined() && offset.defined(), "[fused_batch_norm] x, scale and offset are required");
  DF_CHECK(training || (mean.defined() && variance.defined()),
           "[fused_batch_norm] inference needs mean and variance");
  // Training ignores the given statistics: undefined ones become TF's empty tensors.
  auto stat = [&](const Tensor& t) { return t.defined() ? t : Tensor(Shape{0}, scale.dtype()); };
  TensorList out = dispatch(OpId::FusedBatchNorm, {x, scale, offset, stat(mean), stat(variance)},
                            {{"epsilon", epsilon}, {"is_training", training}});
  return {out[0], out[1], out[2]};
}

// --- fused_batch_norm_grad --- y_backprop, x [..., c] (T); scale, mean, variance [c] (U; the
// saved mean and biased variance) -> x_backprop [..., c] (T), scale_backprop, offset_backprop [c] (U).
// With S the sum over every dim but the last (n terms), r = rsqrt(variance + eps), xh = (x - mean) r:
//   offset_backprop = S(dy), scale_backprop = S(dy xh),
//   x_backprop = scale r (dy - S(dy) / n - xh S(dy xh) / n) in training, scale r dy in inference
// (mean and variance are treated as inputs; fused_batch_norm's vjp adds their dependence on x).
DF_DEFINE_OP(FusedBatchNormGrad, {.num_inputs = 5, .attrs = {{"epsilon", 1e-3}, {"is_training", true}},
  .infer = [](const OpCall& c, TypeList& out) {
    const Tensor& x = c.in(1);
    check_x(c, x, 2);
    check_dy(c);
    const DType u = stat_dtype(x.dtype());
    check_channel(c, x, 2, "scale", u);
    check_channel(c, x, 3, "mean", u);
    check_channel(c, x, 4, "variance", u);
    out.push_back({x.dtype(), x.shape()});
    out.push_back({u, channels_of(x)});
    out.push_back({u, channels_of(x)});
  },
  .vjp = [](const OpCall& c, const TensorList& g) {
    // The closed-form derivative of the formulas above w.r.t. (dy, x, scale, mean, variance),
    // given the gradients a, b, d of x_backprop, scale_backprop, offset_backprop.
    const DType t = c.in(1).dtype(), u = c.in(2).dtype();
    const Tensor &gamma = c.in(2), &m = c.in(3), &v = c.in(4), &b = g[1], &d = g[2];
    Tensor dy = cast_to(c.in(0), u), x = cast_to(c.in(1), u), a = cast_to(g[0], u);
    const Axes ax = leading_axes(x.rank());
    Tensor r = rsqrt(v + c.attr_float("epsilon"));
    Tensor xc = x - m, xh = xc * r, gr = gamma * r;
    Tensor e, ddy, gxh;
    if (c.attr_bool("is_training")) {
      Tensor mdy = reduce_mean(dy, ax), mdyxh = reduce_mean(dy * xh, ax);
      Tensor ma = reduce_mean(a, ax), maxh = reduce_mean(a * xh, ax);
      e = reduce_sum(a * (dy - mdy - xh * mdyxh), ax);
      ddy = gr * (a - ma - xh * maxh) + b * xh + d;
      gxh = dy * (b - gr * maxh) - a * (gr * mdyxh);
    } else {
      e = reduce_sum(a * dy, ax);
      ddy = gr * a + b * xh + d;
      gxh = dy * b;
    }
    Tensor dr = gamma * e + reduce_sum(gxh * xc, ax);
    return TensorList{cast_to(ddy, t), cast_to(gxh * r, t), r * e, neg(reduce_sum(gxh, ax) * r),
                      dr * (-0.5) * r * square(r)};
  }});

// --- layer_norm --- x [..., c]; gamma, beta [c] (x's dtype) -> y [..., c], mean [...], inv_std [...]
// (U). Normalizes over the last axis with the biased variance: y = (x - mean) inv_std gamma + beta,
// inv_std = rsqrt(variance + epsilon). Gradients reaching mean and inv_std flow back exactly.
DF_DEFINE_OP(LayerNorm, {.num_inputs = 3, .attrs = {{"epsilon", 1e-3}},
  .infer = [](const OpCall& c, TypeList& out) {
    const Tensor& x = c.in(0);
    check_x(c, x, 1);
    check_channel(c, x, 1, "gamma", x.dtype());
    check_channel(c, x, 2, "beta", x.dtype());
    const Shape rows(x.shape().begin(), x.shape().end() - 1);
    out.push_back({x.dtype(), x.shape()});
    out.push_back({stat_dtype(x.dtype()), rows});
    out.push_back({stat_dtype(x.dtype()), rows});
  },
  .vjp = [](const OpCall& c, const TensorList& g) {
    const Tensor &x = c.in(0), &gamma = c.in(1);
    TensorList d = dispatch(OpId::LayerNormGrad, {g[0], x, gamma, c.out(1), c.out(2)},
                            {{"epsilon", c.attr_float("epsilon")}});
    if (!all_zero(g[1]) || !all_zero(g[2])) {
      // d mean / dx = 1 / n; d inv_std / dx = -inv_std^3 (x - mean) / n.
      const Tensor& r = c.out(2);
      Tensor inv_n =
          x.dim(-1) >= 0 ? scalar(1.0 / double(x.dim(-1)), r.dtype()) : 1.0 / run_time_count(x, r, r.dtype());
      Tensor xc = cast_to(x, r.dtype()) - expand_dims(c.out(1), -1);
      Tensor extra = expand_dims(g[1] * inv_n, -1) - expand_dims(g[2] * r * square(r) * inv_n, -1) * xc;
      d[0] = d[0] + cast_to(extra, x.dtype());
    }
    return TensorList{d[0], d[1], d[2]};
  }});

// --- layer_norm_grad --- y_backprop, x [..., c]; gamma [c] (x's dtype); mean, inv_std [...] (U)
// -> x_backprop [..., c], gamma_backprop, beta_backprop [c] (x's dtype). Per row, with
// gg = dy gamma, xh = (x - mean) inv_std and M the mean over the last axis:
//   x_backprop = inv_std (gg - M(gg) - xh M(gg xh)); gamma_backprop, beta_backprop: sums over rows
// of dy xh and dy. mean and inv_std are inputs; layer_norm's vjp adds their dependence on x.
DF_DEFINE_OP(LayerNormGrad, {.num_inputs = 5, .attrs = {{"epsilon", 1e-3}},
  .infer = [](const OpCall& c, TypeList& out) {
    const Tensor& x = c.in(1);
    check_x(c, x, 1);
    check_dy(c);
    check_channel(c, x, 2, "gamma", x.dtype());
    check_rows(c, 3, "mean", stat_dtype(x.dtype()));
    check_rows(c, 4, "inv_std", stat_dtype(x.dtype()));
    out.push_back({x.dtype(), x.shape()});
    out.push_back({x.dtype(), channels_of(x)});
    out.push_back({x.dtype(), channels_of(x)});
  },
  .vjp = [](const OpCall& c, const TensorList& g) {
    // The closed-form derivative w.r.t. (dy, x, gamma, mean, inv_std) given the gradients a, b, d
    // of x_backprop, gamma_backprop, beta_backprop.
    const DType t = c.in(1).dtype(), u = c.in(3).dtype();
    Tensor dy = cast_to(c.in(0), u), x = cast_to(c.in(1), u), gamma = cast_to(c.in(2), u);
    Tensor a = cast_to(g[0], u), b = cast_to(g[1], u), d = cast_to(g[2], u);
    const Axes rows = leading_axes(x.rank());
    Tensor r = expand_dims(c.in(4), -1);
    Tensor xc = x - expand_dims(c.in(3), -1), xh = xc * r, gg = dy * gamma;
    Tensor mg = reduce_mean(gg, {-1}, true), mggxh = reduce_mean(gg * xh, {-1}, true);
    Tensor ma = reduce_mean(a, {-1}, true), maxh = reduce_mean(a * xh, {-1}, true);
    Tensor e = reduce_sum(a * (gg - mg - xh * mggxh), {-1});
    Tensor dgg = r * (a - ma - xh * maxh);
    Tensor gxh = b * dy - r * (a * mggxh + gg * maxh);
    Tensor ddy = dgg * gamma + b * xh + d;
    Tensor dgamma = rows.empty() ? dgg * dy : reduce_sum(dgg * dy, rows);  // empty axes would sum all
    return TensorList{cast_to(ddy, t), cast_to(gxh * r, t), cast_to(dgamma, t),
                      neg(reduce_sum(gxh, {-1}) * c.in(4)), e + reduce_sum(gxh * xc, {-1})};
  }});

}  // namespace deepflow
