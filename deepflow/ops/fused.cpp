// SPDX-License-Identifier: Apache-2.0
// Fused primitives that graph passes create (deepflow/graph/passes.h); they can also be
// called directly. They differentiate by replaying their parts with the public ops, so a
// fused training graph is differentiable (to any order) like the unfused one.
#include <cmath>
#include <numbers>
#include <span>
#include <vector>

#include "deepflow/ops/fused.h"
#include "deepflow/ops/fused_program.h"
#include "deepflow/ops/conv.h"
#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

bool known_activation(const std::string& a) {
  return a.empty() || a == "relu" || a == "tanh" || a == "sigmoid" || a == "gelu";
}

// Fused ops take (x, w), then the bias as their has_bias attribute says, then (fused_conv2d)
// the summand when has_summand.
void check_input_count(const OpCall& c, const char* op, bool has_summand = false) {
  const bool has_bias = c.attr_bool("has_bias");
  const int want = 2 + int(has_bias) + int(has_summand);
  DF_CHECK(c.num_inputs() == want, "[", op, "] takes ", want, " inputs (has_bias is ", has_bias ? "true" : "false",
           has_summand ? ", has_summand is true" : "", "), got ", c.num_inputs());
}

// The bias (input 2) has input 0's dtype and shape [n]; the message says n comes from n_from n_of.
void check_bias(const OpCall& c, const char* op, const char* x_name, int64_t n, const char* n_from,
                const Shape& n_of) {
  const Tensor& bias = c.in(2);
  DF_CHECK(bias.dtype() == c.in(0).dtype(), "[", op, "] bias is ", dtype_name(bias.dtype()), bias.shape(), ", ",
           x_name, " is ", dtype_name(c.in(0).dtype()), c.in(0).shape());
  DF_CHECK(bias.rank() == 1 && bias.shape().compatible_with(Shape{n}), "[", op, "] bias must be [", n, "] (",
           n_from, n_of, "), got ", bias.shape());
}

// --- fused_matmul --- a [..., m, k], b [..., k, n], bias [n] (has_bias) -> act(matmul(a, b) + bias)
// [..., m, n]; activation "" (none), "relu", "tanh", "sigmoid" or "gelu" (exact, erf form).
void infer_fused_matmul(const OpCall& c, TypeList& out) {
  check_input_count(c, "fused_matmul");
  const std::string& act = c.attr_string("activation");
  DF_CHECK(known_activation(act), "[fused_matmul] unknown activation \"", act,
           "\" (expected \"\", \"relu\", \"tanh\", \"sigmoid\" or \"gelu\")");
  detail::check_float(c, c.in(0), "a");
  Attrs mm{{"transpose_a", c.attr_bool("transpose_a")}, {"transpose_b", c.attr_bool("transpose_b")}};
  TypeList t;
  try {
    t = infer_types(OpId::MatMul, c.inputs.subspan(0, 2), mm);
  } catch (const Error& e) {
    fail("[fused_matmul] ", e.what());
  }
  if (c.attr_bool("has_bias"))
    check_bias(c, "fused_matmul", "a", t[0].shape[t[0].shape.rank() - 1], "the columns of the product ", t[0].shape);
  out.push_back(t[0]);
}

// The gradient g through y = act(z) for relu, tanh and sigmoid, from y alone (their vjps
// need only the output: relu's mask y > 0 is z > 0).
Tensor vjp_from_output(const std::string& act, const Tensor& y, const Tensor& g) {
  const OpDef& d = op_def(act == "relu" ? OpId::Relu : act == "tanh" ? OpId::Tanh : OpId::Sigmoid);
  TensorList io{y};
  Attrs none;
  return d.vjp(OpCall{&d, io, &none, io}, {g})[0];
}

// y = act(z), z = op(a) op(b) + bias: dz from the activation's own vjp where it needs only y
// (relu's mask y > 0 is z > 0), then matmul's vjp and the bias's sum over the rows.
TensorList vjp_fused_matmul(const OpCall& c, const TensorList& g) {
  const Tensor &a = c.in(0), &b = c.in(1), &y = c.out(0);
  const bool ta = c.attr_bool("transpose_a"), tb = c.attr_bool("transpose_b"), has_bias = c.attr_bool("has_bias");
  const std::string& act = c.attr_string("activation");
  Tensor dz = g[0];
  if (act == "relu" || act == "tanh" || act == "sigmoid") {
    dz = vjp_from_output(act, y, g[0]);
  } else if (act == "gelu") {
    Tensor z = matmul(a, b, ta, tb);
    if (has_bias) z = z + c.in(2);
    // d/dz z Phi(z) = Phi(z) + z phi(z).
    Tensor cdf = 0.5 * (1.0 + erf(z * (1.0 / std::numbers::sqrt2)));
    Tensor pdf = exp(square(z) * -0.5) * (std::numbers::inv_sqrtpi / std::numbers::sqrt2);
    dz = g[0] * (cdf + z * pdf);
  }
  const OpDef& mm = op_def(OpId::MatMul);
  Attrs mm_attrs{{"transpose_a", ta}, {"transpose_b", tb}};
  TensorList ab{a, b}, outs{y};
  TensorList d = mm.vjp(OpCall{&mm, ab, &mm_attrs, outs}, {dz});
  if (has_bias) d.push_back(sum_to(dz, c.in(2)));
  return d;
}

// --- fused_conv2d --- input [n,h,w,c_in], filters [kh,kw,c_in/groups,c_out], bias [c_out]
// (has_bias), summand [n,oh,ow,c_out] (has_summand) -> act(conv2d(input, filters) + bias +
// summand) [n,oh,ow,c_out]. padding "SAME", "VALID" or "EXPLICIT" (explicit_paddings {top,
// bottom, left, right}); constant_filter promises that the filters never change between calls
// (kernels/cpu/conv.cpp keeps their reordered copy).
bool known_conv_activation(const std::string& a) {
  return a.empty() || a == "relu" || a == "relu6" || a == "clip" || a == "elu" || a == "sigmoid" || a == "tanh" ||
         a == "leaky_relu";
}

void check_hw_pair(const OpCall& c, const char* attr) {
  const auto& v = c.attr_ints(attr);
  DF_CHECK(v.size() == 2 && v[0] > 0 && v[1] > 0, "[fused_conv2d] ", attr, " must be two positive ints {h, w}, got ",
           attr_to_string(c.attr(attr)));
}

// One spatial output dim over the input padded by (before, after); unknown stays unknown.
int64_t fused_out_dim(int64_t in, int64_t k, int64_t s, int64_t d, const std::string& padding, int64_t before,
                      int64_t after, const Shape& x, const Shape& w) {
  if (in < 0 || k < 0) return kUnknownDim;
  if (padding == "SAME") return detail::window_dim(in, k, s, d, true).out;
  const int64_t padded = in + before + after, eff = (k - 1) * d + 1;
  DF_CHECK(padded >= eff, "[fused_conv2d] the window (", k, " dilated by ", d, ") does not fit input size ", in,
           " padded by ", before, " + ", after, " (input ", x, ", filters ", w, ", padding ", padding, ")");
  return detail::window_dim(padded, k, s, d, false).out;
}

void infer_fused_conv2d(const OpCall& c, TypeList& out) {
  const bool has_bias = c.attr_bool("has_bias"), has_summand = c.attr_bool("has_summand");
  check_input_count(c, "fused_conv2d", has_summand);
  const std::string& act = c.attr_string("activation");
  DF_CHECK(known_conv_activation(act), "[fused_conv2d] unknown activation \"", act,
           "\" (expected \"\", \"relu\", \"relu6\", \"clip\", \"elu\", \"sigmoid\", \"tanh\" or \"leaky_relu\")");
  DF_CHECK(act != "clip" || c.attr_float("clip_min") <= c.attr_float("clip_max"), "[fused_conv2d] clip_min ",
           c.attr_float("clip_min"), " is greater than clip_max ", c.attr_float("clip_max"));
  detail::check_float(c, c.in(0), "input");
  detail::check_same_dtype(c, c.in(0), c.in(1));
  const Shape &x = c.in(0).shape(), &w = c.in(1).shape();
  DF_CHECK(x.rank() == 4, "[fused_conv2d] expects a rank-4 input [n, h, w, c_in], got ", x);
  DF_CHECK(w.rank() == 4, "[fused_conv2d] expects rank-4 filters [kh, kw, c_in / groups, c_out], got ", w);
  check_hw_pair(c, "strides");
  check_hw_pair(c, "dilations");
  const std::string& padding = c.attr_string("padding");
  const auto& ep = c.attr_ints("explicit_paddings");
  DF_CHECK(padding == "SAME" || padding == "VALID" || padding == "EXPLICIT",
           "[fused_conv2d] padding must be \"SAME\", \"VALID\" or \"EXPLICIT\", got \"", padding, "\"");
  if (padding == "EXPLICIT") {
    DF_CHECK(ep.size() == 4 && ep[0] >= 0 && ep[1] >= 0 && ep[2] >= 0 && ep[3] >= 0,
             "[fused_conv2d] EXPLICIT padding needs explicit_paddings = 4 non-negative ints {top, bottom, left, ",
             "right}, got ", attr_to_string(c.attr("explicit_paddings")));
  } else {
    DF_CHECK(ep.empty(), "[fused_conv2d] explicit_paddings ", attr_to_string(c.attr("explicit_paddings")),
             " given with padding \"", padding, "\" (only EXPLICIT takes them)");
  }
  const int64_t ci = x[3], fi = w[2], co = w[3];
  if (ci >= 0 && fi >= 0) {
    DF_CHECK(fi > 0 && ci % fi == 0, "[fused_conv2d] input channels ", ci, " do not match filter in-channels ", fi,
             " (input ", x, ", filters ", w, ")");
    if (co >= 0)
      DF_CHECK(co % (ci / fi) == 0, "[fused_conv2d] output channels ", co, " are not divisible by groups ", ci / fi,
               " (input ", x, ", filters ", w, ")");
  }
  if (has_bias) check_bias(c, "fused_conv2d", "input", co, "the output channels of filters ", w);
  const auto& s = c.attr_ints("strides");
  const auto& d = c.attr_ints("dilations");
  const bool e = padding == "EXPLICIT";
  const Shape y{x[0], fused_out_dim(x[1], w[0], s[0], d[0], padding, e ? ep[0] : 0, e ? ep[1] : 0, x, w),
                fused_out_dim(x[2], w[1], s[1], d[1], padding, e ? ep[2] : 0, e ? ep[3] : 0, x, w), co};
  if (has_summand) {
    // Not broadcast: the CPU kernel accumulates into the output, which starts as the summand.
    const Tensor& sum = c.in(c.num_inputs() - 1);
    DF_CHECK(sum.dtype() == c.in(0).dtype() && sum.shape().compatible_with(y), "[fused_conv2d] summand must be ",
             dtype_name(c.in(0).dtype()), y, " (the output's type), got ", dtype_name(sum.dtype()), sum.shape());
  }
  out.push_back({c.in(0).dtype(), y});
}

// The conv2d's and pad's own vjps on the pre-activation gradient dz; dz from y where the
// activation allows it, else from the pre-activation z recomputed with the public ops. The
// masks follow the tie rules of the composites the pass fuses (relu'(0) = 0, clip passes the
// gradient at both bounds, elu'(0) = 1, leaky_relu'(0) = alpha).
TensorList vjp_fused_conv2d(const OpCall& c, const TensorList& g) {
  const Tensor &x = c.in(0), &w = c.in(1), &y = c.out(0);
  const bool has_bias = c.attr_bool("has_bias"), has_summand = c.attr_bool("has_summand");
  const bool explicit_pad = c.attr_string("padding") == "EXPLICIT";
  const std::string& act = c.attr_string("activation");
  Attrs conv_attrs{{"strides", c.attr_ints("strides")},
                   {"padding", explicit_pad ? std::string("VALID") : c.attr_string("padding")},
                   {"dilations", c.attr_ints("dilations")}};
  Attrs pad_attrs;
  Tensor xp = x;
  if (explicit_pad) {
    const auto& ep = c.attr_ints("explicit_paddings");
    pad_attrs = Attrs{{"paddings", std::vector<int64_t>{0, 0, ep[0], ep[1], ep[2], ep[3], 0, 0}},
                      {"constant_value", 0.0}};
    xp = dispatch1(OpId::Pad, {x}, pad_attrs);
  }
  auto pre_activation = [&] {
    Tensor z = dispatch1(OpId::Conv2D, {xp, w}, conv_attrs);
    if (has_bias) z = z + c.in(2);
    return has_summand ? z + c.in(c.num_inputs() - 1) : z;
  };
  Tensor dz = g[0];
  if (act == "relu" || act == "tanh" || act == "sigmoid") {
    dz = vjp_from_output(act, y, g[0]);
  } else if (act == "relu6" || act == "clip") {
    const Tensor z = pre_activation();
    const bool clip = act == "clip";
    const double lo = clip ? c.attr_float("clip_min") : 0.0, hi = clip ? c.attr_float("clip_max") : 6.0;
    const Tensor lo_ok = clip ? greater_equal(z, scalar_like(z, lo)) : greater(z, scalar_like(z, lo));
    const Tensor hi_ok = clip ? less_equal(z, scalar_like(z, hi)) : less(z, scalar_like(z, hi));
    dz = where(logical_and(lo_ok, hi_ok), g[0], zeros_like(g[0]));
  } else if (act == "elu") {
    const Tensor z = pre_activation();
    dz = where(less(z, scalar_like(z, 0)), g[0] * (y + 1.0), g[0]);
  } else if (act == "leaky_relu") {
    const Tensor z = pre_activation();
    dz = where(greater(z, scalar_like(z, 0)), g[0], g[0] * c.attr_float("alpha"));
  }
  const OpDef& conv = op_def(OpId::Conv2D);
  TensorList xw{xp, w}, zs{y};
  TensorList d = conv.vjp(OpCall{&conv, xw, &conv_attrs, zs}, {dz});
  if (explicit_pad) {
    const OpDef& p = op_def(OpId::Pad);
    TensorList xs{x}, xps{xp};
    d[0] = p.vjp(OpCall{&p, xs, &pad_attrs, xps}, {d[0]})[0];
  }
  if (has_bias) d.push_back(reduce_sum(dz, {0, 1, 2}));
  if (has_summand) d.push_back(dz);  // the summand is added to z as it is
  return d;
}

// --- fused_elementwise --- inputs (one shape S, scalars, or [S[-1]] rows) -> S: the postfix
// program of attr "program" (deepflow/ops/fused_program.h) evaluated per element.
void infer_fused_elementwise(const OpCall& c, TypeList& out) {
  DF_CHECK(c.num_inputs() >= 1, "[fused_elementwise] needs at least one input");
  const DType t = c.in(0).dtype();
  for (int i = 0; i < c.num_inputs(); ++i) {
    DF_CHECK(c.in(i).dtype() == t, "[fused_elementwise] input ", i, " is ", dtype_name(c.in(i).dtype()),
             c.in(i).shape(), ", input 0 is ", dtype_name(t), c.in(0).shape());
    detail::check_float(c, c.in(i), "the inputs");
  }
  std::vector<Shape> shapes;
  for (int i = 0; i < c.num_inputs(); ++i) shapes.push_back(c.in(i).shape());
  const Shape s = fused::output_shape(shapes);  // throws on inputs that do not fit
  fused::parse_cached(c.attr_string("program"), c.num_inputs());  // throws on a malformed program
  out.push_back({t, s});
}

// Replays the program with the public ops, then runs each step's own vjp backwards.
TensorList vjp_fused_elementwise(const OpCall& c, const TensorList& g) {
  const fused::Program p = fused::parse_cached(c.attr_string("program"), c.num_inputs());
  const Tensor& like = c.in(0);
  std::vector<Tensor> values(c.inputs.begin(), c.inputs.end());
  struct Step {
    const OpDef* def;
    std::vector<int> in;
    int out;
  };
  std::vector<Step> steps;
  std::vector<int> stack;
  for (const fused::Instr& ins : p.code) {
    if (ins.kind == fused::Instr::Input) {
      stack.push_back(ins.index);
    } else if (ins.kind == fused::Instr::Immediate) {
      values.push_back(scalar_like(like, ins.value));
      stack.push_back(int(values.size()) - 1);
    } else {
      const OpDef& d = op_def(ins.op);
      std::vector<int> args(stack.end() - ins.arity, stack.end());
      stack.resize(stack.size() - size_t(ins.arity));
      TensorList xs;
      for (int a : args) xs.push_back(values[size_t(a)]);
      values.push_back(dispatch1(ins.op, std::span<const Tensor>(xs)));
      stack.push_back(int(values.size()) - 1);
      steps.push_back({&d, args, int(values.size()) - 1});
    }
  }
  std::vector<Tensor> grads(values.size());
  grads[size_t(stack.back())] = g[0];
  Attrs none;
  for (size_t i = steps.size(); i-- > 0;) {
    const Step& st = steps[i];
    if (!grads[size_t(st.out)].defined()) continue;
    TensorList xs, ys{values[size_t(st.out)]};
    for (int a : st.in) xs.push_back(values[size_t(a)]);
    TensorList d = st.def->vjp(OpCall{st.def, xs, &none, ys}, {grads[size_t(st.out)]});
    for (size_t j = 0; j < st.in.size(); ++j) {
      if (!d[j].defined()) continue;
      Tensor& acc = grads[size_t(st.in[j])];
      acc = acc.defined() ? add(acc, d[j]) : d[j];
    }
  }
  // Each step's vjp already sums broadcast gradients down to its input's shape.
  return TensorList(grads.begin(), grads.begin() + c.num_inputs());
}

}  // namespace

DF_DEFINE_OP(FusedMatMul, {.num_inputs = -1,
                           .attrs = {{"transpose_a", false}, {"transpose_b", false}, {"activation", ""},
                                     {"has_bias", false}},
                           .infer = infer_fused_matmul, .vjp = vjp_fused_matmul});
DF_DEFINE_OP(FusedConv2D, {.num_inputs = -1,
                           .attrs = {{"strides", std::vector<int64_t>{1, 1}}, {"padding", "VALID"},
                                     {"explicit_paddings", std::vector<int64_t>{}},
                                     {"dilations", std::vector<int64_t>{1, 1}}, {"activation", ""}, {"alpha", 0.2},
                                     {"clip_min", 0.0}, {"clip_max", 6.0}, {"has_bias", false},
                                     {"has_summand", false}, {"constant_filter", false}},
                           .infer = infer_fused_conv2d, .vjp = vjp_fused_conv2d});
DF_DEFINE_OP(FusedElementwise, {.num_inputs = -1, .attrs = {AttrSpec::required_of("program", AttrKind::String)},
                                .infer = infer_fused_elementwise, .vjp = vjp_fused_elementwise});

Tensor fused_matmul(const Tensor& a, const Tensor& b, const Tensor& bias, bool transpose_a, bool transpose_b,
                    const std::string& activation) {
  Attrs attrs{{"transpose_a", transpose_a}, {"transpose_b", transpose_b}, {"activation", activation},
              {"has_bias", bias.defined()}};
  if (bias.defined()) return dispatch1(OpId::FusedMatMul, {a, b, bias}, attrs);
  return dispatch1(OpId::FusedMatMul, {a, b}, attrs);
}

Tensor fused_conv2d(const Tensor& input, const Tensor& filters, const Tensor& bias, const FusedConvOptions& o,
                    const Tensor& summand) {
  auto pair = [](const char* what, const Axes& v) {
    if (v.size() == 1) return std::vector<int64_t>{v[0], v[0]};
    DF_CHECK(v.size() == 2, "[fused_conv2d] ", what, " must be 1 or 2 ints {h, w}, got ", attr_to_string(AttrValue(v)));
    return std::vector<int64_t>(v);
  };
  Attrs attrs{{"strides", pair("strides", o.strides)}, {"padding", o.padding},
              {"explicit_paddings", o.explicit_paddings}, {"dilations", pair("dilations", o.dilations)},
              {"activation", o.activation}, {"alpha", o.alpha}, {"clip_min", o.clip_min}, {"clip_max", o.clip_max},
              {"has_bias", bias.defined()}, {"has_summand", summand.defined()}};
  std::vector<Tensor> inputs{input, filters};
  if (bias.defined()) inputs.push_back(bias);
  if (summand.defined()) inputs.push_back(summand);
  return dispatch1(OpId::FusedConv2D, std::span<const Tensor>(inputs), attrs);
}

Tensor fused_elementwise(const std::vector<Tensor>& inputs, const std::string& program) {
  return dispatch1(OpId::FusedElementwise, std::span<const Tensor>(inputs), {{"program", program}});
}

}  // namespace deepflow
