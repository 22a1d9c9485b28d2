// SPDX-License-Identifier: Apache-2.0
// DEQUANTIZE (float16, int8, uint8, int16 -> float32; per tensor or per axis) and QUANTIZE
// (float32 -> int8 / uint8 / int16, and int8 <-> uint8 requantization), with TFLite's
// rounding (lite.md §2.10). A DEQUANTIZE of a constant (a float16 or int8 weight) is folded
// at allocate_tensors() like any op on constants (Subgraph's constant folding).
#include <cmath>
#include <cstring>

#include "deepflow/lite/kernels/kernel_util.h"

namespace deepflow::lite {

namespace {

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalize
    exp = 113;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Scale and zero point of element i of a tensor quantized along `dim` of `shape`.
struct AxisWalk {
  int64_t inner = 1;
  int64_t len = 1;
  bool per_axis = false;
  AxisWalk(const Tensor& t) {
    per_axis = t.quant.scale.size() > 1;
    if (!per_axis) return;
    len = t.dim(t.quant.dim);
    for (int d = t.quant.dim + 1; d < t.rank(); ++d) inner *= t.dim(d);
  }
  size_t channel(int64_t i) const { return per_axis ? static_cast<size_t>((i / inner) % len) : 0; }
};

class Dequantize final : public Kernel {
 public:
  explicit Dequantize(const OpContext&) {}
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    check_type(ctx, ctx.output(0), DType::kFloat32, "output");
    DF_LITE_OP_CHECK(ctx, x.type == DType::kFloat16 || x.type == DType::kInt8 || x.type == DType::kUInt8 ||
                              x.type == DType::kInt16,
                     "input '", x.name, "' is ", dtype_name(x.type), "; expected FLOAT16, INT8, UINT8 or INT16");
    DF_LITE_OP_CHECK(ctx, x.type == DType::kFloat16 || x.quantized(), "input '", x.name, "' is ",
                     dtype_name(x.type), " without quantization parameters");
    ctx.resize_output(0, x.shape);
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    float* out = ctx.output(0).data<float>();
    const int64_t n = x.num_elements();
    if (x.type == DType::kFloat16) {
      const auto* in = x.data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) out[i] = half_to_float(in[i]);
      return;
    }
    const AxisWalk walk(x);
    auto go = [&](const auto* in) {
      for (int64_t i = 0; i < n; ++i) {
        const size_t c = walk.channel(i);
        // TFLite holds the scale as double here (lite.md §2.10).
        out[i] = static_cast<float>(static_cast<double>(x.quant.scale[c]) *
                                    static_cast<double>(static_cast<int64_t>(in[i]) - x.quant.zero_point[c]));
      }
    };
    if (x.type == DType::kInt8) go(x.data<int8_t>());
    else if (x.type == DType::kUInt8) go(x.data<uint8_t>());
    else go(x.data<int16_t>());
  }
};

class Quantize final : public Kernel {
 public:
  explicit Quantize(const OpContext&) {}
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.output(0);
    DF_LITE_OP_CHECK(ctx, y.quantized() && y.quant.scale.size() == 1, "output '", y.name,
                     "' needs per-tensor quantization parameters");
    DF_LITE_OP_CHECK(ctx, y.type == DType::kInt8 || y.type == DType::kUInt8 || y.type == DType::kInt16,
                     "output is ", dtype_name(y.type));
    DF_LITE_OP_CHECK(ctx, x.type == DType::kFloat32 || ((x.type == DType::kInt8 || x.type == DType::kUInt8) && x.quantized()),
                     "input '", x.name, "' is ", dtype_name(x.type));
    ctx.resize_output(0, x.shape);
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t n = x.num_elements();
    const float scale = y.quant.scale[0];
    const int64_t zp = y.quant.zero_point[0];
    const int lo = y.type == DType::kInt8 ? -128 : y.type == DType::kUInt8 ? 0 : -32768;
    const int hi = y.type == DType::kInt8 ? 127 : y.type == DType::kUInt8 ? 255 : 32767;
    auto store = [&](int64_t i, int64_t q) {
      q = std::min<int64_t>(std::max<int64_t>(q, lo), hi);
      if (y.type == DType::kInt8) y.data<int8_t>()[i] = static_cast<int8_t>(q);
      else if (y.type == DType::kUInt8) y.data<uint8_t>()[i] = static_cast<uint8_t>(q);
      else y.data<int16_t>()[i] = static_cast<int16_t>(q);
    };
    if (x.type == DType::kFloat32) {
      const float* in = x.data<float>();
      for (int64_t i = 0; i < n; ++i) store(i, zp + static_cast<int64_t>(std::round(in[i] / scale)));
      return;
    }
    // Requantization between int8 and uint8 (model interfaces): through real values, rounded.
    const double s = static_cast<double>(x.quant.scale[0]) / scale;
    const int64_t zin = x.quant.zero_point[0];
    for (int64_t i = 0; i < n; ++i) {
      const int64_t q = x.type == DType::kInt8 ? x.data<int8_t>()[i] : x.data<uint8_t>()[i];
      store(i, zp + static_cast<int64_t>(std::round(static_cast<double>(q - zin) * s)));
    }
  }
};

}  // namespace

void register_quant_kernels(OpResolver& r) {
  r.add_builtin(fb::BuiltinOperator::DEQUANTIZE, make_factory<Dequantize>(), 1, 6);
  r.add_builtin(fb::BuiltinOperator::QUANTIZE, make_factory<Quantize>(), 1, 4);
}

}  // namespace deepflow::lite
