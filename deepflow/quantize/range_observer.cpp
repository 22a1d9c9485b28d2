// SPDX-License-Identifier: Apache-2.0
#include "deepflow/quantize/range_observer.h"

#include <algorithm>
#include <cmath>

#include "deepflow/core/error.h"

namespace deepflow::quantize::detail {

namespace {

constexpr size_t kReservoir = 65536;

double percentile_of(std::vector<float> v, double p) {
  const size_t k = size_t(std::clamp(p / 100.0, 0.0, 1.0) * double(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(k), v.end());
  return v[k];
}

// TensorRT's entropy calibration on the histogram of |x|: the threshold (a bin edge from
// 128 bins up) whose clipped-and-quantized distribution is closest in KL divergence.
double entropy_threshold(const std::vector<float>& v) {
  constexpr int kBins = 2048, kLevels = 128;
  double amax = 0;
  for (float x : v) amax = std::max(amax, std::fabs(double(x)));
  if (amax == 0) return 0;
  std::vector<double> hist(kBins, 0.0);
  for (float x : v) hist[size_t(std::min(kBins - 1, int(std::fabs(double(x)) / amax * kBins)))] += 1;
  double best = amax, best_kl = INFINITY;
  for (int i = kLevels; i <= kBins; ++i) {
    std::vector<double> p(hist.begin(), hist.begin() + i);
    for (int k = i; k < kBins; ++k) p[size_t(i - 1)] += hist[size_t(k)];  // outliers clip into the last bin
    // q: p's first i bins merged into kLevels levels, spread back over their nonzero bins.
    std::vector<double> q(size_t(i), 0.0);
    const double per = double(i) / kLevels;
    for (int lv = 0; lv < kLevels; ++lv) {
      const int a = int(lv * per), b = std::max(a + 1, int((lv + 1) * per));
      double sum = 0;
      int nonzero = 0;
      for (int k = a; k < b && k < i; ++k) sum += hist[size_t(k)], nonzero += hist[size_t(k)] > 0;
      for (int k = a; k < b && k < i; ++k)
        if (hist[size_t(k)] > 0) q[size_t(k)] = sum / nonzero;
    }
    double ps = 0, qs = 0;
    for (int k = 0; k < i; ++k) ps += p[size_t(k)], qs += q[size_t(k)];
    double kl = 0;
    for (int k = 0; k < i; ++k) {
      if (p[size_t(k)] == 0) continue;
      const double pk = p[size_t(k)] / ps, qk = q[size_t(k)] > 0 ? q[size_t(k)] / qs : 1e-12;
      kl += pk * std::log(pk / qk);
    }
    if (kl < best_kl) best_kl = kl, best = (i + 0.5) * amax / kBins;
  }
  return best;
}

}  // namespace

void RangeObserver::add(const float* v, int64_t n, bool keep_values, std::mt19937_64& rng) {
  if (n == 0) return;
  double lo = v[0], hi = v[0];
  for (int64_t i = 0; i < n; ++i) {
    DF_CHECK(std::isfinite(v[i]), who_, " calibration: a sample made a non-finite value (", v[i], ")");
    lo = std::min(lo, double(v[i])), hi = std::max(hi, double(v[i]));
  }
  min_ = samples_ ? std::min(min_, lo) : lo;
  max_ = samples_ ? std::max(max_, hi) : hi;
  sum_min_ += lo, sum_max_ += hi;
  ++samples_;
  if (!keep_values) return;
  for (int64_t i = 0; i < n; ++i, ++values_) {  // reservoir sampling (Algorithm R)
    if (reservoir_.size() < kReservoir) {
      reservoir_.push_back(v[i]);
    } else {
      const uint64_t j = rng() % uint64_t(values_ + 1);
      if (j < kReservoir) reservoir_[j] = v[i];
    }
  }
}

Range RangeObserver::range(Calibration method, double percentile) const {
  Range r;
  if (!samples_) return r;
  r.seen = true;
  switch (method) {
    case Calibration::kMinMax: r.min = min_, r.max = max_; break;
    case Calibration::kMovingAverage: r.min = sum_min_ / double(samples_), r.max = sum_max_ / double(samples_); break;
    case Calibration::kPercentile:
      r.min = percentile_of(reservoir_, 100.0 - percentile);
      r.max = percentile_of(reservoir_, percentile);
      break;
    case Calibration::kEntropy: {
      const double th = entropy_threshold(reservoir_);
      r.min = min_ < 0 ? -th : 0.0, r.max = max_ > 0 ? th : 0.0;
      break;
    }
  }
  return r;
}

}  // namespace deepflow::quantize::detail

namespace deepflow::quantize {

Calibration parse_calibration(const std::string& name, const char* who) {
  if (name == "min_max" || name == "minmax") return Calibration::kMinMax;
  if (name == "moving_average") return Calibration::kMovingAverage;
  if (name == "percentile") return Calibration::kPercentile;
  if (name == "entropy") return Calibration::kEntropy;
  fail(who, " calibration must be \"min_max\", \"moving_average\", \"percentile\" or \"entropy\", got \"", name,
       "\"");
}

}  // namespace deepflow::quantize
