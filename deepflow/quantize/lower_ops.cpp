// SPDX-License-Identifier: Apache-2.0
// The per-op lowering table: each deepflow primitive (after the inference passes) to TFLite
// builtins. Layouts: deepflow is NHWC like TFLite; filters HWIO -> OHWI (CONV_2D) or 1HWO
// (DEPTHWISE_CONV_2D); matmul weights [in, out] -> FULLY_CONNECTED's [out, in].
#include <cmath>
#include <limits>
#include <numeric>

#include "deepflow/core/error.h"
#include "deepflow/graph/builder.h"
#include "deepflow/ops/ops.h"
#include "deepflow/quantize/lower_internal.h"

namespace deepflow::quantize::detail {

namespace {
OpCall attr_call(const Node& n) { return OpCall{&n.def(), {}, &n.attrs, {}}; }
}  // namespace

bool NodeLowering::attr_bool(const char* n) const { return attr_call(node).attr_bool(n); }
int64_t NodeLowering::attr_int(const char* n) const { return attr_call(node).attr_int(n); }
double NodeLowering::attr_float(const char* n) const { return attr_call(node).attr_float(n); }
const std::string& NodeLowering::attr_string(const char* n) const { return attr_call(node).attr_string(n); }
DType NodeLowering::attr_dtype(const char* n) const { return attr_call(node).attr_dtype(n); }
const std::vector<int64_t>& NodeLowering::attr_ints(const char* n) const { return attr_call(node).attr_ints(n); }

namespace {

using Op = fb::BuiltinOperator;
using Act = fb::ActivationFunctionType;

Tensor eager_transpose(const Tensor& t, const std::vector<int64_t>& perm) {
  BuildScopeGuard eager(nullptr);
  return transpose(t, perm);
}

int64_t normalize_axis(int64_t axis, int rank) { return axis < 0 ? axis + rank : axis; }

bool is_scalar_value(const std::optional<Tensor>& c, double v) {
  if (!c || c->size() != 1) return false;
  BuildScopeGuard eager(nullptr);
  return std::fabs(cast(*c, DType::Float64).to_vector<double>()[0] - v) <= 1e-6 * std::max(1.0, std::fabs(v));
}

// --- activations ---

// The fused activation TFLite kernels apply for `act`, if it is one of theirs.
std::optional<Act> fused_activation(const std::string& act, double clip_min = 0, double clip_max = 0) {
  if (act.empty()) return Act::NONE;
  if (act == "relu") return Act::RELU;
  if (act == "relu6" || (act == "clip" && clip_min == 0 && clip_max == 6)) return Act::RELU6;
  if (act == "clip" && clip_min == -1 && clip_max == 1) return Act::RELU_N1_TO_1;
  return std::nullopt;
}

// out = act(z) as an op of its own (activations no kernel fuses).
void activation_op(NodeLowering& n, const std::string& act, int32_t z, int32_t out) {
  Lowering& l = n.l;
  if (act == "sigmoid") {
    n.emit(Op::LOGISTIC, {z}, {out});
  } else if (act == "tanh") {
    n.emit(Op::TANH, {z}, {out});
  } else if (act == "elu") {
    n.emit(Op::ELU, {z}, {out});
  } else if (act == "gelu") {
    n.emit(Op::GELU, {z}, {out});
  } else if (act == "leaky_relu") {
    n.emit(Op::LEAKY_RELU, {z}, {out}, {.alpha = float(n.attr_float("alpha"))});
  } else if (act == "clip") {
    int32_t lo = l.temp(n.node.name + "/clip_lo", z);
    n.emit(Op::MAXIMUM, {z, l.constant_tensor(scalar(n.attr_float("clip_min")), n.node.name + "/clip_min")}, {lo});
    n.emit(Op::MINIMUM, {lo, l.constant_tensor(scalar(n.attr_float("clip_max")), n.node.name + "/clip_max")}, {out});
  } else {
    throw Unsupported("activation \"" + act + "\" has no TFLite op");
  }
}

// Emits `code` writing the node's output 0 with activation `act` fused when a kernel can,
// else into a temporary followed by the activation op. `set` fills in the op's options.
void with_activation(NodeLowering& n, Op code, std::vector<int32_t> inputs, LiteOptions o, const std::string& act,
                     double clip_min = 0, double clip_max = 0) {
  const int32_t out = n.out();
  if (auto fused = fused_activation(act, clip_min, clip_max)) {
    o.activation = *fused;
    n.emit(code, std::move(inputs), {out}, o);
    return;
  }
  const int32_t z = n.l.temp(n.node.name + "/pre_activation", out);
  n.emit(code, std::move(inputs), {z}, o);
  activation_op(n, act, z, out);
}

// --- convolution and pooling ---

// TFLite's SAME or VALID for deepflow's padding; EXPLICIT pads that are not SAME's become a
// PAD (value `pad_value`) in front of a VALID op, whose input tensor is returned in *x.
fb::Padding lite_padding(NodeLowering& n, int32_t* x, const std::vector<int64_t>& k, const std::vector<int64_t>& s,
                         const std::vector<int64_t>& d, float pad_value = 0.f) {
  const std::string& padding = n.attr_string("padding");
  if (padding == "SAME") return fb::Padding::SAME;
  if (padding == "VALID") return fb::Padding::VALID;
  const auto& p = n.attr_ints("explicit_paddings");  // {top, bottom, left, right}
  if (std::all_of(p.begin(), p.end(), [](int64_t v) { return v == 0; })) return fb::Padding::VALID;
  const Shape& in = n.in_type(0).shape;
  if (in[1] >= 0 && in[2] >= 0) {
    bool same = true;
    for (int i = 0; i < 2; ++i) {
      const int64_t size = in[i + 1], out = (size + s[size_t(i)] - 1) / s[size_t(i)];
      const int64_t total = std::max<int64_t>((out - 1) * s[size_t(i)] + (k[size_t(i)] - 1) * d[size_t(i)] + 1 - size, 0);
      same = same && p[size_t(2 * i)] == total / 2 && p[size_t(2 * i + 1)] == total - total / 2;
    }
    if (same) return fb::Padding::SAME;
  }
  Lowering& l = n.l;
  LiteTensor padded = l.model().tensors[size_t(*x)];
  padded.name = n.node.name + "/pad";
  padded.constant = false;
  padded.data.clear();
  padded.shape[1] += int32_t(p[0] + p[1]);
  padded.shape[2] += int32_t(p[2] + p[3]);
  if (!padded.shape_signature.empty()) {
    for (int i : {1, 2})
      if (padded.shape_signature[size_t(i)] >= 0) padded.shape_signature[size_t(i)] = padded.shape[size_t(i)];
  }
  const int32_t out = l.model().add_tensor(std::move(padded));
  const int32_t pads = l.model().add_int32_constant(n.node.name + "/paddings", {4, 2},
                                                    {0, 0, int32_t(p[0]), int32_t(p[1]), int32_t(p[2]), int32_t(p[3]), 0, 0});
  if (pad_value == 0.f) n.emit(Op::PAD, {*x, pads}, {out});
  else n.emit(Op::PADV2, {*x, pads, l.constant_tensor(scalar(pad_value), n.node.name + "/pad_value")}, {out});
  *x = out;
  return fb::Padding::VALID;
}

// conv2d and fused_conv2d: CONV_2D or DEPTHWISE_CONV_2D, then the summand's ADD and the
// activation (fused into the last op when a kernel can).
void conv(NodeLowering& n) {
  const bool fused = n.node.op == OpId::FusedConv2D;
  auto w = n.in_constant(1);
  if (!w) throw Unsupported("the filters must be constant (TFLite convolutions take constant weights)");
  const Shape& x = n.in_type(0).shape;
  const Shape& ws = w->shape();
  if (x[3] < 0) throw Unsupported("the input channels must be known");
  const int64_t groups = x[3] / ws[2];
  const auto& s = n.attr_ints("strides");
  const auto& d = n.attr_ints("dilations");
  int32_t input = n.in(0);
  LiteOptions o{.padding = lite_padding(n, &input, {ws[0], ws[1]}, s, d), .stride_w = int32_t(s[1]),
                .stride_h = int32_t(s[0]), .dilation_w = int32_t(d[1]), .dilation_h = int32_t(d[0])};
  Lowering& l = n.l;
  const std::string& name = n.node.name;
  Op code = Op::CONV_2D;
  int32_t filter;
  if (groups == 1) {
    filter = l.constant_tensor(eager_transpose(*w, {3, 0, 1, 2}), name + "/filter");  // HWIO -> OHWI
  } else if (ws[2] == 1) {
    code = Op::DEPTHWISE_CONV_2D;  // HW1O is 1HWO's data: output channel c*M + m reads input c
    filter = l.constant_tensor(*w, name + "/filter");
    l.model().tensors[size_t(filter)].shape = {1, int32_t(ws[0]), int32_t(ws[1]), int32_t(ws[3])};
    o.depth_multiplier = int32_t(ws[3] / x[3]);
  } else {
    throw Unsupported("grouped convolutions (" + std::to_string(groups) + " groups of " + std::to_string(ws[2]) +
                      " channels) have no TFLite builtin");
  }
  int32_t bias;
  if (fused && n.attr_bool("has_bias")) {
    bias = n.in(2);
  } else {
    bias = l.model().add_float_constant(name + "/bias", {int32_t(ws[3])}, std::vector<float>(size_t(ws[3]), 0.f));
  }
  const std::string act = fused ? n.attr_string("activation") : "";
  const double lo = fused && act == "clip" ? n.attr_float("clip_min") : 0, hi = fused && act == "clip" ? n.attr_float("clip_max") : 0;
  if (fused && n.attr_bool("has_summand")) {
    const int32_t z = l.temp(name + "/conv", n.out());
    n.emit(code, {input, filter, bias}, {z}, o);
    const int32_t summand = n.in(int(n.node.inputs.size()) - 1);
    with_activation(n, Op::ADD, {z, summand}, {}, act, lo, hi);
    return;
  }
  with_activation(n, code, {input, filter, bias}, o, act, lo, hi);
}

void pool(NodeLowering& n) {
  const auto& k = n.attr_ints("ksize");
  const auto& s = n.attr_ints("strides");
  const bool max = n.node.op == OpId::MaxPool;
  int32_t input = n.in(0);
  if (!max && n.attr_string("padding") == "EXPLICIT") throw Unsupported("explicit padding of an average pool");
  LiteOptions o{.padding = lite_padding(n, &input, k, s, {1, 1}, -std::numeric_limits<float>::infinity()),
                .stride_w = int32_t(s[1]), .stride_h = int32_t(s[0]), .filter_w = int32_t(k[1]),
                .filter_h = int32_t(k[0])};
  n.emit(max ? Op::MAX_POOL_2D : Op::AVERAGE_POOL_2D, {input}, {n.out()}, o);
}

// --- matrix products ---

void matmul(NodeLowering& n) {
  const bool fused = n.node.op == OpId::FusedMatMul;
  const bool ta = n.attr_bool("transpose_a"), tb = n.attr_bool("transpose_b");
  const std::string act = fused ? n.attr_string("activation") : "";
  Lowering& l = n.l;
  const std::string& name = n.node.name;
  auto b = n.in_constant(1);
  const int ra = n.in_type(0).shape.rank();
  if (b && b->shape().rank() == 2 && !ta) {
    // FULLY_CONNECTED: y = x W^T + bias over the last dim; keep_num_dims keeps x's leading dims.
    const int32_t weights = l.constant_tensor(tb ? *b : eager_transpose(*b, {1, 0}), name + "/weights");
    const int32_t units = l.model().tensors[size_t(weights)].shape[0];
    int32_t bias = fused && n.attr_bool("has_bias")
                       ? n.in(2)
                       : l.model().add_float_constant(name + "/bias", {units}, std::vector<float>(size_t(units), 0.f));
    with_activation(n, Op::FULLY_CONNECTED, {n.in(0), weights, bias}, {.keep_num_dims = ra > 2}, act);
    return;
  }
  LiteOptions o{.adj_x = ta, .adj_y = tb};
  if (fused && n.attr_bool("has_bias")) {
    const int32_t z = l.temp(name + "/matmul", n.out());
    n.emit(Op::BATCH_MATMUL, {n.in(0), n.in(1)}, {z}, o);
    with_activation(n, Op::ADD, {z, n.in(2)}, {}, act);
    return;
  }
  with_activation(n, Op::BATCH_MATMUL, {n.in(0), n.in(1)}, o, act);
}

// --- normalization ---

void batch_norm(NodeLowering& n) {
  if (n.attr_bool("is_training")) throw Unsupported("training-mode batch norm; convert the model for inference");
  auto scale = n.in_constant(1), offset = n.in_constant(2), mean = n.in_constant(3), var = n.in_constant(4);
  if (!scale || !offset || !mean || !var) throw Unsupported("the batch statistics and parameters must be constant");
  Tensor a, b;
  {
    BuildScopeGuard eager(nullptr);
    a = *scale * rsqrt(*var + n.attr_float("epsilon"));
    b = *offset - *mean * a;
  }
  Lowering& l = n.l;
  const int32_t out = n.out();
  const int32_t z = l.temp(n.node.name + "/scaled", out);
  n.emit(Op::MUL, {n.in(0), l.constant_tensor(a, n.node.name + "/multiplier")}, {z});
  n.emit(Op::ADD, {z, l.constant_tensor(b, n.node.name + "/offset")}, {out});
}

// (x - mean) / sqrt(var + eps) * gamma + beta over the last axis, as TFLite ops (the
// converter's own decomposition of LayerNormalization).
void layer_norm(NodeLowering& n) {
  Lowering& l = n.l;
  const std::string& name = n.node.name;
  const int32_t x = n.in(0), out = n.out();
  const int rank = n.in_type(0).shape.rank();
  const int32_t axis = l.ints({rank - 1}, name + "/axis");
  LiteTensor reduced = l.model().tensors[size_t(x)];
  reduced.name = name + "/mean";
  reduced.shape.back() = 1;
  if (!reduced.shape_signature.empty()) reduced.shape_signature.back() = 1;
  const int32_t mean = l.model().add_tensor(reduced);
  n.emit(Op::MEAN, {x, axis}, {mean}, {.keep_dims = true});
  const int32_t centered = l.temp(name + "/centered", x);
  n.emit(Op::SUB, {x, mean}, {centered});
  const int32_t sq = l.temp(name + "/squared", x);
  n.emit(Op::MUL, {centered, centered}, {sq});
  reduced.name = name + "/variance";
  const int32_t var = l.model().add_tensor(reduced);
  n.emit(Op::MEAN, {sq, axis}, {var}, {.keep_dims = true});
  reduced.name = name + "/variance_eps";
  const int32_t var_eps = l.model().add_tensor(reduced);
  n.emit(Op::ADD, {var, l.constant_tensor(scalar(n.attr_float("epsilon")), name + "/epsilon")}, {var_eps});
  reduced.name = name + "/rstd";
  const int32_t rstd = l.model().add_tensor(reduced);
  n.emit(Op::RSQRT, {var_eps}, {rstd});
  const int32_t normed = l.temp(name + "/normalized", x);
  n.emit(Op::MUL, {centered, rstd}, {normed});
  const int32_t scaled = l.temp(name + "/scaled", x);
  n.emit(Op::MUL, {normed, n.in(1)}, {scaled});
  n.emit(Op::ADD, {scaled, n.in(2)}, {out});
}

// --- elementwise ---

const std::map<OpId, Op>& unary_ops() {
  static const std::map<OpId, Op> m = {
      {OpId::Neg, Op::NEG},       {OpId::Abs, Op::ABS},       {OpId::Sign, Op::SIGN},     {OpId::Exp, Op::EXP},
      {OpId::Log, Op::LOG},       {OpId::Sqrt, Op::SQRT},     {OpId::Rsqrt, Op::RSQRT},   {OpId::Square, Op::SQUARE},
      {OpId::Sin, Op::SIN},       {OpId::Cos, Op::COS},       {OpId::Tanh, Op::TANH},     {OpId::Sigmoid, Op::LOGISTIC},
      {OpId::Relu, Op::RELU},     {OpId::Floor, Op::FLOOR},   {OpId::Ceil, Op::CEIL},     {OpId::Round, Op::ROUND},
      {OpId::LogicalNot, Op::LOGICAL_NOT}};
  return m;
}

const std::map<OpId, Op>& binary_ops() {
  static const std::map<OpId, Op> m = {
      {OpId::Add, Op::ADD},           {OpId::Sub, Op::SUB},
      {OpId::Mul, Op::MUL},           {OpId::Div, Op::DIV},
      {OpId::Pow, Op::POW},           {OpId::Maximum, Op::MAXIMUM},
      {OpId::Minimum, Op::MINIMUM},   {OpId::Equal, Op::EQUAL},
      {OpId::NotEqual, Op::NOT_EQUAL}, {OpId::Less, Op::LESS},
      {OpId::LessEqual, Op::LESS_EQUAL}, {OpId::Greater, Op::GREATER},
      {OpId::GreaterEqual, Op::GREATER_EQUAL}, {OpId::LogicalAnd, Op::LOGICAL_AND},
      {OpId::LogicalOr, Op::LOGICAL_OR}};
  return m;
}

void unary(NodeLowering& n) { n.emit(unary_ops().at(n.node.op), {n.in(0)}, {n.out()}); }

// The value a single-use node of op `op` produces from, or nullopt.
const Node* single_use_producer(const NodeLowering& n, ValueRef v, OpId op) {
  v = n.l.skip_identities(v);
  const Node& p = n.l.producer(v);
  return p.op == op && n.l.uses(v) == 1 ? &p : nullptr;
}

// reduce_sum(x, axes) / count (or * 1 / count) -> MEAN, when count is the number of reduced elements.
bool try_mean(NodeLowering& n) {
  const bool div = n.node.op == OpId::Div;
  for (int side : {0, 1}) {
    if (div && side == 1) break;
    const Node* sum = single_use_producer(n, n.in_value(side), OpId::ReduceSum);
    auto c = n.in_constant(1 - side);
    if (!sum || !c) continue;
    const Shape& x = n.l.graph().type(sum->inputs[0]).shape;
    std::vector<int64_t> axes = attr_call(*sum).attr_ints("axes");
    if (axes.empty())
      for (int k = 0; k < x.rank(); ++k) axes.push_back(k);
    double count = 1;
    bool known = true;
    for (int64_t& a : axes) {
      a = normalize_axis(a, x.rank());
      known = known && x[int(a)] >= 0;
      count *= double(x[int(a)]);
    }
    if (!known || !is_scalar_value(c, div ? count : 1.0 / count)) continue;
    n.emit(Op::MEAN, {n.l.tensor(sum->inputs[0]), n.l.ints(axes, n.node.name + "/axes")}, {n.out()},
           {.keep_dims = attr_call(*sum).attr_bool("keepdims")});
    return true;
  }
  return false;
}

bool last_axis_keepdims(const Node& reduce, int rank) {
  const auto& axes = attr_call(reduce).attr_ints("axes");
  return attr_call(reduce).attr_bool("keepdims") && axes.size() == 1 && normalize_axis(axes[0], rank) == rank - 1;
}

// exp(x - max(x)) / sum(exp(x - max(x))) over the last axis -> SOFTMAX.
bool try_softmax(NodeLowering& n) {
  if (n.node.op != OpId::Div) return false;
  const Lowering& l = n.l;
  const ValueRef e = l.skip_identities(n.in_value(0));
  const Node& exp = l.producer(e);
  const Node* sum = single_use_producer(n, n.in_value(1), OpId::ReduceSum);
  if (exp.op != OpId::Exp || !sum || !(l.skip_identities(sum->inputs[0]) == e) || l.uses(e) != 2) return false;
  const int rank = l.graph().type(e).shape.rank();
  if (!last_axis_keepdims(*sum, rank)) return false;
  const Node* sub = single_use_producer(n, exp.inputs[0], OpId::Sub);
  if (!sub) return false;
  const Node* max = single_use_producer(n, sub->inputs[1], OpId::ReduceMax);
  if (!max || !(l.skip_identities(max->inputs[0]) == l.skip_identities(sub->inputs[0])) ||
      !last_axis_keepdims(*max, rank))
    return false;
  n.emit(Op::SOFTMAX, {n.l.tensor(sub->inputs[0])}, {n.out()}, {.beta = 1.f});
  return true;
}

// minimum(relu(x), 6) -> RELU6(x).
bool try_relu6(NodeLowering& n) {
  if (n.node.op != OpId::Minimum) return false;
  for (int side : {0, 1}) {
    const Node* relu = single_use_producer(n, n.in_value(side), OpId::Relu);
    if (relu && is_scalar_value(n.in_constant(1 - side), 6.0) && n.in_type(side).shape == n.out_type().shape) {
      n.emit(Op::RELU6, {n.l.tensor(relu->inputs[0])}, {n.out()});
      return true;
    }
  }
  return false;
}

// (x * 0.5) * (1 + erf(x * (1 / sqrt 2))) -> GELU(x) (ops/activation.cpp's exact form).
bool try_gelu(NodeLowering& n) {
  if (n.node.op != OpId::Mul) return false;
  const Lowering& l = n.l;
  // The value v * c of a single-use mul by the scalar constant c (either side), or nullopt.
  auto times = [&](ValueRef v, double c) -> std::optional<ValueRef> {
    const Node* m = single_use_producer(n, v, OpId::Mul);
    if (!m) return std::nullopt;
    for (int side : {0, 1})
      if (is_scalar_value(l.constant(l.skip_identities(m->inputs[size_t(1 - side)])), c))
        return l.skip_identities(m->inputs[size_t(side)]);
    return std::nullopt;
  };
  for (int side : {0, 1}) {
    auto half = times(n.in_value(side), 0.5);
    const Node* add = single_use_producer(n, n.in_value(1 - side), OpId::Add);
    if (!half || !add) continue;
    for (int a : {0, 1}) {
      const Node* erf = single_use_producer(n, add->inputs[size_t(a)], OpId::Erf);
      if (!erf || !is_scalar_value(l.constant(l.skip_identities(add->inputs[size_t(1 - a)])), 1.0)) continue;
      auto scaled = times(erf->inputs[0], 1.0 / std::sqrt(2.0));
      if (scaled && *scaled == *half) {
        n.emit(Op::GELU, {n.l.tensor(*half)}, {n.out()});
        return true;
      }
    }
  }
  return false;
}

// clamped + stop_gradient(quantized - clamped), clamped = min(max(x, lo), hi) with constant
// lo and hi: tf.quantization.fake_quant_* (python/deepflow/quantization). In the model it is x
// itself, with [lo, hi] (the nudged range, over all channels) as its trained int8 range.
bool try_fake_quant(NodeLowering& n) {
  if (n.node.op != OpId::Add) return false;
  const Lowering& l = n.l;
  const ValueRef c = l.skip_identities(n.in_value(0));
  const Node& sg = l.producer(n.in_value(1));
  if (sg.op != OpId::StopGradient) return false;
  const Node* sub = single_use_producer(n, sg.inputs[0], OpId::Sub);
  if (!sub || !(l.skip_identities(sub->inputs[1]) == c)) return false;
  const Node& mn = l.producer(c);
  if (mn.op != OpId::Minimum) return false;
  const Node& mx = l.producer(l.skip_identities(mn.inputs[0]));
  auto hi = l.constant(l.skip_identities(mn.inputs[1]));
  if (mx.op != OpId::Maximum || !hi) return false;
  auto lo = l.constant(l.skip_identities(mx.inputs[1]));
  if (!lo) return false;
  std::vector<double> lv, hv;
  {
    BuildScopeGuard eager(nullptr);
    lv = cast(*lo, DType::Float64).to_vector<double>();
    hv = cast(*hi, DType::Float64).to_vector<double>();
  }
  const int32_t x = n.l.tensor(mx.inputs[0]);
  LiteTensor& t = n.l.model().tensors[size_t(x)];
  const double tmin = *std::min_element(lv.begin(), lv.end()), tmax = *std::max_element(hv.begin(), hv.end());
  t.range_min = t.has_range ? std::min(t.range_min, tmin) : tmin;
  t.range_max = t.has_range ? std::max(t.range_max, tmax) : tmax;
  t.has_range = true;
  n.l.set_output({n.id, 0}, x);
  return true;
}

void binary(NodeLowering& n) {
  if (try_fake_quant(n) || try_softmax(n) || try_mean(n) || try_relu6(n) || try_gelu(n)) return;
  n.emit(binary_ops().at(n.node.op), {n.in(0), n.in(1)}, {n.out()});
}

// where(x > 0, x, x * alpha) -> LEAKY_RELU(x) (ops/activation.cpp's form).
bool try_leaky_relu(NodeLowering& n) {
  const Lowering& l = n.l;
  const Node* gt = single_use_producer(n, n.in_value(0), OpId::Greater);
  const Node* mul = single_use_producer(n, n.in_value(2), OpId::Mul);
  if (!gt || !mul || !is_scalar_value(l.constant(l.skip_identities(gt->inputs[1])), 0.0)) return false;
  const ValueRef x = l.skip_identities(n.in_value(1));
  if (!(l.skip_identities(gt->inputs[0]) == x) || n.in_type(1).shape != n.out_type().shape) return false;
  for (int side : {0, 1}) {
    auto alpha = l.constant(l.skip_identities(mul->inputs[size_t(1 - side)]));
    if (!(l.skip_identities(mul->inputs[size_t(side)]) == x) || !alpha || alpha->size() != 1) continue;
    BuildScopeGuard eager(nullptr);
    n.emit(Op::LEAKY_RELU, {n.l.tensor(x)}, {n.out()},
           {.alpha = float(cast(*alpha, DType::Float64).to_vector<double>()[0])});
    return true;
  }
  return false;
}

void where_op(NodeLowering& n) {
  if (try_leaky_relu(n)) return;
  n.emit(Op::SELECT_V2, {n.in(0), n.in(1), n.in(2)}, {n.out()});
}

void cast_op(NodeLowering& n) {
  n.emit(Op::CAST, {n.in(0)}, {n.out()},
         {.in_type = lite_type(n.in_type(0).dtype, n.node.name), .out_type = lite_type(n.out_type().dtype, n.node.name)});
}

// --- reductions ---

void reduce(NodeLowering& n) {
  static const std::map<OpId, Op> codes = {{OpId::ReduceSum, Op::SUM},
                                           {OpId::ReduceMax, Op::REDUCE_MAX},
                                           {OpId::ReduceMin, Op::REDUCE_MIN},
                                           {OpId::ReduceProd, Op::REDUCE_PROD}};
  const int rank = n.in_type(0).shape.rank();
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (axes.empty())
    for (int k = 0; k < rank; ++k) axes.push_back(k);
  for (int64_t& a : axes) a = normalize_axis(a, rank);
  n.emit(codes.at(n.node.op), {n.in(0), n.l.ints(axes, n.node.name + "/axes")}, {n.out()},
         {.keep_dims = n.attr_bool("keepdims")});
}

void arg_reduce(NodeLowering& n) {
  const int64_t axis = normalize_axis(n.attr_int("axis"), n.in_type(0).shape.rank());
  n.emit(n.node.op == OpId::ArgMax ? Op::ARG_MAX : Op::ARG_MIN, {n.in(0), n.l.ints({axis}, n.node.name + "/axis")},
         {n.out()}, {.out_type = lite_type(n.out_type().dtype, n.node.name)});
}

// --- shape and layout ---

void reshape(NodeLowering& n) {
  std::vector<int64_t> shape = n.attr_ints("shape");
  std::vector<int32_t> s32(shape.begin(), shape.end());
  n.emit(Op::RESHAPE, {n.in(0), n.l.ints(shape, n.node.name + "/shape")}, {n.out()}, {.new_shape = s32});
}

void transpose_op(NodeLowering& n) {
  std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm.empty())
    for (int k = n.in_type(0).shape.rank() - 1; k >= 0; --k) perm.push_back(k);
  n.emit(Op::TRANSPOSE, {n.in(0), n.l.ints(perm, n.node.name + "/perm")}, {n.out()});
}

void concat_op(NodeLowering& n) {
  std::vector<int32_t> ins;
  for (int i = 0; i < int(n.node.inputs.size()); ++i) ins.push_back(n.in(i));
  n.emit(Op::CONCATENATION, ins, {n.out()},
         {.axis = int32_t(normalize_axis(n.attr_int("axis"), n.out_type().shape.rank()))});
}

void pad_op(NodeLowering& n) {
  const auto& p = n.attr_ints("paddings");
  std::vector<int32_t> pads(p.begin(), p.end());
  const int32_t paddings = n.l.model().add_int32_constant(n.node.name + "/paddings", {int32_t(p.size() / 2), 2}, pads);
  const double value = n.attr_float("constant_value");
  if (value == 0) {
    n.emit(Op::PAD, {n.in(0), paddings}, {n.out()});
    return;
  }
  BuildScopeGuard eager(nullptr);
  n.emit(Op::PADV2, {n.in(0), paddings, n.l.constant_tensor(scalar(value, n.in_type(0).dtype), n.node.name + "/value")},
         {n.out()});
}

void slice_op(NodeLowering& n) {
  n.emit(Op::SLICE, {n.in(0), n.l.ints(n.attr_ints("begin"), n.node.name + "/begin"),
                     n.l.ints(n.attr_ints("size"), n.node.name + "/size")},
         {n.out()});
}

void strided_slice(NodeLowering& n) {
  std::vector<int64_t> strides = n.attr_ints("strides");
  if (strides.empty()) strides.assign(n.attr_ints("begin").size(), 1);
  n.emit(Op::STRIDED_SLICE,
         {n.in(0), n.l.ints(n.attr_ints("begin"), n.node.name + "/begin"), n.l.ints(n.attr_ints("end"), n.node.name + "/end"),
          n.l.ints(strides, n.node.name + "/strides")},
         {n.out()},
         {.begin_mask = int32_t(n.attr_int("begin_mask")), .end_mask = int32_t(n.attr_int("end_mask")),
          .ellipsis_mask = int32_t(n.attr_int("ellipsis_mask")), .new_axis_mask = int32_t(n.attr_int("new_axis_mask")),
          .shrink_axis_mask = int32_t(n.attr_int("shrink_axis_mask"))});
}

void tile_op(NodeLowering& n) {
  n.emit(Op::TILE, {n.in(0), n.l.ints(n.attr_ints("multiples"), n.node.name + "/multiples")}, {n.out()});
}

void broadcast_to(NodeLowering& n) {
  n.emit(Op::BROADCAST_TO, {n.in(0), n.l.ints(n.attr_ints("shape"), n.node.name + "/shape")}, {n.out()});
}

void reverse_op(NodeLowering& n) {
  n.emit(Op::REVERSE_V2, {n.in(0), n.l.ints(n.attr_ints("axes"), n.node.name + "/axes")}, {n.out()});
}

// --- indexing ---

// int64 indices as int32 (TFLite's index type): converted when constant, else a CAST.
int32_t int32_indices(NodeLowering& n, int i) {
  if (n.in_type(i).dtype != DType::Int64) return n.in(i);
  if (auto c = n.in_constant(i)) {
    BuildScopeGuard eager(nullptr);
    return n.l.constant_tensor(cast(*c, DType::Int32), n.node.name + "/indices");
  }
  const int32_t t = n.in(i);
  const int32_t out = n.l.model().add_like(n.node.name + "/indices", t, fb::TensorType::INT32);
  n.emit(Op::CAST, {t}, {out}, {.in_type = fb::TensorType::INT64, .out_type = fb::TensorType::INT32});
  return out;
}

void gather(NodeLowering& n) {
  n.emit(Op::GATHER, {n.in(0), int32_indices(n, 1)}, {n.out()},
         {.axis = int32_t(normalize_axis(n.attr_int("axis"), n.in_type(0).shape.rank())),
          .batch_dims = int32_t(n.attr_int("batch_dims"))});
}

void gather_nd(NodeLowering& n) { n.emit(Op::GATHER_ND, {n.in(0), int32_indices(n, 1)}, {n.out()}); }

}  // namespace

const std::map<OpId, LowerFn>& lower_table() {
  static const std::map<OpId, LowerFn> table = [] {
    std::map<OpId, LowerFn> t;
    for (const auto& [op, code] : unary_ops()) t[op] = unary;
    for (const auto& [op, code] : binary_ops()) t[op] = binary;
    t[OpId::Where] = where_op;
    t[OpId::Cast] = cast_op;
    for (OpId op : {OpId::ReduceSum, OpId::ReduceMax, OpId::ReduceMin, OpId::ReduceProd}) t[op] = reduce;
    t[OpId::ArgMax] = arg_reduce;
    t[OpId::ArgMin] = arg_reduce;
    t[OpId::MatMul] = matmul;
    t[OpId::FusedMatMul] = matmul;
    t[OpId::Conv2D] = conv;
    t[OpId::FusedConv2D] = conv;
    t[OpId::MaxPool] = pool;
    t[OpId::AvgPool] = pool;
    t[OpId::FusedBatchNorm] = batch_norm;
    t[OpId::LayerNorm] = layer_norm;
    t[OpId::Reshape] = reshape;
    t[OpId::Transpose] = transpose_op;
    t[OpId::Concat] = concat_op;
    t[OpId::Pad] = pad_op;
    t[OpId::Slice] = slice_op;
    t[OpId::StridedSlice] = strided_slice;
    t[OpId::Tile] = tile_op;
    t[OpId::BroadcastTo] = broadcast_to;
    t[OpId::Reverse] = reverse_op;
    t[OpId::Gather] = gather;
    t[OpId::GatherNd] = gather_nd;
    return t;
  }();
  return table;
}

}  // namespace deepflow::quantize::detail
