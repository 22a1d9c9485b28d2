// SPDX-License-Identifier: Apache-2.0
// int8 BATCH_MATMUL (attention's products of two activations): out[..., M, N] = requantize(
// sum_k (x[..., M, K] - zx) (y[..., K, N] - zy)) with one multiplier s_x s_y / s_out, LiteRT's
// reference arithmetic (reference_ops::BatchMatMul: MultiplyByQuantizedMultiplier, rounding
// twice); adj_x / adj_y and broadcast batch dimensions as the float kernel. Both operands
// may change per invoke, so the sums are direct loops over int32 (exact).
#include "deepflow/lite/kernels/int8_util.h"

namespace deepflow::lite {

namespace {

class BatchMatMulInt8 final : public Kernel {
 public:
  explicit BatchMatMulInt8(const OpContext& ctx) {
    if (const auto* o = ctx.options<fb::BatchMatMulOptions>()) {
      adj_x_ = o->adj_x();
      adj_y_ = o->adj_y();
    }
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    Tensor& out = ctx.output(0);
    require_int8(ctx, x, "left operand");
    require_int8(ctx, y, "right operand");
    require_int8(ctx, out, "output");
    DF_LITE_OP_CHECK(ctx, x.quant.scale.size() == 1 && y.quant.scale.size() == 1, "operands need per-tensor quantization");
    shape_ = matmul_shape(ctx, x, y, adj_x_, adj_y_);
    m_ = shape_.m, k_ = shape_.k, n_ = shape_.n;
    mult_ = quantize_multiplier(static_cast<double>(x.quant.scale[0]) * y.quant.scale[0] / out.quant.scale[0]);
    ctx.resize_output(0, shape_.output_shape());
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    Tensor& out = ctx.output(0);
    const int32_t zx = zero_point(x), zy = zero_point(y), zo = zero_point(out);
    const int8_t* px = x.data<int8_t>();
    const int8_t* py = y.data<int8_t>();
    int8_t* po = out.data<int8_t>();
    const int64_t mk = static_cast<int64_t>(m_) * k_, kn = static_cast<int64_t>(k_) * n_;
    ctx.pool().parallel_for(shape_.batches * m_, 8, [&](int64_t lo, int64_t hi) {
      std::vector<int32_t> row(static_cast<size_t>(k_));
      for (int64_t bi = lo; bi < hi; ++bi) {
        const int64_t b = bi / m_;
        const int i = static_cast<int>(bi % m_);
        const auto [xb, yb] = shape_.operand_batches(b);
        const int8_t* xm = px + xb * mk;
        const int8_t* ym = py + yb * kn;
        for (int p = 0; p < k_; ++p)
          row[static_cast<size_t>(p)] = (adj_x_ ? xm[static_cast<int64_t>(p) * m_ + i] : xm[static_cast<int64_t>(i) * k_ + p]) - zx;
        int8_t* dst = po + (b * m_ + i) * n_;
        for (int j = 0; j < n_; ++j) {
          int32_t acc = 0;
          if (adj_y_) {
            const int8_t* yr = ym + static_cast<int64_t>(j) * k_;
            for (int p = 0; p < k_; ++p) acc += row[static_cast<size_t>(p)] * (yr[p] - zy);
          } else {
            for (int p = 0; p < k_; ++p) acc += row[static_cast<size_t>(p)] * (ym[static_cast<int64_t>(p) * n_ + j] - zy);
          }
          dst[j] = static_cast<int8_t>(std::clamp(multiply_by_quantized_multiplier(acc, mult_) + zo, kQMin, kQMax));
        }
      }
    });
  }

 private:
  bool adj_x_ = false, adj_y_ = false;
  int m_ = 0, k_ = 0, n_ = 0;
  MatMulShape shape_;
  QuantizedMultiplier mult_;
};

}  // namespace

std::unique_ptr<Kernel> make_batch_matmul_int8(const OpContext& ctx) { return std::make_unique<BatchMatMulInt8>(ctx); }

}  // namespace deepflow::lite
