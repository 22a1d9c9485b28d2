// SPDX-License-Identifier: Apache-2.0
// Reference kernels of the indexing primitives. Every index is validated before
// anything is written, so a bad index throws and leaves no partial output.
#include <cstring>
#include <string>

#include "deepflow/ops/kernel.h"
#include "deepflow/kernels/ref/ref_util.h"
#include "deepflow/ops/index_util.h"

namespace deepflow {
namespace {

// "1,2": the multi-index of flat position f in s (for error messages).
std::string index_string(const Shape& s, int64_t f) {
  int64_t idx[kMaxRank];
  ref::unravel(s, f, idx);
  std::string r;
  for (int d = 0; d < s.rank(); ++d) {
    if (d) r += ',';
    r += std::to_string(idx[d]);
  }
  return r;
}

// The index tuple starting at flat position m * q, as "[1, 5]".
std::string tuple_string(const std::vector<int64_t>& v, int64_t m, int64_t q) {
  std::string r = "[";
  for (int64_t j = 0; j < q; ++j) {
    if (j) r += ", ";
    r += std::to_string(v[size_t(m * q + j)]);
  }
  return r + "]";
}

// Adds b into a; for bool, duplicates combine with or.
template <class T>
void accumulate(T& a, T b) {
  if constexpr (std::is_same_v<T, bool>)
    a = a || b;
  else
    a = T(compute_t<T>(a) + compute_t<T>(b));
}

// out [B, O, K, I] = params [B, O, N, I] at index [B, K].
void ref_gather(const OpCall& c, TensorList& out) {
  const Tensor &params = c.in(0), &indices = c.in(1);
  // Named fields, not a structured binding: clang 14 cannot capture those in lambdas.
  const detail::GatherGeometry geo = detail::gather_geometry(c);
  const int64_t B = geo.B, O = geo.O, N = geo.N, I = geo.I, K = geo.K;
  const std::vector<int64_t> idx = indices.to_vector<int64_t>();
  for (size_t j = 0; j < idx.size(); ++j)
    DF_CHECK(idx[j] >= 0 && idx[j] < N, "[gather] indices[", index_string(indices.shape(), int64_t(j)), "] = ", idx[j],
             " is not in [0, ", N, ")");
  DF_DISPATCH_ALL_AND_STRING(params.dtype(), "gather", [&] {
    const scalar_t* pp = params.data<scalar_t>();
    scalar_t* po = out[0].data<scalar_t>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t k = 0; k < K; ++k)
          for (int64_t i = 0; i < I; ++i)
            po[((b * O + o) * K + k) * I + i] = pp[((b * O + o) * N + idx[size_t(b * K + k)]) * I + i];
  });
}

// Flat offsets (in units of the trailing slice) of the index tuples into `shape`.
std::vector<int64_t> nd_offsets(const char* op, const char* what, const Tensor& indices, const Shape& shape) {
  const int64_t q = indices.dim(-1), m = detail::dims_product(indices.shape(), 0, indices.rank() - 1);
  const std::vector<int64_t> v = indices.to_vector<int64_t>();
  std::vector<int64_t> offs(m, 0);
  const Shape outer(shape.begin(), shape.begin() + q);
  for (int64_t i = 0; i < m; ++i) {
    int64_t off = 0;
    for (int64_t j = 0; j < q; ++j) {
      const int64_t x = v[size_t(i * q + j)];
      DF_CHECK(x >= 0 && x < shape[int(j)], "[", op, "] indices[",
               index_string(Shape(indices.shape().begin(), indices.shape().end() - 1), i),
               "] = ", tuple_string(v, i, q), " does not index into ", what, " ", shape);
      off = off * shape[int(j)] + x;
    }
    offs[size_t(i)] = off;
  }
  return offs;
}

void ref_gather_nd(const OpCall& c, TensorList& out) {
  const Tensor &params = c.in(0), &indices = c.in(1);
  const std::vector<int64_t> offs = nd_offsets("gather_nd", "params of shape", indices, params.shape());
  const int64_t s = detail::dims_product(params.shape(), int(indices.dim(-1)), params.rank());
  DF_DISPATCH_ALL_AND_STRING(params.dtype(), "gather_nd", [&] {
    const scalar_t* pp = params.data<scalar_t>();
    scalar_t* po = out[0].data<scalar_t>();
    for (size_t i = 0; i < offs.size(); ++i)
      for (int64_t k = 0; k < s; ++k) po[int64_t(i) * s + k] = pp[offs[i] * s + k];
  });
}

void ref_scatter_nd(const OpCall& c, TensorList& out) {
  const Tensor &indices = c.in(0), &updates = c.in(1);
  Tensor& o = out[0];
  const std::vector<int64_t> offs = nd_offsets("scatter_nd", "shape", indices, o.shape());
  const int64_t s = detail::dims_product(o.shape(), int(indices.dim(-1)), o.rank());
  std::memset(o.raw_data(), 0, o.nbytes());
  DF_DISPATCH_ALL(updates.dtype(), "scatter_nd", [&] {
    const scalar_t* pu = updates.data<scalar_t>();
    scalar_t* po = o.data<scalar_t>();
    for (size_t i = 0; i < offs.size(); ++i)
      for (int64_t k = 0; k < s; ++k) accumulate(po[offs[i] * s + k], pu[int64_t(i) * s + k]);
  });
}

void ref_unsorted_segment_sum(const OpCall& c, TensorList& out) {
  const Tensor &data = c.in(0), &ids = c.in(1);
  Tensor& o = out[0];
  const int64_t num = c.attr_int("num_segments"), s = detail::dims_product(data.shape(), ids.rank(), data.rank());
  const std::vector<int64_t> v = ids.to_vector<int64_t>();
  std::memset(o.raw_data(), 0, o.nbytes());
  DF_DISPATCH_NUMERIC(data.dtype(), "unsorted_segment_sum", [&] {
    const scalar_t* pd = data.data<scalar_t>();
    scalar_t* po = o.data<scalar_t>();
    for (size_t r = 0; r < v.size(); ++r) {
      if (v[r] < 0 || v[r] >= num) continue;
      for (int64_t k = 0; k < s; ++k) accumulate(po[v[r] * s + k], pd[int64_t(r) * s + k]);
    }
  });
}

}  // namespace

DF_REGISTER_KERNEL(Gather, {.run = ref_gather});
DF_REGISTER_KERNEL(GatherNd, {.run = ref_gather_nd});
DF_REGISTER_KERNEL(ScatterNd, {.run = ref_scatter_nd});
DF_REGISTER_KERNEL(UnsortedSegmentSum, {.run = ref_unsorted_segment_sum});

}  // namespace deepflow
