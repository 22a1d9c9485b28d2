// SPDX-License-Identifier: Apache-2.0
// Reference kernels of the optimizer updates (ops/training_ops.cpp): the formulas as
// written, in the compute type.
#include <cmath>

#include "deepflow/ops/kernel.h"
#include "deepflow/kernels/ref/ref_util.h"

namespace deepflow {

namespace {
void ref_apply_adam(const OpCall& c, TensorList& out) {
  const double b1 = c.attr_float("beta_1"), b2 = c.attr_float("beta_2"), eps = c.attr_float("epsilon");
  DF_DISPATCH_FLOAT(c.in(0).dtype(), "apply_adam", [&] {
    using acc_t = compute_t<scalar_t>;
    const scalar_t *var = c.in(0).data<scalar_t>(), *m = c.in(1).data<scalar_t>(), *v = c.in(2).data<scalar_t>(),
                   *g = c.in(3).data<scalar_t>();
    const acc_t lr = acc_t(c.in(4).data<scalar_t>()[0]);
    scalar_t *var_o = out[0].data<scalar_t>(), *m_o = out[1].data<scalar_t>(), *v_o = out[2].data<scalar_t>();
    for (int64_t i = 0, n = out[0].size(); i < n; ++i) {
      const acc_t gi = acc_t(g[i]), mi = acc_t(m[i]), vi = acc_t(v[i]);
      const acc_t m_new = mi + (gi - mi) * acc_t(1 - b1);
      const acc_t v_new = vi + (gi * gi - vi) * acc_t(1 - b2);
      m_o[i] = scalar_t(m_new);
      v_o[i] = scalar_t(v_new);
      var_o[i] = scalar_t(acc_t(var[i]) - lr * m_new / (std::sqrt(v_new) + acc_t(eps)));
    }
  });
}
}  // namespace

DF_REGISTER_KERNEL(ApplyAdam, {.run = ref_apply_adam});

}  // namespace deepflow
