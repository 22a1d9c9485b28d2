// SPDX-License-Identifier: Apache-2.0
// TensorFlow's neural-network ops: MatMul and its batched forms, BiasAdd, convolutions,
// pooling and FusedBatchNorm (the fused forms Grappler and TF.js write: ops_fused.cpp).
// deepflow's convolutions are channels-last (NHWC); NCHW nodes are transposed around them.
#include <string>

#include "deepflow/core/error.h"
#include "deepflow/tf/ops_nn.h"

namespace deepflow::tf {
namespace detail {

bool nchw(NodeContext& c) {
  if (!c.has_attr("data_format")) return false;
  const std::string f = c.attr_string("data_format");
  DF_CHECK(f == "NHWC" || f == "NCHW", "[tf::import] ", c.describe(), ": data_format ", f, " is not supported");
  return f == "NCHW";
}

Axes spatial(NodeContext& c, const std::string& name, bool channels_first, const std::vector<int64_t>& fallback) {
  std::vector<int64_t> v = c.has_attr(name) || fallback.empty() ? c.attr_ints(name) : fallback;
  DF_CHECK(v.size() == 4, "[tf::import] ", c.describe(), ": ", name, " must have 4 elements, got ", v.size());
  return channels_first ? Axes{v[2], v[3]} : Axes{v[1], v[2]};
}

std::string padded(NodeContext& c, Tensor& x, bool channels_first) {
  std::string padding = c.attr_string("padding");
  if (padding != "EXPLICIT") return padding;
  std::vector<int64_t> p = c.attr_ints("explicit_paddings");
  DF_CHECK(p.size() == 8, "[tf::import] ", c.describe(), ": explicit_paddings must have 8 elements, got ", p.size());
  // x is NHWC here; explicit_paddings follow data_format.
  const int h = channels_first ? 2 : 1, w = channels_first ? 3 : 2;
  x = pad(x, {{0, 0}, {p[size_t(2 * h)], p[size_t(2 * h + 1)]}, {p[size_t(2 * w)], p[size_t(2 * w + 1)]}, {0, 0}});
  return "VALID";
}

Tensor bias_add(NodeContext& c, const Tensor& x, const Tensor& bias) {
  if (!nchw(c) || x.rank() < 3) return x + bias;
  std::vector<int64_t> dims(size_t(x.rank() - 1), 1);
  dims[0] = bias.dim(0);
  return x + reshape(bias, Shape(dims));
}

}  // namespace detail

namespace {

using namespace detail;

Values import_matmul(NodeContext& c) {
  return {matmul(c.input(0), c.input(1), c.attr_bool("transpose_a"), c.attr_bool("transpose_b"))};
}
Values import_batch_matmul(NodeContext& c) {
  return {matmul(c.input(0), c.input(1), c.attr_bool("adj_x"), c.attr_bool("adj_y"))};
}
Values import_batch_matmul_v3(NodeContext& c) {
  Tensor out = matmul(c.input(0), c.input(1), c.attr_bool("adj_x"), c.attr_bool("adj_y"));
  DType want = c.attr_type("Tout");
  return {out.dtype() == want ? out : cast(out, want)};
}

Values import_bias_add(NodeContext& c) { return {bias_add(c, c.input(0), c.input(1))}; }

Values import_conv2d(NodeContext& c) {
  const bool cf = nchw(c);
  Tensor x = cf ? to_nhwc(c.input(0)) : c.input(0);
  std::string padding = padded(c, x, cf);
  Tensor y = conv2d(x, c.input(1), spatial(c, "strides", cf), padding, spatial(c, "dilations", cf));
  return {cf ? to_nchw(y) : y};
}

Values import_depthwise(NodeContext& c) {
  const bool cf = nchw(c);
  Tensor x = cf ? to_nhwc(c.input(0)) : c.input(0);
  std::string padding = padded(c, x, cf);
  Tensor y = depthwise_conv2d(x, c.input(1), spatial(c, "strides", cf), padding, spatial(c, "dilations", cf));
  return {cf ? to_nchw(y) : y};
}

Values import_conv2d_backprop_input(NodeContext& c) {
  const bool cf = nchw(c);
  DF_CHECK(!cf, "[tf::import] ", c.describe(), ": NCHW is not supported");
  std::vector<int64_t> sizes = c.constant_ints(0);
  DF_CHECK(c.attr_string("padding") != "EXPLICIT", "[tf::import] ", c.describe(), ": EXPLICIT padding is not supported");
  return {conv2d_transpose(c.input(2), c.input(1), Shape(sizes), spatial(c, "strides", false),
                           c.attr_string("padding"), spatial(c, "dilations", false))};
}

template <bool kMax>
Values import_pool(NodeContext& c) {
  const bool cf = nchw(c);
  Tensor x = cf ? to_nhwc(c.input(0)) : c.input(0);
  const std::string padding = c.attr_string("padding");
  DF_CHECK(padding == "SAME" || padding == "VALID", "[tf::import] ", c.describe(), ": padding ", padding,
           " is not supported");
  Axes k = spatial(c, "ksize", cf), s = spatial(c, "strides", cf);
  Tensor y = kMax ? max_pool2d(x, k, s, padding) : avg_pool2d(x, k, s, padding);
  return {cf ? to_nchw(y) : y};
}

// FusedBatchNorm (V1-V3): y, batch_mean, batch_variance, then reserve spaces that only
// TF's gradient reads (returned as the batch statistics).
Values import_fused_batch_norm(NodeContext& c) {
  const bool cf = nchw(c);
  Tensor x = cf ? to_nhwc(c.input(0)) : c.input(0);
  const bool training = c.attr_bool("is_training");
  FusedBatchNormResult r =
      fused_batch_norm(x, c.input(1), c.input(2), c.input(3), c.input(4), c.attr_float("epsilon"), training);
  Tensor mean = training ? r.batch_mean : c.input(3), var = training ? r.batch_variance : c.input(4);
  Values out = {cf ? to_nchw(r.y) : r.y, mean, var, mean, var};
  while (out.size() < c.num_outputs()) out.push_back(mean);
  return out;
}

}  // namespace

DF_TF_OP("MatMul", import_matmul)
DF_TF_OP("BatchMatMul", import_batch_matmul)
DF_TF_OP("BatchMatMulV2", import_batch_matmul)
DF_TF_OP("BatchMatMulV3", import_batch_matmul_v3)
DF_TF_OP("BiasAdd", import_bias_add)
DF_TF_OP("BiasAddV1", import_bias_add)
DF_TF_OP("Conv2D", import_conv2d)
DF_TF_OP("DepthwiseConv2dNative", import_depthwise)
DF_TF_OP("Conv2DBackpropInput", import_conv2d_backprop_input)
DF_TF_OP("MaxPool", import_pool<true>)
DF_TF_OP("AvgPool", import_pool<false>)
DF_TF_OP("FusedBatchNorm", import_fused_batch_norm)
DF_TF_OP("FusedBatchNormV2", import_fused_batch_norm)
DF_TF_OP("FusedBatchNormV3", import_fused_batch_norm)

}  // namespace deepflow::tf
