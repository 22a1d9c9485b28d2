// SPDX-License-Identifier: Apache-2.0
// Optimizer updates as single primitives (TensorFlow's training ops). Written as
// elementwise ops, Adam reads the weights and its slots in three passes; one kernel
// reads each once, which matters on the large layers where the update is memory bound.
#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/op.h"
#include "deepflow/ops/ops.h"

namespace deepflow {

namespace {
// --- apply_adam --- var, m, v, grad [s] (one float dtype), lr_t [] -> var' [s], m' [s], v' [s].
void infer_apply_adam(const OpCall& c, TypeList& out) {
  const Tensor& var = c.in(0);
  detail::check_float(c, var, "var");
  static const char* const kNames[] = {"var", "m", "v", "grad"};
  Shape s = var.shape();
  for (int i = 1; i < 4; ++i) {
    const Tensor& t = c.in(i);
    DF_CHECK(t.dtype() == var.dtype(), "[", c.name(), "] ", kNames[i], " is ", dtype_name(t.dtype()), ", var is ",
             dtype_name(var.dtype()));
    DF_CHECK(t.shape().compatible_with(s), "[", c.name(), "] ", kNames[i], " has shape ", t.shape(), ", var is ",
             var.shape());
    for (int d = 0; d < s.rank(); ++d)
      if (s[d] < 0) s[d] = t.shape()[d];
  }
  const Tensor& lr = c.in(4);
  DF_CHECK(lr.dtype() == var.dtype() && lr.rank() == 0, "[", c.name(), "] lr_t must be a ", dtype_name(var.dtype()),
           " scalar, got ", dtype_name(lr.dtype()), lr.shape());
  out.assign(3, {var.dtype(), s});
}
}  // namespace

DF_DEFINE_OP(ApplyAdam, {.num_inputs = 5,
                         .attrs = {AttrSpec::required_of("beta_1", AttrKind::Float),
                                   AttrSpec::required_of("beta_2", AttrKind::Float),
                                   AttrSpec::required_of("epsilon", AttrKind::Float)},
                         .infer = infer_apply_adam,
                         .non_differentiable = true});

AdamUpdate apply_adam(const Tensor& var, const Tensor& m, const Tensor& v, const Tensor& grad, const Tensor& lr_t,
                      double beta_1, double beta_2, double epsilon) {
  TensorList r = dispatch(OpId::ApplyAdam, {var, m, v, grad, lr_t},
                          {{"beta_1", beta_1}, {"beta_2", beta_2}, {"epsilon", epsilon}});
  return {r[0], r[1], r[2]};
}

}  // namespace deepflow
