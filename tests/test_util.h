// SPDX-License-Identifier: Apache-2.0
// Small helpers shared by the test files.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "deepflow/core/error.h"
#include "deepflow/ops/ops.h"

namespace deepflow::testing {

/// The message of the deepflow::Error that f throws, or "no error".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

/// Element-wise |a - b| <= tol * (1 + |b|), compared in float64.
inline void expect_near(const Tensor& a, const Tensor& b, double tol) {
  ASSERT_EQ(a.shape(), b.shape());
  std::vector<double> va = cast(a, DType::Float64).to_vector<double>();
  std::vector<double> vb = cast(b, DType::Float64).to_vector<double>();
  for (size_t i = 0; i < va.size(); ++i) EXPECT_NEAR(va[i], vb[i], tol * (1 + std::abs(vb[i]))) << "at " << i;
}

}  // namespace deepflow::testing
