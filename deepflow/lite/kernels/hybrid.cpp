// SPDX-License-Identifier: Apache-2.0
// Dynamic-range ("hybrid") kernels: float32 activations with int8 symmetric weights, what
// TensorFlow's converter writes with Optimize.DEFAULT and no representative dataset.
// FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D and BATCH_MATMUL quantize their float input on
// the fly, multiply int8 x int8 into int32, and scale back to float with the input's and
// the weights' scales, then add the float bias and apply the fused activation.
//
// The arithmetic is LiteRT's (tflite/kernels/{fully_connected,conv,depthwise_conv,
// batch_matmul}.cc, the reference kernels they call, and tensor_utils' quantizers as its x86
// builds compile them: the NEON versions through NEON_2_SSE):
// - Input quantization. FC and BATCH_MATMUL: per row of the input's last dimension,
//   asymmetric ([-128, 127], with a zero point) when the op's asymmetric_quantize_inputs is
//   set (TF 2.21's converter sets it), else symmetric ([-127, 127], scale max|x| / 127).
//   CONV_2D and DEPTHWISE_CONV_2D: per batch item over the whole image, asymmetric, except
//   a CONV_2D whose filter has one scale (or all scales equal): symmetric.
// - The int32 products are exact; padded taps count as real zeros (the zero point).
// - Back to float, in LiteRT's order of roundings: FC / BATCH_MATMUL acc * (s_in * s_w[c]);
//   CONV_2D per-channel (acc * s_w[c]) * s_in, per-tensor acc * (s_in * s_w); DEPTHWISE
//   acc * (s_w[c] * s_in); then + bias. BATCH_MATMUL takes the zero point's term off in
//   float, as LiteRT does. Each product is rounded before the add (no FMA), so outputs
//   match LiteRT's bit for bit but for its tanh / sigmoid.
// register_hybrid_kernels wraps the registrations of these ops: a float32 input with int8
// weights picks the kernel here, anything else the kernel registered before.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "deepflow/lite/kernels/kernel_util.h"

namespace deepflow::lite {

namespace {

constexpr int64_t kGrainMacs = 1 << 16;    // int8 multiply-adds per parallel task, at least
constexpr int64_t kTileBytes = 1 << 15;    // a CONV_2D patch tile per thread (L1)
constexpr int kWeightRows = 4;             // weight rows the dot kernel takes at once

// x rounded to float on its own: GCC fuses a product into a later add across statements
// (-ffp-contract=fast, and the library is built with FMA), which would round differently
// from LiteRT now and then and move a quantized input across a rounding boundary.
inline float rounded(float x) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __asm__("" : "+x"(x));
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__("" : "+w"(x));
#else
  volatile float v = x;
  x = v;
#endif
  return x;
}

// How a row (or image) of float input was quantized: real = scale * (q - zero_point).
struct RowQuant {
  float scale = 1.f;
  int32_t zero_point = 0;
};

// LiteRT's x86 builds compile tensor_utils' quantizers from their NEON versions through
// NEON_2_SSE (neon_check.h: SSE4.1 defines USE_NEON), not from the portable ones: blocks of
// 8 values round as trunc(y + 0.5 * sign(y)) with a float add (vcvtq_s32_f32 truncates), the
// rest with std::round. The two differ only where y + 0.5 rounds up to an integer in float.
constexpr int kNeonBlock = 8;

inline int32_t round_neon(float y) { return static_cast<int32_t>(y + (y < 0.f ? -0.5f : 0.5f)); }

// NeonSymmetricQuantizeFloats: scale max|x| / 127, q = round(x * (127 / max|x|)) in
// [-127, 127]; an all-zero input gets scale 1.
RowQuant quantize_symmetric(const float* x, int64_t n, int8_t* q) {
  if (n == 0) return {};
  const auto mm = std::minmax_element(x, x + n);
  const float range = std::max(std::fabs(*mm.first), std::fabs(*mm.second));
  if (range == 0) {
    std::memset(q, 0, static_cast<size_t>(n));
    return {};
  }
  const float inv = 127.f / range;
  const int64_t blocks = n / kNeonBlock * kNeonBlock;
  for (int64_t i = 0; i < n; ++i) {
    const float y = rounded(x[i] * inv);
    const int32_t v = i < blocks ? round_neon(y) : static_cast<int32_t>(std::round(y));
    q[i] = static_cast<int8_t>(std::min(127, std::max(-127, v)));
  }
  return {range / 127.f, 0};
}

// NeonAsymmetricQuantizeFloats: the range [min(x, 0), max(x, 0)] (its width a float
// difference, the rest in double) over 255 steps, the zero point from whichever end errs
// less, then q = zp + round(x * (1 / scale)), the reciprocal taken in double.
RowQuant quantize_asymmetric(const float* x, int64_t n, int8_t* q) {
  if (n == 0) return {};
  const auto mm = std::minmax_element(x, x + n);
  const float fmin = std::min(0.f, *mm.first), fmax = std::max(0.f, *mm.second);
  if (fmin == fmax) {
    std::memset(q, 0, static_cast<size_t>(n));
    return {};
  }
  const double rmin = fmin, rmax = fmax;
  const double scale = static_cast<double>(fmax - fmin) / 255.0;
  const double from_min = -128.0 - rmin / scale, from_max = 127.0 - rmax / scale;
  const double err_min = 128.0 + std::fabs(rmin / scale), err_max = 127.0 + std::fabs(rmax / scale);
  const double zp = err_min < err_max ? from_min : from_max;
  RowQuant r;
  r.scale = static_cast<float>(scale);
  r.zero_point = zp <= -128.0 ? -128 : zp >= 127.0 ? 127 : static_cast<int32_t>(std::round(zp));
  const auto inv = static_cast<float>(1.0 / static_cast<double>(r.scale));
  const int64_t blocks = n / kNeonBlock * kNeonBlock;
  for (int64_t i = 0; i < n; ++i) {
    const float y = rounded(x[i] * inv);
    const int32_t v = r.zero_point + (i < blocks ? round_neon(y) : static_cast<int32_t>(std::round(y)));
    q[i] = static_cast<int8_t>(std::min(127, std::max(-128, v)));
  }
  return r;
}

#if defined(__AVX2__)
inline int32_t horizontal_sum(__m256i v) {
  __m128i x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4E));
  x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xB1));
  return _mm_cvtsi128_si32(x);
}
#endif

// acc[j] = sum over p < k of a[p] * b[j * ldb + p], for J weight rows: one input row
// against J rows of weights, exact in int32 (pairs of int16 products sum in int32).
template <int J>
inline void dot_rows(const int8_t* a, const int8_t* b, int64_t ldb, int k, int32_t* acc) {
  int p = 0;
#if defined(__AVX2__)
  __m256i s[J];
  for (int j = 0; j < J; ++j) s[j] = _mm256_setzero_si256();
  for (; p + 16 <= k; p += 16) {
    const __m256i va = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + p)));
    for (int j = 0; j < J; ++j) {
      const __m256i vb = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + j * ldb + p)));
      s[j] = _mm256_add_epi32(s[j], _mm256_madd_epi16(va, vb));
    }
  }
  for (int j = 0; j < J; ++j) acc[j] = horizontal_sum(s[j]);
#else
  for (int j = 0; j < J; ++j) acc[j] = 0;
#endif
  for (; p < k; ++p)
    for (int j = 0; j < J; ++j) acc[j] += static_cast<int32_t>(a[p]) * b[j * ldb + p];
}

// The int32 products of rows [0, m) of a (stride lda) with weight rows [n0, n1) of b
// (stride ldb), depth k; out(i, j, acc) takes each. Weight rows go kWeightRows at a time
// (outer) past every row of a (inner), so they stay in L1 while a streams from L2.
template <class Out>
void int8_gemm(int m, const int8_t* a, int64_t lda, int n0, int n1, const int8_t* b, int64_t ldb, int k, Out&& out) {
  int32_t acc[kWeightRows];
  int j = n0;
  for (; j + kWeightRows <= n1; j += kWeightRows)
    for (int i = 0; i < m; ++i) {
      dot_rows<kWeightRows>(a + i * lda, b + j * ldb, ldb, k, acc);
      for (int t = 0; t < kWeightRows; ++t) out(i, j + t, acc[t]);
    }
  for (; j < n1; ++j)
    for (int i = 0; i < m; ++i) {
      dot_rows<1>(a + i * lda, b + j * ldb, ldb, k, acc);
      out(i, j, acc[0]);
    }
}

// int8_gemm over the pool: rows split across threads when there are enough, else columns
// (an FC's single row) in whole blocks of kWeightRows.
template <class Out>
void parallel_int8_gemm(ThreadPool& pool, int m, const int8_t* a, int64_t lda, int n, const int8_t* b, int64_t ldb,
                        int k, const Out& out) {
  const int threads = pool.size();
  const int64_t macs = static_cast<int64_t>(m) * n * std::max(k, 1);
  if (threads == 1 || macs < 2 * kGrainMacs || m == 0 || n == 0) return int8_gemm(m, a, lda, 0, n, b, ldb, k, out);
  const int row_parts = std::min(m, threads);
  const int col_blocks = (n + kWeightRows - 1) / kWeightRows;
  const int col_parts = std::max(1, std::min(col_blocks, threads / row_parts));
  pool.parallel_for(static_cast<int64_t>(row_parts) * col_parts, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int rp = static_cast<int>(t / col_parts), cp = static_cast<int>(t % col_parts);
      const int r0 = static_cast<int>(static_cast<int64_t>(m) * rp / row_parts);
      const int r1 = static_cast<int>(static_cast<int64_t>(m) * (rp + 1) / row_parts);
      const int c0 = std::min(n, col_blocks * cp / col_parts * kWeightRows);
      const int c1 = std::min(n, col_blocks * (cp + 1) / col_parts * kWeightRows);
      int8_gemm(r1 - r0, a + r0 * lda, lda, c0, c1, b, ldb, k,
                [&](int i, int j, int32_t acc) { out(r0 + i, j, acc); });
    }
  });
}

// Sum of each of n rows of k int8 weights: the zero point's term, zp * rowsum.
void row_sums(const int8_t* w, int n, int k, int64_t ldw, std::vector<int32_t>& sums) {
  sums.assign(static_cast<size_t>(n), 0);
  for (int j = 0; j < n; ++j) {
    int32_t s = 0;
    for (int p = 0; p < k; ++p) s += w[j * ldw + p];
    sums[static_cast<size_t>(j)] = s;
  }
}

// The weights' scales, one per output channel along `dim` (a single scale repeated), checked
// symmetric.
std::vector<float> weight_scales(const OpContext& ctx, const Tensor& w, int channels, int dim, const char* what) {
  DF_LITE_OP_CHECK(ctx, w.quantized(), what, " '", w.name, "' is INT8 ", shape_string(w.shape),
                   " without quantization parameters: hybrid weights need a scale");
  for (int64_t z : w.quant.zero_point)
    DF_LITE_OP_CHECK(ctx, z == 0, what, " '", w.name, "' has zero point ", z, "; hybrid weights are symmetric");
  const size_t n = w.quant.scale.size();
  DF_LITE_OP_CHECK(ctx, n == 1 || (static_cast<int>(n) == channels && (channels == 1 || w.quant.dim == dim)), what,
                   " '", w.name, "' ", shape_string(w.shape), " has ", n, " scales along dimension ", w.quant.dim,
                   "; expected 1 or ", channels, " along dimension ", dim);
  if (n == 1) return std::vector<float>(static_cast<size_t>(channels), w.quant.scale[0]);
  return w.quant.scale;
}

const float* float_bias(const OpContext& ctx, int index, int channels) {
  if (!ctx.has_input(index)) return nullptr;
  const Tensor& b = ctx.input(index);
  check_type(ctx, b, DType::kFloat32, "bias");
  DF_LITE_OP_CHECK(ctx, b.num_elements() == channels, "bias '", b.name, "' has shape ", shape_string(b.shape),
                   "; expected ", channels, " values (one per output channel)");
  return b.data<float>();
}

void require_hybrid(const OpContext& ctx, const Tensor& x, const Tensor& w, const char* what) {
  check_type(ctx, x, DType::kFloat32, "input");
  check_type(ctx, w, DType::kInt8, what);
  check_type(ctx, ctx.output(0), DType::kFloat32, "output");
}

// The activation's clamp, or none for TANH / SIGN_BIT, which run over the output after.
bool is_clamp(fb::ActivationFunctionType act) {
  return act != fb::ActivationFunctionType::TANH && act != fb::ActivationFunctionType::SIGN_BIT;
}

// FULLY_CONNECTED: out[b, o] = bias[o] + acc * (s_in[b] * s_w[o]), one quantization per row
// of the flattened input.
class FullyConnectedHybrid final : public Kernel {
 public:
  explicit FullyConnectedHybrid(const OpContext& ctx) {
    if (const auto* o = ctx.options<fb::FullyConnectedOptions>()) {
      act_ = o->fused_activation_function();
      keep_num_dims_ = o->keep_num_dims();
      asymmetric_ = o->asymmetric_quantize_inputs();
      DF_LITE_OP_CHECK(ctx, o->weights_format() == fb::FullyConnectedOptionsWeightsFormat::DEFAULT,
                       "has weights_format ", fb::EnumNameFullyConnectedOptionsWeightsFormat(o->weights_format()),
                       ": only DEFAULT is supported");
    }
  }

  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    require_hybrid(ctx, x, w, "weights");
    check_rank(ctx, w, 2, "weights");
    check_activation(ctx, act_);
    out_ = w.dim(0), in_ = w.dim(1);
    DF_LITE_OP_CHECK(ctx, in_ > 0 && x.num_elements() % in_ == 0, "input ", shape_string(x.shape),
                     " does not flatten into rows of weights ", shape_string(w.shape), "'s ", in_, " inputs");
    batches_ = static_cast<int>(x.num_elements() / in_);
    scales_ = weight_scales(ctx, w, out_, 0, "weights");
    per_channel_ = w.quant.scale.size() > 1;
    float_bias(ctx, 2, out_);
    if (keep_num_dims_) {
      DF_LITE_OP_CHECK(ctx, x.rank() >= 1 && x.dim(-1) == in_, "keep_num_dims needs input ", shape_string(x.shape),
                       "'s last dimension to be weights ", shape_string(w.shape), "'s ", in_, " inputs");
      std::vector<int> shape = x.shape;
      shape.back() = out_;
      ctx.resize_output(0, shape);
    } else {
      ctx.resize_output(0, {batches_, out_});
    }
    sums_ok_ = w.is_constant() && w.data_ptr != nullptr;
    if (sums_ok_) row_sums(w.data<int8_t>(), out_, in_, in_, sums_);
    q_.resize(static_cast<size_t>(batches_) * in_);
    rows_.resize(static_cast<size_t>(batches_));
  }

  void eval(OpContext& ctx) override {
    const float* x = ctx.input(0).data<float>();
    const int8_t* w = ctx.input(1).data<int8_t>();
    float* y = ctx.output(0).data<float>();
    if (batches_ == 0 || out_ == 0) return;
    if (!sums_ok_) row_sums(w, out_, in_, in_, sums_);
    const float* bias = float_bias(ctx, 2, out_);
    for (int b = 0; b < batches_; ++b) {
      const float* row = x + static_cast<int64_t>(b) * in_;
      int8_t* q = q_.data() + static_cast<int64_t>(b) * in_;
      RowQuant& r = rows_[static_cast<size_t>(b)];
      r = asymmetric_ ? quantize_asymmetric(row, in_, q) : quantize_symmetric(row, in_, q);
      // Per-tensor weights: LiteRT folds the weight scale into the row's scale first.
      if (!per_channel_) r.scale *= scales_[0];
    }
    const FloatRange range = is_clamp(act_) ? activation_range(act_) : FloatRange{};
    parallel_int8_gemm(ctx.pool(), batches_, q_.data(), in_, out_, w, in_, in_, [&](int b, int o, int32_t acc) {
      const RowQuant& r = rows_[static_cast<size_t>(b)];
      const float scale = per_channel_ ? r.scale * scales_[static_cast<size_t>(o)] : r.scale;
      const int32_t dot = acc - sums_[static_cast<size_t>(o)] * r.zero_point;
      const float v = (bias ? bias[o] : 0.f) + rounded(static_cast<float>(dot) * scale);
      y[static_cast<int64_t>(b) * out_ + o] = std::min(std::max(v, range.lo), range.hi);
    });
    if (!is_clamp(act_)) apply_activation(act_, y, static_cast<int64_t>(batches_) * out_);
  }

 private:
  fb::ActivationFunctionType act_ = fb::ActivationFunctionType::NONE;
  bool keep_num_dims_ = false, asymmetric_ = false, per_channel_ = false;
  int in_ = 0, out_ = 0, batches_ = 0;
  std::vector<float> scales_;    // per output
  std::vector<int32_t> sums_;    // per output: the sum of its weights
  bool sums_ok_ = false;         // sums_ holds this prepare's constant weights' sums
  std::vector<int8_t> q_;        // the quantized input rows
  std::vector<RowQuant> rows_;   // per row
};

// BATCH_MATMUL with int8 right operand (a weight): out[..., m, n] = acc * (s_in[row] *
// s_w[n]), one quantization per row of the left operand (after adj_x).
class BatchMatMulHybrid final : public Kernel {
 public:
  explicit BatchMatMulHybrid(const OpContext& ctx) {
    if (const auto* o = ctx.options<fb::BatchMatMulOptions>()) {
      adj_x_ = o->adj_x();
      adj_y_ = o->adj_y();
      asymmetric_ = o->asymmetric_quantize_inputs();
    }
  }

  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    require_hybrid(ctx, x, y, "right operand");
    shape_ = matmul_shape(ctx, x, y, adj_x_, adj_y_);
    m_ = shape_.m, k_ = shape_.k, n_ = shape_.n;
    x_batches_ = shape_.x_batches, y_batches_ = shape_.y_batches;
    // The channel dimension of y is its n, i.e. its last unless adj_y.
    scales_ = weight_scales(ctx, y, n_, adj_y_ ? y.rank() - 2 : y.rank() - 1, "right operand");
    per_channel_ = y.quant.scale.size() > 1;
    ctx.resize_output(0, shape_.output_shape());
    packed_ok_ = y.is_constant() && y.data_ptr != nullptr;
    if (packed_ok_) pack(y);
    q_.resize(static_cast<size_t>(x_batches_ * m_ * k_));
    rows_.resize(static_cast<size_t>(x_batches_ * m_));
  }

  void eval(OpContext& ctx) override {
    if (!packed_ok_) pack(ctx.input(1));
    const Tensor& x = ctx.input(0);
    const float* xd = x.data<float>();
    std::vector<float> row(static_cast<size_t>(k_));
    for (int64_t r = 0; r < x_batches_ * m_; ++r) {
      const int64_t b = r / std::max(m_, 1), i = r % std::max(m_, 1);
      const float* src = xd + b * m_ * k_;
      // adj_x: row i of the product is column i of the stored matrix.
      if (adj_x_)
        for (int p = 0; p < k_; ++p) row[static_cast<size_t>(p)] = src[static_cast<int64_t>(p) * m_ + i];
      const float* in = adj_x_ ? row.data() : src + i * k_;
      int8_t* q = q_.data() + r * k_;
      RowQuant& rq = rows_[static_cast<size_t>(r)];
      rq = asymmetric_ ? quantize_asymmetric(in, k_, q) : quantize_symmetric(in, k_, q);
      if (!per_channel_) rq.scale *= scales_[0];
    }
    float* out = ctx.output(0).data<float>();
    for (int64_t b = 0; b < shape_.batches; ++b) {
      const auto [xb, yb] = shape_.operand_batches(b);
      const RowQuant* rq = rows_.data() + xb * m_;
      const int32_t* sums = sums_.data() + yb * n_;
      float* o = out + b * m_ * n_;
      parallel_int8_gemm(ctx.pool(), m_, q_.data() + xb * m_ * k_, k_, n_, w_.data() + yb * n_ * k_, k_, k_,
                         [&](int i, int j, int32_t acc) {
                           // LiteRT takes the zero point's term off in float and truncates.
                           const float off = rounded(static_cast<float>(sums[j]) * static_cast<float>(rq[i].zero_point));
                           const auto total = static_cast<int32_t>(static_cast<float>(acc) - off);
                           const float scale = per_channel_ ? rq[i].scale * scales_[static_cast<size_t>(j)] : rq[i].scale;
                           o[static_cast<int64_t>(i) * n_ + j] = rounded(scale * static_cast<float>(total));
                         });
    }
  }

 private:
  // y's batches as [n, k] int8 rows (transposed unless adj_y) and their sums.
  void pack(const Tensor& y) {
    const int8_t* src = y.data<int8_t>();
    w_.resize(static_cast<size_t>(y_batches_ * n_ * k_));
    for (int64_t b = 0; b < y_batches_; ++b)
      for (int j = 0; j < n_; ++j)
        for (int p = 0; p < k_; ++p)
          w_[static_cast<size_t>((b * n_ + j) * k_ + p)] =
              adj_y_ ? src[(b * n_ + j) * k_ + p] : src[(b * k_ + p) * n_ + j];
    row_sums(w_.data(), static_cast<int>(y_batches_ * n_), k_, k_, sums_);
  }

  bool adj_x_ = false, adj_y_ = false, asymmetric_ = false, per_channel_ = false;
  int m_ = 0, n_ = 0, k_ = 0;
  MatMulShape shape_;
  int64_t x_batches_ = 0, y_batches_ = 0;
  std::vector<float> scales_;   // per output column n
  std::vector<int8_t> w_;       // y as [batch][n][k]
  std::vector<int32_t> sums_;   // per (batch, n)
  bool packed_ok_ = false;
  std::vector<int8_t> q_;       // x's rows, quantized
  std::vector<RowQuant> rows_;  // per row of x
};

// The geometry CONV_2D and DEPTHWISE_CONV_2D share.
struct Window {
  fb::Padding padding = fb::Padding::SAME;
  int sh = 1, sw = 1, dh = 1, dw = 1;
  fb::ActivationFunctionType act = fb::ActivationFunctionType::NONE;
};

template <class Options>
Window window_of(const OpContext& ctx, const char* table) {
  const auto* o = ctx.options<Options>();
  DF_LITE_OP_CHECK(ctx, o != nullptr, "has no ", table);
  return {o->padding(), o->stride_h(), o->stride_w(), o->dilation_h_factor(), o->dilation_w_factor(),
          o->fused_activation_function()};
}

// Each batch item of a [n, h, w, c] float input quantized as one: LiteRT's conv and
// depthwise quantize per image, not per patch.
void quantize_images(const float* x, int n, int64_t image, bool asymmetric, int8_t* q, std::vector<RowQuant>& rows) {
  rows.resize(static_cast<size_t>(n));
  for (int b = 0; b < n; ++b)
    rows[static_cast<size_t>(b)] = asymmetric ? quantize_asymmetric(x + b * image, image, q + b * image)
                                              : quantize_symmetric(x + b * image, image, q + b * image);
}

// CONV_2D (grouped too): the quantized image through int8 im2col (padded taps hold the zero
// point, so they cancel with zp * rowsum) in tiles of output pixels, each tile a GEMM with the
// OHWI filter; 1x1 stride-1 filters read the quantized image in place.
class Conv2DHybrid final : public Kernel {
 public:
  explicit Conv2DHybrid(const OpContext& ctx) : win_(window_of<fb::Conv2DOptions>(ctx, "Conv2DOptions")) {}

  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    require_hybrid(ctx, x, w, "filter");
    check_rank(ctx, x, 4, "input");
    check_rank(ctx, w, 4, "filter");
    check_activation(ctx, win_.act);
    n_ = x.dim(0), h_ = x.dim(1), w_ = x.dim(2), ic_ = x.dim(3);
    oc_ = w.dim(0), kh_ = w.dim(1), kw_ = w.dim(2), icg_ = w.dim(3);
    DF_LITE_OP_CHECK(ctx, icg_ > 0 && ic_ % icg_ == 0 && oc_ % (ic_ / icg_) == 0, "filter ", shape_string(w.shape),
                     " does not fit input ", shape_string(x.shape), " (channels ", ic_, " in groups of ", icg_, ")");
    groups_ = ic_ / icg_, ocg_ = oc_ / groups_;
    scales_ = weight_scales(ctx, w, oc_, 0, "filter");
    // LiteRT's per-channel path (asymmetric inputs) unless every scale is the same; grouped
    // convolutions always take it.
    per_channel_ = groups_ != 1;
    for (float s : scales_) per_channel_ = per_channel_ || s != scales_[0];
    float_bias(ctx, 2, oc_);
    const PaddedDim ph = padded_dim(ctx, win_.padding, h_, kh_, win_.sh, win_.dh);
    const PaddedDim pw = padded_dim(ctx, win_.padding, w_, kw_, win_.sw, win_.dw);
    oh_ = ph.out, ow_ = pw.out, pad_top_ = ph.pad_before, pad_left_ = pw.pad_before;
    ctx.resize_output(0, {n_, oh_, ow_, oc_});
    k_ = kh_ * kw_ * icg_;
    direct_ = kh_ == 1 && kw_ == 1 && win_.sh == 1 && win_.sw == 1;
    slots_ = ctx.pool().size();
    tile_rows_ = std::max<int64_t>(8, kTileBytes / std::max(k_, 1));
    col_.resize(direct_ ? 0 : static_cast<size_t>(slots_ * tile_rows_ * k_));
    q_.resize(static_cast<size_t>(x.num_elements()));
    sums_ok_ = w.is_constant() && w.data_ptr != nullptr;
    if (sums_ok_) row_sums(w.data<int8_t>(), oc_, k_, k_, sums_);
  }

  void eval(OpContext& ctx) override {
    const int8_t* w = ctx.input(1).data<int8_t>();
    if (!sums_ok_) row_sums(w, oc_, k_, k_, sums_);
    const int64_t pixels = static_cast<int64_t>(oh_) * ow_;
    if (n_ == 0 || pixels == 0 || oc_ == 0) return;
    const int64_t image = static_cast<int64_t>(h_) * w_ * ic_;
    quantize_images(ctx.input(0).data<float>(), n_, image, per_channel_, q_.data(), rows_);
    if (!per_channel_)
      for (RowQuant& r : rows_) r.scale *= scales_[0];  // LiteRT folds the filter's scale in first
    const int64_t tiles = (pixels + tile_rows_ - 1) / tile_rows_, tasks = n_ * tiles;
    auto run = [&](int64_t lo, int64_t hi, int8_t* col) {
      for (int64_t t = lo; t < hi; ++t) tile(ctx, t / tiles, (t % tiles) * tile_rows_, w, col);
    };
    if (slots_ > 1 && tasks > 1 && n_ * pixels * oc_ * k_ >= 2 * kGrainMacs) {
      ctx.pool().parallel_for(slots_, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t s = lo; s < hi; ++s)
          run(tasks * s / slots_, tasks * (s + 1) / slots_, col_.empty() ? nullptr : col_.data() + s * tile_rows_ * k_);
      });
    } else {
      run(0, tasks, col_.data());
    }
    if (!is_clamp(win_.act)) apply_activation(win_.act, ctx.output(0).data<float>(), ctx.output(0).num_elements());
  }

 private:
  // Output pixels [p0, p0 + tile_rows_) of image b, every group.
  void tile(OpContext& ctx, int64_t b, int64_t p0, const int8_t* w, int8_t* col) const {
    const int64_t pixels = static_cast<int64_t>(oh_) * ow_;
    const int rows = static_cast<int>(std::min<int64_t>(tile_rows_, pixels - p0));
    const RowQuant r = rows_[static_cast<size_t>(b)];
    const int8_t* image = q_.data() + b * h_ * w_ * ic_;
    const float* bias = float_bias(ctx, 2, oc_);
    float* out = ctx.output(0).data<float>() + (b * pixels + p0) * oc_;
    const FloatRange range = is_clamp(win_.act) ? activation_range(win_.act) : FloatRange{};
    for (int g = 0; g < groups_; ++g) {
      const int8_t* a = direct_ ? image + p0 * ic_ + g * icg_ : col;
      if (!direct_) im2col(image, p0, rows, g, static_cast<int8_t>(r.zero_point), col);
      const int c0 = g * ocg_;
      int8_gemm(rows, a, direct_ ? ic_ : k_, c0, c0 + ocg_, w, k_, k_, [&](int i, int c, int32_t acc) {
        const int32_t dot = acc - sums_[static_cast<size_t>(c)] * r.zero_point;
        // Per-channel: (acc * s_w[c]) * s_in, LiteRT's reference order; per-tensor: acc * (s_in * s_w).
        const float prod = per_channel_ ? static_cast<float>(dot) * scales_[static_cast<size_t>(c)] * r.scale
                                        : static_cast<float>(dot) * r.scale;
        const float v = rounded(prod) + (bias ? bias[c] : 0.f);
        out[static_cast<int64_t>(i) * oc_ + c] = std::min(std::max(v, range.lo), range.hi);
      });
    }
  }

  // Patches of output pixels [p0, p0 + rows) of one image, group g, in the filter's
  // (ky, kx, c) order; taps outside the image hold `pad` (the zero point: a real zero).
  void im2col(const int8_t* image, int64_t p0, int rows, int g, int8_t pad, int8_t* col) const {
    const int run = kw_ * icg_;
    const bool contiguous = win_.dw == 1 && groups_ == 1;
    for (int i = 0; i < rows; ++i) {
      const int oy = static_cast<int>((p0 + i) / ow_), ox = static_cast<int>((p0 + i) % ow_);
      const int x0 = ox * win_.sw - pad_left_;
      int8_t* dst = col + static_cast<int64_t>(i) * k_;
      for (int ky = 0; ky < kh_; ++ky, dst += run) {
        const int iy = oy * win_.sh - pad_top_ + ky * win_.dh;
        if (iy < 0 || iy >= h_) {
          std::memset(dst, pad, static_cast<size_t>(run));
          continue;
        }
        const int8_t* src = image + static_cast<int64_t>(iy) * w_ * ic_ + g * icg_;
        if (contiguous && x0 >= 0 && x0 + kw_ <= w_) {
          std::memcpy(dst, src + static_cast<int64_t>(x0) * ic_, static_cast<size_t>(run));
          continue;
        }
        for (int kx = 0; kx < kw_; ++kx) {
          const int ix = x0 + kx * win_.dw;
          if (ix < 0 || ix >= w_)
            std::memset(dst + kx * icg_, pad, static_cast<size_t>(icg_));
          else
            std::memcpy(dst + kx * icg_, src + static_cast<int64_t>(ix) * ic_, static_cast<size_t>(icg_));
        }
      }
    }
  }

  Window win_;
  int n_ = 0, h_ = 0, w_ = 0, ic_ = 0, oh_ = 0, ow_ = 0, oc_ = 0, kh_ = 1, kw_ = 1;
  int icg_ = 0, ocg_ = 0, groups_ = 1, k_ = 0, pad_top_ = 0, pad_left_ = 0;
  bool per_channel_ = false;  // asymmetric inputs, per-channel scales (LiteRT's two paths)
  bool direct_ = false;       // 1x1 stride 1: no im2col
  int slots_ = 1;
  int64_t tile_rows_ = 8;
  std::vector<float> scales_;   // per output channel
  std::vector<int32_t> sums_;   // per output channel
  bool sums_ok_ = false;
  std::vector<int8_t> q_;       // the quantized input
  std::vector<RowQuant> rows_;  // per image
  std::vector<int8_t> col_;     // per thread: a tile of patches
};

// DEPTHWISE_CONV_2D: a direct loop over output pixels, each an int32 sum over the taps inside
// the image of w * (q - zp) (LiteRT skips padded taps), then acc * (s_w[c] * s_in) + bias.
class DepthwiseConv2DHybrid final : public Kernel {
 public:
  explicit DepthwiseConv2DHybrid(const OpContext& ctx)
      : win_(window_of<fb::DepthwiseConv2DOptions>(ctx, "DepthwiseConv2DOptions")) {}

  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    require_hybrid(ctx, x, w, "filter");
    check_rank(ctx, x, 4, "input");
    check_rank(ctx, w, 4, "filter");
    check_activation(ctx, win_.act);
    n_ = x.dim(0), h_ = x.dim(1), w_ = x.dim(2), ic_ = x.dim(3);
    kh_ = w.dim(1), kw_ = w.dim(2), oc_ = w.dim(3);
    DF_LITE_OP_CHECK(ctx, w.dim(0) == 1 && ic_ > 0 && oc_ % ic_ == 0, "filter ", shape_string(w.shape),
                     " must be [1, height, width, a multiple of input ", shape_string(x.shape), "'s ", ic_,
                     " channels]");
    mult_ = oc_ / ic_;
    scales_ = weight_scales(ctx, w, oc_, 3, "filter");
    float_bias(ctx, 2, oc_);
    const PaddedDim ph = padded_dim(ctx, win_.padding, h_, kh_, win_.sh, win_.dh);
    const PaddedDim pw = padded_dim(ctx, win_.padding, w_, kw_, win_.sw, win_.dw);
    oh_ = ph.out, ow_ = pw.out, pad_top_ = ph.pad_before, pad_left_ = pw.pad_before;
    ctx.resize_output(0, {n_, oh_, ow_, oc_});
    q_.resize(static_cast<size_t>(x.num_elements()));
    acc_.resize(static_cast<size_t>(ctx.pool().size()) * oc_);
  }

  void eval(OpContext& ctx) override {
    const int64_t rows = static_cast<int64_t>(n_) * oh_;
    if (rows == 0 || ow_ == 0 || oc_ == 0) return;
    const int64_t image = static_cast<int64_t>(h_) * w_ * ic_;
    quantize_images(ctx.input(0).data<float>(), n_, image, /*asymmetric=*/true, q_.data(), rows_);
    // s_w[c] * s_in per image, the product LiteRT's reference kernel forms.
    scale_.resize(static_cast<size_t>(n_) * oc_);
    for (int b = 0; b < n_; ++b)
      for (int c = 0; c < oc_; ++c)
        scale_[static_cast<size_t>(b) * oc_ + c] = scales_[static_cast<size_t>(c)] * rows_[static_cast<size_t>(b)].scale;
    const int slots = ctx.pool().size();
    const int64_t row_macs = std::max<int64_t>(1, static_cast<int64_t>(ow_) * oc_ * kh_ * kw_);
    const int64_t pieces = std::min<int64_t>(slots, std::max<int64_t>(1, rows * row_macs / kGrainMacs));
    ctx.pool().parallel_for(pieces, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t s = lo; s < hi; ++s)
        for (int64_t r = rows * s / pieces; r < rows * (s + 1) / pieces; ++r)
          row(ctx, static_cast<int>(r / oh_), static_cast<int>(r % oh_), acc_.data() + s * oc_);
    });
    if (!is_clamp(win_.act)) apply_activation(win_.act, ctx.output(0).data<float>(), ctx.output(0).num_elements());
  }

 private:
  // Output row oy of image b; acc: oc_ int32s of scratch.
  void row(OpContext& ctx, int b, int oy, int32_t* acc) const {
    const int8_t* filter = ctx.input(1).data<int8_t>();
    const float* bias = float_bias(ctx, 2, oc_);
    const int32_t zp = rows_[static_cast<size_t>(b)].zero_point;
    const float* scale = scale_.data() + static_cast<int64_t>(b) * oc_;
    const FloatRange range = is_clamp(win_.act) ? activation_range(win_.act) : FloatRange{};
    const int8_t* image = q_.data() + static_cast<int64_t>(b) * h_ * w_ * ic_;
    float* out = ctx.output(0).data<float>() + (static_cast<int64_t>(b) * oh_ + oy) * ow_ * oc_;
    for (int ox = 0; ox < ow_; ++ox, out += oc_) {
      std::fill(acc, acc + oc_, 0);
      for (int ky = 0; ky < kh_; ++ky) {
        const int iy = oy * win_.sh - pad_top_ + ky * win_.dh;
        if (iy < 0 || iy >= h_) continue;
        for (int kx = 0; kx < kw_; ++kx) {
          const int ix = ox * win_.sw - pad_left_ + kx * win_.dw;
          if (ix < 0 || ix >= w_) continue;
          const int8_t* src = image + (static_cast<int64_t>(iy) * w_ + ix) * ic_;
          const int8_t* f = filter + (static_cast<int64_t>(ky) * kw_ + kx) * oc_;
          if (mult_ == 1) {
            for (int c = 0; c < oc_; ++c) acc[c] += static_cast<int32_t>(f[c]) * (src[c] - zp);
          } else {
            for (int c = 0; c < oc_; ++c) acc[c] += static_cast<int32_t>(f[c]) * (src[c / mult_] - zp);
          }
        }
      }
      for (int c = 0; c < oc_; ++c) {
        const float v = rounded(static_cast<float>(acc[c]) * scale[c]) + (bias ? bias[c] : 0.f);
        out[c] = std::min(std::max(v, range.lo), range.hi);
      }
    }
  }

  Window win_;
  int n_ = 0, h_ = 0, w_ = 0, ic_ = 0, oh_ = 0, ow_ = 0, oc_ = 0, kh_ = 1, kw_ = 1, mult_ = 1;
  int pad_top_ = 0, pad_left_ = 0;
  std::vector<float> scales_;   // per output channel
  std::vector<float> scale_;    // per image and channel: s_w[c] * s_in
  std::vector<int8_t> q_;       // the quantized input
  std::vector<RowQuant> rows_;  // per image
  std::vector<int32_t> acc_;    // per thread: one output pixel's sums
};

// A float32 first input with int8 weights (input 1): the hybrid form of the op.
bool is_hybrid(const OpContext& ctx) {
  return ctx.num_inputs() >= 2 && ctx.has_input(0) && ctx.has_input(1) && ctx.input(0).type == DType::kFloat32 &&
         ctx.input(1).type == DType::kInt8;
}

// Replaces code's registration by one that sends hybrid operators to K and the rest to the
// kernel registered before (float, or the int8 wrapper over it).
template <class K>
void wrap(OpResolver& r, fb::BuiltinOperator code) {
  const auto [lo, hi] = r.version_range(code);
  const KernelFactory* found = r.find_builtin(code, lo);
  DF_LITE_CHECK(found, "[lite] hybrid kernels: no kernel registered for ", fb::EnumNameBuiltinOperator(code));
  KernelFactory other = *found;
  r.add_builtin(code, [other](const OpContext& ctx) -> std::unique_ptr<Kernel> {
    if (is_hybrid(ctx)) return std::make_unique<K>(ctx);
    return other(ctx);
  }, lo, hi);
}

}  // namespace

void register_hybrid_kernels(OpResolver& r) {
  using B = fb::BuiltinOperator;
  wrap<FullyConnectedHybrid>(r, B::FULLY_CONNECTED);
  wrap<BatchMatMulHybrid>(r, B::BATCH_MATMUL);
  wrap<Conv2DHybrid>(r, B::CONV_2D);
  wrap<DepthwiseConv2DHybrid>(r, B::DEPTHWISE_CONV_2D);
}

}  // namespace deepflow::lite
