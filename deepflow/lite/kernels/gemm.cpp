// SPDX-License-Identifier: Apache-2.0
// The GEMM's structure is BLIS's: K is cut into blocks of kKc (a 16-column B panel of kKc
// rows stays in L1), M into blocks of kMc (A's block stays in L2), and a 6x16 micro-kernel
// keeps its 12 accumulator vectors in registers (12 of AVX2's 16; 2 hold B, 1 holds A).
// The bias and clamp are applied in registers after the last K block. Threads split M (or
// N when M is too short to share) into one task each. A raw B with at most kFewRows rows
// of A skips packing (dot products or row updates): that is the GEMV of a batch-1 layer.
#include "deepflow/lite/kernels/gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace deepflow::lite {

namespace {

constexpr int kMr = 6;                // micro-kernel rows
constexpr int kNr = PackedB::kPanel;  // micro-kernel columns (two 8-float vectors)
constexpr int kKc = 256;              // K block: kKc x 16 floats of B = 16 KiB
constexpr int kMc = 120;              // M block: kMc x kKc floats of A = 120 KiB
constexpr int kFewRows = 4;           // up to this many rows of A, raw B is used unpacked
constexpr double kFlopsPerThread = 1 << 20;  // below this a thread's wake-up costs more than it saves

#if defined(__AVX2__) && defined(__FMA__)
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

inline void prefetch(const float* p) { __builtin_prefetch(p, 1, 3); }

// What one micro-kernel call does with its tile of C.
struct Tile {
  float* c;
  int ldc;
  int cols;            // valid columns, 1..16 (the panel's padding is not written)
  bool load_c;         // add C's values (a later K block, or accumulate)
  bool finish;         // the last K block: add the bias and clamp
  const float* bias;   // at this tile's first column, or nullptr
  float lo, hi;
};

// C tile (MR x 16) from kc steps of A (MR values per step, `a_step` apart, rows `a_row`
// apart) times a packed B panel (16 values per step).
template <int MR>
void micro_kernel(int kc, const float* a, int a_row, int a_step, const float* b, const Tile& t) {
  // Short tiles have too few accumulators to hide the FMA latency: split K into two
  // interleaved chains instead.
  constexpr int kChains = MR <= 2 ? 2 : 1;
  // C's tile is far down the cache hierarchy (each K block sweeps all of C): start
  // fetching it now so the epilogue doesn't stall on it.
  for (int i = 0; i < MR; ++i) {
    prefetch(t.c + static_cast<ptrdiff_t>(i) * t.ldc);
    prefetch(t.c + static_cast<ptrdiff_t>(i) * t.ldc + kNr - 1);
  }
  // The accumulators must live in registers: every loop over them is unrolled explicitly,
  // since -O2 (RelWithDebInfo builds) would otherwise keep them in memory.
  Vec acc[kChains][MR][2];
#pragma GCC unroll 2
  for (int h = 0; h < kChains; ++h)
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) acc[h][i][0] = acc[h][i][1] = vzero();
  int p = 0;
  if constexpr (kChains == 2) {
    for (; p + 1 < kc; p += 2) {
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const Vec b0 = vload(b), b1 = vload(b + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR; ++i) {
          const Vec x = vset1(a[i * a_row]);
          acc[h][i][0] = vfma(x, b0, acc[h][i][0]);
          acc[h][i][1] = vfma(x, b1, acc[h][i][1]);
        }
        a += a_step;
        b += kNr;
      }
    }
  }
#pragma GCC unroll 4
  for (; p < kc; ++p) {
    const Vec b0 = vload(b), b1 = vload(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const Vec x = vset1(a[i * a_row]);
      acc[0][i][0] = vfma(x, b0, acc[0][i][0]);
      acc[0][i][1] = vfma(x, b1, acc[0][i][1]);
    }
    a += a_step;
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
    const Vec bias0 = t.finish && t.bias ? vload(t.bias) : vzero();
    const Vec bias1 = t.finish && t.bias ? vload(t.bias + 8) : vzero();
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      float* row = t.c + static_cast<ptrdiff_t>(i) * t.ldc;
      Vec v0 = acc[0][i][0], v1 = acc[0][i][1];
      if (t.load_c) {
        v0 = vadd(v0, vload(row));
        v1 = vadd(v1, vload(row + 8));
      }
      if (t.finish) {
        v0 = vclamp(vadd(v0, bias0), lo, hi);
        v1 = vclamp(vadd(v1, bias1), lo, hi);
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
      float v = buf[i][j] + (t.load_c ? row[j] : 0.f);
      if (t.finish) v = std::min(std::max(v + (t.bias ? t.bias[j] : 0.f), t.lo), t.hi);
      row[j] = v;
    }
  }
}

void run_micro_kernel(int mr, int kc, const float* a, int a_row, int a_step, const float* b, const Tile& t) {
  switch (mr) {
    case 6: return micro_kernel<6>(kc, a, a_row, a_step, b, t);
    case 5: return micro_kernel<5>(kc, a, a_row, a_step, b, t);
    case 4: return micro_kernel<4>(kc, a, a_row, a_step, b, t);
    case 3: return micro_kernel<3>(kc, a, a_row, a_step, b, t);
    case 2: return micro_kernel<2>(kc, a, a_row, a_step, b, t);
    default: return micro_kernel<1>(kc, a, a_row, a_step, b, t);
  }
}

// Packs rows [0, mc) x steps [0, kc) of a transposed A (a at the block's first element)
// into panels of kMr rows: panel r holds kc steps of min(kMr, mc - r) adjacent values.
void pack_transposed_a(const float* a, int lda, int mc, int kc, float* dst) {
  for (int r = 0; r < mc; r += kMr) {
    const int mr = std::min(kMr, mc - r);
    for (int p = 0; p < kc; ++p)
      for (int i = 0; i < mr; ++i) dst[p * mr + i] = a[static_cast<ptrdiff_t>(p) * lda + r + i];
    dst += static_cast<ptrdiff_t>(mr) * kc;
  }
}

// Rows [m0, m1) x panels [j0, j1) of C: one thread's task.
void gemm_task(int m0, int m1, int j0, int j1, const float* a, int lda, Layout a_layout, const PackedB& b, float* c,
               int ldc, const GemmEpilogue& e) {
  const int k = b.k();
  const int k_blocks = (k + kKc - 1) / kKc;
  const int kc_size = (k + k_blocks - 1) / k_blocks;  // balanced: no sliver of a last block
  // Row-major A is read in place: its rows are the micro-kernel's six streams, and packing
  // them measured no faster even for lda = 4 KiB (and costs a pass when C is narrow, as in
  // most convolutions). Transposed A is packed so each step's values are adjacent.
  const bool pack = a_layout == Layout::kTransposed;
  thread_local AlignedFloats a_buffer;
  float* packed = pack ? a_buffer.reserve(static_cast<size_t>(kMc) * kc_size) : nullptr;
  for (int p0 = 0; p0 < k; p0 += kc_size) {
    const int kc = std::min(kc_size, k - p0);
    Tile t{};
    t.ldc = ldc;
    t.load_c = e.accumulate || p0 > 0;
    t.finish = p0 + kc >= k;
    t.lo = e.lo;
    t.hi = e.hi;
    for (int i0 = m0; i0 < m1; i0 += kMc) {
      const int mc = std::min(kMc, m1 - i0);
      if (pack)
        pack_transposed_a(a + static_cast<ptrdiff_t>(p0) * lda + i0, lda, mc, kc, packed);
      for (int j = j0; j < j1; ++j) {
        const float* bp = b.panel(j) + static_cast<ptrdiff_t>(p0) * kNr;
        t.cols = std::min(kNr, b.n() - j * kNr);
        t.bias = e.bias ? e.bias + j * kNr : nullptr;
        for (int r = 0; r < mc; r += kMr) {
          const int mr = std::min(kMr, mc - r);
          t.c = c + static_cast<ptrdiff_t>(i0 + r) * ldc + j * kNr;
          if (pack)
            run_micro_kernel(mr, kc, packed + static_cast<ptrdiff_t>(r) * kc, 1, mr, bp, t);
          else
            run_micro_kernel(mr, kc, a + static_cast<ptrdiff_t>(i0 + r) * lda + p0, lda, 1, bp, t);
        }
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
  const int threads = useful_threads(pool, 2.0 * m * n * k);
  const int m_blocks = (m + kMr - 1) / kMr;
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
      const int m0 = std::min(m, static_cast<int>(static_cast<int64_t>(m_blocks) * im / tm) * kMr);
      const int m1 = std::min(m, static_cast<int>(static_cast<int64_t>(m_blocks) * (im + 1) / tm) * kMr);
      const int j0 = static_cast<int>(static_cast<int64_t>(panels) * in / tn);
      const int j1 = static_cast<int>(static_cast<int64_t>(panels) * (in + 1) / tn);
      if (m0 < m1 && j0 < j1) gemm_task(m0, m1, j0, j1, a, lda, a_layout, b, c, ldc, e);
    }
  };
  if (tm * tn > 1)
    pool->parallel_for(tm * tn, 1, task);
  else
    task(0, 1);
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
