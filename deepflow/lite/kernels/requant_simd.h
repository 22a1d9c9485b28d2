// SPDX-License-Identifier: Apache-2.0
// quant_math.h's requantization on 16 int32 lanes (AVX-512), lane for lane the same results:
// for the int8 GEMM's and the int8 depthwise convolution's epilogues. Functions of the
// AVX-512 VNNI target (DF_LITE_VNNI); callers check int8_vnni() before calling them.
#pragma once

#include <cstdint>

#include "deepflow/lite/kernels/quant_math.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define DF_LITE_VNNI_BUILD 1
#define DF_LITE_VNNI __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni")))
#endif

namespace deepflow::lite {

#if DF_LITE_VNNI_BUILD
// GCC 12's AVX-512 intrinsics seed some results with a self-initialized "undefined" vector,
// which -Wuninitialized reports once they are inlined: code of intrinsics goes between these.
#if defined(__clang__)
#define DF_LITE_INTRINSICS_BEGIN _Pragma("clang diagnostic push") _Pragma("clang diagnostic ignored \"-Wuninitialized\"")
#define DF_LITE_INTRINSICS_END _Pragma("clang diagnostic pop")
#else
#define DF_LITE_INTRINSICS_BEGIN                                   \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wuninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#define DF_LITE_INTRINSICS_END _Pragma("GCC diagnostic pop")
#endif
DF_LITE_INTRINSICS_BEGIN
/// acc += the 4-byte dot products of unsigned a and signed b, per 32-bit lane (vpdpbusd). In
/// asm: GCC 12 copies the accumulator around each intrinsic call, which costs the int8 GEMM's
/// inner loop more than the multiplies.
DF_LITE_VNNI inline void dpbusd(__m512i& acc, __m512i a, __m512i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
}
/// acc += the 2-element dot products of signed 16-bit a and b, per 32-bit lane (vpdpwssd).
DF_LITE_VNNI inline void dpwssd(__m512i& acc, __m512i a, __m512i b) {
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
}

/// One vector of 16 output columns' requantization constants, computed once per tile so the
/// per-row work is the arithmetic alone. Both rounding forms come down to one 64-bit sum and
/// shift per product p = x * M (even and odd lanes apart):
/// - once: (p + 2^(t-1)) >> t;
/// - twice (SRDHM, then RDBPOT by e): SRDHM's nudge (2^30, or 1 - 2^30 below zero) and
///   truncating division are r = (p + 2^30) >> 31 for every p (M >= 0, so its saturating case
///   never occurs); RDBPOT is (r + 2^(e-1) - [r < 0]) >> e for e > 0; nested floors of
///   integer divisions compose, so the result is (p + 2^30 + 2^(30+e) - [p < -2^30] 2^31) >>
///   (31 + e), and (p + 2^30) >> 31 for e = 0.
struct RequantLanes {
  __m512i bias, mult, mult_odd, zp, lo, hi, lshift;
  __m512i add_even, add_odd;    // the rounding constant
  __m512i corr_even, corr_odd;  // twice: 2^31 where e > 0, subtracted when p < -2^30
  __m512i sh_even, sh_odd;      // the shift
  __m512i add_zp_even, add_zp_odd;  // add + zp * 2^shift: the zero point added in the same shift
  bool fold_zp;                 // every shift is at most 54, so add_zp cannot overflow
  bool clamp;                   // [lo, hi] is narrower than int8's range
  __m512 real;                  // the fast path: each column's multiplier as a float
  __m512 lo_less_zp, hi_less_zp;
};

/// The constants of columns [0, 16) of padded per-column tables (16 readable values each):
/// bias, multiplier, left shift (rounding twice) and right shift: RDBPOT's exponent e
/// (twice) or the total shift t (once).
DF_LITE_VNNI inline RequantLanes requant_lanes(const int32_t* bias, const int32_t* mult, const int32_t* lshift,
                                               const int32_t* rshift, int32_t zp, int32_t lo, int32_t hi,
                                               bool single) {
  RequantLanes c;
  c.bias = _mm512_loadu_si512(bias);
  c.mult = _mm512_loadu_si512(mult);
  c.mult_odd = _mm512_srli_epi64(c.mult, 32);
  c.zp = _mm512_set1_epi32(zp);
  c.lo = _mm512_set1_epi32(lo);
  c.hi = _mm512_set1_epi32(hi);
  c.lshift = _mm512_loadu_si512(lshift);
  const __m512i rs = _mm512_loadu_si512(rshift);
  const __m512i one = _mm512_set1_epi64(1);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i shifts[2] = {_mm512_and_si512(rs, _mm512_set1_epi64(0xFFFFFFFF)), _mm512_srli_epi64(rs, 32)};
  __m512i add[2], corr[2], sh[2];
  for (int h = 0; h < 2; ++h) {
    const __m512i e = shifts[h];
    if (single) {
      sh[h] = e;
      add[h] = _mm512_sllv_epi64(one, _mm512_sub_epi64(e, one));
      corr[h] = zero;
    } else {
      const __mmask8 positive = _mm512_cmpgt_epi64_mask(e, zero);
      sh[h] = _mm512_add_epi64(e, _mm512_set1_epi64(31));
      // 2^(30+e) where e > 0 (a shift by 30 + 0 would be wrong there: masked to zero).
      add[h] = _mm512_add_epi64(_mm512_set1_epi64(int64_t{1} << 30),
                                _mm512_maskz_sllv_epi64(positive, _mm512_set1_epi64(int64_t{1} << 30), e));
      corr[h] = _mm512_maskz_mov_epi64(positive, _mm512_set1_epi64(int64_t{1} << 31));
    }
  }
  c.add_even = add[0], c.add_odd = add[1];
  c.corr_even = corr[0], c.corr_odd = corr[1];
  c.sh_even = sh[0], c.sh_odd = sh[1];
  // (v >> s) + zp == (v + zp * 2^s) >> s; with |p| < 2^62 and s <= 54 the sum stays in int64.
  const __m512i zp64 = _mm512_set1_epi64(zp);
  c.add_zp_even = _mm512_add_epi64(c.add_even, _mm512_sllv_epi64(zp64, c.sh_even));
  c.add_zp_odd = _mm512_add_epi64(c.add_odd, _mm512_sllv_epi64(zp64, c.sh_odd));
  const __m512i limit = _mm512_set1_epi64(54);
  c.fold_zp = _mm512_cmpgt_epi64_mask(c.sh_even, limit) == 0 && _mm512_cmpgt_epi64_mask(c.sh_odd, limit) == 0;
  c.clamp = lo > -128 || hi < 127;
  c.real = _mm512_setzero_ps();
  c.lo_less_zp = _mm512_set1_ps(static_cast<float>(lo - zp));
  c.hi_less_zp = _mm512_set1_ps(static_cast<float>(hi - zp));
  return c;
}

// Even lanes of lo's 64-bit results and odd lanes of hi's (their low halves), as 16 int32.
DF_LITE_VNNI inline __m512i merge_halves(__m512i lo, __m512i hi) {
  const __m512i pick = _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
  return _mm512_permutex2var_epi32(lo, pick, hi);
}

/// The constants of one multiplier for all 16 lanes (elementwise kernels), rounding twice
/// (single: once), with a zero bias.
DF_LITE_VNNI inline RequantLanes requant_lanes_uniform(QuantizedMultiplier m, bool single, int32_t zp, int32_t lo,
                                                       int32_t hi) {
  int32_t zeros[16] = {}, mult[16], lshift[16], rshift[16];
  for (int j = 0; j < 16; ++j) {
    mult[j] = m.multiplier;
    lshift[j] = single || m.shift <= 0 ? 0 : m.shift;
    rshift[j] = single ? 31 - m.shift : (m.shift > 0 ? 0 : -m.shift);
  }
  return requant_lanes(zeros, mult, lshift, rshift, zp, lo, hi, single);
}

/// MultiplyByQuantizedMultiplier per lane (RequantLanes says how). kSingle: rounding once.
/// kLeft: some lane's multiplier exceeds 1 (x is shifted left first, rounding twice).
/// with_zp: the zero point is added too (c.fold_zp must hold).
template <bool kSingle, bool kLeft>
DF_LITE_VNNI inline __m512i multiply_lanes(__m512i x, const RequantLanes& c, bool with_zp = false) {
  if constexpr (kLeft && !kSingle) x = _mm512_sllv_epi32(x, c.lshift);
  const __m512i qe = _mm512_mul_epi32(x, c.mult);
  const __m512i qo = _mm512_mul_epi32(_mm512_srli_epi64(x, 32), c.mult_odd);
  __m512i pe = _mm512_add_epi64(qe, with_zp ? c.add_zp_even : c.add_even);
  __m512i po = _mm512_add_epi64(qo, with_zp ? c.add_zp_odd : c.add_odd);
  if constexpr (!kSingle) {
    const __m512i limit = _mm512_set1_epi64(-(int64_t{1} << 30));
    pe = _mm512_mask_sub_epi64(pe, _mm512_cmplt_epi64_mask(qe, limit), pe, c.corr_even);
    po = _mm512_mask_sub_epi64(po, _mm512_cmplt_epi64_mask(qo, limit), po, c.corr_odd);
  }
  return merge_halves(_mm512_srav_epi64(pe, c.sh_even), _mm512_srav_epi64(po, c.sh_odd));
}

/// r (zp already added when zp_added) clamped to [lo, hi], as bytes: the saturating
/// narrowing clamps to int8's range by itself.
DF_LITE_VNNI inline __m128i clamp_to_int8(__m512i r, const RequantLanes& c, bool zp_added = false) {
  if (!zp_added) r = _mm512_add_epi32(r, c.zp);
  if (c.clamp) r = _mm512_min_epi32(_mm512_max_epi32(r, c.lo), c.hi);
  return _mm512_cvtsepi32_epi8(r);
}

/// requantize(x) for 16 columns whose sums already hold the bias, as bytes.
template <bool kSingle, bool kLeft>
DF_LITE_VNNI inline __m128i requantize16_biased(__m512i x, const RequantLanes& c) {
  return clamp_to_int8(multiply_lanes<kSingle, kLeft>(x, c, c.fold_zp), c, c.fold_zp);
}

/// The fast form (Interpreter::set_fast_int8), for sums holding the bias: acc * real clamped
/// to [lo, hi] - zp in float, rounded to nearest even, plus zp (XNNPACK's fp32 requantization).
DF_LITE_VNNI inline __m128i requantize16_fast(__m512i x, const RequantLanes& c) {
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(x), c.real);
  v = _mm512_min_ps(_mm512_max_ps(v, c.lo_less_zp), c.hi_less_zp);
  return _mm512_cvtsepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), c.zp));
}

/// requantize(acc + bias) for 16 columns, as bytes.
template <bool kSingle, bool kLeft>
DF_LITE_VNNI inline __m128i requantize16(__m512i acc, const RequantLanes& c) {
  return requantize16_biased<kSingle, kLeft>(_mm512_add_epi32(acc, c.bias), c);
}

DF_LITE_INTRINSICS_END
#endif

}  // namespace deepflow::lite
