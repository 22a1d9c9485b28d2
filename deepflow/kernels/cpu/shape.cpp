// SPDX-License-Identifier: Apache-2.0
// Optimized CPU kernels of the layout ops that training hits often: transpose,
// concat, slice, pad, tile and broadcast_to. They only move bytes, so they work
// per element size (1, 2, 4 or 8 bytes) and copy contiguous runs with memcpy.
// Strings (std::string elements) must be copied by assignment: concat, slice and
// tile do that through copy_run; transpose, pad and broadcast_to leave them to the
// reference kernels.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "deepflow/core/parallel.h"
#include "deepflow/kernels/broadcast.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

// Calls f(T{}) with an unsigned type of the given element size.
template <class F>
void by_size(size_t es, F&& f) {
  switch (es) {
    case 1:
      f(uint8_t{});
      break;
    case 2:
      f(uint16_t{});
      break;
    case 4:
      f(uint32_t{});
      break;
    default:
      f(uint64_t{});
      break;
  }
}

char* bytes(const Tensor& t) { return static_cast<char*>(t.raw_data()); }

// Copies n elements of es bytes each: memcpy, or std::string assignment for strings.
void copy_run(char* dst, const char* src, int64_t n, size_t es, bool strings) {
  if (strings)
    std::copy_n(reinterpret_cast<const std::string*>(src), n, reinterpret_cast<std::string*>(dst));
  else
    std::memcpy(dst, src, size_t(n) * es);
}

bool not_string(const OpCall& c) { return c.in(0).dtype() != DType::String; }

// Rows per parallel chunk so that each chunk moves about kParallelGrain elements.
int64_t row_grain(int64_t row_elems) { return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(row_elems, 1)); }
// String copies allocate, and bad_alloc must not escape an OpenMP region: one chunk.
int64_t row_grain(int64_t row_elems, int64_t rows, bool strings) {
  return strings ? std::max<int64_t>(rows, 1) : row_grain(row_elems);
}

// --- transpose ---
// Tiles of 32 input-contiguous by 128 output-contiguous elements (16 KiB each way at most):
// long output rows keep the stores streaming when the output stride spans pages.
constexpr int64_t kTileB = 32, kTileA = 128;

// out[i * so + j] = in[j * si + i] for an 8x8 block of 4-byte elements, in AVX2 registers.
inline void transpose8x8(const uint32_t* in, int64_t si, uint32_t* out, int64_t so) {
  auto ld = [&](int k) { return _mm256_loadu_ps(reinterpret_cast<const float*>(in + k * si)); };
  const __m256 r0 = ld(0), r1 = ld(1), r2 = ld(2), r3 = ld(3), r4 = ld(4), r5 = ld(5), r6 = ld(6), r7 = ld(7);
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  auto st = [&](int k, __m256 v) { _mm256_storeu_ps(reinterpret_cast<float*>(out + k * so), v); };
  st(0, _mm256_permute2f128_ps(u0, u4, 0x20));
  st(1, _mm256_permute2f128_ps(u1, u5, 0x20));
  st(2, _mm256_permute2f128_ps(u2, u6, 0x20));
  st(3, _mm256_permute2f128_ps(u3, u7, 0x20));
  st(4, _mm256_permute2f128_ps(u0, u4, 0x31));
  st(5, _mm256_permute2f128_ps(u1, u5, 0x31));
  st(6, _mm256_permute2f128_ps(u2, u6, 0x31));
  st(7, _mm256_permute2f128_ps(u3, u7, 0x31));
}

// out[i * so + j] = in[j * si + i] for i < ni, j < nj (one tile, a few KiB): 8x8 register
// blocks for 4-byte elements, plain loops for the edges and other sizes.
template <class T>
void transpose_tile(const T* in, int64_t si, T* out, int64_t so, int64_t ni, int64_t nj) {
  int64_t i0 = 0;
  if constexpr (sizeof(T) == 4) {
    const int64_t nj8 = nj / 8 * 8;
    if (nj8 > 0)
      for (; i0 + 8 <= ni; i0 += 8) {
        for (int64_t j0 = 0; j0 < nj8; j0 += 8) transpose8x8(in + j0 * si + i0, si, out + i0 * so + j0, so);
        for (int64_t i = i0; i < i0 + 8; ++i)
          for (int64_t j = nj8; j < nj; ++j) out[i * so + j] = in[j * si + i];
      }
  }
  if (nj == 3 && so == 3) {  // RGB images to channels-last: a constant the compiler unrolls
    for (int64_t i = i0; i < ni; ++i)
      for (int64_t j = 0; j < 3; ++j) out[i * 3 + j] = in[j * si + i];
    return;
  }
  for (int64_t i = i0; i < ni; ++i)
    for (int64_t j = 0; j < nj; ++j) out[i * so + j] = in[j * si + i];
}

// Size-1 dims are dropped and input dims that stay adjacent in the output are
// merged, so [n,h,w,c] -> [n,c,h,w] becomes a batch of 2-D transposes.
void cpu_transpose(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  if (o.size() == 0) return;
  std::vector<int64_t> perm = c.attr_ints("perm");
  const int r = x.rank();
  if (perm.empty())
    for (int i = r - 1; i >= 0; --i) perm.push_back(i);
  // Groups of input dims, in output order, each a run of consecutive input dims.
  std::vector<std::pair<int, int>> groups;  // [first, last] input dim
  for (int k = 0; k < r; ++k) {
    const int d = int(perm[size_t(k)]);
    if (x.shape()[d] == 1) continue;
    if (!groups.empty() && groups.back().second + 1 == d) {
      groups.back().second = d;
      continue;
    }
    // Skip size-1 input dims between the previous group's last dim and d.
    if (!groups.empty()) {
      int e = groups.back().second + 1;
      while (e < d && x.shape()[e] == 1) ++e;
      if (e == d) {
        groups.back().second = d;
        continue;
      }
    }
    groups.emplace_back(d, d);
  }
  const size_t es = dtype_size(x.dtype());
  const int n = int(groups.size());
  std::vector<int> order(n, 0);  // groups sorted by input position -> new input dim index
  for (int i = 0; i < n; ++i) order[size_t(i)] = i;
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return groups[size_t(a)].first < groups[size_t(b)].first; });
  std::vector<int64_t> dims(n, 0), in_stride(n, 0), p(n, 0);  // p: output pos -> input dim
  for (int j = 0; j < n; ++j) {
    int64_t sz = 1;
    for (int d = groups[size_t(order[size_t(j)])].first; d <= groups[size_t(order[size_t(j)])].second; ++d)
      sz *= x.shape()[d];
    dims[size_t(j)] = sz;
    p[size_t(order[size_t(j)])] = j;
  }
  for (int j = n - 1; j >= 0; --j)
    in_stride[size_t(j)] = j == n - 1 ? 1 : in_stride[size_t(j + 1)] * dims[size_t(j + 1)];
  if (n <= 1 || std::is_sorted(p.begin(), p.end())) {
    std::memcpy(o.raw_data(), x.raw_data(), x.nbytes());
    return;
  }
  // Output dims and the input stride of each output dim.
  std::vector<int64_t> od(n, 0), ois(n, 0), os(n, 0);
  for (int k = 0; k < n; ++k)
    od[size_t(k)] = dims[size_t(p[size_t(k)])], ois[size_t(k)] = in_stride[size_t(p[size_t(k)])];
  for (int k = n - 1; k >= 0; --k) os[size_t(k)] = k == n - 1 ? 1 : os[size_t(k + 1)] * od[size_t(k + 1)];
  if (p[size_t(n - 1)] == n - 1) {  // the innermost dim stays innermost: copy runs
    const int64_t run = od[size_t(n - 1)], rows = o.size() / run;
    parallel_for(rows, row_grain(run), [&](int64_t rb, int64_t re) {
      for (int64_t row = rb; row < re; ++row) {
        int64_t rem = row, off = 0;
        for (int k = n - 2; k >= 0; --k) {
          off += rem % od[size_t(k)] * ois[size_t(k)];
          rem /= od[size_t(k)];
        }
        std::memcpy(bytes(o) + size_t(row * run) * es, bytes(x) + size_t(off) * es, size_t(run) * es);
      }
    });
    return;
  }
  by_size(es, [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw_data());
    T* po = static_cast<T*>(o.raw_data());
    // A batch of 2-D transposes: output dim pb holds the input's innermost dim (contiguous
    // reads), output dim pa the output's innermost (contiguous writes).
    int pb = 0;
    while (p[size_t(pb)] != n - 1) ++pb;
    const int pa = n - 1;
    const int64_t na = od[size_t(pa)], nb = od[size_t(pb)], sa = ois[size_t(pa)], osb = os[size_t(pb)];
    std::vector<int> outer;
    for (int k = 0; k < n; ++k)
      if (k != pa && k != pb) outer.push_back(k);
    int64_t n_outer = 1;
    for (int k : outer) n_outer *= od[size_t(k)];
    // Short output rows (RGB to channels-last: 3) take proportionally more of them per tile.
    const int64_t tile_b = na >= kTileA ? kTileB : std::max<int64_t>(kTileB, kTileB * kTileA / na / 8 * 8);
    const int64_t tiles_b = (nb + tile_b - 1) / tile_b;
    const int64_t tiles_a = (na + kTileA - 1) / kTileA;
    const int64_t tile_elems = std::min(nb, tile_b) * std::min(na, kTileA);
    // Tasks run (outer, b tile, a tile) with the a tile fastest: consecutive tiles write on
    // along the same output rows.
    parallel_for(n_outer * tiles_b * tiles_a, row_grain(tile_elems), [&](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) {
        const int64_t ta = t % tiles_a, tbb = (t / tiles_a) % tiles_b;
        int64_t rem = t / tiles_a / tiles_b, in_base = 0, out_base = 0;
        for (int q = int(outer.size()) - 1; q >= 0; --q) {
          const int k = outer[size_t(q)];
          const int64_t idx = rem % od[size_t(k)];
          rem /= od[size_t(k)];
          in_base += idx * ois[size_t(k)];
          out_base += idx * os[size_t(k)];
        }
        const int64_t ib = tbb * tile_b, ja = ta * kTileA;
        transpose_tile(px + in_base + ja * sa + ib, sa, po + out_base + ib * osb + ja, osb,
                       std::min(nb - ib, tile_b), std::min(na - ja, kTileA));
      }
    });
  });
}

// --- concat --- each output row (dims before axis) is the inputs' rows back to back.
void cpu_concat(const OpCall& c, TensorList& out) {
  Tensor& o = out[0];
  if (o.size() == 0) return;
  const int axis = normalize_axis("concat", c.attr_int("axis"), o.rank());
  const size_t es = dtype_size(o.dtype());
  const bool strings = o.dtype() == DType::String;
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= o.shape()[d];
  const int64_t out_row = o.size() / outer;
  std::vector<int64_t> row;
  for (const Tensor& x : c.inputs) row.push_back(x.size() / outer);
  char* po = bytes(o);
  parallel_for(outer, row_grain(out_row, outer, strings), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      int64_t off = 0;
      for (size_t k = 0; k < row.size(); ++k) {
        if (row[k] == 0) continue;
        copy_run(po + size_t(r * out_row + off) * es, bytes(c.inputs[k]) + size_t(r * row[k]) * es, row[k], es,
                 strings);
        off += row[k];
      }
    }
  });
}

// --- slice --- copies runs of the innermost partial dim (with the full dims inside it).
void cpu_slice(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  if (o.size() == 0) return;
  const auto& begin = c.attr_ints("begin");
  const int r = x.rank();
  const size_t es = dtype_size(x.dtype());
  const bool strings = x.dtype() == DType::String;
  int last = r - 1;
  while (last >= 0 && o.shape()[last] == x.shape()[last]) --last;
  if (last < 0) {
    copy_run(bytes(o), bytes(x), x.size(), es, strings);
    return;
  }
  std::vector<int64_t> in_stride = contiguous_strides(x.shape());
  const int64_t run = o.shape()[last] * in_stride[size_t(last)];
  const int64_t rows = o.size() / run;
  parallel_for(rows, row_grain(run, rows, strings), [&](int64_t rb, int64_t re) {
    for (int64_t row = rb; row < re; ++row) {
      int64_t rem = row, off = begin[size_t(last)] * in_stride[size_t(last)];
      for (int d = last - 1; d >= 0; --d) {
        off += (rem % o.shape()[d] + begin[size_t(d)]) * in_stride[size_t(d)];
        rem /= o.shape()[d];
      }
      copy_run(bytes(o) + size_t(row * run) * es, bytes(x) + size_t(off) * es, run, es, strings);
    }
  });
}

// --- pad (constant) --- fill, then copy each input row into place.
void cpu_pad(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  const auto& p = c.attr_ints("paddings");
  DF_DISPATCH_ALL(x.dtype(), "pad", [&] {
    const scalar_t v = convert<scalar_t>(c.attr_float("constant_value"));
    scalar_t* po = o.data<scalar_t>();
    parallel_for(o.size(), kParallelGrain, [&](int64_t b, int64_t e) { std::fill(po + b, po + e, v); });
  });
  if (x.size() == 0) return;
  const int r = x.rank();
  const size_t es = dtype_size(x.dtype());
  if (r == 0) {
    std::memcpy(o.raw_data(), x.raw_data(), es);
    return;
  }
  std::vector<int64_t> os = contiguous_strides(o.shape());
  const int64_t run = x.shape()[r - 1], rows = x.size() / run;
  parallel_for(rows, row_grain(run), [&](int64_t rb, int64_t re) {
    for (int64_t row = rb; row < re; ++row) {
      int64_t rem = row, off = p[size_t(2 * (r - 1))];
      for (int d = r - 2; d >= 0; --d) {
        off += (rem % x.shape()[d] + p[size_t(2 * d)]) * os[size_t(d)];
        rem /= x.shape()[d];
      }
      std::memcpy(bytes(o) + size_t(off) * es, bytes(x) + size_t(row * run) * es, size_t(run) * es);
    }
  });
}

// --- tile --- each output row (all dims but the last) repeats one input row m_last times.
void cpu_tile(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  if (o.size() == 0) return;
  const int r = x.rank();
  const size_t es = dtype_size(x.dtype());
  const bool strings = x.dtype() == DType::String;
  if (r == 0) {
    copy_run(bytes(o), bytes(x), 1, es, strings);
    return;
  }
  std::vector<int64_t> is = contiguous_strides(x.shape());
  const int64_t run = x.shape()[r - 1], reps = o.shape()[r - 1] / run, orow = o.shape()[r - 1];
  const int64_t rows = o.size() / orow;
  parallel_for(rows, row_grain(orow, rows, strings), [&](int64_t rb, int64_t re) {
    for (int64_t row = rb; row < re; ++row) {
      int64_t rem = row, off = 0;
      for (int d = r - 2; d >= 0; --d) {
        off += (rem % o.shape()[d]) % x.shape()[d] * is[size_t(d)];
        rem /= o.shape()[d];
      }
      char* dst = bytes(o) + size_t(row * orow) * es;
      for (int64_t k = 0; k < reps; ++k)
        copy_run(dst + size_t(k * run) * es, bytes(x) + size_t(off) * es, run, es, strings);
    }
  });
}

// --- broadcast_to --- rows of the broadcast plan: a memcpy, or one value repeated.
void cpu_broadcast_to(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  if (o.size() == 0) return;
  BroadcastPlan plan(o.shape(), {&x.shape()});
  by_size(dtype_size(x.dtype()), [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw_data());
    T* po = static_cast<T*>(o.raw_data());
    plan.for_each_row([&](int64_t oo, const int64_t* in, const int64_t* st, int64_t n) {
      if (st[0] == 1)
        std::memcpy(po + oo, px + in[0], size_t(n) * sizeof(T));
      else
        std::fill(po + oo, po + oo + n, px[in[0]]);
    });
  });
}

}  // namespace

DF_REGISTER_KERNEL(Transpose, {.name = "cpu:copy", .priority = kCpuPriority, .supports = not_string,
                               .run = cpu_transpose});
DF_REGISTER_KERNEL(Concat, {.name = "cpu:copy", .priority = kCpuPriority, .run = cpu_concat});
DF_REGISTER_KERNEL(Slice, {.name = "cpu:copy", .priority = kCpuPriority, .run = cpu_slice});
DF_REGISTER_KERNEL(Pad, {.name = "cpu:copy", .priority = kCpuPriority, .supports = not_string, .run = cpu_pad});
DF_REGISTER_KERNEL(Tile, {.name = "cpu:copy", .priority = kCpuPriority, .run = cpu_tile});
DF_REGISTER_KERNEL(BroadcastTo, {.name = "cpu:copy", .priority = kCpuPriority, .supports = not_string,
                                 .run = cpu_broadcast_to});

}  // namespace deepflow
