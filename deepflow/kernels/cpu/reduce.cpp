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
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "deepflow/core/parallel.h"
#include "deepflow/kernels/kernel.h"

namespace deepflow {
namespace {

struct Sum {
  template <class T> using acc = compute_t<T>;
  template <class C> static C init() { return C(0); }
  template <class C> static C f(C a, C v) { return a + v; }
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
};
struct Min {
  template <class T> using acc = compute_t<T>;
  template <class C> static C init() { return std::numeric_limits<C>::infinity(); }
  template <class C> static C f(C a, C v) { return (v < a || v != v) ? v : a; }
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

// Folds n contiguous elements with 32 independent accumulators (vectorizes, and
// keeps float sums more accurate than one running total).
template <class Op, class T>
typename Op::template acc<T> fold_row(const T* p, int64_t n) {
  using C = typename Op::template acc<T>;
  constexpr int kLanes = 32;
  C acc[kLanes];
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

// [outer, red] -> [outer]: each row in chunks of kChunk, then the chunks in order.
template <class Op, class T>
void reduce_rows(const T* x, T* o, int64_t outer, int64_t red) {
  using C = typename Op::template acc<T>;
  const int64_t chunks = std::max<int64_t>(1, (red + kChunk - 1) / kChunk);
  std::vector<C> part(size_t(outer * chunks));
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, std::min(red, kChunk)));
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
  const int64_t width = std::min(inner, kBlock), blocks = (inner + kBlock - 1) / kBlock;
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
      const int64_t i0 = blk * kBlock, w = std::min(kBlock, inner - i0);
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
      const int64_t i0 = blk * kBlock, w = std::min(kBlock, inner - i0);
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
