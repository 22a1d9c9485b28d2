// SPDX-License-Identifier: Apache-2.0
// Reference kernel of matmul: the triple loop per batch element. Floats accumulate
// in double; integers wrap in their own type (computed in uint64).
#include <type_traits>

#include "deepflow/ops/kernel.h"
#include "deepflow/kernels/ref/ref_util.h"

namespace deepflow {
namespace {

// a [..., m, k], b [..., k, n] -> [..., m, n] (transposes applied by indexing).
void ref_matmul(const OpCall& c, TensorList& out) {
  const Tensor &a = c.in(0), &b = c.in(1);
  Tensor& o = out[0];
  const bool ta = c.attr_bool("transpose_a"), tb = c.attr_bool("transpose_b");
  const int64_t ar = a.dim(-2), ac = a.dim(-1), br = b.dim(-2), bc = b.dim(-1);
  const int64_t m = ta ? ac : ar, k = ta ? ar : ac, n = tb ? br : bc;
  const Shape batch_a(a.shape().begin(), a.shape().end() - 2), batch_b(b.shape().begin(), b.shape().end() - 2);
  const Shape batch_o(o.shape().begin(), o.shape().end() - 2);
  const int64_t batches = batch_o.num_elements();
  DF_DISPATCH_NUMERIC(a.dtype(), c.name(), [&] {
    using A = std::conditional_t<std::is_floating_point_v<compute_t<scalar_t>>, double, uint64_t>;
    for (int64_t bi = 0; bi < batches; ++bi) {
      const scalar_t* pa = a.data<scalar_t>() + ref::broadcast_offset(batch_o, batch_a, bi) * ar * ac;
      const scalar_t* pb = b.data<scalar_t>() + ref::broadcast_offset(batch_o, batch_b, bi) * br * bc;
      scalar_t* po = o.data<scalar_t>() + bi * m * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          A acc = 0;
          for (int64_t p = 0; p < k; ++p) {
            const A x = A(compute_t<scalar_t>(ta ? pa[p * ac + i] : pa[i * ac + p]));
            const A y = A(compute_t<scalar_t>(tb ? pb[j * bc + p] : pb[p * bc + j]));
            acc += x * y;
          }
          po[i * n + j] = scalar_t(compute_t<scalar_t>(acc));
        }
    }
  });
}

}  // namespace

DF_REGISTER_KERNEL(MatMul, {.run = ref_matmul});

}  // namespace deepflow
