// SPDX-License-Identifier: Apache-2.0
// The int8 GEMM: the VNNI kernel reads A in place when whole words of K are readable (each
// broadcast word flipped to unsigned); otherwise, and on the portable path, rows of A are
// packed per block (flipped, 4 consecutive k per 32-bit word, a tile of 8 rows word by
// word). Each pair of weight panels (32 columns, all of K: no K blocking, the int32 sums stay
// in registers until requantized) meets every row tile of the block. The VNNI micro-kernel holds 8 rows x 32 columns of
// sums in 16 zmm and does one vpdpbusd per row and panel for 4 steps of K; the epilogue
// requantizes 16 columns per vector (the two rounding forms of quant_math.h, lane for lane)
// and stores bytes. Threads take (row block, column chunk) tasks.
#include "deepflow/lite/kernels/gemm_int8.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "deepflow/lite/kernels/requant_simd.h"

namespace deepflow::lite {

namespace {

constexpr int kMr = 8;                  // rows per micro-kernel tile
constexpr int kNp = PackedInt8Weights::kPanel;
constexpr int kBlockBytes = 96 << 10;   // a block of packed A: up to this many bytes (L2)
constexpr int64_t kMacsPerTask = 1 << 18;  // less work than this is not worth a thread

// Rows [0, rows) of A (row i at a + i*lda) packed: tile t (8 rows, the last maybe fewer)
// at dst + t*8*k4, word g of row i at tile + (g*mr + i)*4, each byte a + 128.
void pack_a(const int8_t* a, int lda, int rows, int k, int k4, uint8_t* dst) {
  for (int r0 = 0; r0 < rows; r0 += kMr) {
    const int mr = std::min(kMr, rows - r0);
    uint8_t* tile = dst + static_cast<size_t>(r0) * k4;
    for (int i = 0; i < mr; ++i) {
      const int8_t* src = a + static_cast<ptrdiff_t>(r0 + i) * lda;
      const int full = k / 4;
      for (int g = 0; g < full; ++g) {
        uint32_t w;
        std::memcpy(&w, src + 4 * g, 4);
        w ^= 0x80808080u;
        std::memcpy(tile + (static_cast<size_t>(g) * mr + i) * 4, &w, 4);
      }
      if (full * 4 < k) {
        uint8_t* word = tile + (static_cast<size_t>(full) * mr + i) * 4;
        for (int t = 0; t < 4; ++t)
          word[t] = full * 4 + t < k ? static_cast<uint8_t>(src[4 * full + t] ^ 0x80) : 0;
      }
    }
  }
}

// What the epilogue needs for columns [j, j + 16).
struct Cols {
  const int32_t* bias;
  const int32_t* mult;
  const int32_t* lshift;
  const int32_t* rshift;
  int count;  // valid columns, 1..16
  const float* real;                  // the multipliers as floats (fast requantization)
  const QuantizedMultiplier* scalar;  // the multipliers as quant_math takes them (portable path)
#if DF_LITE_VNNI_BUILD
  const RequantLanes* lanes = nullptr;  // the VNNI path: these columns' constants, made once per task
#endif
};

// ---- portable kernel ------------------------------------------------------------------

void tile_portable(int mr, int panels, int k4, const uint8_t* a, const int8_t* b, size_t panel_bytes,
                   const Cols* cols, const Int8Requant& q, int8_t* y, int ldy) {
  int32_t acc[kMr][2 * kNp] = {};
  for (int g = 0; g < k4 / 4; ++g) {
    for (int p = 0; p < panels; ++p) {
      const int8_t* bg = b + p * panel_bytes + static_cast<size_t>(g) * 4 * kNp;
      for (int i = 0; i < mr; ++i) {
        const uint8_t* aw = a + (static_cast<size_t>(g) * mr + i) * 4;
        for (int j = 0; j < kNp; ++j) {
          int32_t s = 0;
          for (int t = 0; t < 4; ++t) s += static_cast<int32_t>(aw[t]) * bg[j * 4 + t];
          acc[i][p * kNp + j] += s;
        }
      }
    }
  }
  for (int p = 0; p < panels; ++p) {
    const Cols& c = cols[p];
    for (int i = 0; i < mr; ++i)
      for (int j = 0; j < c.count; ++j) {
        const int32_t x = acc[i][p * kNp + j] + c.bias[j];
        const int32_t v = q.fast              ? requantize_fast(x, c.real[j], q.zp_out, q.lo, q.hi)
                          : q.single_rounding ? multiply_by_quantized_multiplier_single_rounding(x, c.scalar[j]) + q.zp_out
                                              : multiply_by_quantized_multiplier(x, c.scalar[j]) + q.zp_out;
        y[static_cast<ptrdiff_t>(i) * ldy + p * kNp + j] = static_cast<int8_t>(std::clamp(v, q.lo, q.hi));
      }
  }
}

// ---- AVX-512 VNNI kernel ----------------------------------------------------------------

#if DF_LITE_VNNI_BUILD
// Word g (4 bytes of K) of row i at a + i * row_stride + g * group_stride: packed A (already
// unsigned), or A read in place (kFlip: each broadcast word gets its + 128, on a port the
// vpdpbusd does not use).
template <int MR, int NP, bool kSingle, bool kLeft, bool kFlip>
DF_LITE_VNNI void tile_vnni(int k4, const uint8_t* a, ptrdiff_t row_stride, ptrdiff_t group_stride, const int8_t* b,
                            size_t panel_bytes, const Cols* cols, const Int8Requant& q, int8_t* y, int ldy) {
  __m512i acc[MR][NP];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 2
    for (int p = 0; p < NP; ++p) acc[i][p] = _mm512_loadu_si512(cols[p].bias);  // the sums start at the bias
  const int groups = k4 / 4;
  const __m512i flip = _mm512_set1_epi32(static_cast<int32_t>(0x80808080u));
  for (int g = 0; g < groups; ++g, a += group_stride) {
    __m512i bv[NP];
#pragma GCC unroll 2
    for (int p = 0; p < NP; ++p) bv[p] = _mm512_loadu_si512(b + p * panel_bytes + static_cast<size_t>(g) * 4 * kNp);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      int32_t word;
      std::memcpy(&word, a + i * row_stride, 4);
      __m512i av = _mm512_set1_epi32(word);
      if constexpr (kFlip) av = _mm512_xor_si512(av, flip);
#pragma GCC unroll 2
      for (int p = 0; p < NP; ++p) dpbusd(acc[i][p], av, bv[p]);
    }
  }
#pragma GCC unroll 2
  for (int p = 0; p < NP; ++p) {
    const Cols& c = cols[p];
    const RequantLanes& lanes = *c.lanes;
    const __mmask16 valid = c.count >= kNp ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << c.count) - 1);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
      _mm_mask_storeu_epi8(y + static_cast<ptrdiff_t>(i) * ldy + p * kNp, valid,
                           q.fast ? requantize16_fast(acc[i][p], lanes) : requantize16_biased<kSingle, kLeft>(acc[i][p], lanes));
  }
}

DF_LITE_VNNI void make_lanes(const Cols& c, const Int8Requant& q, RequantLanes* out) {
  *out = requant_lanes(c.bias, c.mult, c.lshift, c.rshift, q.zp_out, q.lo, q.hi, q.single_rounding);
  out->real = _mm512_loadu_ps(c.real);
}

using TileFn = void (*)(int, const uint8_t*, ptrdiff_t, ptrdiff_t, const int8_t*, size_t, const Cols*,
                        const Int8Requant&, int8_t*, int);

template <int MR, bool kSingle, bool kLeft, bool kFlip>
constexpr TileFn vnni_tile(int np) {
  return np == 2 ? &tile_vnni<MR, 2, kSingle, kLeft, kFlip> : &tile_vnni<MR, 1, kSingle, kLeft, kFlip>;
}

template <bool kSingle, bool kLeft, bool kFlip>
TileFn pick_vnni(int mr, int np) {
  switch (mr) {
    case 1: return vnni_tile<1, kSingle, kLeft, kFlip>(np);
    case 2: return vnni_tile<2, kSingle, kLeft, kFlip>(np);
    case 3: return vnni_tile<3, kSingle, kLeft, kFlip>(np);
    case 4: return vnni_tile<4, kSingle, kLeft, kFlip>(np);
    case 5: return vnni_tile<5, kSingle, kLeft, kFlip>(np);
    case 6: return vnni_tile<6, kSingle, kLeft, kFlip>(np);
    case 7: return vnni_tile<7, kSingle, kLeft, kFlip>(np);
    default: return vnni_tile<8, kSingle, kLeft, kFlip>(np);
  }
}

template <bool kFlip>
TileFn pick_vnni(int mr, int np, bool single, bool left) {
  if (single) return pick_vnni<true, false, kFlip>(mr, np);
  return left ? pick_vnni<false, true, kFlip>(mr, np) : pick_vnni<false, false, kFlip>(mr, np);
}
#endif

bool cpu_has_vnni() {
#if DF_LITE_VNNI_BUILD
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vnni");
  return has;
#else
  return false;
#endif
}

}  // namespace

bool int8_vnni() { return cpu_has_vnni() && simd() == Simd::kAvx512; }

void PackedInt8Weights::pack(const int8_t* w, int n, int k, int ldw) {
  n_ = n;
  k_ = k;
  const int panels = (n + kPanel - 1) / kPanel;
  const int k4v = k4();
  data_.assign(static_cast<size_t>(panels) * k4v * kPanel, 0);
  sums_.assign(static_cast<size_t>(panels) * kPanel, 0);
  for (int j = 0; j < n; ++j) {
    int8_t* panel = data_.data() + static_cast<size_t>(j / kPanel) * k4v * kPanel;
    const int col = j % kPanel;
    int32_t sum = 0;
    for (int p = 0; p < k; ++p) {
      const int8_t v = w[static_cast<ptrdiff_t>(j) * ldw + p];
      panel[(static_cast<size_t>(p / 4) * kPanel + col) * 4 + p % 4] = v;
      sum += v;
    }
    sums_[static_cast<size_t>(j)] = sum;
  }
}

void Int8Gemm::prepare(const int8_t* w, int n, int k, int ldw, const int32_t* bias, int32_t in_offset,
                       Int8Requant requant) {
  weights_.pack(w, n, k, ldw);
  requant_ = std::move(requant);
  in_offset_ = in_offset;
  any_left_ = false;
  const size_t padded = static_cast<size_t>((n + kNp - 1) / kNp) * kNp;
  multiplier_.assign(padded, 0);
  real_.assign(padded, 0.f);
  column_multipliers_.assign(padded, {});
  left_shift_.assign(padded, 0);
  right_shift_.assign(padded, 1);
  for (int j = 0; j < n; ++j) {
    const QuantizedMultiplier m = requant_.multipliers[requant_.multipliers.size() == 1 ? 0 : static_cast<size_t>(j)];
    multiplier_[static_cast<size_t>(j)] = m.multiplier;
    column_multipliers_[static_cast<size_t>(j)] = m;
    real_[static_cast<size_t>(j)] = multiplier_value(m);
    if (requant_.single_rounding) {
      right_shift_[static_cast<size_t>(j)] = 31 - m.shift;
    } else {
      left_shift_[static_cast<size_t>(j)] = m.shift > 0 ? m.shift : 0;
      any_left_ = any_left_ || m.shift > 0;
      right_shift_[static_cast<size_t>(j)] = m.shift > 0 ? 0 : -m.shift;
    }
  }
  column_bias_.assign(padded, 0);
  // The packed A is a + 128: its sums carry 128 * sum w too.
  for (int j = 0; j < n; ++j)
    column_bias_[static_cast<size_t>(j)] =
        (bias ? bias[j] : 0) + (in_offset_ - 128) * weights_.column_sums()[static_cast<size_t>(j)];
}

void Int8Gemm::run(ThreadPool* pool, int m, const int8_t* a, int lda, int8_t* y, int ldy, bool rows_padded) const {
  const int n = weights_.n(), k = weights_.k(), k4 = weights_.k4();
  if (m <= 0 || n <= 0) return;
  const int panels = (n + kNp - 1) / kNp;
  const int pairs = (panels + 1) / 2;
  const int block_rows = std::clamp(kBlockBytes / std::max(k4, 1) / kMr * kMr, kMr, 512);
  const int row_blocks = (m + block_rows - 1) / block_rows;
  const int threads = pool ? pool->size() : 1;
  const int64_t macs = static_cast<int64_t>(m) * n * k;
  const int useful = static_cast<int>(std::clamp<int64_t>(macs / kMacsPerTask, 1, threads));
  // Column chunks (of panel pairs) when there are fewer row blocks than threads.
  const int col_chunks = std::clamp((useful + row_blocks - 1) / row_blocks, 1, pairs);
  const size_t panel_bytes = static_cast<size_t>(k4) * kNp;
  const bool vnni = int8_vnni();
  // VNNI reads A in place when whole words of K are readable; else (and on the portable
  // path) A is packed per block.
  const bool direct = vnni && (k % 4 == 0 || rows_padded);
  auto task = [&](int64_t t) {
    const int rb = static_cast<int>(t / col_chunks), cc = static_cast<int>(t % col_chunks);
    const int r0 = rb * block_rows, rows = std::min(block_rows, m - r0);
    const int p0 = static_cast<int>(static_cast<int64_t>(pairs) * cc / col_chunks) * 2;
    const int p1 = std::min(panels, static_cast<int>(static_cast<int64_t>(pairs) * (cc + 1) / col_chunks) * 2);
    thread_local std::vector<uint8_t> packed;
    if (!direct) {
      packed.resize(static_cast<size_t>(block_rows) * k4 + 64);
      pack_a(a + static_cast<ptrdiff_t>(r0) * lda, lda, rows, k, k4, packed.data());
    }
    for (int p = p0; p < p1; p += 2) {
      const int np = std::min(2, p1 - p);
      Cols cols[2];
#if DF_LITE_VNNI_BUILD
      RequantLanes lanes[2];
#endif
      for (int h = 0; h < np; ++h) {
        const size_t j = static_cast<size_t>(p + h) * kNp;
        cols[h] = {column_bias_.data() + j, multiplier_.data() + j, left_shift_.data() + j, right_shift_.data() + j,
                   std::min(kNp, n - static_cast<int>(j)), real_.data() + j, column_multipliers_.data() + j};
#if DF_LITE_VNNI_BUILD
        if (vnni) {
          make_lanes(cols[h], requant_, &lanes[h]);
          cols[h].lanes = &lanes[h];
        }
#endif
      }
      const int8_t* b = weights_.panel(p);
      for (int i = 0; i < rows; i += kMr) {
        const int mr = std::min(kMr, rows - i);
        int8_t* yt = y + static_cast<ptrdiff_t>(r0 + i) * ldy + static_cast<ptrdiff_t>(p) * kNp;
#if DF_LITE_VNNI_BUILD
        if (direct) {
          const auto* at = reinterpret_cast<const uint8_t*>(a + static_cast<ptrdiff_t>(r0 + i) * lda);
          pick_vnni<true>(mr, np, requant_.single_rounding, any_left_)(k4, at, lda, 4, b, panel_bytes, cols, requant_,
                                                                      yt, ldy);
          continue;
        }
#endif
        const uint8_t* at = packed.data() + static_cast<size_t>(i) * k4;
#if DF_LITE_VNNI_BUILD
        if (vnni) {
          pick_vnni<false>(mr, np, requant_.single_rounding, any_left_)(k4, at, 4, 4 * mr, b, panel_bytes, cols,
                                                                       requant_, yt, ldy);
          continue;
        }
#endif
        tile_portable(mr, np, k4, at, b, panel_bytes, cols, requant_, yt, ldy);
      }
    }
  };
  const int64_t tasks = static_cast<int64_t>(row_blocks) * col_chunks;
  if (!pool || useful == 1 || tasks == 1) {
    for (int64_t t = 0; t < tasks; ++t) task(t);
    return;
  }
  pool->parallel_for(tasks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) task(t);
  });
}

}  // namespace deepflow::lite
