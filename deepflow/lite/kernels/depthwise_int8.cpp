// SPDX-License-Identifier: Apache-2.0
// The int8 depthwise kernel goes channel block (16) by channel block within an output row,
// so the block's weights, bias and requantization constants stay in registers across the
// row's pixels; each tap is a widening load, the offset add, one multiply and one add in
// int32 (exact, like the reference's sums). im2col is a copy per tap.
#include "deepflow/lite/kernels/depthwise_int8.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "deepflow/lite/kernels/gemm_int8.h"
#include "deepflow/lite/kernels/requant_simd.h"

namespace deepflow::lite {

namespace {
constexpr int kLanes = 16;
constexpr int kBlock = 32;        // channels per block of the interior path
constexpr int kSplitTables = 10;  // bias, multiplier, shifts, weight sums: even and odd
}  // namespace

namespace {
// Small copies (a first layer's few channels) in 8-byte words; large ones through the library.
inline void copy_bytes(int8_t* d, const int8_t* s, size_t n) {
  if (n >= 64) {
    std::memcpy(d, s, n);
    return;
  }
  for (; n >= 8; n -= 8, d += 8, s += 8) std::memcpy(d, s, 8);
  for (; n > 0; --n) *d++ = *s++;
}
inline void fill_bytes(int8_t* d, int8_t v, size_t n) {
  uint64_t word;
  std::memset(&word, v, 8);
  for (; n >= 8; n -= 8, d += 8) std::memcpy(d, &word, 8);
  for (; n > 0; --n) *d++ = v;
}
}  // namespace

#if DF_LITE_VNNI_BUILD
DF_LITE_INTRINSICS_BEGIN
namespace {
// im2col rows [lo, hi) when a window row (kw taps of c channels, dilation 1) is at most 64
// bytes: one masked load and store per window row, the taps outside the image blended to
// `pad` (masked-off bytes are never read, so the load may start before the image row).
DF_LITE_VNNI void im2col_rows_short(const ConvGeometry& g, const int8_t* in, int8_t pad, int8_t* dst,
                                    size_t row_stride, int64_t lo, int64_t hi) {
  const int run = g.kw * g.c;
  const size_t row_bytes = static_cast<size_t>(g.kh) * run;
  const __mmask64 full = run == 64 ? ~__mmask64{0} : (__mmask64{1} << run) - 1;
  const __m512i pads = _mm512_set1_epi8(pad);
  const __mmask64 tail = row_stride - row_bytes >= 64 ? ~__mmask64{0} : (__mmask64{1} << (row_stride - row_bytes)) - 1;
  // A patch row of at most 64 bytes (a first layer's 3x3x3) is built in one vector.
  const bool whole = row_stride <= 64;
  const __mmask64 patch = !whole ? 0 : row_stride == 64 ? ~__mmask64{0} : (__mmask64{1} << row_stride) - 1;
  for (int64_t r = lo; r < hi; ++r) {
    const int b = static_cast<int>(r / g.oh), oy = static_cast<int>(r % g.oh);
    for (int ox = 0; ox < g.ow; ++ox) {
      int8_t* d = dst + (static_cast<size_t>(r) * g.ow + ox) * row_stride;
      if (!whole) _mm512_mask_storeu_epi8(d + row_bytes, tail, _mm512_setzero_si512());
      const int x0 = ox * g.sw - g.pad_left;
      // Bytes [first, last) of the window row lie inside the image row.
      const int first = std::max(0, -x0) * g.c, last = std::min(g.kw, g.iw - x0) * g.c;
      const __mmask64 inside = last > first ? full & ~((__mmask64{1} << first) - 1) &
                                                  (last >= 64 ? ~__mmask64{0} : (__mmask64{1} << last) - 1)
                                            : 0;
      if (whole) {
        // The whole patch fits one vector: each window row's masked load lands at its place
        // (the load starts ky * run bytes early, masked off), then one store of the row.
        __m512i v = pads;
        for (int ky = 0; ky < g.kh; ++ky) {
          const int iy = oy * g.sh - g.pad_top + ky * g.dh;
          if (iy < 0 || iy >= g.ih) continue;
          const int8_t* src = in + ((static_cast<int64_t>(b) * g.ih + iy) * g.iw + x0) * g.c;
          v = _mm512_mask_loadu_epi8(v, inside << (ky * run), src - ky * run);
        }
        _mm512_mask_storeu_epi8(d, patch, v);
        continue;
      }
      for (int ky = 0; ky < g.kh; ++ky, d += run) {
        const int iy = oy * g.sh - g.pad_top + ky * g.dh;
        const __mmask64 m = iy < 0 || iy >= g.ih ? 0 : inside;
        const int8_t* src = in + ((static_cast<int64_t>(b) * g.ih + iy) * g.iw + x0) * g.c;
        const __m512i v = _mm512_mask_loadu_epi8(pads, m, src);
        _mm512_mask_storeu_epi8(d, full, v);
      }
    }
  }
}
}  // namespace
DF_LITE_INTRINSICS_END
#endif

void im2col_int8(ThreadPool& pool, const ConvGeometry& g, const int8_t* in, int8_t pad, int8_t* dst, size_t row_stride) {
  const size_t row_bytes = static_cast<size_t>(g.kh) * g.kw * g.c;
  const int64_t rows = static_cast<int64_t>(g.n) * g.oh;
  const int64_t grain = std::max<int64_t>(1, (64 << 10) / std::max<int64_t>(1, static_cast<int64_t>(row_bytes) * g.ow));
  const size_t c = static_cast<size_t>(g.c);
#if DF_LITE_VNNI_BUILD
  if (int8_vnni() && g.dw == 1 && g.kw * g.c <= 64) {
    pool.parallel_for(rows, grain, [&](int64_t lo, int64_t hi) { im2col_rows_short(g, in, pad, dst, row_stride, lo, hi); });
    return;
  }
#endif
  pool.parallel_for(rows, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int b = static_cast<int>(r / g.oh), oy = static_cast<int>(r % g.oh);
      for (int ox = 0; ox < g.ow; ++ox) {
        int8_t* d = dst + (static_cast<size_t>(r) * g.ow + ox) * row_stride;
        fill_bytes(d + row_bytes, 0, row_stride - row_bytes);
        const int x0 = ox * g.sw - g.pad_left;
        // The taps kx in [kx_lo, kx_hi) fall inside the row.
        int kx_lo = 0, kx_hi = g.kw;
        while (kx_lo < g.kw && x0 + g.dw * kx_lo < 0) ++kx_lo;
        while (kx_hi > kx_lo && x0 + g.dw * (kx_hi - 1) >= g.iw) --kx_hi;
        for (int ky = 0; ky < g.kh; ++ky, d += g.kw * c) {
          const int iy = oy * g.sh - g.pad_top + g.dh * ky;
          if (iy < 0 || iy >= g.ih) {
            fill_bytes(d, pad, g.kw * c);
            continue;
          }
          fill_bytes(d, pad, kx_lo * c);
          fill_bytes(d + kx_hi * c, pad, (g.kw - kx_hi) * c);
          const int8_t* row = in + ((static_cast<int64_t>(b) * g.ih + iy) * g.iw) * g.c;
          if (g.dw == 1) {  // the taps inside are one run of the input row
            copy_bytes(d + kx_lo * c, row + static_cast<int64_t>(x0 + kx_lo) * g.c, (kx_hi - kx_lo) * c);
          } else {
            for (int kx = kx_lo; kx < kx_hi; ++kx)
              copy_bytes(d + kx * c, row + static_cast<int64_t>(x0 + g.dw * kx) * g.c, c);
          }
        }
      }
    }
  });
}

void DepthwiseInt8::prepare(const int8_t* filter, int channels, int taps, const int32_t* bias,
                            const std::vector<QuantizedMultiplier>& multipliers, int32_t zp_out, int32_t lo, int32_t hi,
                            bool fast) {
  fast_ = fast;
  channels_ = channels;
  taps_ = taps;
  padded_ = (channels + kBlock - 1) / kBlock * kBlock;
  zp_out_ = zp_out;
  lo_ = lo;
  hi_ = hi;
  weights_.assign(static_cast<size_t>(taps) * padded_, 0);
  for (int t = 0; t < taps; ++t)
    for (int c = 0; c < channels; ++c)
      weights_[static_cast<size_t>(t) * padded_ + c] = filter[static_cast<size_t>(t) * channels + c];
  weight_sums_.assign(static_cast<size_t>(padded_), 0);
  for (int t = 0; t < taps; ++t)
    for (int c = 0; c < channels; ++c) weight_sums_[static_cast<size_t>(c)] += filter[static_cast<size_t>(t) * channels + c];
  // Per tap and block of 32 channels: the even channels' weights in the even int16 lanes
  // (odd lanes zero), then the odd channels' in the odd lanes.
  const int blocks = padded_ / kBlock;
  split_weights_.assign(static_cast<size_t>(taps) * blocks * 2 * kBlock, 0);
  for (int t = 0; t < taps; ++t)
    for (int c = 0; c < channels; ++c) {
      const size_t base = (static_cast<size_t>(t) * blocks + c / kBlock) * 2 * kBlock;
      split_weights_[base + (c % 2) * kBlock + c % kBlock] = filter[static_cast<size_t>(t) * channels + c];
    }
  bias_.assign(static_cast<size_t>(padded_), 0);
  mult_.assign(static_cast<size_t>(padded_), 0);
  lshift_.assign(static_cast<size_t>(padded_), 0);
  rshift_.assign(static_cast<size_t>(padded_), 0);
  multipliers_.assign(static_cast<size_t>(channels), {});
  any_left_ = false;
  for (int c = 0; c < channels; ++c) {
    const QuantizedMultiplier m = multipliers[multipliers.size() == 1 ? 0 : static_cast<size_t>(c)];
    multipliers_[static_cast<size_t>(c)] = m;
    if (bias) bias_[static_cast<size_t>(c)] = bias[c];
    mult_[static_cast<size_t>(c)] = m.multiplier;
    lshift_[static_cast<size_t>(c)] = m.shift > 0 ? m.shift : 0;
    rshift_[static_cast<size_t>(c)] = m.shift > 0 ? 0 : -m.shift;
    any_left_ = any_left_ || m.shift > 0;
  }
  real_.assign(static_cast<size_t>(padded_), 0.f);
  for (int c = 0; c < channels; ++c)
    real_[static_cast<size_t>(c)] = multiplier_value(multipliers_[static_cast<size_t>(c)]);
  split_real_.assign(static_cast<size_t>(blocks) * 2 * kLanes, 0.f);
  for (int b = 0; b < blocks; ++b)
    for (int parity = 0; parity < 2; ++parity)
      for (int j = 0; j < kLanes; ++j)
        split_real_[(static_cast<size_t>(b) * 2 + parity) * kLanes + j] = real_[static_cast<size_t>(b * kBlock + 2 * j + parity)];
  // The per-channel tables again, split into even and odd channels per block of 32.
  split_tables_.assign(static_cast<size_t>(blocks) * kSplitTables * kLanes, 0);
  const std::vector<int32_t>* tables[] = {&bias_, &mult_, &lshift_, &rshift_, &weight_sums_};
  for (int b = 0; b < blocks; ++b)
    for (int k = 0; k < 5; ++k)
      for (int parity = 0; parity < 2; ++parity)
        for (int j = 0; j < kLanes; ++j)
          split_tables_[((static_cast<size_t>(b) * 5 + k) * 2 + parity) * kLanes + j] =
              (*tables[k])[static_cast<size_t>(b * kBlock + 2 * j + parity)];
}

void DepthwiseInt8::rows_portable(const ConvGeometry& g, const int8_t* in, int32_t in_offset, int8_t* out, int64_t lo,
                                  int64_t hi) const {
  for (int64_t r = lo; r < hi; ++r) {
    const int b = static_cast<int>(r / g.oh), oy = static_cast<int>(r % g.oh);
    for (int c0 = 0; c0 < channels_; c0 += kLanes) {
      const int lanes = std::min(kLanes, channels_ - c0);
      for (int ox = 0; ox < g.ow; ++ox) {
        int32_t acc[kLanes];
        for (int j = 0; j < kLanes; ++j) acc[j] = bias_[static_cast<size_t>(c0 + j)];
        for (int ky = 0; ky < g.kh; ++ky) {
          const int iy = oy * g.sh - g.pad_top + g.dh * ky;
          if (iy < 0 || iy >= g.ih) continue;
          for (int kx = 0; kx < g.kw; ++kx) {
            const int ix = ox * g.sw - g.pad_left + g.dw * kx;
            if (ix < 0 || ix >= g.iw) continue;
            const int8_t* src = in + ((static_cast<int64_t>(b) * g.ih + iy) * g.iw + ix) * g.c + c0;
            const int32_t* w = weights_.data() + static_cast<size_t>(ky * g.kw + kx) * padded_ + c0;
            for (int j = 0; j < lanes; ++j) acc[j] += (src[j] + in_offset) * w[j];
          }
        }
        int8_t* dst = out + (r * g.ow + ox) * g.c + c0;
        for (int j = 0; j < lanes; ++j) {
          const auto c = static_cast<size_t>(c0 + j);
          const int32_t v = fast_ ? requantize_fast(acc[j], real_[c], zp_out_, lo_, hi_)
                                  : multiply_by_quantized_multiplier(acc[j], multipliers_[c]) + zp_out_;
          dst[j] = static_cast<int8_t>(std::clamp(v, lo_, hi_));
        }
      }
    }
  }
}

#if DF_LITE_VNNI_BUILD
DF_LITE_INTRINSICS_BEGIN
namespace {

// The [lo, hi) range of output positions whose whole window lies inside the input.
struct Inside {
  int lo, hi;
};
Inside inside(int out, int in, int kernel, int stride, int dilation, int pad_before) {
  const int span = dilation * (kernel - 1);
  int lo = (pad_before + stride - 1) / stride;                          // first o with o*s - pad >= 0
  int hi = in - 1 - span + pad_before >= 0 ? (in - 1 - span + pad_before) / stride + 1 : 0;  // o*s - pad + span <= in - 1
  lo = std::min(lo, out);
  hi = std::clamp(hi, lo, out);
  return {lo, hi};
}

// 32 channels' sums, even and odd channels apart, requantized and interleaved back to bytes.
template <bool kLeft>
DF_LITE_VNNI inline void store_block(int8_t* dst, __mmask32 valid, __m512i acc_e, __m512i acc_o, const RequantLanes& qe,
                                     const RequantLanes& qo, bool fast) {
  const __m128i be = fast ? requantize16_fast(acc_e, qe) : requantize16_biased<false, kLeft>(acc_e, qe);
  const __m128i bo = fast ? requantize16_fast(acc_o, qo) : requantize16_biased<false, kLeft>(acc_o, qo);
  const __m256i bytes =
      _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(be, bo)), _mm_unpackhi_epi8(be, bo), 1);
  _mm256_mask_storeu_epi8(dst, valid, bytes);
}

// Interior pixels (the whole window inside the image) go 32 channels at a time: each tap is
// one widening load to 32 int16 and two vpdpwssd, against the block's even-channel weights
// (odd lanes zero) and odd-channel weights, so the even and odd channels sum in two vectors
// of 16 int32; sums start at in_offset * (the channel's weight sum), so no offset is added
// per tap. Both halves are requantized and interleaved back. Border pixels take the same
// path one at a time, a tap outside the image reading the zero point.
template <bool kLeft>
DF_LITE_VNNI void depthwise_rows(const ConvGeometry& g, const DepthwiseTables& t, const int8_t* in, int32_t in_offset,
                                 int8_t* out, int64_t lo, int64_t hi) {
  const __m512i off = _mm512_set1_epi32(in_offset);
  const __m512i zp16 = _mm512_set1_epi16(static_cast<int16_t>(-in_offset));
  const Inside cols = inside(g.ow, g.iw, g.kw, g.sw, g.dw, g.pad_left);
  const Inside rows = inside(g.oh, g.ih, g.kh, g.sh, g.dh, g.pad_top);
  const int taps = g.kh * g.kw;
  const int blocks = t.padded / kBlock;
  int32_t tap_off[64];  // each tap's offset (elements) from the window's first pixel
  for (int ky = 0; ky < g.kh; ++ky)
    for (int kx = 0; kx < g.kw; ++kx) tap_off[ky * g.kw + kx] = ((ky * g.dh) * g.iw + kx * g.dw) * g.c;
  for (int64_t r = lo; r < hi; ++r) {
    const int b = static_cast<int>(r / g.oh), oy = static_cast<int>(r % g.oh);
    const int8_t* image = in + static_cast<int64_t>(b) * g.ih * g.iw * g.c;
    const bool row_inside = oy >= rows.lo && oy < rows.hi;
    for (int blk = 0; blk < blocks; ++blk) {
      const int c0 = blk * kBlock;
      const int lanes = std::min(kBlock, t.channels - c0);
      const __mmask32 valid32 = lanes == kBlock ? ~__mmask32{0} : static_cast<__mmask32>((uint64_t{1} << lanes) - 1);
      const int32_t* st = t.split + static_cast<size_t>(blk) * kSplitTables * kLanes;
      auto table = [&](int k, int parity) { return st + (k * 2 + parity) * kLanes; };
      RequantLanes qe = requant_lanes(table(0, 0), table(1, 0), table(2, 0), table(3, 0), t.zp_out, t.lo, t.hi, false);
      RequantLanes qo = requant_lanes(table(0, 1), table(1, 1), table(2, 1), table(3, 1), t.zp_out, t.lo, t.hi, false);
      qe.real = _mm512_loadu_ps(t.split_real + static_cast<size_t>(blk) * 2 * kLanes);
      qo.real = _mm512_loadu_ps(t.split_real + (static_cast<size_t>(blk) * 2 + 1) * kLanes);
      // The interior sums start at bias + in_offset * (the channel's weight sum).
      const __m512i seed_e = _mm512_add_epi32(qe.bias, _mm512_mullo_epi32(off, _mm512_loadu_si512(table(4, 0))));
      const __m512i seed_o = _mm512_add_epi32(qo.bias, _mm512_mullo_epi32(off, _mm512_loadu_si512(table(4, 1))));
      const int16_t* wb = t.split_weights + static_cast<size_t>(blk) * 2 * kBlock;
      const size_t tap_stride = static_cast<size_t>(blocks) * 2 * kBlock;
      for (int ox = 0; ox < g.ow; ++ox) {
        int8_t* dst = out + (r * g.ow + ox) * g.c + c0;
        if (row_inside && ox >= cols.lo && ox < cols.hi) {
          const int8_t* origin =
              image + (static_cast<int64_t>(oy * g.sh - g.pad_top) * g.iw + (ox * g.sw - g.pad_left)) * g.c + c0;
          // Two pixels at once where the next is inside too: four independent sum chains
          // (vpdpwssd's latency) and one load of each tap's weights.
          const bool pair = ox + 1 < cols.hi;
          const ptrdiff_t next = static_cast<ptrdiff_t>(g.sw) * g.c;
          __m512i acc_e = seed_e, acc_o = seed_o, acc_e2 = seed_e, acc_o2 = seed_o;
          for (int k = 0; k < taps; ++k) {
            const int16_t* w = wb + k * tap_stride;
            const __m512i we = _mm512_loadu_si512(w), wo = _mm512_loadu_si512(w + kBlock);
            const __m512i x = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(valid32, origin + tap_off[k]));
            dpwssd(acc_e, x, we);
            dpwssd(acc_o, x, wo);
            if (pair) {
              const __m512i x2 = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(valid32, origin + next + tap_off[k]));
              dpwssd(acc_e2, x2, we);
              dpwssd(acc_o2, x2, wo);
            }
          }
          store_block<kLeft>(dst, valid32, acc_e, acc_o, qe, qo, t.fast);
          if (pair) {
            store_block<kLeft>(dst + g.c, valid32, acc_e2, acc_o2, qe, qo, t.fast);
            ++ox;
          }
          continue;
        }
        // A border pixel: the same sums, each tap outside the image reading the zero point
        // (whose x + in_offset is 0), so the seed's in_offset * sum w stays right.
        __m512i acc_e = seed_e, acc_o = seed_o;
        for (int ky = 0; ky < g.kh; ++ky) {
          const int iy = oy * g.sh - g.pad_top + g.dh * ky;
          const bool row_ok = iy >= 0 && iy < g.ih;
          for (int kx = 0; kx < g.kw; ++kx) {
            const int ix = ox * g.sw - g.pad_left + g.dw * kx;
            const int16_t* w = wb + (ky * g.kw + kx) * tap_stride;
            const __m512i x = row_ok && ix >= 0 && ix < g.iw
                                  ? _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(
                                        valid32, image + (static_cast<int64_t>(iy) * g.iw + ix) * g.c + c0))
                                  : zp16;
            dpwssd(acc_e, x, _mm512_loadu_si512(w));
            dpwssd(acc_o, x, _mm512_loadu_si512(w + kBlock));
          }
        }
        store_block<kLeft>(dst, valid32, acc_e, acc_o, qe, qo, t.fast);
      }
    }
  }
}
}  // namespace
DF_LITE_INTRINSICS_END
#endif

void DepthwiseInt8::rows_vnni(const ConvGeometry& g, const int8_t* in, int32_t in_offset, int8_t* out, int64_t lo,
                              int64_t hi) const {
#if DF_LITE_VNNI_BUILD
  const DepthwiseTables t{channels_, padded_, split_weights_.data(), split_tables_.data(), split_real_.data(),
                          zp_out_,   lo_,     hi_,                  fast_};
  // tap_off holds up to 64 taps: larger windows take the portable loop.
  if (g.kh * g.kw > 64) return rows_portable(g, in, in_offset, out, lo, hi);
  (any_left_ ? &depthwise_rows<true> : &depthwise_rows<false>)(g, t, in, in_offset, out, lo, hi);
#else
  rows_portable(g, in, in_offset, out, lo, hi);
#endif
}

void DepthwiseInt8::run(ThreadPool& pool, const ConvGeometry& g, const int8_t* in, int32_t in_offset, int8_t* out) const {
  const bool vnni = int8_vnni();
  const int64_t work = static_cast<int64_t>(g.ow) * g.c * g.kh * g.kw;  // per output row
  const int64_t grain = std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(work, 1));
  pool.parallel_for(static_cast<int64_t>(g.n) * g.oh, grain, [&](int64_t lo, int64_t hi) {
    if (vnni) {
      rows_vnni(g, in, in_offset, out, lo, hi);
    } else {
      rows_portable(g, in, in_offset, out, lo, hi);
    }
  });
}

}  // namespace deepflow::lite
