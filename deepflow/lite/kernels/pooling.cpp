// SPDX-License-Identifier: Apache-2.0
// AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D on float32 NHWC, vectorized over channels and
// parallel over output rows. As in TFLite, a window is clipped to the image: the average
// and the L2 norm divide by the number of cells inside it, and padding never wins a max.
#include "deepflow/lite/kernels/kernel_util.h"

namespace deepflow::lite {

namespace {

constexpr int64_t kGrainOps = 1 << 12;  // window cells x channels per parallel task (a microsecond or two)

enum class PoolKind { kAverage, kMax, kL2 };

class Pool2D final : public Kernel {
 public:
  Pool2D(const OpContext& ctx, PoolKind kind) : kind_(kind) {
    const auto* o = ctx.options<fb::Pool2DOptions>();
    DF_LITE_OP_CHECK(ctx, o != nullptr, "has no Pool2DOptions");
    padding_ = o->padding();
    sh_ = o->stride_h();
    sw_ = o->stride_w();
    fh_ = o->filter_height();
    fw_ = o->filter_width();
    act_ = o->fused_activation_function();
  }

  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.type != DType::kFloat32)
      ctx.fail(dtype_name(x.type), " ", ctx.op_name(), " is not supported yet (input '", x.name, "')");
    check_type(ctx, ctx.output(0), DType::kFloat32, "output");
    check_rank(ctx, x, 4, "input");
    check_activation(ctx, act_);
    n_ = x.dim(0), h_ = x.dim(1), w_ = x.dim(2), c_ = x.dim(3);
    const PaddedDim ph = padded_dim(ctx, padding_, h_, fh_, sh_, 1);
    const PaddedDim pw = padded_dim(ctx, padding_, w_, fw_, sw_, 1);
    oh_ = ph.out, ow_ = pw.out, pad_top_ = ph.pad_before, pad_left_ = pw.pad_before;
    ctx.resize_output(0, {n_, oh_, ow_, c_});
  }

  void eval(OpContext& ctx) override {
    const float* in = ctx.input(0).data<float>();
    float* out = ctx.output(0).data<float>();
    const int64_t rows = static_cast<int64_t>(n_) * oh_;
    const int64_t row_ops = std::max<int64_t>(1, static_cast<int64_t>(ow_) * fh_ * fw_ * c_);
    ctx.pool().parallel_for(rows, std::max<int64_t>(1, kGrainOps / row_ops), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const int n = static_cast<int>(r / oh_), oy = static_cast<int>(r % oh_);
        for (int ox = 0; ox < ow_; ++ox) pixel(in, n, oy, ox, out + (r * ow_ + ox) * c_);
      }
      apply_activation(act_, out + lo * ow_ * c_, (hi - lo) * ow_ * c_);
    });
  }

 private:
  void pixel(const float* in, int n, int oy, int ox, float* out) const {
    const int y0 = oy * sh_ - pad_top_, x0 = ox * sw_ - pad_left_;
    const int ky0 = std::max(0, -y0), ky1 = std::min(fh_, h_ - y0);
    const int kx0 = std::max(0, -x0), kx1 = std::min(fw_, w_ - x0);
    const float init = kind_ == PoolKind::kMax ? std::numeric_limits<float>::lowest() : 0.f;
    for (int c = 0; c < c_; ++c) out[c] = init;
    for (int ky = ky0; ky < ky1; ++ky)
      for (int kx = kx0; kx < kx1; ++kx) {
        const float* src = in + ((static_cast<int64_t>(n) * h_ + y0 + ky) * w_ + x0 + kx) * c_;
        switch (kind_) {
          case PoolKind::kMax:
            for (int c = 0; c < c_; ++c) out[c] = std::max(out[c], src[c]);
            break;
          case PoolKind::kAverage:
            for (int c = 0; c < c_; ++c) out[c] += src[c];
            break;
          case PoolKind::kL2:
            for (int c = 0; c < c_; ++c) out[c] += src[c] * src[c];
            break;
        }
      }
    if (kind_ == PoolKind::kMax) return;
    const int cells = std::max(0, ky1 - ky0) * std::max(0, kx1 - kx0);
    // TFLite divides by the count (no guard): an empty window gives 0/0 there. Its windows
    // always hold a cell of the image, except with a padding wider than the filter.
    const float inv = cells > 0 ? 1.f / static_cast<float>(cells) : 0.f;
    if (kind_ == PoolKind::kAverage)
      for (int c = 0; c < c_; ++c) out[c] *= inv;
    else
      for (int c = 0; c < c_; ++c) out[c] = std::sqrt(out[c] * inv);
  }

  PoolKind kind_;
  fb::Padding padding_;
  int sh_ = 1, sw_ = 1, fh_ = 1, fw_ = 1;
  fb::ActivationFunctionType act_;
  int n_ = 0, h_ = 0, w_ = 0, c_ = 0, oh_ = 0, ow_ = 0, pad_top_ = 0, pad_left_ = 0;
};

template <PoolKind kind>
KernelFactory pool_factory() {
  return [](const OpContext& ctx) { return std::unique_ptr<Kernel>(new Pool2D(ctx, kind)); };
}

}  // namespace

void register_pooling_kernels(OpResolver& r) {
  r.add_builtin(fb::BuiltinOperator::AVERAGE_POOL_2D, pool_factory<PoolKind::kAverage>(), 1, 3);
  r.add_builtin(fb::BuiltinOperator::MAX_POOL_2D, pool_factory<PoolKind::kMax>(), 1, 3);
  r.add_builtin(fb::BuiltinOperator::L2_POOL_2D, pool_factory<PoolKind::kL2>(), 1, 3);
}

}  // namespace deepflow::lite
