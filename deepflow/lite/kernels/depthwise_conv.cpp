// SPDX-License-Identifier: Apache-2.0
// DEPTHWISE_CONV_2D on float32 NHWC, a direct loop parallel over output rows. Each output
// row (or run of its columns) is swept once per block of channels (one vector: 16 on
// AVX-512, 8 on AVX2), so a 3x3 filter's nine taps and the bias stay in registers along
// it: the pixels whose taps all lie inside the image run without any bounds check, the
// border ones of SAME padding on a fixed subset of the taps, and a row's taps above or
// below the image are dropped once per row. Other filter sizes, other borders and channel
// multipliers > 1 take a per-pixel loop. Padded taps count as zeros (skipped, as in
// TFLite's reference kernel). One template body serves both instruction sets (see Lanes).
#include <cstring>
#include <type_traits>

#include "deepflow/lite/kernels/gemm.h"
#include "deepflow/lite/kernels/kernel_util.h"

// Vectors pass between always-inline helpers only (as arguments by reference, so only the
// returns draw the warning), never through a real call: the ABI change GCC and Clang warn
// about for 64-byte vectors cannot apply.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wunknown-warning-option"
#endif
#pragma GCC diagnostic ignored "-Wpsabi"

namespace deepflow::lite {

namespace {

constexpr int64_t kGrainFlops = 1 << 16;  // per parallel task
constexpr int64_t kStreamBytes = 2 << 20;  // an input larger than this (a core's L2) streams from memory...
constexpr int kStreamRun = 8;              // ...and its rows go this many columns at a time
constexpr int kFewChannels = 64;           // with at most this many channels (4 blocks)...
constexpr int kFewChannelsRun = 16;        // ...rows go this many columns at a time

// The filter taps [first, first + count) that fall inside the image, for one output row or
// column.
struct Taps {
  int first = 0, count = 0;
};

// One eval: operands and geometry, channel multiplier 1 (c channels in and out).
struct Plan {
  const float* in;
  const float* filter;  // [kh, kw, c]
  const float* bias;    // c values (zeros when the op has none)
  float* out;
  int h, w, c, oh, ow;
  int kh, kw, sh, sw, dh, dw, pad_top, pad_left;
  float lo, hi;
  const Taps* rows;  // per output row
  const Taps* cols;  // per output column
  int x_lo, x_hi;    // output columns [x_lo, x_hi) have all kw taps inside the image
  int run;           // output columns swept per block of channels
};

// W floats as one value: a GCC / Clang vector (the target's register of that width), or a
// plain float for W = 1. Code on these compiles to the instructions of the function it is
// inlined into, so one template serves AVX2 and AVX-512.
template <int W>
struct LanesOf {
  typedef float type __attribute__((vector_size(W * sizeof(float))));
};
template <>
struct LanesOf<1> {
  using type = float;
};
template <int W>
using Lanes = typename LanesOf<W>::type;

#define DF_LITE_INLINE [[gnu::always_inline]] inline

template <int W>
DF_LITE_INLINE Lanes<W> load(const float* p) {
  Lanes<W> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <int W>
DF_LITE_INLINE void store(float* p, const Lanes<W>& v) {
  std::memcpy(p, &v, sizeof v);
}

template <int W>
DF_LITE_INLINE Lanes<W> splat(float x) {
  return Lanes<W>{} + x;
}

// std::min(std::max(x, lo), hi) lane by lane: a NaN passes through, as in TFLite.
template <int W>
DF_LITE_INLINE Lanes<W> clamp(const Lanes<W>& x, const Lanes<W>& lo, const Lanes<W>& hi) {
  const Lanes<W> y = x < lo ? lo : x;
  return hi < y ? hi : y;
}

// Channels [c0, c0 + W) of one output pixel, any filter: src and f at its first valid tap.
template <int W>
DF_LITE_INLINE void pixel(const Plan& p, const float* src, const float* f, Taps ty, Taps tx, const float* bias,
                          float* out) {
  const int64_t src_row = static_cast<int64_t>(p.dh) * p.w * p.c, src_col = static_cast<int64_t>(p.dw) * p.c;
  const int64_t f_row = static_cast<int64_t>(p.kw) * p.c;
  Lanes<W> acc = load<W>(bias);
  for (int ky = 0; ky < ty.count; ++ky)
    for (int kx = 0; kx < tx.count; ++kx)
      acc += load<W>(src + ky * src_row + kx * src_col) * load<W>(f + ky * f_row + kx * p.c);
  store<W>(out, clamp<W>(acc, splat<W>(p.lo), splat<W>(p.hi)));
}

// One output pixel of a 3x3 row kernel from its registers: taps kx in [K0, K1) (the others
// lie left or right of the image); s at the input of tap K0 in the first valid row.
template <int W, int ROWS, int K0, int K1>
DF_LITE_INLINE Lanes<W> taps_3x3(const Lanes<W> (&taps)[ROWS][3], const Lanes<W>& bias, const float* s, int64_t src_row,
                                 int64_t tap) {
  // Two partial sums: half the dependent chain of FMAs.
  Lanes<W> acc[2] = {bias, Lanes<W>{}};
#pragma GCC unroll 3
  for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 3
    for (int kx = K0; kx < K1; ++kx)
      acc[(r * 3 + kx) & 1] += load<W>(s + r * src_row + (kx - K0) * tap) * taps[r][kx];
  return acc[0] + acc[1];
}

// A whole output row for a 3x3 filter of which ROWS rows lie inside the image, the taps in
// registers: the inner pixels unchecked, the border ones (one tap column off the image, as
// with SAME padding) by tap range; src at the first valid input row (column 0), f at the
// first valid filter row. False, doing nothing, for a border it does not know.
template <int W, int ROWS>
DF_LITE_INLINE bool row_3x3(const Plan& p, const float* src, const float* f, const float* bias, float* out, int xa,
                            int xb) {
  using V = Lanes<W>;
  // Locals: the stores below could otherwise alias the plan, and its fields be reloaded.
  const int c = p.c, x_lo = p.x_lo, x_hi = p.x_hi, ow = p.ow;
  const Taps left = x_lo > 0 ? p.cols[0] : Taps{0, 3}, right = x_hi < ow ? p.cols[ow - 1] : Taps{0, 3};
  if (x_lo > 1 || ow - x_hi > 1 || (x_lo == 1 && (left.first != 1 || left.count != 2)) ||
      (x_hi == ow - 1 && (right.first != 0 || right.count != 2)) || x_lo > x_hi)
    return false;
  V taps[ROWS][3];
#pragma GCC unroll 3
  for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 3
    for (int kx = 0; kx < 3; ++kx) taps[r][kx] = load<W>(f + (r * 3 + kx) * c);
  const V b = load<W>(bias), lo = splat<W>(p.lo), hi = splat<W>(p.hi);
  const int64_t src_row = static_cast<int64_t>(p.dh) * p.w * c, tap = static_cast<int64_t>(p.dw) * c;
  const int64_t step = static_cast<int64_t>(p.sw) * c;
  const int x0 = std::max(xa, x_lo), x1 = std::min(xb, x_hi);
  const float* s = src + (static_cast<int64_t>(x0) * p.sw - p.pad_left) * c;  // column x0's tap 0
  if (x_lo == 1 && xa == 0)
    store<W>(out, clamp<W>(taps_3x3<W, ROWS, 1, 3>(taps, b, src + (tap - p.pad_left * c), src_row, tap), lo, hi));
  float* o = out + static_cast<int64_t>(x0) * c;
  for (int ox = x0; ox < x1; ++ox, s += step, o += c)
    store<W>(o, clamp<W>(taps_3x3<W, ROWS, 0, 3>(taps, b, s, src_row, tap), lo, hi));
  if (x_hi == ow - 1 && xb == ow) {
    const float* last = src + (static_cast<int64_t>(x_hi) * p.sw - p.pad_left) * c;
    store<W>(out + static_cast<int64_t>(x_hi) * c,
             clamp<W>(taps_3x3<W, ROWS, 0, 2>(taps, b, last, src_row, tap), lo, hi));
  }
  return true;
}

// Output pixel ox of a row (channels [c0, c0 + W)), through the per-pixel loop: src, f
// and out at the row's first valid input row, first valid filter row and column 0.
template <int W>
DF_LITE_INLINE void border_pixel(const Plan& p, const float* src, const float* f, Taps ty, const float* bias,
                                 float* out, int ox) {
  const Taps tx = p.cols[ox];
  const int ix = ox * p.sw - p.pad_left + tx.first * p.dw;
  pixel<W>(p, src + static_cast<int64_t>(ix) * p.c, f + static_cast<int64_t>(tx.first) * p.c, ty, tx, bias,
           out + static_cast<int64_t>(ox) * p.c);
}

// Channels [c0, c0 + W) of output columns [xa, xb) of row oy of image n. (No lambdas
// here: one would not inherit the AVX-512 target of the function this is inlined into.)
template <int W>
DF_LITE_INLINE void channel_block(const Plan& p, int n, int oy, int c0, int xa, int xb) {
  const Taps ty = p.rows[oy];
  const int iy = oy * p.sh - p.pad_top + ty.first * p.dh;
  const float* src = p.in + (static_cast<int64_t>(n) * p.h + iy) * p.w * p.c + c0;  // column 0
  const float* f = p.filter + static_cast<int64_t>(ty.first) * p.kw * p.c + c0;
  float* out = p.out + (static_cast<int64_t>(n) * p.oh + oy) * p.ow * p.c + c0;
  const float* bias = p.bias + c0;
  if (p.kh == 3 && p.kw == 3) {
    if (ty.count == 3 && row_3x3<W, 3>(p, src, f, bias, out, xa, xb)) return;
    if (ty.count == 2 && row_3x3<W, 2>(p, src, f, bias, out, xa, xb)) return;
  }
  for (int ox = xa; ox < xb; ++ox) border_pixel<W>(p, src, f, ty, bias, out, ox);
}

// Output rows [r0, r1) (over batch and height), each in runs of p.run columns, each run in
// blocks of W channels, then the tail.
template <int W>
DF_LITE_INLINE void rows(const Plan& p, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const int n = static_cast<int>(r / p.oh), oy = static_cast<int>(r % p.oh);
    for (int xa = 0; xa < p.ow; xa += p.run) {
      const int xb = std::min(p.ow, xa + p.run);
      int c0 = 0;
      for (; c0 + W <= p.c; c0 += W) channel_block<W>(p, n, oy, c0, xa, xb);
      if constexpr (W > 8)
        if (c0 + 8 <= p.c) channel_block<8>(p, n, oy, c0, xa, xb), c0 += 8;
      if (c0 + 4 <= p.c) channel_block<4>(p, n, oy, c0, xa, xb), c0 += 4;
      for (; c0 < p.c; ++c0) channel_block<1>(p, n, oy, c0, xa, xb);
    }
  }
}

#if defined(__x86_64__) && defined(__AVX2__)
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma"))) void rows_avx512(const Plan& p, int64_t r0,
                                                                                   int64_t r1) {
  rows<16>(p, r0, r1);
}
#endif

void rows_baseline(const Plan& p, int64_t r0, int64_t r1) { rows<8>(p, r0, r1); }

class DepthwiseConv2D final : public Kernel {
 public:
  explicit DepthwiseConv2D(const OpContext& ctx) {
    const auto* o = ctx.options<fb::DepthwiseConv2DOptions>();
    DF_LITE_OP_CHECK(ctx, o != nullptr, "has no DepthwiseConv2DOptions");
    padding_ = o->padding();
    sh_ = o->stride_h();
    sw_ = o->stride_w();
    dh_ = o->dilation_h_factor();
    dw_ = o->dilation_w_factor();
    act_ = o->fused_activation_function();
  }

  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    require_float(ctx, x, w);
    check_rank(ctx, x, 4, "input");
    check_rank(ctx, w, 4, "filter");
    check_activation(ctx, act_);
    n_ = x.dim(0), h_ = x.dim(1), w_ = x.dim(2), ic_ = x.dim(3);
    kh_ = w.dim(1), kw_ = w.dim(2), oc_ = w.dim(3);
    DF_LITE_OP_CHECK(ctx, w.dim(0) == 1, "filter ", shape_string(w.shape), " must be [1, height, width, channels]");
    // The options' depth_multiplier is redundant (and 0 in some files): the shapes decide.
    DF_LITE_OP_CHECK(ctx, ic_ > 0 && oc_ % ic_ == 0, "filter ", shape_string(w.shape), " has ", oc_,
                     " channels: not a multiple of input ", shape_string(x.shape), "'s ", ic_);
    mult_ = oc_ / ic_;
    bias(ctx);
    const PaddedDim ph = padded_dim(ctx, padding_, h_, kh_, sh_, dh_);
    const PaddedDim pw = padded_dim(ctx, padding_, w_, kw_, sw_, dw_);
    oh_ = ph.out, ow_ = pw.out, pad_top_ = ph.pad_before, pad_left_ = pw.pad_before;
    ctx.resize_output(0, {n_, oh_, ow_, oc_});
    // Per output row and column, the taps inside the image (skipping a padded tap is
    // adding zero), found once here rather than per pixel.
    rows_ = valid_taps(oh_, sh_, pad_top_, kh_, dh_, h_);
    cols_ = valid_taps(ow_, sw_, pad_left_, kw_, dw_, w_);
    x_lo_ = 0;
    while (x_lo_ < ow_ && cols_[static_cast<size_t>(x_lo_)].count < kw_) ++x_lo_;
    x_hi_ = ow_;
    while (x_hi_ > x_lo_ && cols_[static_cast<size_t>(x_hi_ - 1)].count < kw_) --x_hi_;
    zeros_.assign(static_cast<size_t>(oc_), 0.f);
  }

  void eval(OpContext& ctx) override {
    Plan p{};
    p.in = ctx.input(0).data<float>();
    p.filter = ctx.input(1).data<float>();
    p.bias = bias(ctx);
    if (!p.bias) p.bias = zeros_.data();
    p.out = ctx.output(0).data<float>();
    const bool clamp = act_ != fb::ActivationFunctionType::TANH && act_ != fb::ActivationFunctionType::SIGN_BIT;
    const FloatRange range = clamp ? activation_range(act_) : FloatRange{};
    p.lo = range.lo, p.hi = range.hi;
    p.h = h_, p.w = w_, p.c = oc_, p.oh = oh_, p.ow = ow_;
    p.kh = kh_, p.kw = kw_, p.sh = sh_, p.sw = sw_, p.dh = dh_, p.dw = dw_;
    p.pad_top = pad_top_, p.pad_left = pad_left_;
    p.rows = rows_.data(), p.cols = cols_.data();
    p.x_lo = x_lo_, p.x_hi = x_hi_;
    p.run = column_run();
    auto* run = &rows_baseline;
#if defined(__x86_64__) && defined(__AVX2__)
    if (simd() == Simd::kAvx512) run = &rows_avx512;
#endif
    const int64_t rows = static_cast<int64_t>(n_) * oh_;
    const int64_t row_flops = std::max<int64_t>(1, 2LL * ow_ * oc_ * kh_ * kw_);
    ctx.pool().parallel_for(rows, std::max<int64_t>(1, kGrainFlops / row_flops), [&](int64_t lo, int64_t hi) {
      if (mult_ == 1) return run(p, lo, hi);
      for (int64_t r = lo; r < hi; ++r)
        for (int ox = 0; ox < ow_; ++ox) pixel_multiplier(p, static_cast<int>(r / oh_), static_cast<int>(r % oh_), ox);
    });
    if (!clamp) apply_activation(act_, p.out, ctx.output(0).num_elements());
  }

 private:
  static std::vector<Taps> valid_taps(int out, int stride, int pad, int kernel, int dilation, int in) {
    std::vector<Taps> taps(static_cast<size_t>(out));
    for (int o = 0; o < out; ++o) {
      Taps& t = taps[static_cast<size_t>(o)];
      const int origin = o * stride - pad;
      int k = 0;
      while (k < kernel && origin + k * dilation < 0) ++k;
      t.first = k;
      while (k < kernel && origin + k * dilation < in) ++k;
      t.count = k - t.first;
    }
    return taps;
  }

  // How many output columns a row sweeps per block of channels. Whole rows keep the taps'
  // loads fewest, but their input reaches L1 one block (one cache line in every pixel's
  // channels) at a time; shorter runs read it pixel after pixel, which pays where it
  // streams from beyond L2, or where few blocks share a long row (MobileNetV2's first
  // 112x112 layers: 20-25% faster).
  int column_run() const {
    const int64_t in_bytes = static_cast<int64_t>(n_) * h_ * w_ * ic_ * static_cast<int64_t>(sizeof(float));
    if (in_bytes > kStreamBytes) return kStreamRun;
    if (oc_ <= kFewChannels) return kFewChannelsRun;
    return std::max(ow_, 1);
  }

  // The bias input (optional), checked to hold one value per output channel.
  const float* bias(const OpContext& ctx) const {
    if (!ctx.has_input(2)) return nullptr;
    const Tensor& b = ctx.input(2);
    check_type(ctx, b, DType::kFloat32, "bias");
    DF_LITE_OP_CHECK(ctx, b.num_elements() == oc_, "bias '", b.name, "' has shape ", shape_string(b.shape),
                     "; expected ", oc_, " values (one per output channel)");
    return b.data<float>();
  }

  // One output pixel for channel multiplier m: output channel ic*m + j reads input channel ic.
  void pixel_multiplier(const Plan& p, int n, int oy, int ox) const {
    const Taps ty = rows_[static_cast<size_t>(oy)], tx = cols_[static_cast<size_t>(ox)];
    const int iy = oy * sh_ - pad_top_ + ty.first * dh_, ix = ox * sw_ - pad_left_ + tx.first * dw_;
    const float* src = p.in + ((static_cast<int64_t>(n) * h_ + iy) * w_ + ix) * ic_;
    const float* f = p.filter + (static_cast<int64_t>(ty.first) * kw_ + tx.first) * oc_;
    float* out = p.out + ((static_cast<int64_t>(n) * oh_ + oy) * ow_ + ox) * oc_;
    for (int c = 0; c < oc_; ++c) out[c] = p.bias[c];
    for (int ky = 0; ky < ty.count; ++ky)
      for (int kx = 0; kx < tx.count; ++kx) {
        const float* s = src + (static_cast<int64_t>(ky) * dh_ * w_ + static_cast<int64_t>(kx) * dw_) * ic_;
        const float* fk = f + (static_cast<int64_t>(ky) * kw_ + kx) * oc_;
        for (int ic = 0; ic < ic_; ++ic) {
          const float v = s[ic];
          float* o = out + ic * mult_;
          const float* fi = fk + ic * mult_;
          for (int j = 0; j < mult_; ++j) o[j] += v * fi[j];
        }
      }
    for (int c = 0; c < oc_; ++c) out[c] = std::min(std::max(out[c], p.lo), p.hi);
  }

  fb::Padding padding_;
  int sh_ = 1, sw_ = 1, dh_ = 1, dw_ = 1;
  fb::ActivationFunctionType act_;
  int n_ = 0, h_ = 0, w_ = 0, ic_ = 0, oh_ = 0, ow_ = 0, oc_ = 0, mult_ = 1, kh_ = 1, kw_ = 1;
  int pad_top_ = 0, pad_left_ = 0;
  std::vector<Taps> rows_, cols_;  // per output row / column
  int x_lo_ = 0, x_hi_ = 0;        // the output columns with every tap inside the image
  std::vector<float> zeros_;       // the bias when there is none
};

}  // namespace

void register_depthwise_conv_kernel(OpResolver& r) {
  r.add_builtin(fb::BuiltinOperator::DEPTHWISE_CONV_2D, make_factory<DepthwiseConv2D>(), 1, 7);
}

}  // namespace deepflow::lite
