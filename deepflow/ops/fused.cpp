// SPDX-License-Identifier: Apache-2.0
// Fused primitives that graph passes create (deepflow/graph/passes.h); they can also be
// called directly. Both differentiate by replaying their parts with the public ops, so a
// fused training graph is differentiable (to any order) like the unfused one.
#include <cmath>
#include <numbers>

#include "deepflow/graph/passes.h"
#include "deepflow/graph/passes/program.h"
#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

bool known_activation(const std::string& a) {
  return a.empty() || a == "relu" || a == "tanh" || a == "sigmoid" || a == "gelu";
}

// --- fused_matmul --- a [..., m, k], b [..., k, n], bias [n] (has_bias) -> act(matmul(a, b) + bias)
// [..., m, n]; activation "" (none), "relu", "tanh", "sigmoid" or "gelu" (exact, erf form).
void infer_fused_matmul(const OpCall& c, TypeList& out) {
  const bool has_bias = c.attr_bool("has_bias");
  DF_CHECK(c.num_inputs() == (has_bias ? 3 : 2), "[fused_matmul] takes ", has_bias ? 3 : 2, " inputs (has_bias is ",
           has_bias ? "true" : "false", "), got ", c.num_inputs());
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
  if (has_bias) {
    const Tensor& bias = c.in(2);
    const int64_t n = t[0].shape[t[0].shape.rank() - 1];
    DF_CHECK(bias.dtype() == c.in(0).dtype(), "[fused_matmul] bias is ", dtype_name(bias.dtype()), bias.shape(),
             ", a is ", dtype_name(c.in(0).dtype()), c.in(0).shape());
    DF_CHECK(bias.rank() == 1 && bias.shape().compatible_with(Shape{n}), "[fused_matmul] bias must be [", n,
             "] (the columns of the product ", t[0].shape, "), got ", bias.shape());
  }
  out.push_back(t[0]);
}

// y = act(z), z = op(a) op(b) + bias: dz from the activation's own vjp where it needs only y
// (relu's mask y > 0 is z > 0), then matmul's vjp and the bias's sum over the rows.
TensorList vjp_fused_matmul(const OpCall& c, const TensorList& g) {
  const Tensor &a = c.in(0), &b = c.in(1), &y = c.out(0);
  const bool ta = c.attr_bool("transpose_a"), tb = c.attr_bool("transpose_b"), has_bias = c.attr_bool("has_bias");
  const std::string& act = c.attr_string("activation");
  Tensor dz = g[0];
  if (act == "relu" || act == "tanh" || act == "sigmoid") {
    const OpDef& d = op_def(act == "relu" ? OpId::Relu : act == "tanh" ? OpId::Tanh : OpId::Sigmoid);
    TensorList io{y};
    Attrs none;
    dz = d.vjp(OpCall{&d, io, &none, io}, {g[0]})[0];
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
DF_DEFINE_OP(FusedElementwise, {.num_inputs = -1, .attrs = {AttrSpec::required_of("program", AttrKind::String)},
                                .infer = infer_fused_elementwise, .vjp = vjp_fused_elementwise});

Tensor fused_matmul(const Tensor& a, const Tensor& b, const Tensor& bias, bool transpose_a, bool transpose_b,
                    const std::string& activation) {
  Attrs attrs{{"transpose_a", transpose_a}, {"transpose_b", transpose_b}, {"activation", activation},
              {"has_bias", bias.defined()}};
  if (bias.defined()) return dispatch1(OpId::FusedMatMul, {a, b, bias}, attrs);
  return dispatch1(OpId::FusedMatMul, {a, b}, attrs);
}

Tensor fused_elementwise(const std::vector<Tensor>& inputs, const std::string& program) {
  return dispatch1(OpId::FusedElementwise, std::span<const Tensor>(inputs), {{"program", program}});
}

}  // namespace deepflow
