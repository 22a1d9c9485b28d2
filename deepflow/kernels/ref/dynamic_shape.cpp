// SPDX-License-Identifier: Apache-2.0
// Reference kernels of the run-time shape ops (ops/dynamic_shape.cpp): by the time a
// kernel runs every shape is concrete, so these are plain broadcasts, sums and views.
#include <vector>

#include "deepflow/ops/kernel.h"
#include "deepflow/kernels/ref/ref_util.h"

namespace deepflow {

namespace {
// g [..] -> like's shape: every element of g added into the like element it broadcast from.
void ref_sum_to_like(const OpCall& c, TensorList& out) {
  const Tensor &g = c.in(0), &like = c.in(1);
  const Shape& target = like.shape();
  if (g.shape().num_elements() == target.num_elements()) {  // nothing to sum (only leading 1s)
    out[0] = g.view(target);
    return;
  }
  out[0] = Tensor(target, g.dtype());
  Tensor& o = out[0];
  DF_DISPATCH_NUMERIC(g.dtype(), "sum_to_like", [&] {
    using acc_t = compute_t<scalar_t>;
    std::vector<acc_t> acc(size_t(o.size()), acc_t(0));
    const scalar_t* pg = g.data<scalar_t>();
    for (int64_t f = 0, n = g.size(); f < n; ++f)
      acc[size_t(ref::broadcast_offset(g.shape(), target, f))] += acc_t(pg[f]);
    scalar_t* po = o.data<scalar_t>();
    for (int64_t i = 0; i < o.size(); ++i) po[i] = scalar_t(acc[size_t(i)]);
  });
}


void ref_broadcast_like(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  DF_DISPATCH_ALL_AND_STRING(x.dtype(), "broadcast_like", [&] {
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* po = o.data<scalar_t>();
    for (int64_t f = 0, n = o.size(); f < n; ++f) po[f] = px[ref::broadcast_offset(o.shape(), x.shape(), f)];
  });
}

void ref_reshape_like(const OpCall& c, TensorList& out) { out[0] = c.in(0).view(c.in(1).shape()); }

void ref_size(const OpCall& c, TensorList& out) {
  DF_DISPATCH_INDEX(out[0].dtype(), "size", [&] { out[0].data<scalar_t>()[0] = scalar_t(c.in(0).size()); });
}

}  // namespace

DF_REGISTER_KERNEL(BroadcastLike, {.run = ref_broadcast_like});
DF_REGISTER_KERNEL(ReshapeLike, {.run = ref_reshape_like});
DF_REGISTER_KERNEL(Size, {.run = ref_size});
DF_REGISTER_KERNEL(SumToLike, {.run = ref_sum_to_like});

}  // namespace deepflow
