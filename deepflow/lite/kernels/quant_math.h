// SPDX-License-Identifier: Apache-2.0
// LiteRT's integer arithmetic for int8 kernels, bit for bit (lite.md §2.2-2.3): a real
// multiplier as a Q31 fixed-point M with a power-of-two shift, and the multiply of the
// reference kernels in its two forms: rounding twice (SRDHM, then a rounding shift; the
// reference kernels of LiteRT's default build) and rounding once (a 64-bit product and one
// shift: TFLITE_SINGLE_ROUNDING builds, and ruy's GEMM). In the ai-edge-litert 2.3 wheel even
// the reference resolver runs int8 FULLY_CONNECTED through ruy, so that kernel rounds once;
// CONV_2D, DEPTHWISE_CONV_2D, ADD, MUL and SOFTMAX round twice (tests/lite checks each).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace deepflow::lite {

/// A real multiplier m = M * 2^(shift - 31), M in [2^30, 2^31) (or 0).
struct QuantizedMultiplier {
  int32_t multiplier = 0;
  int shift = 0;  // > 0: a left shift
};

/// TFLite's QuantizeMultiplier: frexp, M = round(q * 2^31) (half away from zero), M == 2^31
/// carried into the exponent, exponents below -31 flushed to zero, exponents above 30 (a
/// multiplier past 2^30, which no int8 kernel has) clamped to 30 with M = 2^31 - 1.
inline QuantizedMultiplier quantize_multiplier(double m) {
  if (m == 0.0) return {};
  int e = 0;
  const double q = std::frexp(m, &e);
  auto big = static_cast<int64_t>(std::round(q * static_cast<double>(int64_t{1} << 31)));
  if (big == (int64_t{1} << 31)) {
    big /= 2;
    ++e;
  }
  if (e < -31) return {};
  if (e > 30) return {std::numeric_limits<int32_t>::max(), 30};
  return {static_cast<int32_t>(big), e};
}

/// SaturatingRoundingDoublingHighMul (ARM VQRDMULH): the high 32 bits of 2ab, rounded.
inline int32_t saturating_rounding_doubling_high_mul(int32_t a, int32_t b) {
  if (a == b && a == std::numeric_limits<int32_t>::min()) return std::numeric_limits<int32_t>::max();
  const int64_t p = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  const int32_t nudge = p >= 0 ? (1 << 30) : (1 - (1 << 30));
  return static_cast<int32_t>((p + nudge) / (int64_t{1} << 31));
}

/// RoundingDivideByPOT: x / 2^e rounded to nearest, ties away from zero. In 64 bits, so that
/// exponents of 32 and more (an int8 SOFTMAX over a thousand classes asks for 33) give the
/// rounded quotient (0 or +-1) instead of a shift past the width.
inline int32_t rounding_divide_by_pot(int32_t x, int e) {
  const int64_t mask = (int64_t{1} << e) - 1;
  const int64_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return static_cast<int32_t>((static_cast<int64_t>(x) >> e) + ((static_cast<int64_t>(x) & mask) > threshold ? 1 : 0));
}

/// MultiplyByQuantizedMultiplier rounding twice (LiteRT's reference kernels).
inline int32_t multiply_by_quantized_multiplier(int32_t x, QuantizedMultiplier m) {
  const int left = m.shift > 0 ? m.shift : 0;
  const int right = m.shift > 0 ? 0 : -m.shift;
  return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x * (1 << left), m.multiplier), right);
}

/// MultiplyByQuantizedMultiplier rounding once: (x * M + 2^(30 - shift)) >> (31 - shift),
/// ties toward +infinity (ruy's, and TFLITE_SINGLE_ROUNDING builds').
inline int32_t multiply_by_quantized_multiplier_single_rounding(int32_t x, QuantizedMultiplier m) {
  const int total = 31 - m.shift;
  const int64_t round = int64_t{1} << (total - 1);
  return static_cast<int32_t>((static_cast<int64_t>(x) * m.multiplier + round) >> total);
}

/// The float requantization of LiteRT's default (XNNPACK) kernels, deepflow's fast int8
/// mode: acc * real clamped to [lo, hi] - zp, rounded to nearest even, plus zp.
inline int32_t requantize_fast(int32_t acc, float real, int32_t zp, int32_t lo, int32_t hi) {
  float v = static_cast<float>(acc) * real;
  v = std::min(std::max(v, static_cast<float>(lo - zp)), static_cast<float>(hi - zp));
  return static_cast<int32_t>(std::nearbyint(v)) + zp;
}

/// A quantized multiplier's value, M * 2^(shift - 31), as a float.
inline float multiplier_value(QuantizedMultiplier m) {
  return static_cast<float>(std::ldexp(static_cast<double>(m.multiplier), m.shift - 31));
}

}  // namespace deepflow::lite
