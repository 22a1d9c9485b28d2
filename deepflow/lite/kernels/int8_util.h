// SPDX-License-Identifier: Apache-2.0
// What the int8 kernel families share (int8_ops.cpp, conv_int8.cpp): quantization parameters
// read from tensors, the int8 clamp of a fused activation, per-channel multipliers, and the
// requantization of one int32 sum. Internal to deepflow_lite.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "deepflow/lite/kernels/kernel_util.h"
#include "deepflow/lite/kernels/quant_math.h"

namespace deepflow::lite {

inline constexpr int kQMin = -128;
inline constexpr int kQMax = 127;

inline int32_t zero_point(const Tensor& t) { return t.quant.zero_point.empty() ? 0 : static_cast<int32_t>(t.quant.zero_point[0]); }

inline void require_int8(const OpContext& ctx, const Tensor& t, const char* what) {
  DF_LITE_OP_CHECK(ctx, t.type == DType::kInt8 && t.quantized(), what, " '", t.name, "' is ", dtype_name(t.type),
                   t.quantized() ? "" : " without quantization parameters", "; expected quantized INT8");
}

// The int8 range a fused activation clamps to: Q(f) = zp + round(f / scale), in float.
struct IntRange {
  int32_t lo = kQMin, hi = kQMax;
};
inline IntRange activation_range_q(fb::ActivationFunctionType act, const Tensor& out) {
  const float s = out.quant.scale[0];
  const int32_t zp = zero_point(out);
  auto q = [&](float f) { return zp + static_cast<int32_t>(std::round(f / s)); };
  IntRange r;
  switch (act) {
    case fb::ActivationFunctionType::RELU: r.lo = std::max(kQMin, q(0.f)); break;
    case fb::ActivationFunctionType::RELU6:
      r.lo = std::max(kQMin, q(0.f));
      r.hi = std::min(kQMax, q(6.f));
      break;
    case fb::ActivationFunctionType::RELU_N1_TO_1:
      r.lo = std::max(kQMin, q(-1.f));
      r.hi = std::min(kQMax, q(1.f));
      break;
    default: break;  // NONE; TANH and SIGN_BIT are ignored on quantized outputs, as in LiteRT
  }
  return r;
}

// Per output channel multipliers s_in * s_w[c] / s_out (in double, from the file's floats).
inline std::vector<QuantizedMultiplier> channel_multipliers(const OpContext& ctx, const Tensor& in, const Tensor& w,
                                                     const Tensor& out, int channels) {
  const size_t n = w.quant.scale.size();
  DF_LITE_OP_CHECK(ctx, n == 1 || static_cast<int>(n) == channels, "filter '", w.name, "' has ", n, " scales for ",
                   channels, " output channels");
  std::vector<QuantizedMultiplier> m(static_cast<size_t>(channels));
  for (int c = 0; c < channels; ++c) {
    const double real = static_cast<double>(in.quant.scale[0]) * static_cast<double>(w.quant.scale[n == 1 ? 0 : static_cast<size_t>(c)]) /
                        static_cast<double>(out.quant.scale[0]);
    m[static_cast<size_t>(c)] = quantize_multiplier(real);
  }
  return m;
}

inline const int32_t* int32_bias(const OpContext& ctx, int index, int channels) {
  if (!ctx.has_input(index)) return nullptr;
  const Tensor& b = ctx.input(index);
  check_type(ctx, b, DType::kInt32, "bias");
  DF_LITE_OP_CHECK(ctx, b.num_elements() == channels, "bias '", b.name, "' has ", b.num_elements(), " values for ",
                   channels, " channels");
  return b.data<int32_t>();
}

inline int8_t requantize(int32_t acc, QuantizedMultiplier m, int32_t zp_out, IntRange r) {
  const int32_t v = multiply_by_quantized_multiplier(acc, m) + zp_out;
  return static_cast<int8_t>(std::min(std::max(v, r.lo), r.hi));
}

// FULLY_CONNECTED's requantization rounds once (quant_math.h: ruy's GEMM in LiteRT).
inline int8_t requantize_once(int32_t acc, QuantizedMultiplier m, int32_t zp_out, IntRange r) {
  const int32_t v = multiply_by_quantized_multiplier_single_rounding(acc, m) + zp_out;
  return static_cast<int8_t>(std::min(std::max(v, r.lo), r.hi));
}

/// The int8 CONV_2D (depthwise: DEPTHWISE_CONV_2D) and FULLY_CONNECTED kernels (conv_int8.cpp).
std::unique_ptr<Kernel> make_conv_int8(const OpContext& ctx, bool depthwise);
std::unique_ptr<Kernel> make_fully_connected_int8(const OpContext& ctx);
/// The int8 BATCH_MATMUL kernel (batch_matmul_int8.cpp).
std::unique_ptr<Kernel> make_batch_matmul_int8(const OpContext& ctx);

}  // namespace deepflow::lite
