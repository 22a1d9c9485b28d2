// SPDX-License-Identifier: Apache-2.0
// Optimized CPU kernels of reduce_sum / max / min / prod for the float types.
//
// The input is coalesced into [outer, reduced, inner] (runs of kept and reduced
// dims merged); shapes that do not fit that pattern go to the reference kernel.
// inner == 1 reduces contiguous rows with several vector accumulators; inner > 1
// accumulates whole inner rows (vectorized across inner). Long reductions are cut
// into chunks whose size depends only on the shape, and the partial results are
// combined in chunk order, so results never depend on the thread count.
// 16-bit types accumulate in float, products in double.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "deepflow/core/parallel.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

// vf: f on 8 float lanes (AVX2), for the float rows of fold_row; Prod has none.
struct Sum {
  template <class T> using acc = compute_t<T>;
  template <class C> static C init() { return C(0); }
  template <class C> static C f(C a, C v) { return a + v; }
  static __m256 vf(__m256 a, __m256 v) { return _mm256_add_ps(a, v); }
};
// Products drift in float (values near 1 round with a bias): accumulate in double.
struct Prod {
  template <class T> using acc = double;
  template <class C> static C init() { return C(1); }
  template <class C> static C f(C a, C v) { return a * v; }
};
// NaN propagates (and stays once it is in the accumulator), as in the reference.
struct Max {
  template <class T> using acc = compute_t<T>;
  template <class C> static C init() { return -std::numeric_limits<C>::infinity(); }
  template <class C> static C f(C a, C v) { return (v > a || v != v) ? v : a; }
  static __m256 vf(__m256 a, __m256 v) {
    return _mm256_blendv_ps(a, v, _mm256_or_ps(_mm256_cmp_ps(v, a, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
  }
};
struct Min {
  template <class T> using acc = compute_t<T>;
  template <class C> static C init() { return std::numeric_limits<C>::infinity(); }
  template <class C> static C f(C a, C v) { return (v < a || v != v) ? v : a; }
  static __m256 vf(__m256 a, __m256 v) {
    return _mm256_blendv_ps(a, v, _mm256_or_ps(_mm256_cmp_ps(v, a, _CMP_LT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
  }
};

// Elements one chunk of a reduction covers: big enough to amortize a task, small
// enough to keep float sums accurate; fixed, so the combine order is too.
constexpr int64_t kChunk = 16384;

struct Coalesced {
  int64_t outer = 1, red = 1, inner = 1;
  bool ok = true;
};

// Merges runs of reduced and kept dims (size-1 dims vanish) into [outer, red, inner].
Coalesced coalesce(const OpCall& c) {
  const Tensor& x = c.in(0);
  const int rank = x.rank();
  const auto& axes = c.attr_ints("axes");
  std::vector<bool> m(size_t(rank), axes.empty());
  for (int64_t a : axes) m[size_t(a < 0 ? a + rank : a)] = true;
  std::vector<std::pair<bool, int64_t>> runs;  // (reduced, size)
  for (int i = 0; i < rank; ++i) {
    if (x.shape()[i] == 1) continue;
    if (!runs.empty() && runs.back().first == m[size_t(i)]) runs.back().second *= x.shape()[i];
    else runs.emplace_back(m[size_t(i)], x.shape()[i]);
  }
  Coalesced r;
  size_t i = 0;
  if (i < runs.size() && !runs[i].first) r.outer = runs[i++].second;
  if (i < runs.size() && runs[i].first) r.red = runs[i++].second;
  if (i < runs.size() && !runs[i].first) r.inner = runs[i++].second;
  r.ok = i == runs.size();
  return r;
}

template <class Op, class C>
concept VectorOp = std::is_same_v<C, float> && requires(__m256 v) { Op::vf(v, v); };

// Folds n contiguous elements with 32 independent accumulators (keeps float sums more
// accurate than one running total). Float rows run on four 8-lane vectors that fold into
// one, which takes the rest 8 at a time and then a masked last load, so a short row (a
// global pool over NCHW: 49 elements) has no scalar tail (mobilenet_v2's [8,1280,7,7]
// pool, 2 threads: 24 us, 108 with the generic loop's 17-add scalar tail).
template <class Op, class T>
typename Op::template acc<T> fold_row(const T* p, int64_t n) {
  using C = typename Op::template acc<T>;
  constexpr int kLanes = 32;
  C acc[kLanes];
  if constexpr (std::is_same_v<T, float> && VectorOp<Op, C>) {
    const __m256 id = _mm256_set1_ps(Op::template init<float>());
    __m256 v0 = id, v1 = id, v2 = id, v3 = id;
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      v0 = Op::vf(v0, _mm256_loadu_ps(p + i));
      v1 = Op::vf(v1, _mm256_loadu_ps(p + i + 8));
      v2 = Op::vf(v2, _mm256_loadu_ps(p + i + 16));
      v3 = Op::vf(v3, _mm256_loadu_ps(p + i + 24));
    }
    v0 = Op::vf(Op::vf(v0, v1), Op::vf(v2, v3));
    for (; i + 8 <= n; i += 8) v0 = Op::vf(v0, _mm256_loadu_ps(p + i));
    if (i < n) {
      const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n - i)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
      v0 = Op::vf(v0, _mm256_blendv_ps(id, _mm256_maskload_ps(p + i, mask), _mm256_castsi256_ps(mask)));
    }
    _mm256_storeu_ps(acc, v0);
    for (int w = 4; w > 0; w /= 2)
      for (int j = 0; j < w; ++j) acc[j] = Op::f(acc[j], acc[j + w]);
    return acc[0];
  } else {
    for (C& a : acc) a = Op::template init<C>();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
#pragma omp simd
      for (int j = 0; j < kLanes; ++j) acc[j] = Op::f(acc[j], C(p[i + j]));
    for (int w = kLanes / 2; w > 0; w /= 2)
      for (int j = 0; j < w; ++j) acc[j] = Op::f(acc[j], acc[j + w]);
    C r = acc[0];
    for (; i < n; ++i) r = Op::f(r, C(p[i]));
    return r;
  }
}

// [outer, red] -> [outer]: each row in chunks of kChunk, then the chunks in order.
template <class Op, class T>
void reduce_rows(const T* x, T* o, int64_t outer, int64_t red) {
  using C = typename Op::template acc<T>;
  const int64_t chunks = std::max<int64_t>(1, (red + kChunk - 1) / kChunk);
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, std::min(red, kChunk)));
  if (chunks == 1) {  // one chunk per row: no partials to combine
    parallel_for(outer, grain, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row)
        o[row] = T(compute_t<T>(red == 0 ? Op::template init<C>() : fold_row<Op>(x + row * red, red)));
    });
    return;
  }
  std::vector<C> part(size_t(outer * chunks));
  parallel_for(outer * chunks, grain, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t row = t / chunks, ch = t % chunks;
      const int64_t begin = ch * kChunk, len = std::min(kChunk, red - begin);
      part[size_t(t)] = red == 0 ? Op::template init<C>() : fold_row<Op>(x + row * red + begin, len);
    }
  });
  for (int64_t row = 0; row < outer; ++row) {
    C r = part[size_t(row * chunks)];
    for (int64_t ch = 1; ch < chunks; ++ch) r = Op::f(r, part[size_t(row * chunks + ch)]);
    o[row] = T(compute_t<T>(r));
  }
}

// [outer, red, inner] -> [outer, inner]: tasks are (outer, red chunk, inner block);
// each accumulates whole inner blocks across its red chunk (vectorized across inner,
// the accumulators staying in L1); then the chunks combine in order, block by block.
template <class Op, class T>
void reduce_cols(const T* x, T* o, int64_t outer, int64_t red, int64_t inner) {
  using C = typename Op::template acc<T>;
  constexpr int64_t kBlock = 1024, kTask = 65536;
  // Equal blocks (multiples of 16 lanes): 1280 channels are two blocks of 640, not 1024 + 256.
  int64_t width = inner, blocks = 1;
  if (inner > kBlock) {
    blocks = (inner + kBlock - 1) / kBlock;
    width = ((inner + blocks - 1) / blocks + 15) / 16 * 16;
    blocks = (inner + width - 1) / width;
  }
  const int64_t rows_per_chunk = std::max<int64_t>(1, kTask / width);
  const int64_t chunks = std::max<int64_t>(1, (red + rows_per_chunk - 1) / rows_per_chunk);
  std::vector<C> part(size_t(outer * chunks * inner));
  auto finish = [&](const C* acc, int64_t ot, int64_t ch, int64_t i0, int64_t w) {
    if (chunks == 1) {
      for (int64_t i = 0; i < w; ++i) o[ot * inner + i0 + i] = T(compute_t<T>(acc[i]));
    } else {
      std::copy(acc, acc + w, part.begin() + (ot * chunks + ch) * inner + i0);
    }
  };
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (rows_per_chunk * width));
  parallel_for(outer * chunks * blocks, grain, [&](int64_t b, int64_t e) {
    C acc[kBlock];
    for (int64_t t = b; t < e; ++t) {
      const int64_t blk = t % blocks, ch = (t / blocks) % chunks, ot = t / (blocks * chunks);
      const int64_t i0 = blk * width, w = std::min(width, inner - i0);
      const int64_t r0 = ch * rows_per_chunk, r1 = std::min(red, r0 + rows_per_chunk);
      for (int64_t i = 0; i < w; ++i) acc[i] = Op::template init<C>();
      int64_t r = r0;
      for (; r + 4 <= r1; r += 4) {  // four rows per pass: a quarter of the accumulator traffic
        const T* p = x + (ot * red + r) * inner + i0;
        const T *p1 = p + inner, *p2 = p + 2 * inner, *p3 = p + 3 * inner;
#pragma omp simd
        for (int64_t i = 0; i < w; ++i)
          acc[i] = Op::f(acc[i], Op::f(Op::f(C(p[i]), C(p1[i])), Op::f(C(p2[i]), C(p3[i]))));
      }
      for (; r < r1; ++r) {
        const T* p = x + (ot * red + r) * inner + i0;
#pragma omp simd
        for (int64_t i = 0; i < w; ++i) acc[i] = Op::f(acc[i], C(p[i]));
      }
      finish(acc, ot, ch, i0, w);
    }
  });
  if (chunks == 1) return;
  parallel_for(outer * blocks, std::max<int64_t>(1, kParallelGrain / (chunks * width)), [&](int64_t b, int64_t e) {
    C acc[kBlock];
    for (int64_t t = b; t < e; ++t) {
      const int64_t blk = t % blocks, ot = t / blocks;
      const int64_t i0 = blk * width, w = std::min(width, inner - i0);
      const C* p = part.data() + ot * chunks * inner + i0;
      std::copy(p, p + w, acc);
      for (int64_t ch = 1; ch < chunks; ++ch) {
        const C* q = p + ch * inner;
#pragma omp simd
        for (int64_t i = 0; i < w; ++i) acc[i] = Op::f(acc[i], q[i]);
      }
      for (int64_t i = 0; i < w; ++i) o[ot * inner + i0 + i] = T(compute_t<T>(acc[i]));
    }
  });
}

template <class Op>
void cpu_reduce(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  const Coalesced s = coalesce(c);
  DF_DISPATCH_FLOAT(x.dtype(), c.name(), [&] {
    if (s.inner == 1) reduce_rows<Op>(x.data<scalar_t>(), o.data<scalar_t>(), s.outer, s.red);
    else reduce_cols<Op>(x.data<scalar_t>(), o.data<scalar_t>(), s.outer, s.red, s.inner);
  });
}

bool supported(const OpCall& c) { return is_floating(c.in(0).dtype()) && coalesce(c).ok; }

}  // namespace

DF_REGISTER_KERNEL(ReduceSum, {.name = "cpu:omp", .priority = kCpuPriority, .supports = supported, .run = cpu_reduce<Sum>});
DF_REGISTER_KERNEL(ReduceMax, {.name = "cpu:omp", .priority = kCpuPriority, .supports = supported, .run = cpu_reduce<Max>});
DF_REGISTER_KERNEL(ReduceMin, {.name = "cpu:omp", .priority = kCpuPriority, .supports = supported, .run = cpu_reduce<Min>});
DF_REGISTER_KERNEL(ReduceProd, {.name = "cpu:omp", .priority = kCpuPriority, .supports = supported, .run = cpu_reduce<Prod>});

}  // namespace deepflow
