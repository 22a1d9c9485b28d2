// SPDX-License-Identifier: Apache-2.0
// cast on CPU threads: the same per-element conversion as the reference kernel,
// in parallel chunks that the compiler vectorizes (mixed precision casts whole
// activations and weights every step).
#include "deepflow/core/parallel.h"
#include "deepflow/kernels/cast_value.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

void cpu_cast(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  DF_DISPATCH_ALL(x.dtype(), "cast", [&] {
    using From = scalar_t;
    const From* px = x.data<From>();
    DF_DISPATCH_ALL(o.dtype(), "cast", [&] {
      scalar_t* po = o.data<scalar_t>();
      parallel_for(o.size(), kParallelGrain, [&](int64_t b, int64_t e) {
        _Pragma("omp simd")
        for (int64_t i = b; i < e; ++i) po[i] = cast_value<scalar_t, From>(px[i]);
      });
    });
  });
}

}  // namespace

DF_REGISTER_KERNEL(Cast, {.name = "cpu:omp", .priority = kCpuPriority, .run = cpu_cast});

}  // namespace deepflow
