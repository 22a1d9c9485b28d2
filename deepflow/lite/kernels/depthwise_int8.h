// SPDX-License-Identifier: Apache-2.0
// Building blocks of the int8 convolutions (conv_int8.cpp): the geometry of an NHWC
// convolution, the im2col that feeds CONV_2D's int8 GEMM, and the depthwise kernel.
// Internal to deepflow_lite.
#pragma once

#include <cstdint>
#include <vector>

#include "deepflow/lite/kernels/quant_math.h"
#include "deepflow/lite/thread_pool.h"

namespace deepflow::lite {

/// An NHWC convolution's sizes: input n x ih x iw x c, output n x oh x ow, a kh x kw window
/// with strides, dilations and the padding before each spatial dimension.
struct ConvGeometry {
  int n, ih, iw, c, oh, ow, kh, kw, sh, sw, dh, dw, pad_top, pad_left;
};

/// The patches of an int8 image as rows `row_stride` bytes apart: row (b, oy, ox) holds
/// kh*kw*c bytes, tap by tap (OHWI's order), a tap outside the image filled with `pad` (the
/// input's zero point, so it adds nothing to a sum of (x - zp) * w), then up to row_stride
/// bytes the GEMM multiplies by zero weights (zeros, or the zero point).
void im2col_int8(ThreadPool& pool, const ConvGeometry& g, const int8_t* in, int8_t pad, int8_t* dst, size_t row_stride);

/// What the vector depthwise rows read (DepthwiseInt8's tables).
struct DepthwiseTables {
  int channels, padded;
  const int16_t* split_weights;  // taps x blocks of 32 channels x (even lanes, odd lanes)
  const int32_t* split;          // per block of 32: bias, multiplier, shifts, weight sums, even and odd
  const float* split_real;       // per block of 32: the multipliers as floats, even then odd (fast)
  int32_t zp_out, lo, hi;
  bool fast;                     // requantize in float (Interpreter::set_fast_int8)
};

/// DEPTHWISE_CONV_2D with a channel multiplier of 1 and a constant filter: per output pixel
/// and channel, sum over the window's taps inside the image of (x + in_offset) * w, plus the
/// bias, requantized per channel (rounding twice, as LiteRT's reference kernel). Vectors of 16
/// channels on AVX-512 VNNI CPUs (int8_vnni()), a portable loop elsewhere.
class DepthwiseInt8 {
 public:
  /// filter: taps x channels (TFLite's 1HWC). bias: channels values or nullptr. multipliers:
  /// one per channel, or one for all.
  /// fast: requantize in float, as LiteRT's default kernels (Interpreter::set_fast_int8).
  void prepare(const int8_t* filter, int channels, int taps, const int32_t* bias,
               const std::vector<QuantizedMultiplier>& multipliers, int32_t zp_out, int32_t lo, int32_t hi,
               bool fast = false);
  /// out: n x oh x ow x channels. Threads split the output rows.
  void run(ThreadPool& pool, const ConvGeometry& g, const int8_t* in, int32_t in_offset, int8_t* out) const;

 private:
  void rows_portable(const ConvGeometry& g, const int8_t* in, int32_t in_offset, int8_t* out, int64_t lo,
                     int64_t hi) const;
  void rows_vnni(const ConvGeometry& g, const int8_t* in, int32_t in_offset, int8_t* out, int64_t lo,
                 int64_t hi) const;

  int channels_ = 0, taps_ = 0, padded_ = 0;  // padded_: channels rounded up to 32
  std::vector<int32_t> weights_;              // taps x padded_, widened (the portable path)
  std::vector<int16_t> split_weights_;        // DepthwiseTables::split_weights
  std::vector<int32_t> split_tables_;         // DepthwiseTables::split
  std::vector<int32_t> weight_sums_;          // padded_: each channel's sum over the taps
  std::vector<float> real_, split_real_;      // per channel (portable path) and DepthwiseTables::split_real
  bool fast_ = false;
  std::vector<int32_t> bias_, mult_, lshift_, rshift_;  // padded_ each
  std::vector<QuantizedMultiplier> multipliers_;        // channels_ (the portable path's)
  bool any_left_ = false;
  int32_t zp_out_ = 0, lo_ = -128, hi_ = 127;
};

}  // namespace deepflow::lite
