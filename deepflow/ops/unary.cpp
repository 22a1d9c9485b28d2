// SPDX-License-Identifier: Apache-2.0
// Unary elementwise primitives: x -> same shape and dtype.
//
// Dtypes follow TensorFlow: the transcendental ops (and floor/ceil) take floats
// only; neg, abs and sign also take signed integers; square, relu and round take
// every numeric dtype; logical_not takes bool only. Gradients use the forward
// output where that is cheaper (exp, tanh, sigmoid, sqrt, rsqrt, expm1).
#include <numbers>

#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

using detail::check_float;
using detail::infer_same;

// Float types only (the transcendental ops).
void infer_float(const OpCall& c, TypeList& out) {
  check_float(c, c.in(0), "x");
  infer_same(c, out);
}
// Floats and signed integers (neg, abs, sign): TensorFlow has no unsigned kernels for these.
void infer_signed(const OpCall& c, TypeList& out) {
  DType t = c.in(0).dtype();
  DF_CHECK(t != DType::Bool && t != DType::UInt8, "[", c.name(),
           "] expects a floating or signed integer dtype for x, got ", dtype_name(t));
  infer_same(c, out);
}
// Every numeric dtype (square, relu, round).
void infer_numeric(const OpCall& c, TypeList& out) {
  DF_CHECK(c.in(0).dtype() != DType::Bool, "[", c.name(), "] expects a numeric dtype for x, got bool");
  infer_same(c, out);
}
void infer_logical(const OpCall& c, TypeList& out) {
  detail::check_bool(c, c.in(0), "x");
  infer_same(c, out);
}

const Tensor& X(const OpCall& c) { return c.in(0); }
const Tensor& Y(const OpCall& c) { return c.out(0); }

// Piecewise-constant ops: zero gradient everywhere (TensorFlow returns zeros, not None).
TensorList zero_grad(const OpCall& c, const TensorList&) { return {zeros_like(X(c))}; }

}  // namespace

// --- neg ---
DF_DEFINE_OP(Neg, {.infer = infer_signed, .vjp = [](const OpCall&, const TensorList& g) {
  return TensorList{neg(g[0])};
}});
Tensor neg(const Tensor& x) { return dispatch1(OpId::Neg, {x}); }

// --- abs --- abs'(0) = 0 (g * sign(x)), as in TensorFlow.
DF_DEFINE_OP(Abs, {.infer = infer_signed, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{mul(g[0], sign(X(c)))};
}});
Tensor abs(const Tensor& x) { return dispatch1(OpId::Abs, {x}); }

// --- sign --- -1, 0 or 1 (NaN stays NaN).
DF_DEFINE_OP(Sign, {.infer = infer_signed, .vjp = zero_grad});
Tensor sign(const Tensor& x) { return dispatch1(OpId::Sign, {x}); }

// --- exp --- d = g * y
DF_DEFINE_OP(Exp, {.infer = infer_float, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{mul(g[0], Y(c))};
}});
Tensor exp(const Tensor& x) { return dispatch1(OpId::Exp, {x}); }

// --- log --- d = g / x
DF_DEFINE_OP(Log, {.infer = infer_float, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{div(g[0], X(c))};
}});
Tensor log(const Tensor& x) { return dispatch1(OpId::Log, {x}); }

// --- log1p --- d = g / (1 + x)
DF_DEFINE_OP(Log1p, {.infer = infer_float, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{div(g[0], X(c) + 1.0)};
}});
Tensor log1p(const Tensor& x) { return dispatch1(OpId::Log1p, {x}); }

// --- expm1 --- d = g * (y + 1)
DF_DEFINE_OP(Expm1, {.infer = infer_float, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{mul(g[0], Y(c) + 1.0)};
}});
Tensor expm1(const Tensor& x) { return dispatch1(OpId::Expm1, {x}); }

// --- sqrt --- d = g / (2y)
DF_DEFINE_OP(Sqrt, {.infer = infer_float, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{div(g[0], Y(c) * 2.0)};
}});
Tensor sqrt(const Tensor& x) { return dispatch1(OpId::Sqrt, {x}); }

// --- rsqrt --- d = -0.5 * g * y^3
DF_DEFINE_OP(Rsqrt, {.infer = infer_float, .vjp = [](const OpCall& c, const TensorList& g) {
  const Tensor& y = Y(c);
  return TensorList{mul(g[0], mul(square(y), y) * -0.5)};
}});
Tensor rsqrt(const Tensor& x) { return dispatch1(OpId::Rsqrt, {x}); }

// --- square --- d = 2 * g * x
DF_DEFINE_OP(Square, {.infer = infer_numeric, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{mul(g[0], X(c) * 2.0)};
}});
Tensor square(const Tensor& x) { return dispatch1(OpId::Square, {x}); }

// --- sin --- d = g * cos(x)
DF_DEFINE_OP(Sin, {.infer = infer_float, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{mul(g[0], cos(X(c)))};
}});
Tensor sin(const Tensor& x) { return dispatch1(OpId::Sin, {x}); }

// --- cos --- d = -g * sin(x)
DF_DEFINE_OP(Cos, {.infer = infer_float, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{neg(mul(g[0], sin(X(c))))};
}});
Tensor cos(const Tensor& x) { return dispatch1(OpId::Cos, {x}); }

// --- tanh --- d = g * (1 - y^2)
DF_DEFINE_OP(Tanh, {.infer = infer_float, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{mul(g[0], 1.0 - square(Y(c)))};
}});
Tensor tanh(const Tensor& x) { return dispatch1(OpId::Tanh, {x}); }

// --- sigmoid --- d = g * y * (1 - y)
DF_DEFINE_OP(Sigmoid, {.infer = infer_float, .vjp = [](const OpCall& c, const TensorList& g) {
  const Tensor& y = Y(c);
  return TensorList{mul(g[0], mul(y, 1.0 - y))};
}});
Tensor sigmoid(const Tensor& x) { return dispatch1(OpId::Sigmoid, {x}); }

// --- relu --- relu'(0) = 0, as in TensorFlow; NaN propagates (max(x, 0) in Eigen's order).
// The gradient reads the output, as TensorFlow's does: the pre-activation need not stay
// alive, so matmul + bias + relu can fuse in traced training steps.
DF_DEFINE_OP(Relu, {.infer = infer_numeric, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{relu_grad(g[0], Y(c))};
}});
Tensor relu(const Tensor& x) { return dispatch1(OpId::Relu, {x}); }

// --- relu_grad --- gradients, features (relu's output) of one shape -> gradients *
// (features > 0), tf.raw_ops.ReluGrad. Linear in the gradients; the features get a zero
// gradient (TensorFlow's ReluGradGrad).
DF_DEFINE_OP(ReluGrad, {.num_inputs = 2, .infer = [](const OpCall& c, TypeList& out) {
  const Tensor &g = c.in(0), &y = c.in(1);
  DF_CHECK(g.dtype() != DType::Bool, "[", c.name(), "] expects a numeric dtype for gradients, got bool");
  detail::check_same_dtype(c, g, y);
  DF_CHECK(g.shape().compatible_with(y.shape()), "[", c.name(), "] gradients ", g.shape(), " and features ",
           y.shape(), " must have the same shape");
  Shape s = g.shape();
  for (int i = 0; i < s.rank(); ++i)
    if (s[i] < 0) s[i] = y.shape()[i];
  out.push_back({g.dtype(), s});
}, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{relu_grad(g[0], c.in(1)), zeros_like(c.in(1))};
}});
Tensor relu_grad(const Tensor& gradients, const Tensor& features) {
  return dispatch1(OpId::ReluGrad, {gradients, features});
}

// --- erf --- d = g * 2/sqrt(pi) * exp(-x^2)
DF_DEFINE_OP(Erf, {.infer = infer_float, .vjp = [](const OpCall& c, const TensorList& g) {
  constexpr double k2OverSqrtPi = 2.0 * std::numbers::inv_sqrtpi;
  return TensorList{mul(g[0], exp(neg(square(X(c)))) * k2OverSqrtPi)};
}});
Tensor erf(const Tensor& x) { return dispatch1(OpId::Erf, {x}); }

// --- floor / ceil --- floats only (TensorFlow); zero gradient.
DF_DEFINE_OP(Floor, {.infer = infer_float, .vjp = zero_grad});
Tensor floor(const Tensor& x) { return dispatch1(OpId::Floor, {x}); }
DF_DEFINE_OP(Ceil, {.infer = infer_float, .vjp = zero_grad});
Tensor ceil(const Tensor& x) { return dispatch1(OpId::Ceil, {x}); }

// --- round --- half to even (tf.round); integers pass through; zero gradient.
DF_DEFINE_OP(Round, {.infer = infer_numeric, .vjp = zero_grad});
Tensor round(const Tensor& x) { return dispatch1(OpId::Round, {x}); }

// --- logical_not --- bool -> bool.
DF_DEFINE_OP(LogicalNot, {.infer = infer_logical, .non_differentiable = true});
Tensor logical_not(const Tensor& x) { return dispatch1(OpId::LogicalNot, {x}); }

}  // namespace deepflow
