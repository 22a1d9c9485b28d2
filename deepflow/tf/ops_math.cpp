// SPDX-License-Identifier: Apache-2.0
// TensorFlow's elementwise math, comparisons, logic, casts and reductions, built from
// deepflow's public ops. TF's binary ops broadcast as numpy does, as deepflow's do.
#include <cmath>
#include <limits>

#include "deepflow/core/error.h"
#include "deepflow/tf/op_importer.h"

namespace deepflow::tf {
namespace {

template <Tensor (*F)(const Tensor&)>
Values unary(NodeContext& c) {
  return {F(c.input(0))};
}
template <Tensor (*F)(const Tensor&, const Tensor&)>
Values binary(NodeContext& c) {
  return {F(c.input(0), c.input(1))};
}

Tensor softsign_of(const Tensor& x) { return x / (abs(x) + 1.0); }
Tensor reciprocal_of(const Tensor& x) { return scalar_like(x, 1.0) / x; }
Tensor tan_of(const Tensor& x) { return sin(x) / cos(x); }
Tensor sinh_of(const Tensor& x) { return (exp(x) - exp(neg(x))) * 0.5; }
Tensor cosh_of(const Tensor& x) { return (exp(x) + exp(neg(x))) * 0.5; }
Tensor elu_of(const Tensor& x) { return elu(x); }
Tensor is_nan_of(const Tensor& x) { return not_equal(x, x); }
Tensor is_inf_of(const Tensor& x) {
  return equal(abs(x), scalar_like(x, std::numeric_limits<double>::infinity()));
}
Tensor is_finite_of(const Tensor& x) { return logical_not(logical_or(is_nan_of(x), is_inf_of(x))); }
Tensor squared_difference_of(const Tensor& a, const Tensor& b) { return square(a - b); }

// Integer division that rounds toward negative infinity (TF's FloorDiv and FloorMod on ints).
Tensor floor_div_of(const Tensor& a, const Tensor& b) {
  if (is_floating(a.dtype())) return floor(a / b);
  Tensor q = div(a, b);  // truncates toward zero
  Tensor fix = logical_and(not_equal(q * b, a), not_equal(less(a, zeros_like(a)), less(b, zeros_like(b))));
  return where(fix, q - scalar_like(q, 1.0), q);
}
Tensor floor_mod_of(const Tensor& a, const Tensor& b) { return a - floor_div_of(a, b) * b; }
// C's truncating modulo (TF's Mod / TruncateMod).
Tensor trunc_mod_of(const Tensor& a, const Tensor& b) {
  if (is_floating(a.dtype())) {
    Tensor q = a / b;
    return a - where(less(q, zeros_like(q)), ceil(q), floor(q)) * b;
  }
  return a - div(a, b) * b;
}
Tensor div_no_nan_of(const Tensor& a, const Tensor& b) {
  Tensor zero = equal(b, zeros_like(b));
  return where(zero, zeros_like(a * b), a / where(zero, ones_like(b), b));
}
Tensor mul_no_nan_of(const Tensor& a, const Tensor& b) {
  return where(equal(b, zeros_like(b)), zeros_like(a * b), a * b);
}

Values import_leaky_relu(NodeContext& c) { return {leaky_relu(c.input(0), c.attr_float("alpha"))}; }
Values import_gelu(NodeContext& c) { return {gelu(c.input(0), c.attr_bool("approximate"))}; }

Values import_add_n(NodeContext& c) {
  Tensor sum = c.input(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) sum = sum + c.input(i);
  return {sum};
}

Values import_clip(NodeContext& c) { return {clip_by_value(c.input(0), c.input(1), c.input(2))}; }

Values import_select_v2(NodeContext& c) { return {where(c.input(0), c.input(1), c.input(2))}; }

// Select (v1): a rank-1 condition picks whole rows of x and y.
Values import_select(NodeContext& c) {
  Tensor cond = c.input(0), x = c.input(1);
  if (cond.rank() == 1 && x.rank() > 1) {
    std::vector<int64_t> dims(size_t(x.rank()), 1);
    dims[0] = cond.dim(0);
    cond = reshape(cond, Shape(dims));
  }
  return {where(cond, x, c.input(2))};
}

// --- reductions: input 1 holds the axes (scalar or vector), keep_dims the attr ---

Axes reduction_axes(NodeContext& c, const Tensor& x) {
  Axes axes;
  for (int64_t a : c.constant_ints(1)) axes.push_back(tf_axis(c, a, x.rank()));
  return axes;
}

template <Tensor (*F)(const Tensor&, const Axes&, bool)>
Values reduce(NodeContext& c) {
  Tensor x = c.input(0);
  Axes axes = reduction_axes(c, x);
  const bool keep = c.attr_bool("keep_dims");
  // An empty axis list reduces nothing in TF (deepflow's empty list means every axis).
  if (axes.empty()) return {keep ? x : identity(x)};
  return {F(x, axes, keep)};
}

Values import_prod(NodeContext& c) {
  // Prod over a partly known shape vector (tensordot's reshapes): the product when known.
  if (const auto& p = c.value(0).partial) {
    Value v;
    int64_t prod = 1;
    for (int64_t d : *p) prod = (d < 0 || prod < 0) ? -1 : prod * d;
    v.partial = std::vector<int64_t>{prod};
    v.scalar = !c.attr_bool("keep_dims");
    return {v};
  }
  return reduce<reduce_prod>(c);
}

Tensor reduce_all_of(const Tensor& x, const Axes& axes, bool keep) {
  return cast(reduce_min(cast(x, DType::Int32), axes, keep), DType::Bool);
}
Tensor reduce_any_of(const Tensor& x, const Axes& axes, bool keep) {
  return cast(reduce_max(cast(x, DType::Int32), axes, keep), DType::Bool);
}

Values import_argmax(NodeContext& c) {
  Tensor x = c.input(0);
  return {argmax(x, tf_axis(c, c.constant_input(1).item<int64_t>(), x.rank()), c.attr_type("output_type"))};
}
Values import_argmin(NodeContext& c) {
  Tensor x = c.input(0);
  return {argmin(x, tf_axis(c, c.constant_input(1).item<int64_t>(), x.rank()), c.attr_type("output_type"))};
}

Values import_cumsum(NodeContext& c) {
  Tensor x = c.input(0);
  return {cumsum(x, tf_axis(c, c.constant_input(1).item<int64_t>(), x.rank()), c.attr_bool("exclusive"),
                 c.attr_bool("reverse"))};
}

Values import_softmax(NodeContext& c) { return {softmax(c.input(0), -1)}; }
Values import_log_softmax(NodeContext& c) { return {log_softmax(c.input(0), -1)}; }

}  // namespace

DF_TF_OP("Relu", unary<relu>)
DF_TF_OP("Relu6", unary<relu6>)
DF_TF_OP("Elu", unary<elu_of>)
DF_TF_OP("Selu", unary<selu>)
DF_TF_OP("Softplus", unary<softplus>)
DF_TF_OP("Softsign", unary<softsign_of>)
DF_TF_OP("LeakyRelu", import_leaky_relu)
DF_TF_OP("Gelu", import_gelu)
DF_TF_OP("Sigmoid", unary<sigmoid>)
DF_TF_OP("Tanh", unary<tanh>)
DF_TF_OP("Exp", unary<exp>)
DF_TF_OP("Expm1", unary<expm1>)
DF_TF_OP("Log", unary<log>)
DF_TF_OP("Log1p", unary<log1p>)
DF_TF_OP("Sqrt", unary<sqrt>)
DF_TF_OP("Rsqrt", unary<rsqrt>)
DF_TF_OP("Square", unary<square>)
DF_TF_OP("Neg", unary<neg>)
DF_TF_OP("Abs", unary<abs>)
DF_TF_OP("Reciprocal", unary<reciprocal_of>)
DF_TF_OP("Inv", unary<reciprocal_of>)
DF_TF_OP("Erf", unary<erf>)
DF_TF_OP("Sign", unary<sign>)
DF_TF_OP("Floor", unary<floor>)
DF_TF_OP("Ceil", unary<ceil>)
DF_TF_OP("Round", unary<round>)
DF_TF_OP("Rint", unary<round>)
DF_TF_OP("Sin", unary<sin>)
DF_TF_OP("Cos", unary<cos>)
DF_TF_OP("Tan", unary<tan_of>)
DF_TF_OP("Sinh", unary<sinh_of>)
DF_TF_OP("Cosh", unary<cosh_of>)
DF_TF_OP("IsNan", unary<is_nan_of>)
DF_TF_OP("IsInf", unary<is_inf_of>)
DF_TF_OP("IsFinite", unary<is_finite_of>)
DF_TF_OP("LogicalNot", unary<logical_not>)
DF_TF_OP("Softmax", import_softmax)
DF_TF_OP("LogSoftmax", import_log_softmax)

DF_TF_OP("AddV2", binary<add>)
DF_TF_OP("Add", binary<add>)
DF_TF_OP("Sub", binary<sub>)
DF_TF_OP("Mul", binary<mul>)
DF_TF_OP("RealDiv", binary<div>)
DF_TF_OP("Div", binary<div>)
DF_TF_OP("TruncateDiv", binary<div>)
DF_TF_OP("FloorDiv", binary<floor_div_of>)
DF_TF_OP("FloorMod", binary<floor_mod_of>)
DF_TF_OP("Mod", binary<trunc_mod_of>)
DF_TF_OP("TruncateMod", binary<trunc_mod_of>)
DF_TF_OP("DivNoNan", binary<div_no_nan_of>)
DF_TF_OP("MulNoNan", binary<mul_no_nan_of>)
DF_TF_OP("Maximum", binary<maximum>)
DF_TF_OP("Minimum", binary<minimum>)
DF_TF_OP("Pow", binary<pow>)
DF_TF_OP("SquaredDifference", binary<squared_difference_of>)
DF_TF_OP("Equal", binary<equal>)
DF_TF_OP("NotEqual", binary<not_equal>)
DF_TF_OP("Less", binary<less>)
DF_TF_OP("LessEqual", binary<less_equal>)
DF_TF_OP("Greater", binary<greater>)
DF_TF_OP("GreaterEqual", binary<greater_equal>)
DF_TF_OP("LogicalAnd", binary<logical_and>)
DF_TF_OP("LogicalOr", binary<logical_or>)
DF_TF_OP("AddN", import_add_n)
DF_TF_OP("ClipByValue", import_clip)
DF_TF_OP("Select", import_select)
DF_TF_OP("SelectV2", import_select_v2)

DF_TF_OP("Sum", reduce<reduce_sum>)
DF_TF_OP("Mean", reduce<reduce_mean>)
DF_TF_OP("Max", reduce<reduce_max>)
DF_TF_OP("Min", reduce<reduce_min>)
DF_TF_OP("Prod", import_prod)
DF_TF_OP("All", reduce<reduce_all_of>)
DF_TF_OP("Any", reduce<reduce_any_of>)
DF_TF_OP("ArgMax", import_argmax)
DF_TF_OP("ArgMin", import_argmin)
DF_TF_OP("Cumsum", import_cumsum)

}  // namespace deepflow::tf
