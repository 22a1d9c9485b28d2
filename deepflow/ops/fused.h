// SPDX-License-Identifier: Apache-2.0
// The fused primitives: one op for a chain of others. The graph passes
// (deepflow/graph/passes.h) make them; they can also be called directly.
#pragma once

#include <string>
#include <vector>

#include "deepflow/core/tensor.h"

namespace deepflow {

/// act(matmul(a, b, transpose_a, transpose_b) + bias); bias [n] may be undefined;
/// activation "" (none), "relu", "tanh", "sigmoid" or "gelu" (the exact erf form).
Tensor fused_matmul(const Tensor& a, const Tensor& b, const Tensor& bias = Tensor(), bool transpose_a = false,
                    bool transpose_b = false, const std::string& activation = "");
/// act(conv2d(input, filters) + bias + summand) in one oneDNN primitive (bias add, summand
/// and activation are post-ops). input [n, h, w, c_in], filters [kh, kw, c_in / groups,
/// c_out] (grouped and depthwise when c_in / groups < c_in), bias [c_out] or undefined,
/// summand [n, oh, ow, c_out] (the output's shape, not broadcast) or undefined
/// -> [n, oh, ow, c_out].
/// padding "SAME", "VALID" or "EXPLICIT" with explicit_paddings {top, bottom, left, right};
/// activation "" (none), "relu", "relu6", "clip" (to [clip_min, clip_max]), "elu",
/// "sigmoid", "tanh" or "leaky_relu" (slope alpha).
struct FusedConvOptions {
  std::vector<int64_t> strides{1, 1};
  std::string padding = "VALID";
  std::vector<int64_t> explicit_paddings;
  std::vector<int64_t> dilations{1, 1};
  std::string activation;
  double alpha = 0.2, clip_min = 0, clip_max = 6;
};
Tensor fused_conv2d(const Tensor& input, const Tensor& filters, const Tensor& bias = Tensor(),
                    const FusedConvOptions& options = {}, const Tensor& summand = Tensor());
/// One layer of fused_conv_chain: a fused_conv2d of value `src` with these filters, bias
/// (or undefined) and options, plus value `summand` when it is >= 0. Value 0 is the chain's
/// input (as NHWC), value k >= 1 the result of layer k - 1; a layer reads only values before it.
struct ConvChainLayer {
  int src = 0;
  int summand = -1;
  Tensor filters, bias;
  FusedConvOptions options;
};
/// A chain of fused_conv2d layers run as one op, so that the CPU kernel keeps the values
/// between layers in oneDNN's blocked layout (and skips the per-op dispatch). input [n, h, w,
/// c] (data_format "NHWC") or [n, c, h, w] ("NCHW": read in place of a transpose to NHWC)
/// -> the last layer's result [n, oh, ow, c_out] (output_format "NHWC") or [n, c_out, oh,
/// ow] ("NCHW"). Each layer's shapes follow fused_conv2d's contract. The filters must not
/// change between calls (the kernel caches their reordered copies, as for constant_filter).
/// The fuse_conv_chain pass makes it.
///
/// int8 (the serving optimizer's, deepflow/quantize/serving_optimizer.h): int8_ranges holds
/// {lo, hi} per value (the input, then each layer's result, 2 * (layers + 1) floats), their
/// calibrated ranges. Each value is then stored quantized (conv_chain::int8_value: uint8 for
/// lo >= 0, else int8, zero point 0), the filters per output channel (symmetric, [-127,
/// 127]), and a layer computes in int32 and requantizes once; the result is the last value
/// dequantized. Values outside their range saturate. The gradient is the float chain's
/// (straight through). Empty (the default): float32 throughout.
Tensor fused_conv_chain(const Tensor& input, const std::vector<ConvChainLayer>& layers,
                        const std::string& data_format = "NHWC", const std::string& output_format = "NHWC",
                        const std::vector<double>& int8_ranges = {});
/// Evaluates a postfix program (deepflow/ops/fused_program.h) elementwise over inputs.
Tensor fused_elementwise(const std::vector<Tensor>& inputs, const std::string& program);

}  // namespace deepflow
