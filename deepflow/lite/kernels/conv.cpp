// SPDX-License-Identifier: Apache-2.0
// Convolutions on float32 NHWC: CONV_2D (GEMM on the input for 1x1 stride-1 and for
// filters covering the whole image; otherwise im2col in row tiles + GEMM), DEPTHWISE_CONV_2D
// (a direct loop vectorized over channels) and TRANSPOSE_CONV (GEMM + col2im). Filters are
// OHWI; constant ones are packed for the GEMM once, at prepare. Padded taps count as zeros.
// Quantized (int8 / uint8 / int16) and hybrid (float input, int8 filter) convolutions fail
// with "not supported yet".
#include <cstring>

#include "deepflow/lite/kernels/gemm.h"
#include "deepflow/lite/kernels/kernel_util.h"

namespace deepflow::lite {

namespace {

constexpr int64_t kTileFloats = 1 << 16;  // im2col tile per thread: 256 KiB, stays in L2
constexpr int64_t kMinTileRows = 48;      // a GEMM of fewer rows reuses each B panel too little
constexpr int64_t kColFloats = 1 << 20;   // TRANSPOSE_CONV's column buffer: 4 MiB
constexpr int64_t kGrainFlops = 1 << 16;  // per parallel task of the direct loops

// Fails unless the op's tensors are the float32 this file computes in.
void require_float(const OpContext& ctx, const Tensor& input, const Tensor& filter) {
  if (input.type != DType::kFloat32)
    ctx.fail(dtype_name(input.type), " ", ctx.op_name(), " is not supported yet (input '", input.name, "')");
  if (filter.type != DType::kFloat32)
    ctx.fail("hybrid (", dtype_name(input.type), " input, ", dtype_name(filter.type), " filter) ", ctx.op_name(),
             " is not supported yet (filter '", filter.name, "')");
  check_type(ctx, ctx.output(0), DType::kFloat32, "output");
}

// The bias input (optional) as a float pointer checked to hold `channels` values.
const float* bias_data(const OpContext& ctx, int index, int channels) {
  if (!ctx.has_input(index)) return nullptr;
  const Tensor& b = ctx.input(index);
  check_type(ctx, b, DType::kFloat32, "bias");
  DF_LITE_OP_CHECK(ctx, b.num_elements() == channels, "bias '", b.name, "' has shape ", shape_string(b.shape),
                   "; expected ", channels, " values (one per output channel)");
  return b.data<float>();
}

// The clamp of a fused activation goes into the GEMM's epilogue; TANH and SIGN_BIT are not
// clamps and run over the output afterwards.
bool is_clamp(fb::ActivationFunctionType act) {
  return act != fb::ActivationFunctionType::TANH && act != fb::ActivationFunctionType::SIGN_BIT;
}

GemmEpilogue epilogue(const float* bias, fb::ActivationFunctionType act) {
  GemmEpilogue e;
  e.bias = bias;
  if (is_clamp(act)) {
    const FloatRange r = activation_range(act);
    e.lo = r.lo;
    e.hi = r.hi;
  }
  return e;
}

void finish_activation(OpContext& ctx, fb::ActivationFunctionType act) {
  if (!is_clamp(act)) apply_activation(act, ctx.output(0).data<float>(), ctx.output(0).num_elements());
}

// Spatial geometry shared by the three ops.
struct Window {
  int kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int pad_top = 0, pad_left = 0;
};

class Conv2D final : public Kernel {
 public:
  explicit Conv2D(const OpContext& ctx) {
    const auto* o = ctx.options<fb::Conv2DOptions>();
    DF_LITE_OP_CHECK(ctx, o != nullptr, "has no Conv2DOptions");
    padding_ = o->padding();
    win_.sh = o->stride_h();
    win_.sw = o->stride_w();
    win_.dh = o->dilation_h_factor();
    win_.dw = o->dilation_w_factor();
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
    oc_ = w.dim(0), win_.kh = w.dim(1), win_.kw = w.dim(2), icg_ = w.dim(3);
    DF_LITE_OP_CHECK(ctx, icg_ > 0 && ic_ % icg_ == 0, "input ", shape_string(x.shape), " has ", ic_,
                     " channels: not a multiple of filter ", shape_string(w.shape), "'s input depth ", icg_);
    groups_ = ic_ / icg_;
    DF_LITE_OP_CHECK(ctx, oc_ % groups_ == 0, "filter ", shape_string(w.shape), " has ", oc_,
                     " output channels: not a multiple of the ", groups_, " groups of input ", shape_string(x.shape));
    ocg_ = oc_ / groups_;
    bias_data(ctx, 2, oc_);
    const PaddedDim ph = padded_dim(ctx, padding_, h_, win_.kh, win_.sh, win_.dh);
    const PaddedDim pw = padded_dim(ctx, padding_, w_, win_.kw, win_.sw, win_.dw);
    oh_ = ph.out, ow_ = pw.out, win_.pad_top = ph.pad_before, win_.pad_left = pw.pad_before;
    ctx.resize_output(0, {n_, oh_, ow_, oc_});

    k_ = win_.kh * win_.kw * icg_;
    const bool one_by_one = win_.kh == 1 && win_.kw == 1 && win_.sh == 1 && win_.sw == 1;
    // A filter as large as the (unpadded) image: its only patch is the whole image, in the
    // filter's (h, w, c) order already. TFLite files write FULLY_CONNECTEDs this way.
    const bool whole_image = oh_ == 1 && ow_ == 1 && win_.kh == h_ && win_.kw == w_ && win_.pad_top == 0 &&
                             win_.pad_left == 0 && (win_.dh == 1 || h_ == 1) && (win_.dw == 1 || w_ == 1) &&
                             groups_ == 1;
    mode_ = one_by_one ? Mode::kOneByOne : whole_image ? Mode::kWholeImage : Mode::kIm2col;
    if (mode_ == Mode::kIm2col) {
      const int64_t m = static_cast<int64_t>(n_) * oh_ * ow_;
      slots_ = ctx.pool().size();
      tile_rows_ = std::max<int64_t>(kMinTileRows, kTileFloats / std::max(k_, 1));
      // Enough tiles for every thread, when the image has rows enough to share.
      tile_rows_ = std::max<int64_t>(1, std::min(tile_rows_, std::max<int64_t>(6, (m + slots_ - 1) / slots_)));
      tile_rows_ = std::min<int64_t>(tile_rows_, std::max<int64_t>(m, 1));
      col_.resize(static_cast<size_t>(slots_ * tile_rows_ * k_));
    } else {
      col_.clear();
    }
    packed_.resize(static_cast<size_t>(groups_));
    packed_ok_ = w.is_constant() && w.data_ptr != nullptr;
    if (packed_ok_) pack(ctx);
  }

  void eval(OpContext& ctx) override {
    if (!packed_ok_) pack(ctx);
    const float* in = ctx.input(0).data<float>();
    float* out = ctx.output(0).data<float>();
    const float* bias = bias_data(ctx, 2, oc_);
    const int64_t m = static_cast<int64_t>(n_) * oh_ * ow_;
    if (m == 0 || oc_ == 0) return;
    ThreadPool& pool = ctx.pool();
    if (mode_ == Mode::kOneByOne) {
      for (int g = 0; g < groups_; ++g)
        sgemm(&pool, static_cast<int>(m), in + g * icg_, ic_, Layout::kRowMajor, packed_[static_cast<size_t>(g)],
              out + g * ocg_, oc_, epilogue(bias ? bias + g * ocg_ : nullptr, act_));
    } else if (mode_ == Mode::kWholeImage) {
      sgemm(&pool, n_, in, k_, Layout::kRowMajor, packed_[0], out, oc_, epilogue(bias, act_));
    } else {
      eval_im2col(pool, in, out, bias);
    }
    finish_activation(ctx, act_);
  }

 private:
  enum class Mode { kOneByOne, kWholeImage, kIm2col };

  void pack(OpContext& ctx) {
    const float* w = ctx.input(1).data<float>();
    for (int g = 0; g < groups_; ++g)
      packed_[static_cast<size_t>(g)].pack(w + static_cast<int64_t>(g) * ocg_ * k_, k_, ocg_, k_, Layout::kTransposed,
                                           &ctx.pool());
  }

  void eval_im2col(ThreadPool& pool, const float* in, float* out, const float* bias) {
    const int64_t m = static_cast<int64_t>(n_) * oh_ * ow_;
    const int64_t tiles = (m + tile_rows_ - 1) / tile_rows_;
    auto run_tile = [&](int64_t t, float* col, ThreadPool* gemm_pool) {
      const int64_t r0 = t * tile_rows_, r1 = std::min(m, r0 + tile_rows_);
      for (int g = 0; g < groups_; ++g) {
        im2col(in, r0, r1, g, col);
        sgemm(gemm_pool, static_cast<int>(r1 - r0), col, k_, Layout::kRowMajor, packed_[static_cast<size_t>(g)],
              out + r0 * oc_ + g * ocg_, oc_, epilogue(bias ? bias + g * ocg_ : nullptr, act_));
      }
    };
    if (slots_ > 1 && tiles >= slots_) {
      // A thread per slot, each with its own tile buffer and a single-threaded GEMM.
      pool.parallel_for(slots_, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t s = lo; s < hi; ++s)
          for (int64_t t = tiles * s / slots_; t < tiles * (s + 1) / slots_; ++t)
            run_tile(t, col_.data() + s * tile_rows_ * k_, nullptr);
      });
    } else {
      for (int64_t t = 0; t < tiles; ++t) run_tile(t, col_.data(), &pool);
    }
  }

  // Rows [r0, r1) of the patch matrix of group g: row r is output pixel r (n, oy, ox) and
  // holds its patch in the filter's (kh, kw, c) order, zeros where the patch leaves the image.
  void im2col(const float* in, int64_t r0, int64_t r1, int g, float* col) const {
    int ox = static_cast<int>(r0 % ow_);
    int oy = static_cast<int>(r0 / ow_ % oh_);
    int n = static_cast<int>(r0 / ow_ / oh_);
    const size_t run = static_cast<size_t>(icg_) * sizeof(float);
    for (int64_t r = r0; r < r1; ++r) {
      float* dst = col + (r - r0) * k_;
      const int y0 = oy * win_.sh - win_.pad_top, x0 = ox * win_.sw - win_.pad_left;
      for (int ky = 0; ky < win_.kh; ++ky) {
        const int iy = y0 + ky * win_.dh;
        if (iy < 0 || iy >= h_) {
          std::fill(dst, dst + win_.kw * icg_, 0.f);
          dst += win_.kw * icg_;
          continue;
        }
        const float* src_row = in + (static_cast<int64_t>(n) * h_ + iy) * w_ * ic_ + g * icg_;
        if (win_.dw == 1 && groups_ == 1) {
          // Adjacent taps are adjacent pixels: one copy for the part inside the image.
          const int kx0 = std::clamp(-x0, 0, win_.kw), kx1 = std::clamp(w_ - x0, kx0, win_.kw);
          std::fill(dst, dst + kx0 * icg_, 0.f);
          std::memcpy(dst + kx0 * icg_, src_row + static_cast<int64_t>(x0 + kx0) * ic_,
                      static_cast<size_t>(kx1 - kx0) * run);
          std::fill(dst + kx1 * icg_, dst + win_.kw * icg_, 0.f);
          dst += win_.kw * icg_;
          continue;
        }
        for (int kx = 0; kx < win_.kw; ++kx, dst += icg_) {
          const int ix = x0 + kx * win_.dw;
          if (ix < 0 || ix >= w_)
            std::fill(dst, dst + icg_, 0.f);
          else
            std::memcpy(dst, src_row + static_cast<int64_t>(ix) * ic_, run);
        }
      }
      if (++ox == ow_) {
        ox = 0;
        if (++oy == oh_) oy = 0, ++n;
      }
    }
  }

  fb::Padding padding_;
  Window win_;
  fb::ActivationFunctionType act_;
  int n_ = 0, h_ = 0, w_ = 0, ic_ = 0, oh_ = 0, ow_ = 0, oc_ = 0;
  int icg_ = 0, ocg_ = 0, groups_ = 1, k_ = 0;
  Mode mode_ = Mode::kIm2col;
  int slots_ = 1;
  int64_t tile_rows_ = 1;
  std::vector<float> col_;
  std::vector<PackedB> packed_;  // per group
  bool packed_ok_ = false;       // packed_ holds this prepare's constant filter
};

// Channels [0, W) of one depthwise output pixel (channel multiplier 1): the accumulators
// stay in registers over all taps. src and f point at the first valid tap.
template <int W>
inline void depthwise_block(const float* src, int64_t src_row, int64_t src_col, const float* f, int64_t f_row,
                            int64_t f_col, int rows, int cols, const float* bias, FloatRange range, float* out) {
  float acc[W];
  for (int c = 0; c < W; ++c) acc[c] = bias[c];
  for (int ky = 0; ky < rows; ++ky) {
    const float* s = src + ky * src_row;
    const float* w = f + ky * f_row;
    for (int kx = 0; kx < cols; ++kx, s += src_col, w += f_col)
      for (int c = 0; c < W; ++c) acc[c] += s[c] * w[c];
  }
  for (int c = 0; c < W; ++c) out[c] = std::min(std::max(acc[c], range.lo), range.hi);
}

class DepthwiseConv2D final : public Kernel {
 public:
  explicit DepthwiseConv2D(const OpContext& ctx) {
    const auto* o = ctx.options<fb::DepthwiseConv2DOptions>();
    DF_LITE_OP_CHECK(ctx, o != nullptr, "has no DepthwiseConv2DOptions");
    padding_ = o->padding();
    win_.sh = o->stride_h();
    win_.sw = o->stride_w();
    win_.dh = o->dilation_h_factor();
    win_.dw = o->dilation_w_factor();
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
    win_.kh = w.dim(1), win_.kw = w.dim(2), oc_ = w.dim(3);
    DF_LITE_OP_CHECK(ctx, w.dim(0) == 1, "filter ", shape_string(w.shape), " must be [1, height, width, channels]");
    // The options' depth_multiplier is redundant (and 0 in some files): the shapes decide.
    DF_LITE_OP_CHECK(ctx, ic_ > 0 && oc_ % ic_ == 0, "filter ", shape_string(w.shape), " has ", oc_,
                     " channels: not a multiple of input ", shape_string(x.shape), "'s ", ic_);
    mult_ = oc_ / ic_;
    bias_data(ctx, 2, oc_);
    const PaddedDim ph = padded_dim(ctx, padding_, h_, win_.kh, win_.sh, win_.dh);
    const PaddedDim pw = padded_dim(ctx, padding_, w_, win_.kw, win_.sw, win_.dw);
    oh_ = ph.out, ow_ = pw.out, win_.pad_top = ph.pad_before, win_.pad_left = pw.pad_before;
    ctx.resize_output(0, {n_, oh_, ow_, oc_});
    // Per output row and column, the taps inside the image (skipping a padded tap is
    // adding zero), found once here rather than per pixel.
    rows_ = valid_taps(oh_, win_.sh, win_.pad_top, win_.kh, win_.dh, h_);
    cols_ = valid_taps(ow_, win_.sw, win_.pad_left, win_.kw, win_.dw, w_);
    zeros_.assign(static_cast<size_t>(oc_), 0.f);
  }

  void eval(OpContext& ctx) override {
    const float* in = ctx.input(0).data<float>();
    const float* filter = ctx.input(1).data<float>();
    const float* bias = bias_data(ctx, 2, oc_);
    if (!bias) bias = zeros_.data();
    float* out = ctx.output(0).data<float>();
    const FloatRange range = is_clamp(act_) ? activation_range(act_) : FloatRange{};
    const int64_t rows = static_cast<int64_t>(n_) * oh_;
    const int64_t row_flops = std::max<int64_t>(1, 2LL * ow_ * oc_ * win_.kh * win_.kw);
    ctx.pool().parallel_for(rows, std::max<int64_t>(1, kGrainFlops / row_flops), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const int n = static_cast<int>(r / oh_), oy = static_cast<int>(r % oh_);
        for (int ox = 0; ox < ow_; ++ox) pixel(in, filter, bias, range, n, oy, ox, out + (r * ow_ + ox) * oc_);
      }
    });
    finish_activation(ctx, act_);
  }

 private:
  struct Taps {
    int first = 0, count = 0;
  };

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

  void pixel(const float* in, const float* filter, const float* bias, FloatRange range, int n, int oy, int ox,
             float* out) const {
    const Taps ty = rows_[static_cast<size_t>(oy)], tx = cols_[static_cast<size_t>(ox)];
    const int iy = oy * win_.sh - win_.pad_top + ty.first * win_.dh;
    const int ix = ox * win_.sw - win_.pad_left + tx.first * win_.dw;
    const float* src = in + ((static_cast<int64_t>(n) * h_ + iy) * w_ + ix) * ic_;
    const float* f = filter + (static_cast<int64_t>(ty.first) * win_.kw + tx.first) * oc_;
    const int64_t src_row = static_cast<int64_t>(win_.dh) * w_ * ic_, src_col = static_cast<int64_t>(win_.dw) * ic_;
    const int64_t f_row = static_cast<int64_t>(win_.kw) * oc_;
    if (mult_ == 1) {
      int c = 0;
      for (; c + 16 <= oc_; c += 16)
        depthwise_block<16>(src + c, src_row, src_col, f + c, f_row, oc_, ty.count, tx.count, bias + c, range, out + c);
      if (c + 8 <= oc_) {
        depthwise_block<8>(src + c, src_row, src_col, f + c, f_row, oc_, ty.count, tx.count, bias + c, range, out + c);
        c += 8;
      }
      for (; c < oc_; ++c)
        depthwise_block<1>(src + c, src_row, src_col, f + c, f_row, oc_, ty.count, tx.count, bias + c, range, out + c);
      return;
    }
    // Channel multiplier m: output channel ic*m + j reads input channel ic.
    for (int c = 0; c < oc_; ++c) out[c] = bias[c];
    for (int ky = 0; ky < ty.count; ++ky)
      for (int kx = 0; kx < tx.count; ++kx) {
        const float* s = src + ky * src_row + kx * src_col;
        const float* fk = f + ky * f_row + kx * oc_;
        for (int ic = 0; ic < ic_; ++ic) {
          const float v = s[ic];
          float* o = out + ic * mult_;
          const float* fi = fk + ic * mult_;
          for (int j = 0; j < mult_; ++j) o[j] += v * fi[j];
        }
      }
    for (int c = 0; c < oc_; ++c) out[c] = std::min(std::max(out[c], range.lo), range.hi);
  }

  fb::Padding padding_;
  Window win_;
  fb::ActivationFunctionType act_;
  int n_ = 0, h_ = 0, w_ = 0, ic_ = 0, oh_ = 0, ow_ = 0, oc_ = 0, mult_ = 1;
  std::vector<Taps> rows_, cols_;  // per output row / column
  std::vector<float> zeros_;       // the bias when there is none
};

// TRANSPOSE_CONV: every input pixel scatters its filter-weighted channels over a
// kh x kw window of the output. As a GEMM: col[pixel, (ky, kx, oc)] = input[pixel, :] .
// filter[oc, ky, kx, :], then col2im adds each column block into its output pixel.
class TransposeConv final : public Kernel {
 public:
  explicit TransposeConv(const OpContext& ctx) {
    const auto* o = ctx.options<fb::TransposeConvOptions>();
    DF_LITE_OP_CHECK(ctx, o != nullptr, "has no TransposeConvOptions");
    padding_ = o->padding();
    win_.sh = o->stride_h();
    win_.sw = o->stride_w();
    act_ = o->fused_activation_function();
  }

  void prepare(OpContext& ctx) override {
    const Tensor& shape = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor& x = ctx.input(2);
    require_float(ctx, x, w);
    check_rank(ctx, x, 4, "input");
    check_rank(ctx, w, 4, "filter");
    check_activation(ctx, act_);
    DF_LITE_OP_CHECK(ctx, shape.num_elements() == 4, "output_shape '", shape.name, "' has shape ",
                     shape_string(shape.shape), "; expected 4 values");
    DF_LITE_OP_CHECK(ctx, w.dim(3) == x.dim(3), "filter ", shape_string(w.shape), " has input depth ", w.dim(3),
                     "; input ", shape_string(x.shape), " has ", x.dim(3), " channels");
    oc_ = w.dim(0), win_.kh = w.dim(1), win_.kw = w.dim(2), ic_ = w.dim(3);
    n_ = x.dim(0), h_ = x.dim(1), w_ = x.dim(2);
    if (ctx.has_input(3)) bias_data(ctx, 3, oc_);
    if (shape.is_constant()) {
      set_output_shape(ctx);
    } else {
      ctx.mark_dynamic(0);
    }
    const int taps = win_.kh * win_.kw;
    packed_ok_ = w.is_constant() && w.data_ptr != nullptr;
    if (packed_ok_) pack(ctx);
    const int64_t row = static_cast<int64_t>(w_) * taps * oc_;
    tile_rows_ = std::max<int64_t>(1, kColFloats / std::max<int64_t>(row, 1));
    col_.resize(static_cast<size_t>(std::min<int64_t>(tile_rows_, static_cast<int64_t>(n_) * h_) * row));
  }

  void eval(OpContext& ctx) override {
    if (!ctx.input(0).is_constant()) set_output_shape(ctx);
    if (!packed_ok_) pack(ctx);
    const float* in = ctx.input(2).data<float>();
    const float* bias = ctx.has_input(3) ? bias_data(ctx, 3, oc_) : nullptr;
    Tensor& y = ctx.output(0);
    float* out = y.data<float>();
    const int64_t out_pixels = static_cast<int64_t>(n_) * oh_ * ow_;
    for (int64_t p = 0; p < out_pixels; ++p)
      for (int c = 0; c < oc_; ++c) out[p * oc_ + c] = bias ? bias[c] : 0.f;
    ThreadPool& pool = ctx.pool();
    const int taps = win_.kh * win_.kw;
    const int64_t in_rows = static_cast<int64_t>(n_) * h_;
    for (int64_t r0 = 0; r0 < in_rows; r0 += tile_rows_) {
      const int64_t r1 = std::min(in_rows, r0 + tile_rows_);
      sgemm(&pool, static_cast<int>((r1 - r0) * w_), in + r0 * w_ * ic_, ic_, Layout::kRowMajor, packed_,
            col_.data(), taps * oc_);
      // Gather per output row (rows are independent, so threads never write the same one).
      const int n0 = static_cast<int>(r0 / h_), n1 = static_cast<int>((r1 - 1) / h_);
      const int64_t q0 = static_cast<int64_t>(n0) * oh_, q1 = static_cast<int64_t>(n1 + 1) * oh_;
      const int64_t row_flops = std::max<int64_t>(1, static_cast<int64_t>(w_) * taps * oc_);
      pool.parallel_for(q1 - q0, std::max<int64_t>(1, kGrainFlops / row_flops), [&](int64_t lo, int64_t hi) {
        for (int64_t q = q0 + lo; q < q0 + hi; ++q) col2im_row(q, r0, r1, out);
      });
    }
    // Only now is each sum complete.
    apply_activation(act_, out, y.num_elements());
  }

 private:
  void set_output_shape(OpContext& ctx) {
    const std::vector<int> s = int_values(ctx, ctx.input(0), "output_shape");
    DF_LITE_OP_CHECK(ctx, s[0] == n_ && s[3] == oc_ && s[1] >= 0 && s[2] >= 0, "output_shape ", shape_string(s),
                     " does not match input ", shape_string(ctx.input(2).shape), " and filter ",
                     shape_string(ctx.input(1).shape));
    oh_ = s[1], ow_ = s[2];
    // TFLite's rule: the padding of a forward convolution from the output to the input.
    win_.pad_top = padded_dim(ctx, padding_, oh_, win_.kh, win_.sh, 1).pad_before;
    win_.pad_left = padded_dim(ctx, padding_, ow_, win_.kw, win_.sw, 1).pad_before;
    ctx.resize_output(0, s);
  }

  // The filter as B = [(ky, kx, oc), ic] (transposed), so each tap's block of a col row is
  // contiguous over oc.
  void pack(OpContext& ctx) {
    const float* w = ctx.input(1).data<float>();
    const int taps = win_.kh * win_.kw;
    reordered_.resize(static_cast<size_t>(taps) * oc_ * ic_);
    for (int oc = 0; oc < oc_; ++oc)
      for (int t = 0; t < taps; ++t)
        std::memcpy(reordered_.data() + (static_cast<int64_t>(t) * oc_ + oc) * ic_,
                    w + (static_cast<int64_t>(oc) * taps + t) * ic_, static_cast<size_t>(ic_) * sizeof(float));
    packed_.pack(reordered_.data(), ic_, taps * oc_, ic_, Layout::kTransposed, &ctx.pool());
  }

  // Adds into global output row q (batch n, row oy) what input rows [r0, r1) give it.
  void col2im_row(int64_t q, int64_t r0, int64_t r1, float* out) const {
    const int n = static_cast<int>(q / oh_), oy = static_cast<int>(q % oh_);
    const int taps_w = win_.kw;
    for (int ky = 0; ky < win_.kh; ++ky) {
      const int t = oy + win_.pad_top - ky;  // = iy * stride
      if (t < 0 || t % win_.sh) continue;
      const int64_t r = static_cast<int64_t>(n) * h_ + t / win_.sh;
      if (t / win_.sh >= h_ || r < r0 || r >= r1) continue;
      const float* col_row = col_.data() + (r - r0) * w_ * win_.kh * taps_w * oc_;
      for (int ix = 0; ix < w_; ++ix) {
        const float* src = col_row + static_cast<int64_t>(ix) * win_.kh * taps_w * oc_;
        for (int kx = 0; kx < taps_w; ++kx) {
          const int ox = ix * win_.sw - win_.pad_left + kx;
          if (ox < 0 || ox >= ow_) continue;
          const float* s = src + static_cast<int64_t>(ky * taps_w + kx) * oc_;
          float* o = out + (q * ow_ + ox) * oc_;
          for (int c = 0; c < oc_; ++c) o[c] += s[c];
        }
      }
    }
  }

  fb::Padding padding_;
  Window win_;
  fb::ActivationFunctionType act_;
  int n_ = 0, h_ = 0, w_ = 0, ic_ = 0, oh_ = 0, ow_ = 0, oc_ = 0;
  int64_t tile_rows_ = 1;  // input rows (n, iy) per GEMM
  std::vector<float> reordered_;
  std::vector<float> col_;
  PackedB packed_;
  bool packed_ok_ = false;
};

}  // namespace

void register_conv_kernels(OpResolver& r) {
  r.add_builtin(fb::BuiltinOperator::CONV_2D, make_factory<Conv2D>(), 1, 8);
  r.add_builtin(fb::BuiltinOperator::DEPTHWISE_CONV_2D, make_factory<DepthwiseConv2D>(), 1, 7);
  r.add_builtin(fb::BuiltinOperator::TRANSPOSE_CONV, make_factory<TransposeConv>(), 1, 4);
}

}  // namespace deepflow::lite
