// SPDX-License-Identifier: Apache-2.0
// The gradient primitives of convolution and pooling as public ops, and
// TensorFlow's window arithmetic shared by the conv ops and their kernels.
//
// conv2d, max_pool2d and avg_pool2d are in ops.h; their vjps are the functions
// here, which are themselves differentiable (except max_pool_grad), so
// second-order gradients of convolutions work:
//
//   Tensor dx = conv2d_backprop_input(w, dy, x.shape(), {1, 1}, "SAME");
//   Tensor dw = conv2d_backprop_filter(x, dy, w.shape(), {1, 1}, "SAME");
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "deepflow/ops/ops.h"

namespace deepflow {

/// The gradient of conv2d with respect to its input (tf.raw_ops.Conv2DBackpropInput),
/// also the forward of conv2d_transpose.
/// filters [kh, kw, c_in / groups, c_out], out_backprop [n, oh, ow, c_out] -> input_sizes
/// [n, h, w, c_in]; strides, padding and dilations are those of the forward conv2d.
Tensor conv2d_backprop_input(const Tensor& filters, const Tensor& out_backprop, const Shape& input_sizes,
                             const Axes& strides = {1, 1}, const std::string& padding = "VALID",
                             const Axes& dilations = {1, 1});
/// The gradient of conv2d with respect to its filters (tf.raw_ops.Conv2DBackpropFilter).
/// input [n, h, w, c_in], out_backprop [n, oh, ow, c_out] -> filter_sizes
/// [kh, kw, c_in / groups, c_out].
Tensor conv2d_backprop_filter(const Tensor& input, const Tensor& out_backprop, const Shape& filter_sizes,
                              const Axes& strides = {1, 1}, const std::string& padding = "VALID",
                              const Axes& dilations = {1, 1});
/// max_pool2d with padding "EXPLICIT" (tf.raw_ops.MaxPool's explicit_paddings, here as
/// {top, bottom, left, right}, fused_conv2d's order): input [n, h, w, c] -> [n, oh, ow, c]
/// with oh = (h + top + bottom - kh) / sh + 1 (ow alike). Padded cells never win, as if they
/// held -inf; each pad must be smaller than its window dim, so every window sees the input.
/// "SAME" and "VALID" take an empty explicit_paddings.
Tensor max_pool2d(const Tensor& input, const Axes& ksize, const Axes& strides, const std::string& padding,
                  const Axes& explicit_paddings);
/// The gradient of max_pool2d (tf.raw_ops.MaxPoolGrad): input [n, h, w, c], output =
/// max_pool2d(input), grad [n, oh, ow, c] -> [n, h, w, c]. Each window's gradient goes to
/// its first maximum in row-major order (TensorFlow's CPU rule). Not differentiable.
/// padding and explicit_paddings are those of the forward max_pool2d.
Tensor max_pool_grad(const Tensor& input, const Tensor& output, const Tensor& grad, const Axes& ksize,
                     const Axes& strides, const std::string& padding = "VALID", const Axes& explicit_paddings = {});
/// The gradient of avg_pool2d (tf.raw_ops.AvgPoolGrad): grad [n, oh, ow, c] -> input_sizes
/// [n, h, w, c]. Linear; its own gradient is avg_pool2d.
Tensor avg_pool_grad(const Tensor& grad, const Shape& input_sizes, const Axes& ksize, const Axes& strides,
                     const std::string& padding = "VALID");

namespace detail {

/// One spatial dim of a window op, TensorFlow's arithmetic. SAME: out = ceil(in / stride),
/// pad_total = max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0), pad_before =
/// pad_total / 2. VALID: out = (in - (k - 1) * dilation - 1 + stride) / stride, no padding.
struct WindowDim {
  int64_t out = 0, pad_before = 0, pad_after = 0;
};
inline WindowDim window_dim(int64_t in, int64_t k, int64_t stride, int64_t dilation, bool same) {
  const int64_t eff = (k - 1) * dilation + 1;
  if (!same) return {std::max<int64_t>(in - eff + stride, 0) / stride, 0, 0};
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + eff - in, 0);
  return {out, total / 2, total - total / 2};
}

/// Everything a conv or pool kernel needs, in NHWC / HWIO terms. For pools, ci = co = c,
/// groups = c and dilations are 1.
struct ConvGeometry {
  int64_t n, h, w, ci;        ///< input
  int64_t kh, kw, co, groups;  ///< window and output channels
  int64_t sh, sw, dh, dw;      ///< strides and dilations
  int64_t oh, ow;              ///< output
  int64_t pad_top, pad_left, pad_bottom, pad_right;
};
/// The geometry of a valid conv2d call (checked by `infer` already).
inline ConvGeometry conv_geometry(const Shape& input, const Shape& filters, const std::vector<int64_t>& strides,
                                  const std::string& padding, const std::vector<int64_t>& dilations) {
  const bool same = padding == "SAME";
  WindowDim r = window_dim(input[1], filters[0], strides[0], dilations[0], same);
  WindowDim c = window_dim(input[2], filters[1], strides[1], dilations[1], same);
  return {input[0], input[1], input[2], input[3], filters[0], filters[1], filters[3],
          input[3] / std::max<int64_t>(filters[2], 1), strides[0], strides[1], dilations[0], dilations[1],
          r.out, c.out, r.pad_before, c.pad_before, r.pad_after, c.pad_after};
}
/// The geometry of a conv2d whose padding may also be "EXPLICIT": explicit_paddings holds
/// {top, bottom, left, right} (fused_conv2d); "SAME" and "VALID" as conv_geometry.
inline ConvGeometry conv_geometry(const Shape& input, const Shape& filters, const std::vector<int64_t>& strides,
                                  const std::string& padding, const std::vector<int64_t>& dilations,
                                  const std::vector<int64_t>& explicit_paddings) {
  ConvGeometry g = conv_geometry(input, filters, strides, padding == "EXPLICIT" ? "VALID" : padding, dilations);
  if (padding != "EXPLICIT" || explicit_paddings.size() != 4) return g;
  g.pad_top = explicit_paddings[0], g.pad_bottom = explicit_paddings[1];
  g.pad_left = explicit_paddings[2], g.pad_right = explicit_paddings[3];
  g.oh = window_dim(g.h + g.pad_top + g.pad_bottom, g.kh, g.sh, g.dh, false).out;
  g.ow = window_dim(g.w + g.pad_left + g.pad_right, g.kw, g.sw, g.dw, false).out;
  return g;
}
/// The geometry of a valid pooling call over `input` [n, h, w, c]; padding "SAME", "VALID"
/// or "EXPLICIT" with explicit_paddings {top, bottom, left, right} (max_pool).
inline ConvGeometry pool_geometry(const Shape& input, const std::vector<int64_t>& ksize,
                                  const std::vector<int64_t>& strides, const std::string& padding,
                                  const std::vector<int64_t>& explicit_paddings = {}) {
  return conv_geometry(input, Shape{ksize[0], ksize[1], 1, input[3]}, strides, padding, {1, 1}, explicit_paddings);
}

}  // namespace detail
}  // namespace deepflow
