// SPDX-License-Identifier: Apache-2.0
// The gemmlowp fixed-point functions LiteRT's reference int8 SOFTMAX is made of, bit for
// bit: a raw int32 with a fixed number of integer bits (Q<ib>.<31-ib>), products through
// SRDHM, exp on negative values by a Taylor step and a barrel shifter of exp(-2^k)
// constants, and 1/(1+x) by Newton-Raphson. Used by the int8 kernels only.
#pragma once

#include <cstdint>
#include <limits>

#include "deepflow/lite/kernels/quant_math.h"

namespace deepflow::lite::fixed {

/// x * 2^e, saturating for e > 0, rounding (ties away from zero) for e < 0.
inline int32_t saturating_rounding_mul_by_pot(int32_t x, int e) {
  if (e == 0) return x;
  if (e < 0) return rounding_divide_by_pot(x, -e);
  const int32_t threshold = static_cast<int32_t>((int64_t{1} << (31 - e)) - 1);
  if (x > threshold) return std::numeric_limits<int32_t>::max();
  if (x < -threshold) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(static_cast<uint32_t>(x) << e);
}

/// A product of two fixed-point values: its integer bits are the sum of theirs.
inline int32_t mul(int32_t a, int32_t b) { return saturating_rounding_doubling_high_mul(a, b); }

/// A value with `from` integer bits re-expressed with `to`.
inline int32_t rescale(int32_t x, int from, int to) { return saturating_rounding_mul_by_pot(x, from - to); }

/// exp(a) for a in [-1/4, 0), Q0.31 in and out.
inline int32_t exp_on_interval_between_negative_one_quarter_and_0_excl(int32_t a) {
  constexpr int32_t kConstantTerm = 1895147668;  // exp(-1/8)
  constexpr int32_t kOneThird = 715827883;
  const int32_t x = a + (1 << 28);  // the Taylor expansion is around -1/8
  const int32_t x2 = mul(x, x);
  const int32_t x3 = mul(x2, x);
  const int32_t x4 = mul(x2, x2);
  const int32_t x4_over_4 = saturating_rounding_mul_by_pot(x4, -2);
  const int32_t poly = saturating_rounding_mul_by_pot(mul(x4_over_4 + x3, kOneThird) + x2, -1);
  return kConstantTerm + mul(kConstantTerm, x + poly);
}

/// exp(a) for a <= 0 given in Q5.26; the result is Q0.31.
inline int32_t exp_on_negative_values_q5(int32_t a) {
  constexpr int kIntegerBits = 5;
  constexpr int kFractionalBits = 31 - kIntegerBits;
  constexpr int32_t kOneQuarter = int32_t{1} << (kFractionalBits - 2);
  constexpr int32_t kMask = kOneQuarter - 1;
  const int32_t a_mod_quarter_minus_one_quarter = (a & kMask) - kOneQuarter;
  int32_t result =
      exp_on_interval_between_negative_one_quarter_and_0_excl(rescale(a_mod_quarter_minus_one_quarter, kIntegerBits, 0));
  const int32_t remainder = a_mod_quarter_minus_one_quarter - a;
  // exp(-2^k) for k = -2 .. 4, in Q0.31: multiplied in for each bit of the remainder.
  constexpr int32_t kMultipliers[] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
  for (int k = -2; k <= 4; ++k)
    if (remainder & (int32_t{1} << (kFractionalBits + k))) result = mul(result, kMultipliers[k + 2]);
  return a == 0 ? std::numeric_limits<int32_t>::max() : result;
}

/// 1 / (1 + x) for x in [0, 1), Q0.31 in and out.
inline int32_t one_over_one_plus_x_for_x_in_0_1(int32_t a) {
  // RoundingHalfSum(a, 1.0): (a + 2^31 - 1) / 2, rounded away from zero.
  const int64_t sum = static_cast<int64_t>(a) + std::numeric_limits<int32_t>::max();
  const int32_t half_denominator = static_cast<int32_t>((sum + (sum >= 0 ? 1 : -1)) / 2);
  constexpr int32_t k48Over17 = 1515870810;   // Q2.29
  constexpr int32_t kNeg32Over17 = -1010580540;  // Q2.29
  int32_t x = k48Over17 + mul(half_denominator, kNeg32Over17);  // Q2.29
  constexpr int32_t kOneQ2 = int32_t{1} << 29;
  for (int i = 0; i < 3; ++i) {
    const int32_t half_denominator_times_x = mul(half_denominator, x);   // Q2.29
    const int32_t one_minus = kOneQ2 - half_denominator_times_x;         // Q2.29
    x = x + rescale(mul(x, one_minus), 4, 2);
  }
  // x / 2 exactly (Q1.30 with the same bits), then to Q0.31.
  return rescale(x, 1, 0);
}

/// 1 / x for x with `integer_digits` integer bits: a Q0.31 scale and the shift
/// (`bits_over_unit`) that goes with it (LiteRT's GetReciprocal).
inline int32_t reciprocal(int32_t x, int integer_digits, int* bits_over_unit) {
  const int headroom_plus_one = x == 0 ? 32 : __builtin_clz(static_cast<uint32_t>(x));
  *bits_over_unit = integer_digits - headroom_plus_one;
  const auto shifted_minus_one =
      static_cast<int32_t>((static_cast<uint32_t>(x) << headroom_plus_one) - (uint32_t{1} << 31));
  return one_over_one_plus_x_for_x_in_0_1(shifted_minus_one);
}

/// 1 / sqrt(x) for x > 1 as a Q0.31 multiplier and a shift (LiteRT's
/// GetInvSqrtQuantizedMultiplierExp: five Newton-Raphson steps in Q3.28 from a guess of 1);
/// reverse_shift -1 makes the shift a left shift, as LiteRT's RSQRT asks for.
inline void inv_sqrt_multiplier_exp(int32_t input, int reverse_shift, int32_t* multiplier, int* shift) {
  if (input <= 1) {  // 0 (invalid) and 1 (whose general case overflows) as LiteRT treats them
    *multiplier = std::numeric_limits<int32_t>::max();
    *shift = 0;
    return;
  }
  *shift = 11;
  while (input >= (1 << 29)) {
    input /= 4;
    ++*shift;
  }
  const unsigned max_left_shift_bits = static_cast<unsigned>(__builtin_clz(static_cast<uint32_t>(input))) - 1;
  const unsigned left_shift_bit_pairs = max_left_shift_bits / 2 - 1;
  *shift -= static_cast<int>(left_shift_bit_pairs);
  input <<= 2 * left_shift_bit_pairs;
  // Q3.28 throughout: products of two Q3 values are Q6, of three Q9, rescaled back to Q3.
  const int32_t fixed_input = input >> 1;
  const int32_t half_input = saturating_rounding_mul_by_pot(fixed_input, -1);
  constexpr int32_t kHalfThree = (1 << 28) + (1 << 27);  // 1.5
  int32_t x = 1 << 28;                                  // 1.0
  for (int i = 0; i < 5; ++i) {
    const int32_t x3 = rescale(mul(mul(x, x), x), 9, 3);
    x = rescale(mul(kHalfThree, x) - mul(half_input, x3), 6, 3);
  }
  constexpr int32_t kHalfSqrt2 = 1518500250;  // sqrt(2) / 2, Q0.31
  x = mul(x, kHalfSqrt2);
  *multiplier = x;
  if (*shift < 0) {
    *multiplier = static_cast<int32_t>(static_cast<uint32_t>(*multiplier) << -*shift);
    *shift = 0;
  }
  *shift *= reverse_shift;
}

}  // namespace deepflow::lite::fixed
