// SPDX-License-Identifier: Apache-2.0
// The fused ops Grappler's remapper and the TF.js converter write: _FusedConv2D,
// _FusedDepthwiseConv2dNative (TF.js: FusedDepthwiseConv2dNative), _FusedMatMul (the base
// op, then `fused_ops` in order on its result, `num_args` extra inputs) and TF.js's Prelu.
// Each becomes the base deepflow op followed by the primitives of its fused ops, which the
// graph passes fuse again (conv + bias + activation) where a kernel pays for it.
//
// TF.js's ops have no TensorFlow OpDef, so attrs TensorFlow would default are defaulted
// here as TF's twins default them (dilations 1, leakyrelu_alpha 0.2, epsilon 1e-4).
#include <string>

#include "deepflow/core/error.h"
#include "deepflow/tf/ops_nn.h"

namespace deepflow::tf {
namespace {

using namespace detail;

const std::vector<int64_t> kUnitDilations = {1, 1, 1, 1};

float attr_float_or(NodeContext& c, const std::string& name, float fallback) {
  return c.has_attr(name) ? c.attr_float(name) : fallback;
}

// PReLU as TF.js computes it: x where x >= 0, alpha * x below (alpha broadcasts, one
// slope per channel or shared).
Tensor prelu(const Tensor& x, const Tensor& alpha) { return where(less(x, scalar_like(x, 0.0)), x * alpha, x); }

// fused_ops applied in order to y; their operands are the node's inputs from first_arg.
Tensor apply_fused(NodeContext& c, Tensor y, size_t first_arg, bool channels_first) {
  const std::vector<std::string> ops = c.attr_strings("fused_ops");
  size_t arg = first_arg;
  auto operand = [&](const std::string& op) {
    DF_CHECK(arg < c.num_inputs(), "[tf::import] ", c.describe(), ": fused op ", op, " needs input ", arg,
             ", the node has ", c.num_inputs());
    return c.input(arg++);
  };
  for (const std::string& op : ops) {
    if (op == "BiasAdd") {
      y = bias_add(c, y, operand(op));
    } else if (op == "Add" || op == "AddV2") {
      // A bias, or a whole tensor (a residual added after the bias).
      Tensor z = operand(op);
      y = z.rank() <= 1 ? bias_add(c, y, z) : y + z;
    } else if (op == "NoOp") {
      // TF.js's placeholder for "no bias" before an activation.
    } else if (op == "Relu") {
      y = relu(y);
    } else if (op == "Relu6") {
      y = relu6(y);
    } else if (op == "Elu") {
      y = elu(y);
    } else if (op == "LeakyRelu") {
      y = leaky_relu(y, attr_float_or(c, "leakyrelu_alpha", 0.2f));
    } else if (op == "Sigmoid") {
      y = sigmoid(y);
    } else if (op == "Tanh") {
      y = tanh(y);
    } else if (op == "Prelu") {
      Tensor alpha = operand(op);
      // NCHW: the per-channel slope goes along dim 1.
      if (channels_first && y.rank() == 4 && alpha.rank() == 1) alpha = reshape(alpha, Shape{alpha.dim(0), 1, 1});
      y = prelu(y, alpha);
    } else if (op == "FusedBatchNorm") {
      Tensor x = channels_first ? to_nhwc(y) : y;
      Tensor scale = operand(op), offset = operand(op), mean = operand(op), var = operand(op);
      x = batch_normalization(x, mean, var, offset, scale, attr_float_or(c, "epsilon", 1e-4f));
      y = channels_first ? to_nchw(x) : x;
    } else {
      fail("[tf::import] ", c.describe(), ": fused op '", op, "' is not supported");
    }
  }
  if (c.has_attr("num_args")) {
    DF_CHECK(int64_t(arg - first_arg) == c.attr_int("num_args"), "[tf::import] ", c.describe(), ": fused_ops use ",
             arg - first_arg, " operands, num_args says ", c.attr_int("num_args"));
  }
  return y;
}

Values import_fused_matmul(NodeContext& c) {
  Tensor y = matmul(c.input(0), c.input(1), c.has_attr("transpose_a") && c.attr_bool("transpose_a"),
                    c.has_attr("transpose_b") && c.attr_bool("transpose_b"));
  return {apply_fused(c, y, 2, false)};
}

Values import_fused_conv2d(NodeContext& c) {
  const bool cf = nchw(c);
  if (c.has_attr("filter_format")) {
    DF_CHECK(c.attr_string("filter_format") == "HWIO", "[tf::import] ", c.describe(), ": filter_format ",
             c.attr_string("filter_format"), " is not supported (HWIO)");
  }
  Tensor x = cf ? to_nhwc(c.input(0)) : c.input(0);
  std::string padding = padded(c, x, cf);
  Tensor y = conv2d(x, c.input(1), spatial(c, "strides", cf), padding, spatial(c, "dilations", cf, kUnitDilations));
  return {apply_fused(c, cf ? to_nchw(y) : y, 2, cf)};
}

Values import_fused_depthwise(NodeContext& c) {
  const bool cf = nchw(c);
  Tensor x = cf ? to_nhwc(c.input(0)) : c.input(0);
  std::string padding = padded(c, x, cf);
  Tensor y = depthwise_conv2d(x, c.input(1), spatial(c, "strides", cf), padding,
                              spatial(c, "dilations", cf, kUnitDilations));
  return {apply_fused(c, cf ? to_nchw(y) : y, 2, cf)};
}

// TF.js's Prelu node (x, alpha): what fuse_prelu makes of Relu(x) - alpha * Relu(-x).
Values import_prelu(NodeContext& c) { return {prelu(c.input(0), c.input(1))}; }

}  // namespace

DF_TF_OP("_FusedMatMul", import_fused_matmul)
DF_TF_OP("_FusedConv2D", import_fused_conv2d)
DF_TF_OP("_FusedDepthwiseConv2dNative", import_fused_depthwise)
DF_TF_OP("FusedDepthwiseConv2dNative", import_fused_depthwise)
DF_TF_OP("Prelu", import_prelu)

}  // namespace deepflow::tf
