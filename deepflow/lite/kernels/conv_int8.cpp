// SPDX-License-Identifier: Apache-2.0
// int8 CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED: LiteRT's reference arithmetic bit for
// bit (requantized per channel, rounding twice for the convolutions and once for FC, as
// quant_math.h says). Constant filters, which every converter writes, run on the int8 GEMM
// (gemm_int8.h: a 1x1 convolution reads its input in place, others through an im2col whose
// padding holds the input's zero point, so padded taps add nothing) or on the vector
// depthwise kernel (depthwise_int8.h); other filters, grouped convolutions and channel
// multipliers above 1 take the direct loops.
#include <limits>

#include "deepflow/lite/interpreter.h"
#include "deepflow/lite/kernels/depthwise_int8.h"
#include "deepflow/lite/kernels/gemm_int8.h"
#include "deepflow/lite/kernels/int8_util.h"

namespace deepflow::lite {

namespace {

// CONV_2D (groups as in the float kernel) and DEPTHWISE_CONV_2D, NHWC / OHWI (1HWC).
class ConvInt8 final : public Kernel {
 public:
  ConvInt8(const OpContext& ctx, bool depthwise) : depthwise_(depthwise) {
    if (depthwise) {
      const auto* o = ctx.options<fb::DepthwiseConv2DOptions>();
      DF_LITE_OP_CHECK(ctx, o, "has no DepthwiseConv2DOptions");
      padding_ = o->padding(), sh_ = o->stride_h(), sw_ = o->stride_w(), dh_ = o->dilation_h_factor(),
      dw_ = o->dilation_w_factor(), act_ = o->fused_activation_function();
    } else {
      const auto* o = ctx.options<fb::Conv2DOptions>();
      DF_LITE_OP_CHECK(ctx, o, "has no Conv2DOptions");
      padding_ = o->padding(), sh_ = o->stride_h(), sw_ = o->stride_w(), dh_ = o->dilation_h_factor(),
      dw_ = o->dilation_w_factor(), act_ = o->fused_activation_function();
    }
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    Tensor& y = ctx.output(0);
    require_int8(ctx, x, "input");
    require_int8(ctx, w, "filter");
    require_int8(ctx, y, "output");
    check_rank(ctx, x, 4, "input");
    check_rank(ctx, w, 4, "filter");
    for (int64_t z : w.quant.zero_point)
      DF_LITE_OP_CHECK(ctx, z == 0, "filter '", w.name, "' has zero point ", z, "; int8 filters are symmetric");
    kh_ = w.dim(1), kw_ = w.dim(2);
    const int cin = x.dim(3);
    oc_ = depthwise_ ? w.dim(3) : w.dim(0);
    if (depthwise_) {
      DF_LITE_OP_CHECK(ctx, oc_ % cin == 0, "filter ", shape_string(w.shape), " for ", cin, " input channels");
      mult_ = oc_ / cin;
    } else {
      DF_LITE_OP_CHECK(ctx, w.dim(3) > 0 && cin % w.dim(3) == 0 && oc_ % (cin / w.dim(3)) == 0, "filter ",
                       shape_string(w.shape), " for input ", shape_string(x.shape));
      groups_ = cin / w.dim(3);
    }
    const PaddedDim ph = padded_dim(ctx, padding_, x.dim(1), kh_, sh_, dh_);
    const PaddedDim pw = padded_dim(ctx, padding_, x.dim(2), kw_, sw_, dw_);
    pad_top_ = ph.pad_before, pad_left_ = pw.pad_before;
    mult_q_ = channel_multipliers(ctx, x, w, y, oc_);
    range_ = activation_range_q(act_, y);
    ctx.resize_output(0, {x.dim(0), ph.out, pw.out, oc_});
    // Constant filters (every converter's) take the fast paths; their sums fold the input
    // offset, so the input's zero point is fixed here too.
    const bool constant_bias = !ctx.has_input(2) || ctx.input(2).is_constant();
    fast_ = w.is_constant() && w.data_ptr != nullptr && constant_bias;
    if (fast_ && depthwise_) fast_ = mult_ == 1;
    if (fast_ && !depthwise_) fast_ = groups_ == 1;
    if (!fast_) return;
    const int32_t* bias = int32_bias(ctx, 2, oc_);
    if (depthwise_) {
      depthwise_fast_.prepare(w.data<int8_t>(), oc_, kh_ * kw_, bias, mult_q_, zero_point(y), range_.lo, range_.hi,
                              ctx.subgraph().interpreter().fast_int8());
      return;
    }
    const int k = kh_ * kw_ * cin;
    Int8Requant q;
    q.multipliers = mult_q_;
    q.zp_out = zero_point(y);
    q.lo = range_.lo;
    q.hi = range_.hi;
    q.fast = ctx.subgraph().interpreter().fast_int8();
    gemm_.prepare(w.data<int8_t>(), oc_, k, k, bias, -zero_point(x), std::move(q));
    pointwise_ = kh_ == 1 && kw_ == 1 && sh_ == 1 && sw_ == 1 && pad_top_ == 0 && pad_left_ == 0 &&
                 ph.out == x.dim(1) && pw.out == x.dim(2);
  }
  void eval(OpContext& ctx) override {
    if (fast_) return eval_fast(ctx);
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    Tensor& y = ctx.output(0);
    const int32_t* bias = int32_bias(ctx, 2, oc_);
    const int8_t* in = x.data<int8_t>();
    const int8_t* filt = w.data<int8_t>();
    int8_t* out = y.data<int8_t>();
    const int32_t in_off = -zero_point(x), zp_out = zero_point(y);
    const int n = x.dim(0), ih = x.dim(1), iw = x.dim(2), cin = x.dim(3), oh = y.dim(1), ow = y.dim(2);
    const int fin = depthwise_ ? 1 : w.dim(3);
    const int per_group = depthwise_ ? 0 : oc_ / groups_;
    ctx.pool().parallel_for(static_cast<int64_t>(n) * oh, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t row = lo; row < hi; ++row) {
        const int b = static_cast<int>(row / oh), oy = static_cast<int>(row % oh);
        for (int ox = 0; ox < ow; ++ox) {
          int8_t* dst = out + ((static_cast<int64_t>(b) * oh + oy) * ow + ox) * oc_;
          for (int oc = 0; oc < oc_; ++oc) {
            int32_t acc = 0;
            for (int ky = 0; ky < kh_; ++ky) {
              const int iy = oy * sh_ - pad_top_ + dh_ * ky;
              if (iy < 0 || iy >= ih) continue;
              for (int kx = 0; kx < kw_; ++kx) {
                const int ix = ox * sw_ - pad_left_ + dw_ * kx;
                if (ix < 0 || ix >= iw) continue;
                const int8_t* src = in + ((static_cast<int64_t>(b) * ih + iy) * iw + ix) * cin;
                if (depthwise_) {
                  acc += (src[oc / mult_] + in_off) * filt[(static_cast<int64_t>(ky) * kw_ + kx) * oc_ + oc];
                } else {
                  const int8_t* f = filt + ((static_cast<int64_t>(oc) * kh_ + ky) * kw_ + kx) * fin;
                  const int8_t* s = src + (oc / per_group) * fin;
                  for (int ic = 0; ic < fin; ++ic) acc += (s[ic] + in_off) * f[ic];
                }
              }
            }
            if (bias) acc += bias[oc];
            dst[oc] = requantize(acc, mult_q_[static_cast<size_t>(oc)], zp_out, range_);
          }
        }
      }
    });
  }

 private:
  void eval_fast(OpContext& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const ConvGeometry g{x.dim(0), x.dim(1), x.dim(2), x.dim(3), y.dim(1), y.dim(2), kh_, kw_, sh_, sw_, dh_, dw_, pad_top_,
                         pad_left_};
    if (depthwise_) return depthwise_fast_.run(ctx.pool(), g, x.data<int8_t>(), -zero_point(x), y.data<int8_t>());
    const int m = g.n * g.oh * g.ow;
    if (pointwise_) return gemm_.run(&ctx.pool(), m, x.data<int8_t>(), g.c, y.data<int8_t>(), oc_);
    // Rows padded to whole words of K: the GEMM reads them in place.
    const int stride = (kh_ * kw_ * g.c + 3) & ~3;
    scratch_.resize(static_cast<size_t>(m) * stride);
    im2col_int8(ctx.pool(), g, x.data<int8_t>(), static_cast<int8_t>(zero_point(x)), scratch_.data(),
                static_cast<size_t>(stride));
    gemm_.run(&ctx.pool(), m, scratch_.data(), stride, y.data<int8_t>(), oc_, true);
  }

  bool depthwise_;
  fb::Padding padding_ = fb::Padding::SAME;
  int sh_ = 1, sw_ = 1, dh_ = 1, dw_ = 1, kh_ = 1, kw_ = 1, oc_ = 0, mult_ = 1, groups_ = 1;
  int pad_top_ = 0, pad_left_ = 0;
  fb::ActivationFunctionType act_ = fb::ActivationFunctionType::NONE;
  std::vector<QuantizedMultiplier> mult_q_;
  IntRange range_;
  bool fast_ = false;       // constant filter and bias: the GEMM or the vector depthwise kernel
  bool pointwise_ = false;  // 1x1, stride 1, no padding: the input is the GEMM's A as it is
  Int8Gemm gemm_;
  DepthwiseInt8 depthwise_fast_;
  std::vector<int8_t> scratch_;  // im2col rows
};

class FullyConnectedInt8 final : public Kernel {
 public:
  explicit FullyConnectedInt8(const OpContext& ctx) {
    if (const auto* o = ctx.options<fb::FullyConnectedOptions>()) {
      act_ = o->fused_activation_function();
      keep_dims_ = o->keep_num_dims();
      DF_LITE_OP_CHECK(ctx, o->weights_format() == fb::FullyConnectedOptionsWeightsFormat::DEFAULT,
                       "weights_format SHUFFLED4x16INT8 is not supported");
    }
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    Tensor& y = ctx.output(0);
    require_int8(ctx, x, "input");
    require_int8(ctx, w, "weights");
    require_int8(ctx, y, "output");
    check_rank(ctx, w, 2, "weights");
    out_ = w.dim(0), in_ = w.dim(1);
    DF_LITE_OP_CHECK(ctx, in_ > 0 && x.num_elements() % in_ == 0, "input ", shape_string(x.shape), " for weights ",
                     shape_string(w.shape));
    for (int64_t z : w.quant.zero_point)
      DF_LITE_OP_CHECK(ctx, z == 0, "weights '", w.name, "' have zero point ", z, "; int8 weights are symmetric");
    batches_ = x.num_elements() / in_;
    mult_q_ = channel_multipliers(ctx, x, w, y, out_);
    range_ = activation_range_q(act_, y);
    fast_ = w.is_constant() && w.data_ptr != nullptr && (!ctx.has_input(2) || ctx.input(2).is_constant()) &&
            batches_ <= std::numeric_limits<int>::max();
    if (fast_) {
      Int8Requant q;
      q.multipliers = mult_q_;
      q.zp_out = zero_point(y);
      q.lo = range_.lo;
      q.hi = range_.hi;
      q.single_rounding = true;
      q.fast = ctx.subgraph().interpreter().fast_int8();
      gemm_.prepare(w.data<int8_t>(), out_, in_, in_, int32_bias(ctx, 2, out_), -zero_point(x), std::move(q));
    }
    if (keep_dims_) {
      std::vector<int> shape = x.shape;
      shape.back() = out_;
      ctx.resize_output(0, shape);
    } else {
      ctx.resize_output(0, {static_cast<int>(batches_), out_});
    }
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int8_t* in = x.data<int8_t>();
    int8_t* out = y.data<int8_t>();
    if (fast_) return gemm_.run(&ctx.pool(), static_cast<int>(batches_), in, in_, out, out_);
    const Tensor& w = ctx.input(1);
    const int32_t* bias = int32_bias(ctx, 2, out_);
    const int8_t* wt = w.data<int8_t>();
    const int32_t in_off = -zero_point(x), zp_out = zero_point(y);
    ctx.pool().parallel_for(batches_ * out_, 64, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t b = i / out_;
        const int o = static_cast<int>(i % out_);
        const int8_t* xr = in + b * in_;
        const int8_t* wr = wt + static_cast<int64_t>(o) * in_;
        int32_t acc = 0;
        for (int k = 0; k < in_; ++k) acc += (xr[k] + in_off) * wr[k];
        if (bias) acc += bias[o];
        out[i] = requantize_once(acc, mult_q_[static_cast<size_t>(o)], zp_out, range_);
      }
    });
  }

 private:
  fb::ActivationFunctionType act_ = fb::ActivationFunctionType::NONE;
  bool keep_dims_ = false;
  int out_ = 0, in_ = 0;
  int64_t batches_ = 0;
  std::vector<QuantizedMultiplier> mult_q_;
  IntRange range_;
  bool fast_ = false;  // constant weights and bias: the int8 GEMM
  Int8Gemm gemm_;
};

// The NumPy broadcast of two shapes.

}  // namespace

std::unique_ptr<Kernel> make_conv_int8(const OpContext& ctx, bool depthwise) {
  return std::make_unique<ConvInt8>(ctx, depthwise);
}

std::unique_ptr<Kernel> make_fully_connected_int8(const OpContext& ctx) { return std::make_unique<FullyConnectedInt8>(ctx); }

}  // namespace deepflow::lite
