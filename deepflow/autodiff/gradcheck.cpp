// SPDX-License-Identifier: Apache-2.0
#include "deepflow/autodiff/gradcheck.h"

#include <cmath>
#include <cstring>

#include "deepflow/autodiff/tape.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

// Sum of outputs projected on the weights; the weights are generated once per output.
double project(const TensorList& outs, const std::vector<std::vector<double>>& w) {
  double l = 0;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!is_floating(outs[k].dtype())) continue;
    for (int64_t i = 0; i < outs[k].size(); ++i) l += outs[k].flat(i) * w[k][size_t(i)];
  }
  return l;
}

}  // namespace

GradcheckResult gradcheck(const TensorFn& f, const TensorList& inputs, const std::vector<int>& which, double eps) {
  std::vector<int> idx = which;
  if (idx.empty())
    for (int i = 0; i < int(inputs.size()); ++i)
      if (is_floating(inputs[i].dtype())) idx.push_back(i);
  for (int i : idx)
    DF_CHECK(inputs[size_t(i)].dtype() == DType::Float64, "[gradcheck] input ", i, " must be float64, got ",
             dtype_name(inputs[size_t(i)].dtype()));

  // Analytic: the tape gradient of the projection.
  TensorList xs;
  for (const Tensor& t : inputs) xs.push_back(t.clone());
  std::vector<std::vector<double>> w;
  TensorList analytic;
  {
    GradientTape tape;
    for (int i : idx) tape.watch(xs[size_t(i)]);
    TensorList outs = f(xs);
    uint64_t state = 0x9E3779B97F4A7C15ull;
    Tensor loss;
    for (const Tensor& o : outs) {
      w.emplace_back(size_t(o.size()));
      if (!is_floating(o.dtype())) continue;
      for (double& v : w.back()) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        v = 0.5 + double(state >> 11) * (1.0 / 9007199254740992.0);  // in [0.5, 1.5)
      }
      Tensor term = reduce_sum(mul(o, constant(w.back(), o.shape(), o.dtype())));
      loss = loss.defined() ? add(loss, term) : term;
    }
    DF_CHECK(loss.defined(), "[gradcheck] the function has no floating output");
    TensorList sources;
    for (int i : idx) sources.push_back(xs[size_t(i)]);
    analytic = tape.gradient({loss}, sources, UnconnectedGradients::Zero);
  }

  GradcheckResult r;
  for (size_t s = 0; s < idx.size(); ++s) {
    Tensor& x = xs[size_t(idx[s])];
    double* p = x.data<double>();
    for (int64_t e = 0; e < x.size(); ++e) {
      const double orig = p[e];
      p[e] = orig + eps;
      double lp = project(f(xs), w);
      p[e] = orig - eps;
      double lm = project(f(xs), w);
      p[e] = orig;
      double numeric = (lp - lm) / (2 * eps);
      double a = analytic[s].flat(e);
      double err = std::fabs(a - numeric) / std::max({1.0, std::fabs(a), std::fabs(numeric)});
      if (!(err <= r.max_error)) {  // also catches NaN
        r.max_error = std::isnan(err) ? INFINITY : err;
        r.worst = detail::cat("input ", idx[s], " element ", e, ": analytic ", a, " numeric ", numeric);
      }
    }
  }
  return r;
}

}  // namespace deepflow
