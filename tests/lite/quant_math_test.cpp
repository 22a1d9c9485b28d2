// SPDX-License-Identifier: Apache-2.0
// LiteRT's fixed-point helpers at their edges: exact powers of two, the carry of a
// multiplier that rounds to 2^31, INT32_MIN saturation, ties away from zero.
#include <gtest/gtest.h>

#include "deepflow/lite/kernels/quant_math.h"

namespace deepflow::lite {
namespace {

TEST(LiteQuantMath, QuantizeMultiplier) {
  const auto half = quantize_multiplier(0.5);
  EXPECT_EQ(half.multiplier, 1 << 30);
  EXPECT_EQ(half.shift, 0);
  const auto two = quantize_multiplier(2.0);
  EXPECT_EQ(two.multiplier, 1 << 30);
  EXPECT_EQ(two.shift, 2);
  // Just below 1: q * 2^31 rounds to 2^31, which carries into the exponent.
  const auto almost_one = quantize_multiplier(1.0 - 1e-12);
  EXPECT_EQ(almost_one.multiplier, 1 << 30);
  EXPECT_EQ(almost_one.shift, 1);
  EXPECT_EQ(quantize_multiplier(0.0).multiplier, 0);
  EXPECT_EQ(quantize_multiplier(1e-12).multiplier, 0);  // exponent below -31
  EXPECT_EQ(quantize_multiplier(1e12).shift, 30);        // clamped (single rounding)
}

TEST(LiteQuantMath, SaturatingAndRoundingSteps) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kMin, kMin), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(saturating_rounding_doubling_high_mul(1 << 30, 1 << 30), 1 << 29);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-(1 << 30), 1 << 30), -(1 << 29));
  EXPECT_EQ(rounding_divide_by_pot(5, 1), 3);    // 2.5 -> 3
  EXPECT_EQ(rounding_divide_by_pot(-5, 1), -3);  // -2.5 -> -3
  EXPECT_EQ(rounding_divide_by_pot(7, 2), 2);    // 1.75 -> 2
  EXPECT_EQ(rounding_divide_by_pot(-6, 2), -2);  // -1.5 -> -2
  EXPECT_EQ(rounding_divide_by_pot(9, 0), 9);
  // Exponents past 31 (an int8 softmax over 1000 classes): the quotient rounded, not x >> (e % 32).
  EXPECT_EQ(rounding_divide_by_pot(0x7fffffff, 33), 0);      // 0.25 -> 0
  EXPECT_EQ(rounding_divide_by_pot(-0x7fffffff, 33), 0);
  EXPECT_EQ(rounding_divide_by_pot(0x7fffffff, 32), 0);      // 0.49999... -> 0
  EXPECT_EQ(rounding_divide_by_pot(-0x7fffffff - 1, 32), -1);  // -0.5 -> -1 (away from zero)
  EXPECT_EQ(rounding_divide_by_pot(0x40000000, 31), 1);      // 0.5 -> 1
}

TEST(LiteQuantMath, MultiplyByQuantizedMultiplierMatchesTheRealProduct) {
  // The double rounding's known case: 1 * 0.25 is 0.25 but comes out 1 (SRDHM rounds 0.5 up);
  // rounding once gives 0. Ties of the single rounding go up: 2 * 0.25 = 0.5 -> 1, -0.5 -> 0.
  EXPECT_EQ(multiply_by_quantized_multiplier(1, quantize_multiplier(0.25)), 1);
  EXPECT_EQ(multiply_by_quantized_multiplier_single_rounding(1, quantize_multiplier(0.25)), 0);
  EXPECT_EQ(multiply_by_quantized_multiplier_single_rounding(2, quantize_multiplier(0.25)), 1);
  EXPECT_EQ(multiply_by_quantized_multiplier_single_rounding(-2, quantize_multiplier(0.25)), 0);
  for (double m : {0.0001234, 0.25, 0.7071, 0.999, 1.5, 3.75}) {
    const auto qm = quantize_multiplier(m);
    for (int32_t x : {0, 1, -1, 1000, -1000, 123456, -987654}) {
      const double want = static_cast<double>(x) * m;
      // Rounding twice (the high multiply, then the shift) may land one step off.
      EXPECT_LE(std::abs(multiply_by_quantized_multiplier(x, qm) - want), 1.0 + 1e-6 * std::abs(want))
          << "x " << x << " m " << m;
      EXPECT_LE(std::abs(multiply_by_quantized_multiplier_single_rounding(x, qm) - want), 0.5 + 1e-6 * std::abs(want))
          << "x " << x << " m " << m;
    }
  }
}

}  // namespace
}  // namespace deepflow::lite
