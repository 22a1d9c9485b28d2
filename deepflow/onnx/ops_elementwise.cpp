// SPDX-License-Identifier: Apache-2.0
// ONNX elementwise ops: unary and binary math, comparisons, logic, casts, Where, Clip and
// the activations, built from deepflow's public ops. ONNX's multidirectional broadcasting
// is numpy's, which deepflow's binary ops implement; opsets below 7 (with the axis and
// broadcast attributes) are outside the importer's range.
#include <cmath>
#include <limits>
#include <string>

#include "deepflow/core/error.h"
#include "deepflow/onnx/op_importer.h"

namespace deepflow::onnx {
namespace {

Tensor scalar_of(const Tensor& x, double v) { return scalar_like(x, v); }

template <Tensor (*F)(const Tensor&)>
TensorList unary(NodeContext& c) {
  return {F(c.input(0))};
}
template <Tensor (*F)(const Tensor&, const Tensor&)>
TensorList binary(NodeContext& c) {
  return {F(c.input(0), c.input(1))};
}

// --- math without a deepflow primitive of its own ---

Tensor reciprocal_of(const Tensor& x) { return scalar_of(x, 1.0) / x; }
Tensor tan_of(const Tensor& x) { return sin(x) / cos(x); }
Tensor sinh_of(const Tensor& x) { return (exp(x) - exp(neg(x))) * 0.5; }
Tensor cosh_of(const Tensor& x) { return (exp(x) + exp(neg(x))) * 0.5; }
Tensor asinh_of(const Tensor& x) {
  // log(|x| + sqrt(x^2 + 1)) with the sign restored keeps precision for negative x.
  Tensor a = abs(x);
  return sign(x) * log(a + sqrt(square(a) + 1.0));
}
Tensor acosh_of(const Tensor& x) { return log(x + sqrt(square(x) - 1.0)); }
Tensor atanh_of(const Tensor& x) { return log((1.0 + x) / (1.0 - x)) * 0.5; }

// atan by argument reduction to |t| <= tan(pi/12) and a short odd series: accurate to
// float32 rounding, which is what the conformance tolerances (rtol 1e-3) need.
Tensor atan_of(const Tensor& x) {
  const double kPi = 3.14159265358979323846;
  Tensor a = abs(x);
  Tensor big = greater(a, scalar_of(a, 1.0));
  Tensor r = where(big, scalar_of(a, 1.0) / a, a);  // r in [0, 1]
  // atan(r) = pi/6 + atan((r - 1/sqrt3) / (1 + r/sqrt3)) for r > 2 - sqrt3.
  const double s3 = std::sqrt(3.0);
  Tensor shift = greater(r, scalar_of(r, 2.0 - s3));
  Tensor t = where(shift, (r - 1.0 / s3) / (1.0 + r / s3), r);
  Tensor t2 = square(t);
  // Horner on t * (1 - t^2/3 + t^4/5 - ...), |t| <= 0.268: 8 terms reach 1e-10.
  Tensor poly = scalar_of(t, -1.0 / 15.0);
  for (int k = 6; k >= 0; --k) poly = poly * t2 + ((k % 2 == 0 ? 1.0 : -1.0) / double(2 * k + 1));
  Tensor at = t * poly;
  at = where(shift, at + kPi / 6.0, at);
  at = where(big, kPi / 2.0 - at, at);
  return sign(x) * at;
}
Tensor asin_of(const Tensor& x) {
  const double kPi = 3.14159265358979323846;
  // asin(x) = atan(x / sqrt(1 - x^2)); at |x| = 1 the quotient is inf and atan gives pi/2.
  Tensor d = sqrt(1.0 - square(x));
  Tensor one = greater_equal(abs(x), scalar_of(x, 1.0));
  return where(one, sign(x) * (kPi / 2.0), atan_of(x / where(one, ones_like(d), d)));
}
Tensor acos_of(const Tensor& x) { return (3.14159265358979323846 / 2.0) - asin_of(x); }

TensorList import_not(NodeContext& c) { return {logical_not(c.input(0))}; }

TensorList import_sign(NodeContext& c) { return {sign(c.input(0))}; }

TensorList import_isnan(NodeContext& c) { return {not_equal(c.input(0), c.input(0))}; }
TensorList import_isinf(NodeContext& c) {
  Tensor x = c.input(0);
  const bool pos = c.attr_int("detect_positive", 1) != 0, neg_ = c.attr_int("detect_negative", 1) != 0;
  Tensor p = equal(x, scalar_of(x, std::numeric_limits<double>::infinity()));
  Tensor n = equal(x, scalar_of(x, -std::numeric_limits<double>::infinity()));
  if (pos && neg_) return {logical_or(p, n)};
  if (pos) return {p};
  if (neg_) return {n};
  return {logical_and(p, n)};  // all false
}

// --- binary ---

// ONNX Div on integers truncates like C (deepflow's integer div does too).
TensorList import_pow(NodeContext& c) {
  Tensor a = c.input(0), b = c.input(1);
  if (b.dtype() != a.dtype()) b = cast(b, a.dtype());  // opset 12: exponent of another type
  if (is_integer(a.dtype())) {
    // Integer powers by way of float64 (exact for the values an integer result can hold).
    return {cast(round(pow(cast(a, DType::Float64), cast(b, DType::Float64))), a.dtype())};
  }
  return {pow(a, b)};
}

Tensor trunc_div_float(const Tensor& a, const Tensor& b) {
  Tensor q = a / b;
  return where(less(q, scalar_of(q, 0.0)), ceil(q), floor(q));
}

// fmod = 0: the result has the divisor's sign (Python %); fmod = 1: the dividend's (C fmod).
TensorList import_mod(NodeContext& c) {
  Tensor a = c.input(0), b = c.input(1);
  const bool fmod = c.attr_int("fmod", 0) != 0;
  DF_CHECK(fmod || !is_floating(a.dtype()), "[onnx::import] ", c.describe(),
           ": fmod=0 is not allowed for floating-point inputs (", a.dtype(), ")");
  Tensor q = is_floating(a.dtype()) ? trunc_div_float(a, b) : div(a, b);
  Tensor r = a - q * b;
  if (fmod) return {r};
  Tensor zero = scalar_of(r, 0.0);
  Tensor fix = logical_and(not_equal(r, zero), not_equal(less(r, zero), less(b, zero)));
  return {where(fix, r + b, r)};
}

// Variadic Min/Max/Sum/Mean with broadcasting.
template <Tensor (*F)(const Tensor&, const Tensor&)>
Tensor fold_inputs(NodeContext& c) {
  DF_CHECK(c.num_inputs() >= 1 && c.has_input(0), "[onnx::import] ", c.describe(), ": needs at least one input");
  Tensor acc = c.input(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) acc = F(acc, c.input(i));
  // One input: still a distinct value (and broadcasts nothing).
  return c.num_inputs() == 1 ? identity(acc) : acc;
}
TensorList import_max(NodeContext& c) { return {fold_inputs<maximum>(c)}; }
TensorList import_min(NodeContext& c) { return {fold_inputs<minimum>(c)}; }
TensorList import_sum(NodeContext& c) { return {fold_inputs<add>(c)}; }
TensorList import_mean(NodeContext& c) {
  Tensor s = fold_inputs<add>(c);
  return {s / scalar_of(s, double(c.num_inputs()))};
}

// --- logic and comparisons ---

TensorList import_xor(NodeContext& c) { return {logical_xor(c.input(0), c.input(1))}; }

TensorList import_where(NodeContext& c) {
  Tensor cond = c.input(0);
  if (cond.dtype() != DType::Bool) cond = cast(cond, DType::Bool);
  return {where(cond, c.input(1), c.input(2))};
}

// Clip before 11: min/max attributes (defaults: the float range); from 11: optional inputs.
TensorList import_clip_6(NodeContext& c) {
  Tensor x = c.input(0);
  const double lo = c.attr_float("min", -std::numeric_limits<float>::max());
  const double hi = c.attr_float("max", std::numeric_limits<float>::max());
  return {minimum(maximum(x, scalar_of(x, lo)), scalar_of(x, hi))};
}
TensorList import_clip_11(NodeContext& c) {
  Tensor y = c.input(0);
  // ONNX applies min then max, so min > max gives max (as numpy.clip does).
  if (c.has_input(1)) y = maximum(y, c.input(1));
  if (c.has_input(2)) y = minimum(y, c.input(2));
  return {c.has_input(1) || c.has_input(2) ? y : identity(y)};
}

// --- casts ---

TensorList import_cast(NodeContext& c) {
  DF_CHECK(c.has_attr("to"), "[onnx::import] ", c.describe(), ": Cast needs the 'to' attribute");
  const DType to = dtype_from_onnx(int32_t(c.attr_int("to", 0)));
  Tensor x = c.input(0);
  if (x.dtype() == to) return {identity(x)};
  return {cast(x, to)};
}
TensorList import_cast_like(NodeContext& c) {
  Tensor x = c.input(0);
  const DType to = c.input(1).dtype();
  return {x.dtype() == to ? identity(x) : cast(x, to)};
}

// --- activations ---

TensorList import_relu(NodeContext& c) {
  Tensor x = c.input(0);
  if (is_floating(x.dtype())) return {relu(x)};
  return {maximum(x, scalar_of(x, 0.0))};
}
TensorList import_leaky_relu(NodeContext& c) {
  Tensor x = c.input(0);
  const double alpha = c.attr_float("alpha", 0.01f);
  return {where(less(x, scalar_of(x, 0.0)), x * alpha, x)};
}
TensorList import_elu(NodeContext& c) {
  Tensor x = c.input(0);
  const double alpha = c.attr_float("alpha", 1.0f);
  return {where(less(x, scalar_of(x, 0.0)), (exp(x) - 1.0) * alpha, x)};
}
TensorList import_selu(NodeContext& c) {
  Tensor x = c.input(0);
  const double alpha = c.attr_float("alpha", 1.67326319217681884765625f);
  const double gamma = c.attr_float("gamma", 1.05070102214813232421875f);
  return {where(less_equal(x, scalar_of(x, 0.0)), (exp(x) - 1.0) * (alpha * gamma), x * gamma)};
}
TensorList import_celu(NodeContext& c) {
  Tensor x = c.input(0);
  const double alpha = c.attr_float("alpha", 1.0f);
  Tensor zero = scalar_of(x, 0.0);
  return {maximum(x, zero) + minimum(zero, (exp(x / alpha) - 1.0) * alpha)};
}
TensorList import_thresholded_relu(NodeContext& c) {
  Tensor x = c.input(0);
  const double alpha = c.attr_float("alpha", 1.0f);
  return {where(greater(x, scalar_of(x, alpha)), x, zeros_like(x))};
}
TensorList import_hard_sigmoid(NodeContext& c) {
  Tensor x = c.input(0);
  const double alpha = c.attr_float("alpha", 0.2f), beta = c.attr_float("beta", 0.5f);
  return {clip_by_value(x * alpha + beta, 0.0, 1.0)};
}
TensorList import_hard_swish(NodeContext& c) {
  Tensor x = c.input(0);
  return {x * clip_by_value(x * (1.0 / 6.0) + 0.5, 0.0, 1.0)};
}
TensorList import_softplus(NodeContext& c) { return {softplus(c.input(0))}; }
TensorList import_softsign(NodeContext& c) {
  Tensor x = c.input(0);
  return {x / (abs(x) + 1.0)};
}
TensorList import_prelu(NodeContext& c) {
  Tensor x = c.input(0), slope = c.input(1);
  return {where(less(x, scalar_of(x, 0.0)), x * slope, x)};
}
TensorList import_shrink(NodeContext& c) {
  Tensor x = c.input(0);
  const double lambd = c.attr_float("lambd", 0.5f), bias = c.attr_float("bias", 0.0f);
  Tensor zero = zeros_like(x);
  return {where(less(x, scalar_of(x, -lambd)), x + scalar_of(x, bias),
                where(greater(x, scalar_of(x, lambd)), x - scalar_of(x, bias), zero))};
}
TensorList import_sigmoid(NodeContext& c) { return {sigmoid(c.input(0))}; }
TensorList import_tanh(NodeContext& c) { return {tanh(c.input(0))}; }

}  // namespace

DF_ONNX_OP("Neg", 6, unary<neg>)
DF_ONNX_OP("Abs", 6, unary<abs>)
DF_ONNX_OP("Sqrt", 6, unary<sqrt>)
DF_ONNX_OP("Exp", 6, unary<exp>)
DF_ONNX_OP("Log", 6, unary<log>)
DF_ONNX_OP("Reciprocal", 6, unary<reciprocal_of>)
DF_ONNX_OP("Floor", 6, unary<floor>)
DF_ONNX_OP("Ceil", 6, unary<ceil>)
DF_ONNX_OP("Round", 11, unary<round>)
DF_ONNX_OP("Sign", 9, import_sign)
DF_ONNX_OP("Sin", 7, unary<sin>)
DF_ONNX_OP("Cos", 7, unary<cos>)
DF_ONNX_OP("Tan", 7, unary<tan_of>)
DF_ONNX_OP("Asin", 7, unary<asin_of>)
DF_ONNX_OP("Acos", 7, unary<acos_of>)
DF_ONNX_OP("Atan", 7, unary<atan_of>)
DF_ONNX_OP("Sinh", 9, unary<sinh_of>)
DF_ONNX_OP("Cosh", 9, unary<cosh_of>)
DF_ONNX_OP("Asinh", 9, unary<asinh_of>)
DF_ONNX_OP("Acosh", 9, unary<acosh_of>)
DF_ONNX_OP("Atanh", 9, unary<atanh_of>)
DF_ONNX_OP("Erf", 9, unary<erf>)
DF_ONNX_OP("IsNaN", 9, import_isnan)
DF_ONNX_OP("IsInf", 10, import_isinf)

DF_ONNX_OP("Add", 7, binary<add>)
DF_ONNX_OP("Sub", 7, binary<sub>)
DF_ONNX_OP("Mul", 7, binary<mul>)
DF_ONNX_OP("Div", 7, binary<div>)
DF_ONNX_OP("Pow", 7, import_pow)
DF_ONNX_OP("Mod", 10, import_mod)
DF_ONNX_OP("Max", 6, import_max)
DF_ONNX_OP("Min", 6, import_min)
DF_ONNX_OP("Sum", 6, import_sum)
DF_ONNX_OP("Mean", 6, import_mean)

DF_ONNX_OP("Equal", 7, binary<equal>)
DF_ONNX_OP("Less", 7, binary<less>)
DF_ONNX_OP("Greater", 7, binary<greater>)
DF_ONNX_OP("LessOrEqual", 12, binary<less_equal>)
DF_ONNX_OP("GreaterOrEqual", 12, binary<greater_equal>)
DF_ONNX_OP("And", 7, binary<logical_and>)
DF_ONNX_OP("Or", 7, binary<logical_or>)
DF_ONNX_OP("Xor", 7, import_xor)
DF_ONNX_OP("Not", 1, import_not)
DF_ONNX_OP("Where", 9, import_where)

DF_ONNX_OP("Clip", 6, import_clip_6)
DF_ONNX_OP("Clip", 11, import_clip_11)
DF_ONNX_OP("Cast", 6, import_cast)
DF_ONNX_OP("CastLike", 15, import_cast_like)

DF_ONNX_OP("Relu", 6, import_relu)
DF_ONNX_OP("LeakyRelu", 6, import_leaky_relu)
DF_ONNX_OP("Elu", 6, import_elu)
DF_ONNX_OP("Selu", 6, import_selu)
DF_ONNX_OP("Celu", 12, import_celu)
DF_ONNX_OP("ThresholdedRelu", 10, import_thresholded_relu)
DF_ONNX_OP("Sigmoid", 6, import_sigmoid)
DF_ONNX_OP("HardSigmoid", 6, import_hard_sigmoid)
DF_ONNX_OP("HardSwish", 14, import_hard_swish)
DF_ONNX_OP("Softplus", 1, import_softplus)
DF_ONNX_OP("Softsign", 1, import_softsign)
DF_ONNX_OP("Tanh", 6, import_tanh)
DF_ONNX_OP("PRelu", 7, import_prelu)
DF_ONNX_OP("Shrink", 9, import_shrink)

}  // namespace deepflow::onnx
