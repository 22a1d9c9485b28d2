// SPDX-License-Identifier: Apache-2.0
// The GEMM's structure is BLIS's: K is cut into blocks of kKc, M into blocks of kMc, and a
// micro-kernel keeps its tile of C in registers: 6x16 on AVX2 (12 of its 16 ymm; 2 hold
// B, 1 holds A), 8x32 over two 16-column panels on AVX-512 (16 zmm; each step loads two
// vectors of B for eight broadcasts of A, folded into the FMAs). Within a block, the row
// tiles go outer while the block of B stays in L2 (so C is written row by row), else the
// panels do (each read once). The bias seeds the accumulators (or is added after the last
// K block when accumulating into C) and the clamp is applied in registers. The AVX-512
// kernels are compiled for that target alone and chosen at run time (simd()). Threads split
// M (or N when M is too short to share) into one task each. sgemm_gather reads A through
// per-step offsets (a convolution's windows in the image). A raw B with at most kFewRows
// rows of A skips packing (dot products or row updates): the GEMV of a batch-1 layer.
#include "deepflow/lite/kernels/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define DF_LITE_X86 1
// AVX-512 code lives in functions of this target; the rest of the file stays on the
// build's baseline, so it runs on any x86-64-v3 CPU.
#define DF_LITE_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma")))
#endif

namespace deepflow::lite {

namespace {

constexpr int kNr = PackedB::kPanel;  // micro-kernel columns
constexpr int kKc = 256;              // K block: kKc x 16 floats of B = 16 KiB
constexpr int kMc = 120;              // M block: kMc x kKc floats of A = 120 KiB (a multiple of 6 and 8)
constexpr int kFewRows = 4;           // up to this many rows of A, raw B is used unpacked
constexpr int64_t kRowsOuterBytes = 256 << 10;  // a block of B up to this size is swept once per row tile
constexpr int kStreamAhead = 16;  // steps (64-byte lines of a panel) a GEMV prefetches B ahead (harmless past the end)
constexpr double kFlopsPerThread = 1 << 17;  // less work (a few microseconds) is not worth handing over

inline void prefetch(const float* p) { __builtin_prefetch(p, 1, 3); }

// What one micro-kernel call does with its tile of C.
struct Tile {
  float* c;
  int ldc;
  int cols;               // valid columns, 1..16 per panel (the last panel's padding is not written)
  ptrdiff_t b_panel;      // floats from one panel of B to the next (two-panel tiles)
  const int32_t* offsets; // gathered A: step p of row i at a[i * a_row + offsets[p]]; else nullptr
  bool load_c;            // add C's values (a later K block, or accumulate)
  bool clamp;             // the last K block of a clamped product: clamp to [lo, hi]
  const float* init;      // the first K block: the bias the sums start from, or nullptr (zeros)
  const float* bias_end;  // the last K block when accumulating: the bias to add, or nullptr
  float lo, hi;
};

// ---- baseline (AVX2) micro-kernel ---------------------------------------------------------

#if DF_LITE_X86
using Vec = __m256;
inline Vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec vset1(float x) { return _mm256_set1_ps(x); }
inline Vec vzero() { return _mm256_setzero_ps(); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec vadd(Vec a, Vec b) { return _mm256_add_ps(a, b); }
// In this operand order a NaN passes through, as std::min(std::max(x, lo), hi) lets it.
inline Vec vclamp(Vec x, Vec lo, Vec hi) { return _mm256_min_ps(hi, _mm256_max_ps(lo, x)); }
#else
// Builds for other targets keep the same kernel on the compiler's generic vectors.
typedef float Vec __attribute__((vector_size(32)));
inline Vec vload(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void vstore(float* p, Vec v) { std::memcpy(p, &v, sizeof v); }
inline Vec vset1(float x) { return Vec{} + x; }
inline Vec vzero() { return Vec{}; }
inline Vec vfma(Vec a, Vec b, Vec c) { return a * b + c; }
inline Vec vadd(Vec a, Vec b) { return a + b; }
inline Vec vclamp(Vec x, Vec lo, Vec hi) {
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}
#endif

// C tile (MR x 16) from kc steps of A (MR values per step, `a_step` apart, rows `a_row`
// apart) times a packed B panel (16 values per step).
template <int MR, bool kGather>
void micro_kernel(int kc, const float* a, int a_row, int a_step, const float* b, const Tile& t) {
  const int32_t* off = t.offsets;
  // Short tiles have too few accumulators to hide the FMA latency: split K into two
  // interleaved chains instead.
  constexpr int kChains = MR <= 2 ? 2 : 1;
  // C's tile is far down the cache hierarchy (each K block sweeps all of C): start
  // fetching it now so the epilogue doesn't stall on it.
  for (int i = 0; i < MR; ++i) {
    prefetch(t.c + static_cast<ptrdiff_t>(i) * t.ldc);
    prefetch(t.c + static_cast<ptrdiff_t>(i) * t.ldc + kNr - 1);
  }
  // The bias row the sums start from; the last panel's through a buffer (the bias has only
  // `cols` values there).
  alignas(32) float init_buf[kNr];
  const float* init = t.init;
  if (init && t.cols < kNr) {
    std::fill(init_buf, init_buf + kNr, 0.f);
    std::copy(init, init + t.cols, init_buf);
    init = init_buf;
  }
  // The accumulators must live in registers: every loop over them is unrolled explicitly,
  // since -O2 (RelWithDebInfo builds) would otherwise keep them in memory.
  Vec acc[kChains][MR][2];
  const Vec init0 = init ? vload(init) : vzero(), init1 = init ? vload(init + 8) : vzero();
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    acc[0][i][0] = init0;
    acc[0][i][1] = init1;
    if constexpr (kChains == 2) acc[1][i][0] = acc[1][i][1] = vzero();
  }
  int p = 0;
  if constexpr (kChains == 2) {
    for (; p + 1 < kc; p += 2) {
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const Vec b0 = vload(b), b1 = vload(b + 8);
        const float* ap = kGather ? a + *off++ : a;
#pragma GCC unroll 6
        for (int i = 0; i < MR; ++i) {
          const Vec x = vset1(ap[i * a_row]);
          acc[h][i][0] = vfma(x, b0, acc[h][i][0]);
          acc[h][i][1] = vfma(x, b1, acc[h][i][1]);
        }
        if constexpr (!kGather) a += a_step;
        b += kNr;
      }
    }
  }
#pragma GCC unroll 4
  for (; p < kc; ++p) {
    const Vec b0 = vload(b), b1 = vload(b + 8);
    const float* ap = kGather ? a + *off++ : a;
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const Vec x = vset1(ap[i * a_row]);
      acc[0][i][0] = vfma(x, b0, acc[0][i][0]);
      acc[0][i][1] = vfma(x, b1, acc[0][i][1]);
    }
    if constexpr (!kGather) a += a_step;
    b += kNr;
  }
  if constexpr (kChains == 2)
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      acc[0][i][0] = vadd(acc[0][i][0], acc[1][i][0]);
      acc[0][i][1] = vadd(acc[0][i][1], acc[1][i][1]);
    }
  if (t.cols == kNr) {
    const Vec lo = vset1(t.lo), hi = vset1(t.hi);
    const Vec bias0 = t.bias_end ? vload(t.bias_end) : vzero();
    const Vec bias1 = t.bias_end ? vload(t.bias_end + 8) : vzero();
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      float* row = t.c + static_cast<ptrdiff_t>(i) * t.ldc;
      Vec v0 = acc[0][i][0], v1 = acc[0][i][1];
      if (t.load_c) {
        v0 = vadd(v0, vload(row));
        v1 = vadd(v1, vload(row + 8));
      }
      if (t.bias_end) {
        v0 = vadd(v0, bias0);
        v1 = vadd(v1, bias1);
      }
      if (t.clamp) {
        v0 = vclamp(v0, lo, hi);
        v1 = vclamp(v1, lo, hi);
      }
      vstore(row, v0);
      vstore(row + 8, v1);
    }
    return;
  }
  // The last panel's tile: through a buffer, so nothing past the valid columns is touched.
  alignas(32) float buf[MR][kNr];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    vstore(buf[i], acc[0][i][0]);
    vstore(buf[i] + 8, acc[0][i][1]);
  }
  for (int i = 0; i < MR; ++i) {
    float* row = t.c + static_cast<ptrdiff_t>(i) * t.ldc;
    for (int j = 0; j < t.cols; ++j) {
      float v = buf[i][j] + (t.load_c ? row[j] : 0.f) + (t.bias_end ? t.bias_end[j] : 0.f);
      if (t.clamp) v = std::min(std::max(v, t.lo), t.hi);
      row[j] = v;
    }
  }
}

template <bool kGather>
void run_baseline(int mr, int kc, const float* a, int a_row, int a_step, const float* b, const Tile& t) {
  switch (mr) {
    case 6: return micro_kernel<6, kGather>(kc, a, a_row, a_step, b, t);
    case 5: return micro_kernel<5, kGather>(kc, a, a_row, a_step, b, t);
    case 4: return micro_kernel<4, kGather>(kc, a, a_row, a_step, b, t);
    case 3: return micro_kernel<3, kGather>(kc, a, a_row, a_step, b, t);
    case 2: return micro_kernel<2, kGather>(kc, a, a_row, a_step, b, t);
    default: return micro_kernel<1, kGather>(kc, a, a_row, a_step, b, t);
  }
}

void run_micro_kernel(int mr, int /*panels: always 1*/, int kc, const float* a, int a_row, int a_step, const float* b,
                      const Tile& t) {
  if (t.offsets) return run_baseline<true>(mr, kc, a, a_row, a_step, b, t);
  run_baseline<false>(mr, kc, a, a_row, a_step, b, t);
}

// ---- AVX-512 micro-kernel -----------------------------------------------------------------

#if DF_LITE_X86
// The clamp, NaN passing through as in the AVX2 kernel. The all-lanes masked forms are the
// plain instructions; _mm512_max_ps itself trips GCC 12's -Wmaybe-uninitialized (an
// undefined operand inside its header).
DF_LITE_AVX512 inline __m512 clamp_avx512(__m512 x, __m512 lo, __m512 hi) {
  return _mm512_mask_min_ps(hi, 0xffff, hi, _mm512_mask_max_ps(lo, 0xffff, lo, x));
}

// The same contract on 16-float vectors, over one or two panels (NV: a tile row is NV
// registers, the second panel t.b_panel floats after the first): an 8x32 tile keeps 16
// accumulators, and each step loads 2 vectors of B for 8 broadcasts of A (straight from
// memory into the FMA), so the FMAs, not the loads, set the pace. The last panel's columns
// are masked (no buffer).
template <int MR, int NV, bool kGather>
DF_LITE_AVX512 void micro_kernel_avx512(int kc, const float* a, int a_row, int a_step, const float* b,
                                        const Tile& t) {
  const int32_t* off = t.offsets;
  // Eight accumulators hide the FMA's latency on two ports; smaller tiles add chains.
  constexpr int kChains = MR * NV >= 8 ? 1 : MR * NV >= 4 ? 2 : 4;
  const ptrdiff_t bp = t.b_panel;
  for (int i = 0; i < MR; ++i) {
    prefetch(t.c + static_cast<ptrdiff_t>(i) * t.ldc);
    if constexpr (NV == 2) prefetch(t.c + static_cast<ptrdiff_t>(i) * t.ldc + kNr);
  }
  __mmask16 mask[NV];
#pragma GCC unroll 2
  for (int v = 0; v < NV; ++v) {
    const int cols = std::clamp(t.cols - v * kNr, 0, kNr);
    mask[v] = static_cast<__mmask16>(cols >= kNr ? 0xffff : (1u << cols) - 1);
  }
  __m512 acc[kChains][MR][NV];
#pragma GCC unroll 2
  for (int v = 0; v < NV; ++v) {
    const __m512 init = t.init ? _mm512_maskz_loadu_ps(mask[v], t.init + v * kNr) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      acc[0][i][v] = init;
#pragma GCC unroll 4
      for (int h = 1; h < kChains; ++h) acc[h][i][v] = _mm512_setzero_ps();
    }
  }
  int p = 0;
  if constexpr (kChains > 1) {
    for (; p + kChains <= kc; p += kChains) {
#pragma GCC unroll 4
      for (int h = 0; h < kChains; ++h) {
        __m512 bv[NV];
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) bv[v] = _mm512_load_ps(b + v * bp);
        // A row or two (a GEMV) streams B faster than the hardware fetches it from beyond
        // L2: ask for it kStreamAhead steps early.
        if constexpr (MR <= 2)
#pragma GCC unroll 2
          for (int v = 0; v < NV; ++v)
            _mm_prefetch(reinterpret_cast<const char*>(b + v * bp + kStreamAhead * kNr), _MM_HINT_T0);
        const float* ap = kGather ? a + *off++ : a;
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
          const __m512 x = _mm512_set1_ps(ap[i * a_row]);
#pragma GCC unroll 2
          for (int v = 0; v < NV; ++v) acc[h][i][v] = _mm512_fmadd_ps(x, bv[v], acc[h][i][v]);
        }
        if constexpr (!kGather) a += a_step;
        b += kNr;
      }
    }
  }
#pragma GCC unroll 2
  for (; p < kc; ++p) {
    __m512 bv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_load_ps(b + v * bp);
    const float* ap = kGather ? a + *off++ : a;
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 x = _mm512_set1_ps(ap[i * a_row]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[0][i][v] = _mm512_fmadd_ps(x, bv[v], acc[0][i][v]);
    }
    if constexpr (!kGather) a += a_step;
    b += kNr;
  }
  const __m512 lo = _mm512_set1_ps(t.lo), hi = _mm512_set1_ps(t.hi);
#pragma GCC unroll 2
  for (int v = 0; v < NV; ++v) {
    const __m512 bias = t.bias_end ? _mm512_maskz_loadu_ps(mask[v], t.bias_end + v * kNr) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      float* out = t.c + static_cast<ptrdiff_t>(i) * t.ldc + v * kNr;
      __m512 x = acc[0][i][v];
#pragma GCC unroll 4
      for (int h = 1; h < kChains; ++h) x = _mm512_add_ps(x, acc[h][i][v]);
      if (t.load_c) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask[v], out));
      if (t.bias_end) x = _mm512_add_ps(x, bias);
      if (t.clamp) x = clamp_avx512(x, lo, hi);
      _mm512_mask_storeu_ps(out, mask[v], x);
    }
  }
}

template <int NV, bool kGather>
DF_LITE_AVX512 void run_avx512(int mr, int kc, const float* a, int a_row, int a_step, const float* b,
                               const Tile& t) {
  switch (mr) {
    case 8: return micro_kernel_avx512<8, NV, kGather>(kc, a, a_row, a_step, b, t);
    case 7: return micro_kernel_avx512<7, NV, kGather>(kc, a, a_row, a_step, b, t);
    case 6: return micro_kernel_avx512<6, NV, kGather>(kc, a, a_row, a_step, b, t);
    case 5: return micro_kernel_avx512<5, NV, kGather>(kc, a, a_row, a_step, b, t);
    case 4: return micro_kernel_avx512<4, NV, kGather>(kc, a, a_row, a_step, b, t);
    case 3: return micro_kernel_avx512<3, NV, kGather>(kc, a, a_row, a_step, b, t);
    case 2: return micro_kernel_avx512<2, NV, kGather>(kc, a, a_row, a_step, b, t);
    default: return micro_kernel_avx512<1, NV, kGather>(kc, a, a_row, a_step, b, t);
  }
}

DF_LITE_AVX512 void run_micro_kernel_avx512(int mr, int panels, int kc, const float* a, int a_row, int a_step,
                                            const float* b, const Tile& t) {
  if (t.offsets) {
    if (panels == 2) return run_avx512<2, true>(mr, kc, a, a_row, a_step, b, t);
    return run_avx512<1, true>(mr, kc, a, a_row, a_step, b, t);
  }
  if (panels == 2) return run_avx512<2, false>(mr, kc, a, a_row, a_step, b, t);
  run_avx512<1, false>(mr, kc, a, a_row, a_step, b, t);
}
#endif

// The micro-kernel of one instruction set: its tile height and how many panels of B a
// tile spans at most.
struct Isa {
  int mr;
  int panels;
  void (*kernel)(int mr, int panels, int kc, const float* a, int a_row, int a_step, const float* b, const Tile& t);
};

Isa current_isa() {
#if DF_LITE_X86
  if (simd() == Simd::kAvx512) return {8, 2, run_micro_kernel_avx512};
#endif
  return {6, 1, run_micro_kernel};
}

Simd best_simd() {
#if DF_LITE_X86
  const char* env = std::getenv("DEEPFLOW_LITE_SIMD");
  if (env && std::strcmp(env, "avx2") == 0) return Simd::kAvx2;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return Simd::kAvx512;
#endif
  return Simd::kAvx2;
}

// What set_simd() chose; -1 until then (the CPU's best).
std::atomic<int> chosen_simd{-1};

// ---- the driver ---------------------------------------------------------------------------

// Packs rows [0, mc) x steps [0, kc) of a transposed A (a at the block's first element)
// into panels of `mr_max` rows: panel r holds kc steps of min(mr_max, mc - r) adjacent values.
void pack_transposed_a(const float* a, int lda, int mc, int kc, int mr_max, float* dst) {
  for (int r = 0; r < mc; r += mr_max) {
    const int mr = std::min(mr_max, mc - r);
    for (int p = 0; p < kc; ++p)
      for (int i = 0; i < mr; ++i) dst[p * mr + i] = a[static_cast<ptrdiff_t>(p) * lda + r + i];
    dst += static_cast<ptrdiff_t>(mr) * kc;
  }
}

// Rows [m0, m1) x panels [j0, j1) of C: one thread's task.
// offsets: a gathered A (row i's step p at a[i*lda + offsets[p]]; a_layout ignored), or nullptr.
void gemm_task(const Isa& isa, int m0, int m1, int j0, int j1, const float* a, int lda, Layout a_layout,
               const PackedB& b, float* c, int ldc, const GemmEpilogue& e, const int32_t* offsets = nullptr) {
  const int k = b.k();
  // K blocks keep a B panel in L1 while several row tiles reuse it; a single row tile (a
  // GEMV) reuses nothing, and would only pay for C's extra passes.
  const int k_blocks = m1 - m0 <= isa.mr ? 1 : (k + kKc - 1) / kKc;
  const int kc_size = (k + k_blocks - 1) / k_blocks;  // balanced: no sliver of a last block
  // Row-major A is read in place: its rows are the micro-kernel's streams, and packing
  // them measured no faster even for lda = 4 KiB (and costs a pass when C is narrow, as in
  // most convolutions). Transposed A is packed so each step's values are adjacent.
  const bool pack = !offsets && a_layout == Layout::kTransposed;
  thread_local AlignedFloats a_buffer;
  float* packed = pack ? a_buffer.reserve(static_cast<size_t>(kMc) * kc_size) : nullptr;
  const bool clamp = e.lo > -std::numeric_limits<float>::infinity() || e.hi < std::numeric_limits<float>::infinity();
  for (int p0 = 0; p0 < k; p0 += kc_size) {
    const int kc = std::min(kc_size, k - p0);
    const bool first = p0 == 0, last = p0 + kc >= k;
    Tile t{};
    t.ldc = ldc;
    t.b_panel = static_cast<ptrdiff_t>(k) * kNr;
    t.offsets = offsets ? offsets + p0 : nullptr;
    t.load_c = e.accumulate || !first;
    t.clamp = last && clamp;
    t.lo = e.lo;
    t.hi = e.hi;
    for (int i0 = m0; i0 < m1; i0 += kMc) {
      const int mc = std::min(kMc, m1 - i0);
      if (pack) pack_transposed_a(a + static_cast<ptrdiff_t>(p0) * lda + i0, lda, mc, kc, isa.mr, packed);
      // Row tiles outer while the block of B (kc x the task's columns) stays in L2: each
      // tile then writes whole rows of C in turn (contiguous stores, which matter where K
      // is short and C is large), its rows of A in L1 across panels. A larger B (a wide
      // layer over few pixels) goes panel by panel, each panel read once from memory.
      const bool rows_outer = static_cast<int64_t>(kc) * (j1 - j0) * kNr * sizeof(float) <= kRowsOuterBytes;
      auto tile = [&](int r, int j) {
        const int mr = std::min(isa.mr, mc - r);
        const int panels = std::min(isa.panels, j1 - j);
        const float* bp = b.panel(j) + static_cast<ptrdiff_t>(p0) * kNr;
        const float* bias = e.bias ? e.bias + j * kNr : nullptr;
        t.cols = std::min(panels * kNr, b.n() - j * kNr);
        t.init = first && !e.accumulate ? bias : nullptr;
        t.bias_end = last && e.accumulate ? bias : nullptr;
        t.c = c + static_cast<ptrdiff_t>(i0 + r) * ldc + j * kNr;
        if (pack)
          isa.kernel(mr, panels, kc, packed + static_cast<ptrdiff_t>(r) * kc, 1, mr, bp, t);
        else if (offsets)
          isa.kernel(mr, panels, kc, a + static_cast<ptrdiff_t>(i0 + r) * lda, lda, 0, bp, t);
        else
          isa.kernel(mr, panels, kc, a + static_cast<ptrdiff_t>(i0 + r) * lda + p0, lda, 1, bp, t);
      };
      if (rows_outer) {
        for (int r = 0; r < mc; r += isa.mr)
          for (int j = j0; j < j1; j += isa.panels) tile(r, j);
      } else {
        for (int j = j0; j < j1; j += isa.panels)
          for (int r = 0; r < mc; r += isa.mr) tile(r, j);
      }
    }
  }
}

// C = bias (or C) clamped: the product of an empty K.
void gemm_empty_k(int m, int n, float* c, int ldc, const GemmEpilogue& e) {
  for (int i = 0; i < m; ++i) {
    float* row = c + static_cast<ptrdiff_t>(i) * ldc;
    for (int j = 0; j < n; ++j) {
      const float v = (e.accumulate ? row[j] : 0.f) + (e.bias ? e.bias[j] : 0.f);
      row[j] = std::min(std::max(v, e.lo), e.hi);
    }
  }
}

// A few rows of A against raw B: packing B would cost more than the product itself.
// Row i of A is a + i*a_row, its step p at + p*a_step; columns [j0, j1) of C.
void gemm_few_rows(int m, int k, const float* a, int a_row, int a_step, const float* b, int ldb, Layout b_layout,
                   float* c, int ldc, int j0, int j1, const GemmEpilogue& e) {
  auto finish = [&](float* out, int j, float sum) {
    const float v = sum + (e.accumulate ? *out : 0.f) + (e.bias ? e.bias[j] : 0.f);
    *out = std::min(std::max(v, e.lo), e.hi);
  };
  if (b_layout == Layout::kTransposed) {
    // Column j of B is a contiguous row of b: one dot product per element of C, in four
    // vectors' worth of partial sums (one would wait on the FMA latency).
    constexpr int kWidth = 32;
    for (int j = j0; j < j1; ++j) {
      const float* bj = b + static_cast<ptrdiff_t>(j) * ldb;
      for (int i = 0; i < m; ++i) {
        const float* ai = a + static_cast<ptrdiff_t>(i) * a_row;
        float part[kWidth] = {};
        int p = 0;
        if (a_step == 1)
          for (; p + kWidth <= k; p += kWidth)
            for (int q = 0; q < kWidth; ++q) part[q] += ai[p + q] * bj[p + q];
        float sum = 0.f;
        for (; p < k; ++p) sum += ai[static_cast<ptrdiff_t>(p) * a_step] * bj[p];
        for (float x : part) sum += x;
        finish(c + static_cast<ptrdiff_t>(i) * ldc + j, j, sum);
      }
    }
    return;
  }
  // Rows of B are contiguous: stream them in order, each scaled into a strip of every row
  // of C (the strips stay in L1).
  constexpr int kStrip = 1024;
  float acc[kFewRows][kStrip];
  for (int s = j0; s < j1; s += kStrip) {
    const int w = std::min(kStrip, j1 - s);
    for (int i = 0; i < m; ++i) std::fill(acc[i], acc[i] + w, 0.f);
    for (int p = 0; p < k; ++p) {
      const float* bp = b + static_cast<ptrdiff_t>(p) * ldb + s;
      for (int i = 0; i < m; ++i) {
        const float x = a[static_cast<ptrdiff_t>(i) * a_row + static_cast<ptrdiff_t>(p) * a_step];
        float* row = acc[i];
        for (int q = 0; q < w; ++q) row[q] += x * bp[q];
      }
    }
    for (int i = 0; i < m; ++i)
      for (int q = 0; q < w; ++q) finish(c + static_cast<ptrdiff_t>(i) * ldc + s + q, s + q, acc[i][q]);
  }
}

int useful_threads(ThreadPool* pool, double flops) {
  const int threads = pool ? pool->size() : 1;
  return static_cast<int>(std::clamp(flops / kFlopsPerThread, 1.0, static_cast<double>(threads)));
}

}  // namespace

Simd simd() {
  static const Simd best = best_simd();
  const int chosen = chosen_simd.load(std::memory_order_relaxed);
  return chosen < 0 ? best : static_cast<Simd>(std::min(chosen, static_cast<int>(best)));
}

void set_simd(Simd s) { chosen_simd.store(static_cast<int>(s), std::memory_order_relaxed); }

float* AlignedFloats::reserve(size_t n) {
  if (n > capacity_) {
    const size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    data_.reset(static_cast<float*>(::operator new(bytes, std::align_val_t{64})));
    capacity_ = n;
  }
  return data_.get();
}

void AlignedFloats::Free::operator()(float* p) const { ::operator delete(p, std::align_val_t{64}); }

void PackedB::pack(const float* b, int k, int n, int ldb, Layout layout, ThreadPool* pool) {
  k_ = k;
  n_ = n;
  const int panels = (n + kNr - 1) / kNr;
  float* out = buffer_.reserve(std::max<size_t>(static_cast<size_t>(panels) * k * kNr, 1));
  auto pack_panels = [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      float* dst = out + static_cast<size_t>(j) * k * kNr;
      const int j0 = static_cast<int>(j) * kNr;
      const int cols = std::min(kNr, n - j0);
      if (layout == Layout::kRowMajor) {
        for (int p = 0; p < k; ++p) {
          const float* src = b + static_cast<ptrdiff_t>(p) * ldb + j0;
          for (int q = 0; q < kNr; ++q) dst[p * kNr + q] = q < cols ? src[q] : 0.f;
        }
      } else {
        // Each source row is one column of the panel: read it in order, write strided.
        if (cols < kNr) std::fill(dst, dst + static_cast<size_t>(k) * kNr, 0.f);
        for (int q = 0; q < cols; ++q) {
          const float* src = b + static_cast<ptrdiff_t>(j0 + q) * ldb;
          for (int p = 0; p < k; ++p) dst[p * kNr + q] = src[p];
        }
      }
    }
  };
  if (pool)
    pool->parallel_for(panels, std::max<int64_t>(1, (1 << 16) / std::max(k * kNr, 1)), pack_panels);
  else
    pack_panels(0, panels);
}

void sgemm(ThreadPool* pool, int m, const float* a, int lda, Layout a_layout, const PackedB& b, float* c, int ldc,
           const GemmEpilogue& e) {
  const int n = b.n(), k = b.k();
  if (m <= 0 || n <= 0) return;
  if (k == 0) return gemm_empty_k(m, n, c, ldc, e);
  const Isa isa = current_isa();
  const int threads = useful_threads(pool, 2.0 * m * n * k);
  const int m_blocks = (m + isa.mr - 1) / isa.mr;
  const int panels = (n + kNr - 1) / kNr;
  // Split M when every thread gets a few micro-tiles of rows (each then reads all of B);
  // otherwise split N (each packs or reads the same few rows of A).
  int tm = 1, tn = 1;
  if (m_blocks >= 4 * threads || panels < threads) {
    tm = std::min(threads, m_blocks);
    tn = std::clamp(threads / tm, 1, panels);
  } else {
    tn = std::min(threads, panels);
  }
  auto task = [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int im = static_cast<int>(t / tn), in = static_cast<int>(t % tn);
      const int m0 = std::min(m, static_cast<int>(static_cast<int64_t>(m_blocks) * im / tm) * isa.mr);
      const int m1 = std::min(m, static_cast<int>(static_cast<int64_t>(m_blocks) * (im + 1) / tm) * isa.mr);
      const int j0 = static_cast<int>(static_cast<int64_t>(panels) * in / tn);
      const int j1 = static_cast<int>(static_cast<int64_t>(panels) * (in + 1) / tn);
      if (m0 < m1 && j0 < j1) gemm_task(isa, m0, m1, j0, j1, a, lda, a_layout, b, c, ldc, e);
    }
  };
  if (tm * tn > 1)
    pool->parallel_for(tm * tn, 1, task);
  else
    task(0, 1);
}

void sgemm_gather(int m, const float* a, int a_row, const int32_t* offsets, const PackedB& b, float* c, int ldc,
                  const GemmEpilogue& e) {
  const int n = b.n(), k = b.k();
  if (m <= 0 || n <= 0) return;
  if (k == 0) return gemm_empty_k(m, n, c, ldc, e);
  gemm_task(current_isa(), 0, m, 0, (n + kNr - 1) / kNr, a, a_row, Layout::kRowMajor, b, c, ldc, e, offsets);
}

void sgemm(ThreadPool* pool, int m, int n, int k, const float* a, int lda, Layout a_layout, const float* b, int ldb,
           Layout b_layout, float* c, int ldc, const GemmEpilogue& e) {
  if (m <= 0 || n <= 0) return;
  if (k == 0) return gemm_empty_k(m, n, c, ldc, e);
  const int threads = useful_threads(pool, 2.0 * m * n * k);
  if (m <= kFewRows) {
    const int a_row = a_layout == Layout::kRowMajor ? lda : 1;
    const int a_step = a_layout == Layout::kRowMajor ? 1 : lda;
    auto columns = [&](int64_t lo, int64_t hi) {
      gemm_few_rows(m, k, a, a_row, a_step, b, ldb, b_layout, c, ldc, static_cast<int>(lo), static_cast<int>(hi), e);
    };
    if (threads > 1)
      pool->parallel_for(n, 16, columns);
    else
      columns(0, n);
    return;
  }
  PackedB packed;
  packed.pack(b, k, n, ldb, b_layout, threads > 1 ? pool : nullptr);
  sgemm(pool, m, a, lda, a_layout, packed, c, ldc, e);
}

}  // namespace deepflow::lite
