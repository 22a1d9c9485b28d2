// SPDX-License-Identifier: Apache-2.0
// Finite-difference gradient checking, in float64.
//
// gradcheck(f, inputs) projects the outputs of f onto fixed random weights,
// L = sum_k sum(f(x)_k * w_k), and compares dL/dx from GradientTape with central
// differences (L(x + eps) - L(x - eps)) / 2eps, element by element.
//
//   auto r = gradcheck([](const TensorList& x) { return TensorList{tanh(x[0])}; },
//                      {random_normal({3, 4}, 0, 1, DType::Float64)});
//   EXPECT_LE(r.max_error, 1e-6) << r.worst;
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "deepflow/ops/op.h"

namespace deepflow {

struct GradcheckResult {
  /// max over checked elements of |analytic - numeric| / max(1, |analytic|, |numeric|).
  double max_error = 0;
  /// Where the largest error is: "input 1 element 5: analytic 0.3 numeric 0.31".
  std::string worst;
};

using TensorFn = std::function<TensorList(const TensorList&)>;

/// Checks the inputs listed in `which` (all floating inputs when empty); every
/// checked input must be float64.
GradcheckResult gradcheck(const TensorFn& f, const TensorList& inputs, const std::vector<int>& which = {},
                          double eps = 1e-6);

}  // namespace deepflow
