// SPDX-License-Identifier: Apache-2.0
// Calibration: the float model runs in deepflow_lite with every tensor preserved, once per
// representative sample, and each float tensor's values feed its range (TFLite calibrates
// the float .tflite model the same way, so the ranges are those of the ops that will run).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "deepflow/core/error.h"
#include "deepflow/lite/interpreter.h"
#include "deepflow/quantize/quantize_internal.h"

namespace deepflow::quantize::detail {

namespace {

constexpr size_t kReservoir = 65536;

// What one tensor has seen so far.
struct Observer {
  double min = 0, max = 0, sum_min = 0, sum_max = 0;
  int64_t samples = 0, values = 0;
  std::vector<float> reservoir;

  void add(const float* v, int64_t n, bool keep_values, std::mt19937_64& rng) {
    if (n == 0) return;
    double lo = v[0], hi = v[0];
    for (int64_t i = 0; i < n; ++i) {
      DF_CHECK(std::isfinite(v[i]), "[lite::convert] calibration: a sample made a non-finite value (", v[i], ")");
      lo = std::min(lo, double(v[i])), hi = std::max(hi, double(v[i]));
    }
    min = samples ? std::min(min, lo) : lo;
    max = samples ? std::max(max, hi) : hi;
    sum_min += lo, sum_max += hi;
    ++samples;
    if (!keep_values) return;
    for (int64_t i = 0; i < n; ++i, ++values) {  // reservoir sampling (Algorithm R)
      if (reservoir.size() < kReservoir) {
        reservoir.push_back(v[i]);
      } else {
        const uint64_t j = rng() % uint64_t(values + 1);
        if (j < kReservoir) reservoir[j] = v[i];
      }
    }
  }
};

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

lite::Tensor& input_for(lite::Interpreter& interp, size_t i) { return interp.tensor(interp.inputs()[i]); }

}  // namespace

std::vector<Range> calibrate(const LiteModel& m, const ConverterOptions& options, int keep,
                             std::vector<TensorList>* kept) {
  auto model = lite::Model::from_buffer(serialize_lite_model(m), "calibration model");
  lite::Interpreter interp(model);
  interp.set_preserve_all_tensors(true);
  const bool values = options.calibration == Calibration::kPercentile || options.calibration == Calibration::kEntropy;
  std::vector<Observer> obs(m.tensors.size());
  std::mt19937_64 rng(0);
  int count = 0;
  while (std::optional<TensorList> sample = options.representative_dataset()) {
    DF_CHECK(sample->size() == m.inputs.size(), "[lite::convert] representative dataset sample ", count, " has ",
             sample->size(), " tensors; the model has ", m.inputs.size(), " inputs");
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      const LiteTensor& want = m.tensors[size_t(m.inputs[i])];
      const Tensor& x = (*sample)[i];
      const std::vector<int32_t>& sig = want.shape_signature.empty() ? want.shape : want.shape_signature;
      bool ok = x.dtype() == DType::Float32 && x.shape().rank() == int(sig.size());
      for (size_t d = 0; ok && d < sig.size(); ++d) ok = sig[d] < 0 || sig[d] == x.shape()[int(d)];
      std::string expected = "[";
      for (size_t d = 0; d < sig.size(); ++d) expected += (d ? ", " : "") + (sig[d] < 0 ? std::string("?") : std::to_string(sig[d]));
      DF_CHECK(ok, "[lite::convert] representative dataset sample ", count, ", input ", i, " ('", m.input_names[i],
               "'): ", dtype_name(x.dtype()), x.shape(), " does not fit the model's float32", expected, "]");
      std::vector<int> shape(x.shape().begin(), x.shape().end());
      interp.resize_input_tensor(interp.inputs()[i], shape);
    }
    interp.allocate_tensors();
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      Tensor x = (*sample)[i];
      std::memcpy(input_for(interp, i).data_ptr, x.raw_data(), x.nbytes());
    }
    interp.invoke();
    for (size_t t = 0; t < m.tensors.size(); ++t) {
      const LiteTensor& lt = m.tensors[t];
      if (lt.constant || lt.type != fb::TensorType::FLOAT32) continue;
      const lite::Tensor& got = interp.tensor(int(t));
      if (!got.data_ptr) continue;
      obs[t].add(got.data<float>(), got.num_elements(), values, rng);
    }
    if (kept && count < keep) kept->push_back(*sample);
    ++count;
  }
  DF_CHECK(count > 0, "[lite::convert] the representative dataset yielded no samples");
  std::vector<Range> out(m.tensors.size());
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    const Observer& o = obs[t];
    if (!o.samples) continue;
    Range& r = out[t];
    r.seen = true;
    switch (options.calibration) {
      case Calibration::kMinMax: r.min = o.min, r.max = o.max; break;
      case Calibration::kMovingAverage: r.min = o.sum_min / double(o.samples), r.max = o.sum_max / double(o.samples); break;
      case Calibration::kPercentile:
        r.min = percentile_of(o.reservoir, 100.0 - options.percentile);
        r.max = percentile_of(o.reservoir, options.percentile);
        break;
      case Calibration::kEntropy: {
        const double th = entropy_threshold(o.reservoir);
        r.min = o.min < 0 ? -th : 0.0, r.max = o.max > 0 ? th : 0.0;
        break;
      }
    }
  }
  return out;
}

}  // namespace deepflow::quantize::detail
