// SPDX-License-Identifier: Apache-2.0
// Reference kernels of the shape and layout primitives: one element at a time,
// through multi-indices. They only move data, so every dtype works (strings by
// assignment), except pad and strided_slice_grad, which need a fill value.
#include <cstring>

#include "deepflow/ops/kernel.h"
#include "deepflow/kernels/ref/ref_util.h"
#include "deepflow/ops/shape_util.h"

namespace deepflow {
namespace {

using ref::ravel;
using ref::unravel;

void ref_reshape(const OpCall& c, TensorList& out) {
  std::vector<int64_t> t = c.attr_ints("shape");
  int64_t product = 1;
  int unknown = -1;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == -1)
      unknown = int(i);
    else
      product *= t[i];
  }
  if (unknown >= 0) t[size_t(unknown)] = c.in(0).size() / product;  // infer checked divisibility
  out[0] = c.in(0).view(Shape(t));
}

void ref_transpose(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty())
    for (int i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  DF_DISPATCH_ALL_AND_STRING(x.dtype(), "transpose", [&] {
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* po = o.data<scalar_t>();
    int64_t oi[kMaxRank], xi[kMaxRank];
    for (int64_t f = 0, n = o.size(); f < n; ++f) {
      unravel(o.shape(), f, oi);
      for (int d = 0; d < o.rank(); ++d) xi[perm[size_t(d)]] = oi[d];
      po[f] = px[ravel(x.shape(), xi)];
    }
  });
}

void ref_concat(const OpCall& c, TensorList& out) {
  Tensor& o = out[0];
  const int axis = normalize_axis("concat", c.attr_int("axis"), o.rank());
  DF_DISPATCH_ALL_AND_STRING(o.dtype(), "concat", [&] {
    scalar_t* po = o.data<scalar_t>();
    int64_t idx[kMaxRank], offset = 0;
    for (const Tensor& x : c.inputs) {
      const scalar_t* px = x.data<scalar_t>();
      for (int64_t f = 0, n = x.size(); f < n; ++f) {
        unravel(x.shape(), f, idx);
        idx[axis] += offset;
        po[ravel(o.shape(), idx)] = px[f];
      }
      offset += x.shape()[axis];
    }
  });
}

void ref_slice(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  const auto& begin = c.attr_ints("begin");
  DF_DISPATCH_ALL_AND_STRING(x.dtype(), "slice", [&] {
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* po = o.data<scalar_t>();
    int64_t idx[kMaxRank];
    for (int64_t f = 0, n = o.size(); f < n; ++f) {
      unravel(o.shape(), f, idx);
      for (int d = 0; d < o.rank(); ++d) idx[d] += begin[size_t(d)];
      po[f] = px[ravel(x.shape(), idx)];
    }
  });
}

// The slice's elements in row-major order of `count` (the output's order: new and
// shrunk axes are size 1), as flat offsets into a tensor of shape `full`.
template <class F>
void for_each_strided(const OpCall& c, const Shape& full, F&& f) {
  std::vector<int64_t> begin, stride, count;
  detail::strided_slice_dense(c, full, begin, stride, count);
  const Shape proc(count);
  int64_t idx[kMaxRank];
  for (int64_t i = 0, n = proc.num_elements(); i < n; ++i) {
    unravel(proc, i, idx);
    for (int d = 0; d < proc.rank(); ++d) idx[d] = begin[size_t(d)] + idx[d] * stride[size_t(d)];
    f(i, ravel(full, idx));
  }
}

void ref_strided_slice(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  DF_DISPATCH_ALL_AND_STRING(x.dtype(), "strided_slice", [&] {
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* po = out[0].data<scalar_t>();
    for_each_strided(c, x.shape(), [&](int64_t i, int64_t src) { po[i] = px[src]; });
  });
}

void ref_strided_slice_grad(const OpCall& c, TensorList& out) {
  const Tensor& g = c.in(0);
  Tensor& o = out[0];
  std::memset(o.raw_data(), 0, o.nbytes());  // all-zero bytes are 0 / false in every dtype
  DF_DISPATCH_ALL(g.dtype(), "strided_slice_grad", [&] {
    const scalar_t* pg = g.data<scalar_t>();
    scalar_t* po = o.data<scalar_t>();
    for_each_strided(c, o.shape(), [&](int64_t i, int64_t dst) { po[dst] = pg[i]; });
  });
}

void ref_pad(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  const auto& p = c.attr_ints("paddings");
  DF_DISPATCH_ALL(x.dtype(), "pad", [&] {
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* po = o.data<scalar_t>();
    const scalar_t v = convert<scalar_t>(c.attr_float("constant_value"));
    for (int64_t f = 0, n = o.size(); f < n; ++f) po[f] = v;
    int64_t idx[kMaxRank];
    for (int64_t f = 0, n = x.size(); f < n; ++f) {
      unravel(x.shape(), f, idx);
      for (int d = 0; d < x.rank(); ++d) idx[d] += p[size_t(2 * d)];
      po[ravel(o.shape(), idx)] = px[f];
    }
  });
}

void ref_tile(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  DF_DISPATCH_ALL_AND_STRING(x.dtype(), "tile", [&] {
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* po = o.data<scalar_t>();
    int64_t idx[kMaxRank];
    for (int64_t f = 0, n = o.size(); f < n; ++f) {
      unravel(o.shape(), f, idx);
      for (int d = 0; d < o.rank(); ++d) idx[d] %= x.shape()[d];
      po[f] = px[ravel(x.shape(), idx)];
    }
  });
}

void ref_broadcast_to(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  DF_DISPATCH_ALL_AND_STRING(x.dtype(), "broadcast_to", [&] {
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* po = o.data<scalar_t>();
    for (int64_t f = 0, n = o.size(); f < n; ++f) po[f] = px[ref::broadcast_offset(o.shape(), x.shape(), f)];
  });
}

void ref_reverse(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  bool flip[kMaxRank] = {};
  for (int64_t a : c.attr_ints("axes")) flip[normalize_axis("reverse", a, x.rank())] = true;
  DF_DISPATCH_ALL_AND_STRING(x.dtype(), "reverse", [&] {
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* po = o.data<scalar_t>();
    int64_t idx[kMaxRank];
    for (int64_t f = 0, n = o.size(); f < n; ++f) {
      unravel(o.shape(), f, idx);
      for (int d = 0; d < o.rank(); ++d)
        if (flip[d]) idx[d] = x.shape()[d] - 1 - idx[d];
      po[f] = px[ravel(x.shape(), idx)];
    }
  });
}

}  // namespace

DF_REGISTER_KERNEL(Reshape, {.run = ref_reshape});
DF_REGISTER_KERNEL(Transpose, {.run = ref_transpose});
DF_REGISTER_KERNEL(Concat, {.run = ref_concat});
DF_REGISTER_KERNEL(Slice, {.run = ref_slice});
DF_REGISTER_KERNEL(StridedSlice, {.run = ref_strided_slice});
DF_REGISTER_KERNEL(StridedSliceGrad, {.run = ref_strided_slice_grad});
DF_REGISTER_KERNEL(Pad, {.run = ref_pad});
DF_REGISTER_KERNEL(Tile, {.run = ref_tile});
DF_REGISTER_KERNEL(BroadcastTo, {.run = ref_broadcast_to});
DF_REGISTER_KERNEL(Reverse, {.run = ref_reverse});

}  // namespace deepflow
