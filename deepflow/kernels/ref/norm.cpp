// SPDX-License-Identifier: Apache-2.0
// Reference kernels of the fused normalizations: one channel (batch norm) or one
// row (layer norm) at a time, two-pass statistics, everything accumulated in double.
// x is float32, float64, float16 or bfloat16; statistics are U = compute_t<T>.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

template <class T> double to_d(T v) { return double(compute_t<T>(v)); }
template <class T> T from_d(double v) { return T(static_cast<compute_t<T>>(v)); }

// x [..., c] as n rows of c channels.
struct Rows {
  int64_t n, c;
};
Rows rows_of(const Tensor& x) {
  const int64_t c = x.dim(-1);
  return {c > 0 ? x.size() / c : 0, c};
}

// --- fused_batch_norm --- x [n, c] viewed channels last -> y, batch_mean, batch_variance, saved_variance.
template <class T>
void fused_batch_norm_ref(const OpCall& c, TensorList& out) {
  using U = compute_t<T>;
  const auto [n, ch] = rows_of(c.in(0));
  const T* x = c.in(0).data<T>();
  const U *scale = c.in(1).data<U>(), *offset = c.in(2).data<U>();
  T* y = out[0].data<T>();
  U *bmean = out[1].data<U>(), *bvar = out[2].data<U>(), *saved = out[3].data<U>();
  const double eps = c.attr_float("epsilon");
  const bool training = c.attr_bool("is_training");
  for (int64_t k = 0; k < ch; ++k) {
    double mean, var;
    if (training) {
      double s = 0, ss = 0;
      for (int64_t i = 0; i < n; ++i) s += to_d(x[i * ch + k]);
      mean = n > 0 ? s / double(n) : std::numeric_limits<double>::quiet_NaN();
      for (int64_t i = 0; i < n; ++i) ss += (to_d(x[i * ch + k]) - mean) * (to_d(x[i * ch + k]) - mean);
      var = n > 0 ? ss / double(n) : std::numeric_limits<double>::quiet_NaN();
      bmean[k] = U(mean);
      bvar[k] = U(var * double(n) / double(std::max<int64_t>(n - 1, 1)));
    } else {
      mean = double(c.in(3).data<U>()[k]);
      var = double(c.in(4).data<U>()[k]);
      bmean[k] = U(mean);
      bvar[k] = U(var);
    }
    saved[k] = U(var);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < n; ++i)
      y[i * ch + k] = from_d<T>((to_d(x[i * ch + k]) - mean) * inv * double(scale[k]) + double(offset[k]));
  }
}

// --- fused_batch_norm_grad --- dy, x [n, c]; scale, mean, variance [c] -> dx, dscale, doffset.
template <class T>
void fused_batch_norm_grad_ref(const OpCall& c, TensorList& out) {
  using U = compute_t<T>;
  const auto [n, ch] = rows_of(c.in(1));
  const T *dy = c.in(0).data<T>(), *x = c.in(1).data<T>();
  const U *scale = c.in(2).data<U>(), *mean = c.in(3).data<U>(), *var = c.in(4).data<U>();
  T* dx = out[0].data<T>();
  U *dscale = out[1].data<U>(), *doffset = out[2].data<U>();
  const double eps = c.attr_float("epsilon");
  const bool training = c.attr_bool("is_training");
  for (int64_t k = 0; k < ch; ++k) {
    const double m = double(mean[k]), r = 1.0 / std::sqrt(double(var[k]) + eps), g = double(scale[k]);
    double sa = 0, sb = 0;
    for (int64_t i = 0; i < n; ++i) {
      sa += to_d(dy[i * ch + k]);
      sb += to_d(dy[i * ch + k]) * (to_d(x[i * ch + k]) - m) * r;
    }
    doffset[k] = U(sa);
    dscale[k] = U(sb);
    for (int64_t i = 0; i < n; ++i) {
      const double d = to_d(dy[i * ch + k]), xh = (to_d(x[i * ch + k]) - m) * r;
      dx[i * ch + k] = from_d<T>(training ? g * r * (d - sa / double(n) - xh * sb / double(n)) : g * r * d);
    }
  }
}

// --- layer_norm --- x [rows, c]; gamma, beta [c] -> y, mean [rows], inv_std [rows].
template <class T>
void layer_norm_ref(const OpCall& c, TensorList& out) {
  using U = compute_t<T>;
  const Tensor& xt = c.in(0);
  const int64_t ch = xt.dim(-1), n = ch > 0 ? xt.size() / ch : out[1].size();
  const T *x = xt.data<T>(), *gamma = c.in(1).data<T>(), *beta = c.in(2).data<T>();
  T* y = out[0].data<T>();
  U *mean = out[1].data<U>(), *inv_std = out[2].data<U>();
  const double eps = c.attr_float("epsilon");
  for (int64_t i = 0; i < n; ++i) {
    const T* row = x + i * ch;
    double s = 0, ss = 0;
    for (int64_t k = 0; k < ch; ++k) s += to_d(row[k]);
    const double m = s / double(ch);  // NaN for c = 0, like the mean of nothing
    for (int64_t k = 0; k < ch; ++k) ss += (to_d(row[k]) - m) * (to_d(row[k]) - m);
    const double r = 1.0 / std::sqrt(ss / double(ch) + eps);
    mean[i] = U(m);
    inv_std[i] = U(r);
    for (int64_t k = 0; k < ch; ++k)
      y[i * ch + k] = from_d<T>((to_d(row[k]) - m) * r * to_d(gamma[k]) + to_d(beta[k]));
  }
}

// --- layer_norm_grad --- dy, x [rows, c]; gamma [c]; mean, inv_std [rows] -> dx, dgamma, dbeta.
template <class T>
void layer_norm_grad_ref(const OpCall& c, TensorList& out) {
  using U = compute_t<T>;
  const auto [n, ch] = rows_of(c.in(1));
  const T *dy = c.in(0).data<T>(), *x = c.in(1).data<T>(), *gamma = c.in(2).data<T>();
  const U *mean = c.in(3).data<U>(), *inv_std = c.in(4).data<U>();
  T* dx = out[0].data<T>();
  std::vector<double> dgamma(size_t(ch), 0.0), dbeta(size_t(ch), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const double m = double(mean[i]), r = double(inv_std[i]);
    double mg = 0, mgx = 0;
    for (int64_t k = 0; k < ch; ++k) {
      const double d = to_d(dy[i * ch + k]), xh = (to_d(x[i * ch + k]) - m) * r, gg = d * to_d(gamma[k]);
      mg += gg;
      mgx += gg * xh;
      dgamma[size_t(k)] += d * xh;
      dbeta[size_t(k)] += d;
    }
    mg /= double(ch);
    mgx /= double(ch);
    for (int64_t k = 0; k < ch; ++k) {
      const double xh = (to_d(x[i * ch + k]) - m) * r, gg = to_d(dy[i * ch + k]) * to_d(gamma[k]);
      dx[i * ch + k] = from_d<T>(r * (gg - mg - xh * mgx));
    }
  }
  for (int64_t k = 0; k < ch; ++k) {
    out[1].data<T>()[k] = from_d<T>(dgamma[size_t(k)]);
    out[2].data<T>()[k] = from_d<T>(dbeta[size_t(k)]);
  }
}

template <template <class> class K>
void run_float(const OpCall& c, TensorList& out) {
  DF_DISPATCH_FLOAT(c.in(c.def->id == OpId::FusedBatchNormGrad || c.def->id == OpId::LayerNormGrad ? 1 : 0).dtype(),
                    c.name(), [&] { K<scalar_t>::run(c, out); });
}
template <class T> struct BnFwd { static void run(const OpCall& c, TensorList& o) { fused_batch_norm_ref<T>(c, o); } };
template <class T> struct BnBwd { static void run(const OpCall& c, TensorList& o) { fused_batch_norm_grad_ref<T>(c, o); } };
template <class T> struct LnFwd { static void run(const OpCall& c, TensorList& o) { layer_norm_ref<T>(c, o); } };
template <class T> struct LnBwd { static void run(const OpCall& c, TensorList& o) { layer_norm_grad_ref<T>(c, o); } };

}  // namespace

DF_REGISTER_KERNEL(FusedBatchNorm, {.run = run_float<BnFwd>});
DF_REGISTER_KERNEL(FusedBatchNormGrad, {.run = run_float<BnBwd>});
DF_REGISTER_KERNEL(LayerNorm, {.run = run_float<LnFwd>});
DF_REGISTER_KERNEL(LayerNormGrad, {.run = run_float<LnBwd>});

}  // namespace deepflow
