// SPDX-License-Identifier: Apache-2.0
// Reference kernels of cast, identity and stop_gradient.
#include "deepflow/kernels/cast_value.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

void ref_cast(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  const int64_t n = o.size();
  DF_DISPATCH_ALL(x.dtype(), "cast", [&] {
    using From = scalar_t;
    const From* px = x.data<From>();
    DF_DISPATCH_ALL(o.dtype(), "cast", [&] {
      scalar_t* po = o.data<scalar_t>();
      for (int64_t i = 0; i < n; ++i) po[i] = cast_value<scalar_t, From>(px[i]);
    });
  });
}

// identity and stop_gradient return a view: tensors are immutable, so no copy is needed.
void ref_view(const OpCall& c, TensorList& out) { out[0] = c.in(0).view(c.in(0).shape()); }

}  // namespace

DF_REGISTER_KERNEL(Cast, {.run = ref_cast});
DF_REGISTER_KERNEL(Identity, {.run = ref_view});
DF_REGISTER_KERNEL(StopGradient, {.run = ref_view});

}  // namespace deepflow
