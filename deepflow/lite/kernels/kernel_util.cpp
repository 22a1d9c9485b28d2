// SPDX-License-Identifier: Apache-2.0
#include "deepflow/lite/kernels/kernel_util.h"

namespace deepflow::lite {

void apply_activation(fb::ActivationFunctionType act, float* x, int64_t n) {
  switch (act) {
    case fb::ActivationFunctionType::NONE: return;
    case fb::ActivationFunctionType::TANH:
      for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
      return;
    case fb::ActivationFunctionType::SIGN_BIT:
      for (int64_t i = 0; i < n; ++i) x[i] = std::signbit(x[i]) ? 1.f : 0.f;
      return;
    default: {
      const FloatRange r = activation_range(act);
      for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], r.lo), r.hi);
    }
  }
}

void check_activation(const OpContext& ctx, fb::ActivationFunctionType act) {
  DF_LITE_OP_CHECK(ctx, static_cast<int>(act) >= 0 && static_cast<int>(act) <= 5, "has unknown fused activation ",
                   static_cast<int>(act));
}

PaddedDim padded_dim(const OpContext& ctx, fb::Padding padding, int in, int kernel, int stride, int dilation) {
  DF_LITE_OP_CHECK(ctx, stride >= 1 && dilation >= 1 && kernel >= 1, "has stride ", stride, ", dilation ", dilation,
                   " and kernel size ", kernel, ": each must be at least 1");
  const int effective = (kernel - 1) * dilation + 1;
  PaddedDim d;
  if (padding == fb::Padding::SAME) {
    d.out = (in + stride - 1) / stride;
  } else if (padding == fb::Padding::VALID) {
    d.out = in >= effective ? (in - effective) / stride + 1 : 0;
  } else {
    ctx.fail("has unknown padding ", static_cast<int>(padding));
  }
  const int total = std::max((d.out - 1) * stride + effective - in, 0);
  d.pad_before = total / 2;
  return d;
}

void require_float(const OpContext& ctx, const Tensor& input, const Tensor& weights, const char* what) {
  if (input.type != DType::kFloat32)
    ctx.fail(dtype_name(input.type), " ", ctx.op_name(), " is not supported yet (input '", input.name, "')");
  if (weights.type != DType::kFloat32)
    ctx.fail("hybrid (", dtype_name(input.type), " input, ", dtype_name(weights.type), " ", what, ") ",
             ctx.op_name(), " is not supported yet (", what, " '", weights.name, "')");
  check_type(ctx, ctx.output(0), DType::kFloat32, "output");
}

void check_type(const OpContext& ctx, const Tensor& t, DType want, const char* what) {
  DF_LITE_OP_CHECK(ctx, t.type == want, what, " '", t.name, "' is ", dtype_name(t.type), "; expected ",
                   dtype_name(want));
}

void check_rank(const OpContext& ctx, const Tensor& t, int rank, const char* what) {
  DF_LITE_OP_CHECK(ctx, t.rank() == rank, what, " '", t.name, "' has shape ", shape_string(t.shape),
                   "; expected rank ", rank);
}

std::vector<int> int_values(const OpContext& ctx, const Tensor& t, const char* what) {
  const int64_t n = t.num_elements();
  DF_LITE_OP_CHECK(ctx, t.data_ptr != nullptr || n == 0, what, " '", t.name, "' has no data");
  std::vector<int> out(static_cast<size_t>(n));
  if (t.type == DType::kInt32) {
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = t.data<int32_t>()[i];
  } else if (t.type == DType::kInt64) {
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<int>(t.data<int64_t>()[i]);
  } else {
    ctx.fail(what, " '", t.name, "' is ", dtype_name(t.type), "; expected INT32 or INT64");
  }
  return out;
}

}  // namespace deepflow::lite
