// SPDX-License-Identifier: Apache-2.0
// Dtype conversion and the identities: cast, identity, stop_gradient.
#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/ops.h"

namespace deepflow {

// --- cast --- x -> same shape, attr dtype. Floats to integers truncate toward zero;
// anything to bool is x != 0. Gradients flow only between floating dtypes (TensorFlow).
static void infer_cast(const OpCall& c, TypeList& out) { out.push_back({c.attr_dtype("dtype"), c.in(0).shape()}); }
static TensorList vjp_cast(const OpCall& c, const TensorList& g) {
  DType from = c.in(0).dtype();
  if (!is_floating(from) || !is_floating(c.out(0).dtype())) return {Tensor()};
  return {cast(g[0], from)};
}
DF_DEFINE_OP(Cast, {.attrs = {AttrSpec::required_of("dtype", AttrKind::DType)}, .infer = infer_cast,
                    .vjp = vjp_cast});

Tensor cast(const Tensor& x, DType dtype) {
  // tf.cast returns its input when the dtype already matches.
  if (x.dtype() == dtype) return x;
  return dispatch1(OpId::Cast, {x}, Attrs{{"dtype", dtype}});
}

// --- identity --- x -> x (a zero-copy view: tensors are immutable; a distinct graph node).
DF_DEFINE_OP(Identity, {.infer = detail::infer_same,
                        .vjp = [](const OpCall&, const TensorList& g) { return TensorList{g[0]}; },
                        .view_output = true, .strings = true});
Tensor identity(const Tensor& x) { return dispatch1(OpId::Identity, {x}); }

// --- stop_gradient --- x -> x; no gradient flows through.
DF_DEFINE_OP(StopGradient,
             {.infer = detail::infer_same, .non_differentiable = true, .view_output = true, .strings = true});
Tensor stop_gradient(const Tensor& x) { return dispatch1(OpId::StopGradient, {x}); }

}  // namespace deepflow
