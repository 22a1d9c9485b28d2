// SPDX-License-Identifier: Apache-2.0
// Activation functions: composites of the unary and binary primitives.
//
// Each is written so that its gradient at the kinks is TensorFlow's rule and
// so that no branch of a `where` can overflow (an inf in the unused branch
// would turn the gradient into 0 * inf = NaN).
#include <numbers>

#include "deepflow/ops/ops.h"

namespace deepflow {

// --- relu6 --- min(max(x, 0), 6); gradient 0 at both kinks (TF: 0 < x < 6).
// minimum's tie goes to its first argument, here the constant 6, so 6 is a 0.
Tensor relu6(const Tensor& x) { return minimum(scalar_like(x, 6), relu(x)); }

// --- elu --- x if x > 0 else alpha * (exp(x) - 1); elu'(0) = 1 (TF's EluGrad: x < 0 takes the exp branch).
Tensor elu(const Tensor& x, double alpha) {
  Tensor zero = scalar_like(x, 0);
  Tensor neg_part = expm1(minimum(x, zero)) * alpha;  // min keeps exp finite for large x
  return where(less(x, zero), neg_part, x);
}

// --- selu --- scale * elu(x, alpha) with the constants of Klambauer et al. (2017).
Tensor selu(const Tensor& x) {
  constexpr double kAlpha = 1.6732632423543772848170429916717;
  constexpr double kScale = 1.0507009873554804934193349852946;
  return elu(x, kAlpha) * kScale;
}

// --- gelu --- x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); approximate:
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as tf.nn.gelu.
Tensor gelu(const Tensor& x, bool approximate) {
  if (approximate) {
    constexpr double kSqrt2OverPi = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;
    Tensor inner = (x + mul(square(x), x) * 0.044715) * kSqrt2OverPi;
    return mul(x * 0.5, 1.0 + tanh(inner));
  }
  return mul(x * 0.5, 1.0 + erf(x * (1.0 / std::numbers::sqrt2)));
}

// --- softplus --- log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)), which never overflows.
// |x| is written max(x, -x) so that both ties go to x: the gradient at 0 is then
// 1 - 1 * 0.5 = 0.5 = sigmoid(0), the true derivative (relu and abs would give 0).
Tensor softplus(const Tensor& x) {
  Tensor abs_x = maximum(x, neg(x));
  return maximum(x, scalar_like(x, 0)) + log1p(exp(neg(abs_x)));
}

// --- leaky_relu --- x if x > 0 else alpha * x; the gradient at 0 is alpha (TF's LeakyReluGrad).
Tensor leaky_relu(const Tensor& x, double alpha) {
  return where(greater(x, scalar_like(x, 0)), x, x * alpha);
}

}  // namespace deepflow
