// SPDX-License-Identifier: Apache-2.0
// Convolutions on float32 NHWC: CONV_2D (GEMM on the input for 1x1 stride-1 and for
// filters covering the whole image; otherwise a GEMM per output row that reads the inner
// windows in place (sgemm_gather) and the border ones through im2col, or, for grouped
// convolutions and narrow outputs, im2col in row tiles + GEMM) and
// TRANSPOSE_CONV (GEMM + col2im); DEPTHWISE_CONV_2D is in depthwise_conv.cpp. Filters are
// OHWI; constant ones are packed for the GEMM once, at prepare. Padded taps count as zeros.
// int8 convolutions are in int8_ops.cpp, hybrid ones (float input, int8 filter) in
// hybrid.cpp; other quantized forms (uint8, int16) fail with "not supported yet".
#include <cstring>

#include "deepflow/lite/kernels/gemm.h"
#include "deepflow/lite/kernels/kernel_util.h"

namespace deepflow::lite {

namespace {

constexpr int64_t kTileFloats = 1 << 13;  // im2col tile per thread: 32 KiB, stays in L1
constexpr int64_t kMinTileRows = 48;      // a GEMM of fewer rows reuses each B panel too little
constexpr int64_t kGatherRowFloats = 1 << 18;  // the most patches of one output row (1 MiB) the gather mode keeps
constexpr int64_t kColFloats = 1 << 20;   // TRANSPOSE_CONV's column buffer: 4 MiB
constexpr int64_t kGrainFlops = 1 << 16;  // per parallel task of col2im

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

// n floats from src to dst: the runs of im2col are short (a first layer's are 3 pixels of
// 3 channels), too short to pay for a call to memcpy.
inline void copy_floats(float* dst, const float* src, int n) {
  typedef float Eight __attribute__((vector_size(8 * sizeof(float))));
  int q = 0;
  for (; q + 8 <= n; q += 8) {
    Eight v;
    std::memcpy(&v, src + q, sizeof v);
    std::memcpy(dst + q, &v, sizeof v);
  }
  for (; q < n; ++q) dst[q] = src[q];
}

// Spatial geometry shared by the two ops.
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
    slots_ = ctx.pool().size();
    // Inner windows read in place: a row of output pixels is a GEMM on the image with a
    // fixed step between rows of A, where a run of 8 pixels fills the micro-kernel.
    if (mode_ == Mode::kIm2col && groups_ == 1 && ow_ >= 8 &&
        static_cast<int64_t>(ow_) * k_ <= kGatherRowFloats && static_cast<int64_t>(h_) * w_ * ic_ < (1LL << 31)) {
      mode_ = Mode::kGather;
      plan_gather();
      col_.resize(static_cast<size_t>(slots_) * ow_ * k_);
    } else if (mode_ == Mode::kIm2col) {
      const int64_t m = static_cast<int64_t>(n_) * oh_ * ow_;
      // Tiles of about kTileFloats, as many for each thread (a thread's share is whole
      // tiles: an odd one out would leave the others waiting), in multiples of 8 rows (the
      // micro-kernels' heights divide 8 or 6: few short tiles).
      const int64_t rows = std::max<int64_t>(kMinTileRows, kTileFloats / std::max(k_, 1));
      int64_t tiles = std::max<int64_t>(1, (m + rows - 1) / rows);
      if (slots_ > 1 && m >= 8 * slots_) tiles = (std::max<int64_t>(tiles, slots_) + slots_ - 1) / slots_ * slots_;
      tile_rows_ = std::max<int64_t>(1, (m + tiles - 1) / tiles);
      if (tile_rows_ > 8) tile_rows_ = (tile_rows_ + 7) / 8 * 8;
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
    } else if (mode_ == Mode::kGather) {
      eval_gather(pool, in, out, bias);
    } else {
      eval_im2col(pool, in, out, bias);
    }
    finish_activation(ctx, act_);
  }

 private:
  enum class Mode { kOneByOne, kWholeImage, kIm2col, kGather };

  // The gather mode's constants: each patch element's offset from its window's first
  // element, and the output columns and rows whose windows lie inside the image.
  void plan_gather() {
    offsets_.clear();
    for (int ky = 0; ky < win_.kh; ++ky)
      for (int kx = 0; kx < win_.kw; ++kx)
        for (int c = 0; c < icg_; ++c)
          offsets_.push_back(static_cast<int32_t>((static_cast<int64_t>(ky) * win_.dh * w_ + kx * win_.dw) * ic_ + c));
    auto inside = [](int o, int stride, int pad, int kernel, int dilation, int in) {
      const int first = o * stride - pad;
      return first >= 0 && first + (kernel - 1) * dilation < in;
    };
    x_lo_ = 0;
    while (x_lo_ < ow_ && !inside(x_lo_, win_.sw, win_.pad_left, win_.kw, win_.dw, w_)) ++x_lo_;
    x_hi_ = x_lo_;
    while (x_hi_ < ow_ && inside(x_hi_, win_.sw, win_.pad_left, win_.kw, win_.dw, w_)) ++x_hi_;
    row_inside_.assign(static_cast<size_t>(oh_), 0);
    for (int oy = 0; oy < oh_; ++oy)
      row_inside_[static_cast<size_t>(oy)] = inside(oy, win_.sh, win_.pad_top, win_.kh, win_.dh, h_);
  }

  // CONV_2D by output rows: the inner pixels of a row whose windows lie inside the image
  // straight from it (sgemm_gather), the others through im2col. Each thread takes whole
  // rows, with its own row of patches for the borders.
  void eval_gather(ThreadPool& pool, const float* in, float* out, const float* bias) {
    const int64_t rows = static_cast<int64_t>(n_) * oh_;
    const GemmEpilogue e = epilogue(bias, act_);
    const PackedB& b = packed_[0];
    auto patches = [&](int64_t r, int ox0, int ox1, float* col) {
      if (ox0 >= ox1) return;
      im2col(in, r * ow_ + ox0, r * ow_ + ox1, 0, col);
      sgemm(nullptr, ox1 - ox0, col, k_, Layout::kRowMajor, b, out + (r * ow_ + ox0) * oc_, oc_, e);
    };
    auto run_rows = [&](int64_t lo, int64_t hi, float* col) {
      for (int64_t r = lo; r < hi; ++r) {
        const int n = static_cast<int>(r / oh_), oy = static_cast<int>(r % oh_);
        if (!row_inside_[static_cast<size_t>(oy)] || x_lo_ >= x_hi_) {
          patches(r, 0, ow_, col);
          continue;
        }
        const int y0 = oy * win_.sh - win_.pad_top, x0 = x_lo_ * win_.sw - win_.pad_left;
        const float* a = in + ((static_cast<int64_t>(n) * h_ + y0) * w_ + x0) * ic_;
        sgemm_gather(x_hi_ - x_lo_, a, win_.sw * ic_, offsets_.data(), b, out + (r * ow_ + x_lo_) * oc_, oc_, e);
        patches(r, 0, x_lo_, col);
        patches(r, x_hi_, ow_, col);
      }
    };
    if (slots_ > 1 && rows >= slots_) {
      pool.parallel_for(slots_, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t s = lo; s < hi; ++s)
          run_rows(rows * s / slots_, rows * (s + 1) / slots_, col_.data() + s * ow_ * k_);
      });
    } else {
      run_rows(0, rows, col_.data());
    }
  }

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
  // It goes one output row and one filter row at a time, so the inner loop over pixels only
  // steps pointers (a first layer's patch runs are 9 floats: bookkeeping would dominate).
  void im2col(const float* in, int64_t r0, int64_t r1, int g, float* col) const {
    const Window win = win_;  // locals: the stores below could otherwise alias the members
    const int k = k_, ic = ic_, icg = icg_, w = w_, h = h_, tap_run = win.kw * icg;
    const bool contiguous = win.dw == 1 && groups_ == 1;  // a filter row's taps are one run
    for (int64_t r = r0; r < r1;) {
      const int ox0 = static_cast<int>(r % ow_);
      const int oy = static_cast<int>(r / ow_ % oh_), n = static_cast<int>(r / ow_ / oh_);
      const int ox1 = static_cast<int>(std::min<int64_t>(ow_, ox0 + (r1 - r)));
      float* dst_row = col + (r - r0) * k;
      for (int ky = 0; ky < win.kh; ++ky) {
        float* dst = dst_row + ky * tap_run;
        const int iy = oy * win.sh - win.pad_top + ky * win.dh;
        if (iy < 0 || iy >= h) {
          for (int ox = ox0; ox < ox1; ++ox, dst += k) std::fill(dst, dst + tap_run, 0.f);
          continue;
        }
        const float* src_row = in + (static_cast<int64_t>(n) * h + iy) * w * ic + g * icg;
        for (int ox = ox0; ox < ox1; ++ox, dst += k) {
          const int x0 = ox * win.sw - win.pad_left;
          if (contiguous && x0 >= 0 && x0 + win.kw <= w) {
            copy_floats(dst, src_row + static_cast<int64_t>(x0) * ic, tap_run);
            continue;
          }
          for (int kx = 0; kx < win.kw; ++kx) {
            const int ix = x0 + kx * win.dw;
            float* d = dst + kx * icg;
            if (ix < 0 || ix >= w)
              std::fill(d, d + icg, 0.f);
            else
              copy_floats(d, src_row + static_cast<int64_t>(ix) * ic, icg);
          }
        }
      }
      r += ox1 - ox0;
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
  std::vector<int32_t> offsets_;   // kGather: patch element p at offsets_[p] from the window's start
  int x_lo_ = 0, x_hi_ = 0;        // kGather: the output columns whose windows lie inside the image
  std::vector<char> row_inside_;   // kGather: per output row, whether its windows lie inside
  std::vector<float> col_;
  std::vector<PackedB> packed_;  // per group
  bool packed_ok_ = false;       // packed_ holds this prepare's constant filter
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

// DEPTHWISE_CONV_2D, in depthwise_conv.cpp.
void register_depthwise_conv_kernel(OpResolver& r);

void register_conv_kernels(OpResolver& r) {
  r.add_builtin(fb::BuiltinOperator::CONV_2D, make_factory<Conv2D>(), 1, 8);
  register_depthwise_conv_kernel(r);
  r.add_builtin(fb::BuiltinOperator::TRANSPOSE_CONV, make_factory<TransposeConv>(), 1, 4);
}

}  // namespace deepflow::lite
