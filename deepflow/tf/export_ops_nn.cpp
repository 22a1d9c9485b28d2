// SPDX-License-Identifier: Apache-2.0
// The TensorFlow export table, part 3: matrix products, convolutions (grouped ones with one
// input channel per group as DepthwiseConv2dNative), pooling, normalization, and the fused
// kernels deepflow's passes make (written as the TF ops they fuse). Everything is NHWC.
#include <numbers>

#include "deepflow/core/error.h"
#include "deepflow/tf/dtype.h"
#include "deepflow/tf/export_internal.h"

namespace deepflow::tf::detail {

namespace pb = ::tensorflow;

std::string emit_activation(NodeExport& e, const std::string& act, const std::string& z, DType t) {
  if (act.empty()) return z;
  if (act == "relu") return e.add("Relu", {z}, t)->name() + ":activations:0";
  if (act == "relu6") return e.add("Relu6", {z}, t)->name() + ":activations:0";
  if (act == "elu") return e.add("Elu", {z}, t)->name() + ":activations:0";
  if (act == "sigmoid") return e.add("Sigmoid", {z}, t)->name() + ":y:0";
  if (act == "tanh") return e.add("Tanh", {z}, t)->name() + ":y:0";
  if (act == "leaky_relu") {
    pb::NodeDef* n = e.add("LeakyRelu", {z}, t);
    set_float(n, "alpha", e.attr_float("alpha"));
    return n->name() + ":activations:0";
  }
  if (act == "clip") {
    const std::string lo = e.w.scalar(e.attr_float("clip_min"), t, e.node.name + "/clip_min");
    const std::string hi = e.w.scalar(e.attr_float("clip_max"), t, e.node.name + "/clip_max");
    return e.add("ClipByValue", {z, lo, hi}, t)->name() + ":output:0";
  }
  if (act == "gelu") {  // z * 0.5 * (1 + erf(z / sqrt 2))
    const std::string s = e.w.scalar(1.0 / std::numbers::sqrt2, t, e.node.name + "/gelu_scale");
    const std::string erf = e.add("Erf", {e.add("Mul", {z, s}, t)->name() + ":z:0"}, t)->name() + ":y:0";
    const std::string one = e.w.scalar(1.0, t, e.node.name + "/one");
    const std::string half = e.w.scalar(0.5, t, e.node.name + "/half");
    const std::string p = e.add("AddV2", {erf, one}, t)->name() + ":z:0";
    return e.add("Mul", {z, e.add("Mul", {p, half}, t)->name() + ":z:0"}, t)->name() + ":z:0";
  }
  fail(e.describe(), ": activation \"", act, "\" has no TensorFlow op");
}

namespace {

// --- matrix products ---

std::string emit_matmul(NodeExport& e) {
  const DType t = e.out_type(0).dtype;
  const bool ta = e.attr_bool("transpose_a"), tb = e.attr_bool("transpose_b");
  if (e.in_type(0).shape.rank() == 2 && e.in_type(1).shape.rank() == 2) {
    pb::NodeDef* n = e.add("MatMul", {e.in[0], e.in[1]}, t);
    set_bool(n, "transpose_a", ta);
    set_bool(n, "transpose_b", tb);
    return n->name() + ":product:0";
  }
  pb::NodeDef* n = e.add("BatchMatMulV2", {e.in[0], e.in[1]}, t);
  set_bool(n, "adj_x", ta);
  set_bool(n, "adj_y", tb);
  return n->name() + ":output:0";
}

void matmul(NodeExport& e) { e.out = {emit_matmul(e)}; }

std::string bias_add(NodeExport& e, const std::string& x, const std::string& bias, DType t) {
  pb::NodeDef* n = e.add("BiasAdd", {x, bias}, t);
  set_string(n, "data_format", "NHWC");
  return n->name() + ":output:0";
}

void fused_matmul(NodeExport& e) {
  const DType t = e.out_type(0).dtype;
  std::string z = emit_matmul(e);
  if (e.attr_bool("has_bias")) z = bias_add(e, z, e.in.at(2), t);
  e.out = {emit_activation(e, e.attr_string("activation"), z, t)};
}

// --- convolution and pooling ---

std::vector<int64_t> nhwc4(const std::vector<int64_t>& hw) { return {1, hw.at(0), hw.at(1), 1}; }

// deepflow's {top, bottom, left, right} as TF's 8 NHWC ints {0, 0, top, bottom, left, right, 0, 0}.
void set_padding(NodeExport& e, pb::NodeDef* n) {
  const std::string padding = e.attr_string("padding");
  set_string(n, "padding", padding);
  if (padding != "EXPLICIT") return;
  const AttrValue* a = e.node.attrs.find("explicit_paddings");
  DF_CHECK(a != nullptr, e.describe(), ": padding EXPLICIT without explicit_paddings");
  const auto& p = std::get<std::vector<int64_t>>(*a);
  DF_CHECK(p.size() == 4, e.describe(), ": explicit_paddings must be {top, bottom, left, right}, got ",
           attr_to_string(*a));
  set_ints(n, "explicit_paddings", {0, 0, p[0], p[1], p[2], p[3], 0, 0});
}

// Conv2D, or DepthwiseConv2dNative when every group has one input channel (the filter
// [kh, kw, 1, c * m] reshaped to TF's [kh, kw, c, m]).
std::string emit_conv(NodeExport& e) {
  const Shape& x = e.in_type(0).shape;
  const Shape& w = e.in_type(1).shape;
  const DType t = e.out_type(0).dtype;
  DF_CHECK(x.rank() == 4 && w.rank() == 4 && x[3] > 0 && w[2] > 0, e.describe(),
           ": needs the input channels and the filter shape known, got input ", x, ", filters ", w);
  const int64_t groups = x[3] / w[2];
  const bool depthwise = groups > 1 && w[2] == 1;
  std::string filter = e.in[1];
  if (depthwise) {
    DF_CHECK(w[0] >= 0 && w[1] >= 0 && w[3] % groups == 0, e.describe(), ": filters ", w, " for ", groups, " groups");
    pb::NodeDef* r = e.add("Reshape", {filter, e.w.ints({w[0], w[1], groups, w[3] / groups}, e.node.name + "/shape")},
                           e.in_type(1).dtype);
    set_type(r, "Tshape", DType::Int32);
    filter = r->name() + ":output:0";
  }
  pb::NodeDef* n = e.add(depthwise ? "DepthwiseConv2dNative" : "Conv2D", {e.in[0], filter}, t);
  set_ints(n, "strides", nhwc4(e.attr_ints("strides")));
  set_ints(n, "dilations", nhwc4(e.attr_ints("dilations")));
  set_string(n, "data_format", "NHWC");
  if (!depthwise) set_bool(n, "use_cudnn_on_gpu", true);
  set_padding(e, n);
  return n->name() + ":output:0";
}

void conv2d(NodeExport& e) { e.out = {emit_conv(e)}; }

void fused_conv2d(NodeExport& e) {
  const DType t = e.out_type(0).dtype;
  std::string y = emit_conv(e);
  if (e.attr_bool("has_bias")) y = bias_add(e, y, e.in.at(2), t);
  if (e.attr_bool("has_summand")) y = e.add("AddV2", {y, e.in.back()}, t)->name() + ":z:0";
  e.out = {emit_activation(e, e.attr_string("activation"), y, t)};
}

void pool(NodeExport& e) {
  const bool max = e.node.op == OpId::MaxPool;
  pb::NodeDef* n = e.add(max ? "MaxPool" : "AvgPool", {e.in[0]}, e.in_type(0).dtype);
  set_ints(n, "ksize", nhwc4(e.attr_ints("ksize")));
  set_ints(n, "strides", nhwc4(e.attr_ints("strides")));
  set_string(n, "data_format", "NHWC");
  const std::string padding = e.attr_string("padding");
  DF_CHECK(max || padding != "EXPLICIT", e.describe(), ": AvgPool has no EXPLICIT padding in TensorFlow");
  set_padding(e, n);
  e.out = {n->name() + ":output:0"};
}

// --- normalization ---

std::string mean_last(NodeExport& e, const std::string& x, DType t) {
  pb::NodeDef* n = e.add("Mean", {x, e.w.ints({-1}, e.node.name + "/axes")}, t);
  set_bool(n, "keep_dims", true);
  set_type(n, "Tidx", DType::Int32);
  return n->name() + ":output:0";
}

// FusedBatchNormV3 for 4-D inputs (TF's only rank); other ranks in inference mode as
// (x - mean) * rsqrt(variance + eps) * scale + offset.
void fused_batch_norm(NodeExport& e) {
  const DType t = e.in_type(0).dtype, u = e.in_type(1).dtype;
  const bool training = e.attr_bool("is_training");
  if (e.in_type(0).shape.rank() == 4) {
    pb::NodeDef* n = e.add("FusedBatchNormV3", e.in, t);
    set_type(n, "U", u);
    set_float(n, "epsilon", e.attr_float("epsilon"));
    set_float(n, "exponential_avg_factor", 1.0);
    set_string(n, "data_format", "NHWC");
    set_bool(n, "is_training", training);
    const std::string b = n->name();
    e.out = {b + ":y:0", b + ":batch_mean:0", b + ":batch_variance:0", b + ":reserve_space_1:0"};
    return;
  }
  DF_CHECK(!training, e.describe(), ": training-mode batch norm of a rank-", e.in_type(0).shape.rank(),
           " input has no TensorFlow op (FusedBatchNormV3 takes 4-D inputs)");
  const std::string eps = e.w.scalar(e.attr_float("epsilon"), u, e.node.name + "/epsilon");
  std::string inv = e.add("Rsqrt", {e.add("AddV2", {e.in[4], eps}, u)->name() + ":z:0"}, u)->name() + ":y:0";
  std::string a = e.add("Mul", {e.in[1], inv}, u)->name() + ":z:0";
  std::string b = e.add("Sub", {e.in[2], e.add("Mul", {e.in[3], a}, u)->name() + ":z:0"}, u)->name() + ":z:0";
  if (u != t) {
    for (std::string* s : {&a, &b}) {
      pb::NodeDef* c = e.add("Cast", {*s}, std::nullopt);
      set_type(c, "SrcT", u);
      set_type(c, "DstT", t);
      *s = c->name() + ":y:0";
    }
  }
  const std::string y = e.add("AddV2", {e.add("Mul", {e.in[0], a}, t)->name() + ":z:0", b}, t)->name() + ":z:0";
  e.out = {y, e.in[3], e.in[4], e.in[4]};
}

// Over the last axis: y, the mean and 1 / std (without the last axis).
void layer_norm(NodeExport& e) {
  const DType t = e.in_type(0).dtype;
  const std::string mean = mean_last(e, e.in[0], t);
  const std::string xc = e.add("Sub", {e.in[0], mean}, t)->name() + ":z:0";
  const std::string var = mean_last(e, e.add("Square", {xc}, t)->name() + ":y:0", t);
  const std::string eps = e.w.scalar(e.attr_float("epsilon"), t, e.node.name + "/epsilon");
  const std::string inv = e.add("Rsqrt", {e.add("AddV2", {var, eps}, t)->name() + ":z:0"}, t)->name() + ":y:0";
  const std::string y0 = e.add("Mul", {e.add("Mul", {xc, inv}, t)->name() + ":z:0", e.in[1]}, t)->name() + ":z:0";
  const std::string y = e.add("AddV2", {y0, e.in[2]}, t)->name() + ":z:0";
  auto squeeze = [&](const std::string& v) {
    pb::NodeDef* n = e.add("Squeeze", {v}, t);
    set_ints(n, "squeeze_dims", {-1});
    return n->name() + ":output:0";
  };
  e.out = {y, squeeze(mean), squeeze(inv)};
}

}  // namespace

void add_nn_ops(std::map<OpId, ExportFn>& t) {
  t[OpId::MatMul] = matmul;
  t[OpId::FusedMatMul] = fused_matmul;
  t[OpId::Conv2D] = conv2d;
  t[OpId::FusedConv2D] = fused_conv2d;
  t[OpId::MaxPool] = pool;
  t[OpId::AvgPool] = pool;
  t[OpId::FusedBatchNorm] = fused_batch_norm;
  t[OpId::LayerNorm] = layer_norm;
}

const std::map<OpId, ExportFn>& export_table() {
  static const std::map<OpId, ExportFn> table = [] {
    std::map<OpId, ExportFn> t;
    add_math_ops(t);
    add_array_ops(t);
    add_nn_ops(t);
    return t;
  }();
  return table;
}

}  // namespace deepflow::tf::detail
