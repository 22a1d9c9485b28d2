// SPDX-License-Identifier: Apache-2.0
// What calibration sees of one tensor, and the range each calibration method makes of it.
// Shared by the TF Lite converter (calibrate.cpp) and the serving optimizer.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "deepflow/quantize/converter.h"

namespace deepflow::quantize::detail {

/// A tensor's calibrated range (valid when seen).
struct Range {
  double min = 0, max = 0;
  bool seen = false;
};

/// One tensor's running min / max, the averages of each sample's min and max, and a
/// reservoir of up to 65536 of its values (for the percentile and entropy methods).
class RangeObserver {
 public:
  /// `who` starts its error messages ("[lite::convert]").
  explicit RangeObserver(std::string who) : who_(std::move(who)) {}
  /// One sample's n values; keep_values feeds the reservoir. A non-finite value is an error.
  void add(const float* v, int64_t n, bool keep_values, std::mt19937_64& rng);
  int64_t samples() const { return samples_; }
  /// The range by `method` (Calibration in converter.h); percentile for kPercentile.
  Range range(Calibration method, double percentile) const;
  /// Whether `method` needs the values themselves (add's keep_values).
  static bool needs_values(Calibration method) {
    return method == Calibration::kPercentile || method == Calibration::kEntropy;
  }

 private:
  std::string who_;
  double min_ = 0, max_ = 0, sum_min_ = 0, sum_max_ = 0;
  int64_t samples_ = 0, values_ = 0;
  std::vector<float> reservoir_;
};

}  // namespace deepflow::quantize::detail
