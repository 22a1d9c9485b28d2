// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the kernel families: fused activations, TFLite's padding rule, shape
// checks. Internal to deepflow_lite.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "deepflow/lite/kernel.h"

namespace deepflow::lite {

/// The clamp a fused activation means on a float output: NONE is (-inf, inf), RELU
/// [0, inf), RELU6 [0, 6], RELU_N1_TO_1 [-1, 1]. TANH and SIGN_BIT are not clamps.
struct FloatRange {
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
};

inline FloatRange activation_range(fb::ActivationFunctionType act) {
  switch (act) {
    case fb::ActivationFunctionType::RELU: return {0.f, std::numeric_limits<float>::infinity()};
    case fb::ActivationFunctionType::RELU6: return {0.f, 6.f};
    case fb::ActivationFunctionType::RELU_N1_TO_1: return {-1.f, 1.f};
    default: return {};
  }
}

/// Applies a fused activation to n floats in place (clamps, or tanh / sign bit).
void apply_activation(fb::ActivationFunctionType act, float* x, int64_t n);

/// Throws unless the fused activation is one a float kernel applies.
void check_activation(const OpContext& ctx, fb::ActivationFunctionType act);

/// TFLite's padding rule for one spatial dimension (padding.h): the output size and the
/// padding before; the odd pixel of SAME goes after.
struct PaddedDim {
  int out = 0;
  int pad_before = 0;
};
PaddedDim padded_dim(const OpContext& ctx, fb::Padding padding, int in, int kernel, int stride, int dilation);

/// Throws unless input, `what` (the weights) and output 0 are FLOAT32; a float input with
/// other weights is named hybrid. The float kernels of conv, depthwise, FC and batch matmul.
void require_float(const OpContext& ctx, const Tensor& input, const Tensor& weights, const char* what = "filter");

/// Throws unless t has this type.
void check_type(const OpContext& ctx, const Tensor& t, DType want, const char* what);
/// Throws unless t has this rank.
void check_rank(const OpContext& ctx, const Tensor& t, int rank, const char* what);

/// Whether t's elements, repeated, make y's rows: t's shape is y's trailing dimensions, with
/// leading ones (a per-channel [C] or [1, 1, 1, C] operand against [N, H, W, C]).
bool repeats_as_rows(const Tensor& t, const Tensor& y);

/// BATCH_MATMUL's shapes: out[..., m, n] = x[..., m, k] * y[..., k, n] (adj_x / adj_y: that
/// operand is stored transposed), the batch dimensions broadcast NumPy-style (rank 2 to 5).
struct MatMulShape {
  int m = 0, k = 0, n = 0;
  std::vector<int> batch_shape;               ///< the output's batch dimensions
  std::vector<int64_t> x_strides, y_strides;  ///< each operand's batch strides (0 where broadcast)
  int64_t batches = 0, x_batches = 0, y_batches = 0;
  /// batch_shape, m, n.
  std::vector<int> output_shape() const;
  /// The batches of x and y that output batch b multiplies.
  std::pair<int64_t, int64_t> operand_batches(int64_t b) const;
};
/// Checks x and y (ranks, inner dimensions, batch broadcast) and returns their shapes.
MatMulShape matmul_shape(const OpContext& ctx, const Tensor& x, const Tensor& y, bool adj_x, bool adj_y);

/// A constant int32 / int64 tensor's values as ints (shape, axis and size operands).
std::vector<int> int_values(const OpContext& ctx, const Tensor& t, const char* what);

}  // namespace deepflow::lite
