// SPDX-License-Identifier: Apache-2.0
// ONNX quantization ops: QuantizeLinear, DequantizeLinear (per tensor and per axis),
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.
//
// Quantized values are computed in float arithmetic and rounded half to even (deepflow's
// round, as ONNX requires) before saturating to the 8-bit range; integer accumulations
// run as int32 matmuls or as float64 convolutions (exact for 8-bit operands), then cast.
#include <string>
#include <vector>

#include "deepflow/core/error.h"
#include "deepflow/onnx/op_importer.h"
#include "deepflow/ops/op.h"

namespace deepflow::onnx {

Tensor conv_nchw(NodeContext& c, Tensor x, Tensor w, const Tensor& bias);  // ops_nn.cpp

namespace {

constexpr const char* kPrefix = "[onnx::import] ";

double qmin(DType t) { return t == DType::Int8 ? -128.0 : 0.0; }
double qmax(DType t) { return t == DType::Int8 ? 127.0 : 255.0; }

// A per-axis parameter (1-D, one value per slice of `axis`) shaped to broadcast against a
// rank-r tensor; scalars and 1-element tensors stay as they are.
Tensor along_axis(NodeContext& c, const Tensor& p, int64_t axis, int r) {
  if (p.rank() == 0 || (p.rank() == 1 && p.shape()[0] == 1)) return p.rank() == 0 ? p : reshape(p, {});
  DF_CHECK(p.rank() == 1, kPrefix, c.describe(), ": scale/zero point must be a scalar or 1-D, got ",
           p.shape().to_string());
  if (axis < 0) axis += r;
  DF_CHECK(axis >= 0 && axis < r, kPrefix, c.describe(), ": axis out of range for rank ", r);
  std::vector<int64_t> s(size_t(r), 1);
  s[size_t(axis)] = -1;
  return reshape(p, Shape(s));
}

// saturate(round(x / scale) + zero_point) as `out` (uint8 or int8).
Tensor quantize(const Tensor& x, const Tensor& scale, const Tensor& zp, DType out) {
  Tensor q = round(x / scale);
  if (zp.defined()) q = q + cast(zp, x.dtype());
  return cast(clip_by_value(q, qmin(out), qmax(out)), out);
}

TensorList import_quantize_linear(NodeContext& c) {
  const Tensor x = cast(c.input(0), DType::Float32);
  const Tensor zp = c.input(2);
  const DType out = zp.defined() ? zp.dtype() : DType::UInt8;
  DF_CHECK(out == DType::UInt8 || out == DType::Int8, kPrefix, c.describe(), ": zero point dtype ", out,
           " is not uint8 or int8");
  const int64_t axis = c.attr_int("axis", 1);
  const Tensor scale = along_axis(c, c.input(1), axis, x.rank());
  return {quantize(x, cast(scale, DType::Float32), zp.defined() ? along_axis(c, zp, axis, x.rank()) : Tensor(), out)};
}

TensorList import_dequantize_linear(NodeContext& c) {
  const Tensor x = cast(c.input(0), DType::Float32);
  const int64_t axis = c.attr_int("axis", 1);
  Tensor y = x;
  if (c.has_input(2)) y = y - cast(along_axis(c, c.input(2), axis, x.rank()), DType::Float32);
  return {y * cast(along_axis(c, c.input(1), axis, x.rank()), DType::Float32)};
}

TensorList import_dynamic_quantize_linear(NodeContext& c) {
  const Tensor x = cast(c.input(0), DType::Float32);
  const Tensor zero = scalar(0.0);
  const Tensor lo = minimum(reduce_min(x), zero), hi = maximum(reduce_max(x), zero);
  const Tensor scale = (hi - lo) / 255.0;
  const Tensor zp = cast(clip_by_value(round((zero - lo) / scale), 0.0, 255.0), DType::UInt8);
  return {quantize(x, scale, zp, DType::UInt8), scale, zp};
}

// x - zero_point in `t` (the zero point broadcast along `axis` when it is 1-D).
Tensor centered(NodeContext& c, const Tensor& x, const Tensor& zp, int64_t axis, DType t) {
  Tensor v = cast(x, t);
  if (!zp.defined()) return v;
  return v - cast(along_axis(c, zp, axis, x.rank()), t);
}

TensorList import_matmul_integer(NodeContext& c) {
  const Tensor a = c.input(0), b = c.input(1);
  // a's zero point is per row (axis -2 of a), b's per column (its last axis).
  const Tensor a0 = centered(c, a, c.input(2), a.rank() - 2 >= 0 ? a.rank() - 2 : 0, DType::Int32);
  const Tensor b0 = centered(c, b, c.input(3), b.rank() - 1, DType::Int32);
  return {matmul(a0, b0)};
}

TensorList import_conv_integer(NodeContext& c) {
  const Tensor x = centered(c, c.input(0), c.input(2), 1, DType::Float64);
  const Tensor w = centered(c, c.input(1), c.input(3), 0, DType::Float64);
  return {cast(conv_nchw(c, x, w, Tensor()), DType::Int32)};
}

TensorList import_qlinear_matmul(NodeContext& c) {
  const Tensor a = c.input(0), b = c.input(3);
  const Tensor acc = matmul(centered(c, a, c.input(2), a.rank() - 2 >= 0 ? a.rank() - 2 : 0, DType::Int32),
                            centered(c, b, c.input(5), b.rank() - 1, DType::Int32));
  const Tensor zp = c.input(7);
  const Tensor a_scale = cast(c.input(1), DType::Float32), b_scale = cast(c.input(4), DType::Float32);
  const Tensor y_scale = cast(c.input(6), DType::Float32);
  const Tensor mult = cast(a_scale * b_scale / y_scale, DType::Float64);
  Tensor q = round(cast(acc, DType::Float64) * mult);
  const DType out = zp.dtype();
  q = q + cast(zp, DType::Float64);
  return {cast(clip_by_value(q, qmin(out), qmax(out)), out)};
}

TensorList import_qlinear_conv(NodeContext& c) {
  // x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B
  const Tensor x = centered(c, c.input(0), c.input(2), 1, DType::Float64);
  const Tensor w = centered(c, c.input(3), c.input(5), 0, DType::Float64);
  const Tensor bias = c.has_input(8) ? cast(c.input(8), DType::Float64) : Tensor();
  const Tensor acc = conv_nchw(c, x, w, bias);
  const Tensor x_scale = cast(c.input(1), DType::Float32), y_scale = cast(c.input(6), DType::Float32);
  const Tensor w_scale = cast(along_axis(c, c.input(4), 1, acc.rank()), DType::Float32);
  const Tensor mult = cast(x_scale * w_scale / y_scale, DType::Float64);
  const Tensor zp = c.input(7);
  const DType out = zp.defined() ? zp.dtype() : DType::UInt8;
  Tensor q = round(acc * mult);
  if (zp.defined()) q = q + cast(zp, DType::Float64);
  return {cast(clip_by_value(q, qmin(out), qmax(out)), out)};
}

}  // namespace

DF_ONNX_OP("QuantizeLinear", 10, import_quantize_linear)
DF_ONNX_OP("DequantizeLinear", 10, import_dequantize_linear)
DF_ONNX_OP("DynamicQuantizeLinear", 11, import_dynamic_quantize_linear)
DF_ONNX_OP("MatMulInteger", 10, import_matmul_integer)
DF_ONNX_OP("ConvInteger", 10, import_conv_integer)
DF_ONNX_OP("QLinearMatMul", 10, import_qlinear_matmul)
DF_ONNX_OP("QLinearConv", 10, import_qlinear_conv)

}  // namespace deepflow::onnx
