// SPDX-License-Identifier: Apache-2.0
// int8 kernels with LiteRT's reference arithmetic, bit for bit (lite.md §2): ADD / SUB (left
// shift 20), SQUARED_DIFFERENCE (left shift 7), MUL, LEAKY_RELU, MAX_POOL_2D and AVERAGE_POOL_2D (in and
// out share parameters), SOFTMAX (gemmlowp's fixed point), the table ops (LOGISTIC, TANH,
// GELU built in float; HARD_SWISH and RSQRT in LiteRT's fixed point) and MEAN. The
// convolutions, FULLY_CONNECTED and BATCH_MATMUL are in conv_int8.cpp / batch_matmul_int8.cpp.
// register_int8_kernels wraps the float registrations of these ops: an int8 input picks the
// int8 kernel, anything else the float one.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include "deepflow/lite/kernels/fixed_point.h"
#include "deepflow/lite/kernels/kernel_util.h"
#include "deepflow/lite/kernels/gemm_int8.h"
#include "deepflow/lite/kernels/int8_util.h"
#include "deepflow/lite/kernels/requant_simd.h"

namespace deepflow::lite {

namespace {
std::vector<int> broadcast_shape(const OpContext& ctx, const Tensor& a, const Tensor& b) {
  const size_t rank = std::max(a.shape.size(), b.shape.size());
  std::vector<int> out(rank), da(rank, 1), db(rank, 1);
  for (size_t i = 0; i < a.shape.size(); ++i) da[rank - a.shape.size() + i] = a.shape[i];
  for (size_t i = 0; i < b.shape.size(); ++i) db[rank - b.shape.size() + i] = b.shape[i];
  for (size_t i = 0; i < rank; ++i) {
    DF_LITE_OP_CHECK(ctx, da[i] == db[i] || da[i] == 1 || db[i] == 1, "cannot broadcast ", shape_string(a.shape),
                     " with ", shape_string(b.shape));
    out[i] = std::max(da[i], db[i]);
  }
  return out;
}

// ADD and SUB: both inputs on twice the larger scale (after a left shift of 20), summed,
// requantized. SQUARED_DIFFERENCE: the same with a left shift of 7, the difference squared.
// MUL: the product requantized once.
enum class Arith { kAdd, kSub, kMul, kSquaredDifference };

// ADD and MUL's parameters, as the element loops need them.
struct ArithParams {
  int32_t za, zb, zo;
  QuantizedMultiplier m1, m2, mo;  // ADD: inputs (after the left shift of 20), then output; MUL: mo
  IntRange range;
  // ADD / SUB: each input byte's rescaled value (q - zp) << 20 times m1 (m2), by byte
  // (uint8 index), so a sum costs one requantization instead of three.
  const int32_t* t1 = nullptr;
  const int32_t* t2 = nullptr;
};
constexpr int kAddLeftShift = 20;
constexpr int kSquaredDifferenceLeftShift = 7;

inline int8_t arith_one(Arith op, int32_t a, int32_t b, const ArithParams& p) {
  const int32_t x1 = a - p.za, x2 = b - p.zb;
  int32_t v;
  if (op == Arith::kAdd || op == Arith::kSub) {
    const int32_t w1 = p.t1 ? p.t1[static_cast<uint8_t>(a)] : multiply_by_quantized_multiplier(x1 * (1 << kAddLeftShift), p.m1);
    const int32_t w2 = p.t2 ? p.t2[static_cast<uint8_t>(b)] : multiply_by_quantized_multiplier(x2 * (1 << kAddLeftShift), p.m2);
    v = multiply_by_quantized_multiplier(op == Arith::kAdd ? w1 + w2 : w1 - w2, p.mo) + p.zo;
  } else if (op == Arith::kSquaredDifference) {
    const int32_t d = multiply_by_quantized_multiplier(x1 * (1 << kSquaredDifferenceLeftShift), p.m1) -
                      multiply_by_quantized_multiplier(x2 * (1 << kSquaredDifferenceLeftShift), p.m2);
    v = multiply_by_quantized_multiplier(d * d, p.mo) + p.zo;
  } else {
    v = multiply_by_quantized_multiplier(x1 * x2, p.mo) + p.zo;
  }
  return static_cast<int8_t>(std::min(std::max(v, p.range.lo), p.range.hi));
}

#if DF_LITE_VNNI_BUILD
DF_LITE_INTRINSICS_BEGIN
// rows x cols outputs; row r's inputs at a + r * a_row and b + r * b_row (0: an operand
// repeated on every row, a per-channel constant). 16 elements per step, the same arithmetic
// lane by lane.
DF_LITE_VNNI void arith_rows_vnni(Arith op, const int8_t* a, int64_t a_row, const int8_t* b, int64_t b_row, int8_t* y,
                                  int64_t rows, int64_t cols, const ArithParams& p) {
  const RequantLanes l1 = requant_lanes_uniform(p.m1, false, 0, kQMin, kQMax);
  const RequantLanes l2 = requant_lanes_uniform(p.m2, false, 0, kQMin, kQMax);
  const RequantLanes lo = requant_lanes_uniform(p.mo, false, p.zo, p.range.lo, p.range.hi);
  const __m512i za = _mm512_set1_epi32(p.za), zb = _mm512_set1_epi32(p.zb);
  for (int64_t r = 0; r < rows; ++r, a += a_row, b += b_row, y += cols)
    for (int64_t i = 0; i < cols; i += 16) {
      const __mmask16 m = cols - i >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (cols - i)) - 1);
      const __m512i x1 = _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, a + i)), za);
      const __m512i x2 = _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, b + i)), zb);
      __m512i v;
      // (The byte tables of the scalar path lose here: gathers cost more than the arithmetic.)
      if (op == Arith::kAdd || op == Arith::kSub) {
        const __m512i w1 = multiply_lanes<false, true>(_mm512_slli_epi32(x1, kAddLeftShift), l1);
        const __m512i w2 = multiply_lanes<false, true>(_mm512_slli_epi32(x2, kAddLeftShift), l2);
        v = multiply_lanes<false, true>(op == Arith::kAdd ? _mm512_add_epi32(w1, w2) : _mm512_sub_epi32(w1, w2), lo);
      } else if (op == Arith::kSquaredDifference) {
        const __m512i d = _mm512_sub_epi32(multiply_lanes<false, true>(_mm512_slli_epi32(x1, kSquaredDifferenceLeftShift), l1),
                                           multiply_lanes<false, true>(_mm512_slli_epi32(x2, kSquaredDifferenceLeftShift), l2));
        v = multiply_lanes<false, true>(_mm512_mullo_epi32(d, d), lo);
      } else {
        v = multiply_lanes<false, true>(_mm512_mullo_epi32(x1, x2), lo);
      }
      _mm_mask_storeu_epi8(y + i, m, clamp_to_int8(v, lo));
    }
}
DF_LITE_INTRINSICS_END
#endif

class ArithInt8 final : public Kernel {
 public:
  ArithInt8(const OpContext& ctx, Arith op) : op_(op) {
    if (const auto* o = ctx.options<fb::AddOptions>()) act_ = o->fused_activation_function();
    if (const auto* o = ctx.options<fb::MulOptions>()) act_ = o->fused_activation_function();
    if (const auto* o = ctx.options<fb::SubOptions>()) act_ = o->fused_activation_function();
  }
  void prepare(OpContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& y = ctx.output(0);
    require_int8(ctx, a, "input");
    require_int8(ctx, b, "input");
    require_int8(ctx, y, "output");
    const std::vector<int> shape = broadcast_shape(ctx, a, b);
    range_ = activation_range_q(act_, y);
    const double s1 = a.quant.scale[0], s2 = b.quant.scale[0], so = y.quant.scale[0];
    if (op_ == Arith::kAdd || op_ == Arith::kSub) {
      // LiteRT's Prepare: twice the larger input scale, computed in float and then widened.
      const double twice_max = static_cast<double>(2.f * std::max(a.quant.scale[0], b.quant.scale[0]));
      m1_ = quantize_multiplier(s1 / twice_max);
      m2_ = quantize_multiplier(s2 / twice_max);
      mo_ = quantize_multiplier(twice_max / ((1 << kAddLeftShift) * so));
      t1_.resize(256);
      t2_.resize(256);
      for (int32_t v = kQMin; v <= kQMax; ++v) {
        const auto k = static_cast<uint8_t>(static_cast<int8_t>(v));
        t1_[k] = multiply_by_quantized_multiplier((v - zero_point(a)) * (1 << kAddLeftShift), m1_);
        t2_[k] = multiply_by_quantized_multiplier((v - zero_point(b)) * (1 << kAddLeftShift), m2_);
      }
    } else if (op_ == Arith::kSquaredDifference) {
      // Here LiteRT doubles in double; the output multiplier is over the squared scale.
      const double twice_max = 2.0 * std::max(a.quant.scale[0], b.quant.scale[0]);
      m1_ = quantize_multiplier(s1 / twice_max);
      m2_ = quantize_multiplier(s2 / twice_max);
      mo_ = quantize_multiplier(twice_max * twice_max / ((1 << (2 * kSquaredDifferenceLeftShift)) * so));
    } else {
      mo_ = quantize_multiplier(s1 * s2 / so);
    }
    ctx.resize_output(0, shape);
  }
  void eval(OpContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& y = ctx.output(0);
    const bool tables = op_ == Arith::kAdd || op_ == Arith::kSub;
    const ArithParams p{zero_point(a), zero_point(b), zero_point(y), m1_, m2_, mo_, range_,
                        tables ? t1_.data() : nullptr, tables ? t2_.data() : nullptr};
    const int8_t* pa = a.data<int8_t>();
    const int8_t* pb = b.data<int8_t>();
    int8_t* out = y.data<int8_t>();
    const int64_t n = y.num_elements();
    // Rows of the output's innermost elements where each operand is either of the output's
    // shape or repeats one row (a residual connection: one row of everything; a per-channel
    // constant, batch norm's MUL and ADD: rows of C). Else the general broadcast below.
    const int64_t na = a.num_elements(), nb = b.num_elements();
    int64_t cols = 0;
    if (na == n && nb == n) cols = n;
    else if (na == n && repeats_as_rows(b, y)) cols = nb;
    else if (nb == n && repeats_as_rows(a, y)) cols = na;
    if (cols > 0 && n > 0) {
      const int64_t rows = n / cols, a_row = na == n ? cols : 0, b_row = nb == n ? cols : 0;
      const bool vnni = int8_vnni();
      // Rows split between threads; one row (no broadcast) split by columns instead.
      const int64_t pieces_of = rows == 1 ? (cols + 15) / 16 : rows;
      const int64_t grain = rows == 1 ? 1024 : std::max<int64_t>(1, 16384 / cols);
      ctx.pool().parallel_for(pieces_of, grain, [&](int64_t lo, int64_t hi) {
        int64_t r0 = lo, r1 = hi, c0 = 0, c1 = cols;
        if (rows == 1) r0 = 0, r1 = 1, c0 = lo * 16, c1 = std::min(cols, hi * 16);
        const int8_t* pa_r = pa + r0 * a_row + (a_row ? c0 : 0);
        const int8_t* pb_r = pb + r0 * b_row + (b_row ? c0 : 0);
        int8_t* y_r = out + r0 * cols + c0;
#if DF_LITE_VNNI_BUILD
        if (vnni) {
          if (rows == 1) return arith_rows_vnni(op_, pa_r, 0, pb_r, 0, y_r, 1, c1 - c0, p);
          return arith_rows_vnni(op_, pa_r, a_row, pb_r, b_row, y_r, r1 - r0, cols, p);
        }
#endif
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t i = c0; i < c1; ++i)
            out[r * cols + i] = arith_one(op_, pa[r * a_row + i], pb[r * b_row + i], p);
      });
      return;
    }
    const int rank = y.rank();
    std::vector<int64_t> sa(static_cast<size_t>(rank), 0), sb(static_cast<size_t>(rank), 0);
    auto strides = [&](const Tensor& t, std::vector<int64_t>& s) {
      int64_t st = 1;
      for (int k = t.rank() - 1; k >= 0; --k) {
        const size_t o = static_cast<size_t>(k + rank - t.rank());
        s[o] = t.dim(k) == 1 ? 0 : st;
        st *= t.dim(k);
      }
    };
    strides(a, sa);
    strides(b, sb);
    for (int64_t i = 0; i < n; ++i) {
      int64_t rest = i, oa = 0, ob = 0;
      for (int d = rank - 1; d >= 0; --d) {
        const int64_t k = rest % y.dim(d);
        rest /= y.dim(d);
        oa += k * sa[static_cast<size_t>(d)];
        ob += k * sb[static_cast<size_t>(d)];
      }
      out[i] = arith_one(op_, pa[oa], pb[ob], p);
    }
  }

 private:
  Arith op_;
  fb::ActivationFunctionType act_ = fb::ActivationFunctionType::NONE;
  QuantizedMultiplier m1_, m2_, mo_;
  IntRange range_;
  std::vector<int32_t> t1_, t2_;  // ADD / SUB: ArithParams::t1, t2
};

// dst = max(dst, src) and dst = clamp(dst, lo, hi) over n bytes: 32 at a time on AVX2 (the
// library's baseline), which the compiler does not find by itself here.
inline void max_into(int8_t* dst, const int8_t* src, int n) {
  int k = 0;
#if defined(__AVX2__)
  for (; k + 32 <= n; k += 32) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(dst + k));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + k));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), _mm256_max_epi8(a, b));
  }
#endif
  for (; k < n; ++k) dst[k] = std::max(dst[k], src[k]);
}

inline void clamp_bytes(int8_t* dst, int n, int8_t lo, int8_t hi) {
  if (lo == kQMin && hi == kQMax) return;
  int k = 0;
#if defined(__AVX2__)
  const __m256i vlo = _mm256_set1_epi8(lo), vhi = _mm256_set1_epi8(hi);
  for (; k + 32 <= n; k += 32) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(dst + k));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), _mm256_min_epi8(_mm256_max_epi8(a, vlo), vhi));
  }
#endif
  for (; k < n; ++k) dst[k] = std::min(std::max(dst[k], lo), hi);
}

class PoolInt8 final : public Kernel {
 public:
  PoolInt8(const OpContext& ctx, bool max) : max_(max) {
    const auto* o = ctx.options<fb::Pool2DOptions>();
    DF_LITE_OP_CHECK(ctx, o, "has no Pool2DOptions");
    padding_ = o->padding(), sh_ = o->stride_h(), sw_ = o->stride_w(), fh_ = o->filter_height(), fw_ = o->filter_width();
    act_ = o->fused_activation_function();
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    require_int8(ctx, x, "input");
    require_int8(ctx, y, "output");
    check_rank(ctx, x, 4, "input");
    const PaddedDim ph = padded_dim(ctx, padding_, x.dim(1), fh_, sh_, 1);
    const PaddedDim pw = padded_dim(ctx, padding_, x.dim(2), fw_, sw_, 1);
    pad_top_ = ph.pad_before, pad_left_ = pw.pad_before;
    range_ = activation_range_q(act_, y);
    ctx.resize_output(0, {x.dim(0), ph.out, pw.out, x.dim(3)});
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int ih = x.dim(1), iw = x.dim(2), c = x.dim(3), oh = y.dim(1), ow = y.dim(2);
    const int8_t* in = x.data<int8_t>();
    int8_t* out = y.data<int8_t>();
    const int8_t lo = static_cast<int8_t>(range_.lo), hi = static_cast<int8_t>(range_.hi);
    // Channels innermost (NHWC's contiguous run), so the loops vectorize; rows split between threads.
    ctx.pool().parallel_for(static_cast<int64_t>(x.dim(0)) * oh, 4, [&](int64_t r0, int64_t r1) {
      std::vector<int32_t> sum(max_ ? 0 : static_cast<size_t>(c));
      for (int64_t r = r0; r < r1; ++r) {
        const int b = static_cast<int>(r / oh), oy = static_cast<int>(r % oh);
        for (int ox = 0; ox < ow; ++ox) {
          // The window clamped to the image: padded cells are not counted.
          const int y0 = std::max(oy * sh_ - pad_top_, 0), y1 = std::min(oy * sh_ - pad_top_ + fh_, ih);
          const int x0 = std::max(ox * sw_ - pad_left_, 0), x1 = std::min(ox * sw_ - pad_left_ + fw_, iw);
          const int count = (y1 - y0) * (x1 - x0);
          int8_t* __restrict dst = out + (r * ow + ox) * c;
          if (max_) {
            // The first row of the window initializes (no pass of -128 fills), then max in place.
            const int8_t* __restrict first = in + ((static_cast<int64_t>(b) * ih + y0) * iw + x0) * c;
            if (count == 0) {
              for (int k = 0; k < c; ++k) dst[k] = std::min(std::max(static_cast<int8_t>(kQMin), lo), hi);
              continue;
            }
            std::memcpy(dst, first, static_cast<size_t>(c));
            for (int iy = y0; iy < y1; ++iy)
              for (int ix = iy == y0 ? x0 + 1 : x0; ix < x1; ++ix)
                max_into(dst, in + ((static_cast<int64_t>(b) * ih + iy) * iw + ix) * c, c);
            clamp_bytes(dst, c, lo, hi);
            continue;
          }
          std::fill(sum.begin(), sum.end(), 0);
          for (int iy = y0; iy < y1; ++iy)
            for (int ix = x0; ix < x1; ++ix) {
              const int8_t* src = in + ((static_cast<int64_t>(b) * ih + iy) * iw + ix) * c;
              for (int k = 0; k < c; ++k) sum[static_cast<size_t>(k)] += src[k];
            }
          for (int k = 0; k < c; ++k) {
            int32_t acc = sum[static_cast<size_t>(k)];
            acc = count ? (acc > 0 ? acc + count / 2 : acc - count / 2) / count : 0;
            dst[k] = static_cast<int8_t>(std::min(std::max(acc, range_.lo), range_.hi));
          }
        }
      }
    });
  }

 private:
  bool max_;
  fb::Padding padding_ = fb::Padding::SAME;
  int sh_ = 1, sw_ = 1, fh_ = 1, fw_ = 1, pad_top_ = 0, pad_left_ = 0;
  fb::ActivationFunctionType act_ = fb::ActivationFunctionType::NONE;
  IntRange range_;
};

class SoftmaxInt8 final : public Kernel {
 public:
  explicit SoftmaxInt8(const OpContext& ctx) {
    if (const auto* o = ctx.options<fb::SoftmaxOptions>()) beta_ = o->beta();
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    require_int8(ctx, x, "input");
    require_int8(ctx, y, "output");
    // LiteRT requires this output quantization (1/256, -128).
    DF_LITE_OP_CHECK(ctx, zero_point(y) == -128 && std::abs(y.quant.scale[0] * 256.f - 1.f) < 1e-3f, "output '",
                     y.name, "' has scale ", y.quant.scale[0], " and zero point ", zero_point(y),
                     "; int8 SOFTMAX writes 1/256 and -128");
    // PreprocessSoftmaxScaling with 5 integer bits for the scaled differences.
    const double real = std::min<double>(static_cast<double>(beta_) * x.quant.scale[0] * (int64_t{1} << (31 - kDiffBits)),
                                         static_cast<double>((int64_t{1} << 31) - 1));
    mult_ = quantize_multiplier(real);
    DF_LITE_OP_CHECK(ctx, mult_.shift >= 0, "input scale ", x.quant.scale[0], " times beta is too small");
    const double radius = 1.0 * ((1 << kDiffBits) - 1) * static_cast<double>(int64_t{1} << (31 - kDiffBits)) /
                          static_cast<double>(int64_t{1} << mult_.shift);
    diff_min_ = -static_cast<int32_t>(std::floor(radius));
    ctx.resize_output(0, x.shape);
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int depth = x.dim(-1);
    const int64_t rows = depth ? x.num_elements() / depth : 0;
    const int8_t* in = x.data<int8_t>();
    int8_t* out = ctx.output(0).data<int8_t>();
    auto scaled = [&](int32_t diff) {  // MultiplyByQuantizedMultiplierGreaterThanOne, Q5.26
      return saturating_rounding_doubling_high_mul(diff * (1 << mult_.shift), mult_.multiplier);
    };
    for (int64_t r = 0; r < rows; ++r) {
      const int8_t* row = in + r * depth;
      int32_t max_in_row = kQMin;
      for (int c = 0; c < depth; ++c) max_in_row = std::max<int32_t>(max_in_row, row[c]);
      int32_t sum_of_exps = 0;  // Q12.19
      for (int c = 0; c < depth; ++c) {
        const int32_t diff = row[c] - max_in_row;
        if (diff >= diff_min_) sum_of_exps += fixed::rescale(fixed::exp_on_negative_values_q5(scaled(diff)), 0, kAccBits);
      }
      int bits_over_unit = 0;
      const int32_t shifted_scale = fixed::reciprocal(sum_of_exps, kAccBits, &bits_over_unit);
      for (int c = 0; c < depth; ++c) {
        const int32_t diff = row[c] - max_in_row;
        int32_t v = kQMin;
        if (diff >= diff_min_) {
          const int32_t e = fixed::exp_on_negative_values_q5(scaled(diff));
          v = rounding_divide_by_pot(fixed::mul(shifted_scale, e), bits_over_unit + 31 - 8) + kQMin;
        }
        out[r * depth + c] = static_cast<int8_t>(std::min(std::max(v, kQMin), kQMax));
      }
    }
  }

 private:
  static constexpr int kDiffBits = 5;
  static constexpr int kAccBits = 12;
  float beta_ = 1.f;
  QuantizedMultiplier mult_;
  int32_t diff_min_ = 0;
};

// An int8 op of one input whose output depends on the input byte alone: prepare fills a
// table of the 256 outputs (fill), eval looks each element up.
class LookupInt8 : public Kernel {
 public:
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    require_int8(ctx, x, "input");
    require_int8(ctx, y, "output");
    setup(ctx, x, y);
    for (int32_t v = kQMin; v <= kQMax; ++v)
      table_[static_cast<uint8_t>(static_cast<int8_t>(v))] = static_cast<int8_t>(std::clamp(fill(x, y, v), kQMin, kQMax));
    ctx.resize_output(0, x.shape);
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int8_t* in = x.data<int8_t>();
    int8_t* out = ctx.output(0).data<int8_t>();
    for (int64_t i = 0, n = x.num_elements(); i < n; ++i) out[i] = table_[static_cast<uint8_t>(in[i])];
  }

 protected:
  /// The op's constants from the tensors' parameters, once per prepare before fill.
  virtual void setup(const OpContext& ctx, const Tensor& x, const Tensor& y) {}
  /// The output for input byte v (clamped to int8 by the caller).
  virtual int32_t fill(const Tensor& x, const Tensor& y, int32_t v) = 0;

 private:
  int8_t table_[256] = {};
};

// LOGISTIC, TANH and GELU: a table of the 256 outputs, each computed in float from the
// input's real value and rounded to the output's parameters (LiteRT's LUTPopulate, with
// its transforms' exact float and double expressions).
enum class Table { kLogistic, kTanh, kGelu, kGeluApproximate };

float table_transform(Table t, float v) {
  switch (t) {
    case Table::kLogistic: return 1.f / (1.f + std::exp(-v));
    case Table::kTanh: return std::tanh(v);
    case Table::kGelu: return static_cast<float>(0.5f * v * (1.f + std::erf(v * M_SQRT1_2)));
    case Table::kGeluApproximate: {
      constexpr auto kSqrt2OverPi = static_cast<float>(M_2_SQRTPI * M_SQRT1_2);
      return 0.5f * v * (1.f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
    }
  }
  return v;
}

class TableInt8 final : public LookupInt8 {
 public:
  TableInt8(const OpContext& ctx, Table kind) : kind_(kind) {
    if (kind_ == Table::kGelu)
      if (const auto* o = ctx.options<fb::GeluOptions>(); o && o->approximate()) kind_ = Table::kGeluApproximate;
  }

 private:
  int32_t fill(const Tensor& x, const Tensor& y, int32_t v) override {
    const float inverse_scale = 1.f / y.quant.scale[0];
    const float real = x.quant.scale[0] * static_cast<float>(v - zero_point(x));
    return static_cast<int32_t>(std::round(table_transform(kind_, real) * inverse_scale) +
                                static_cast<float>(zero_point(y)));
  }

  Table kind_;
};

// LEAKY_RELU: (q - zp_in) requantized by s_in / s_out where it is at least 0, by
// s_in * alpha / s_out below (the multipliers in float, as LiteRT's prepare), tabulated.
class LeakyReluInt8 final : public LookupInt8 {
 public:
  explicit LeakyReluInt8(const OpContext& ctx) {
    if (const auto* o = ctx.options<fb::LeakyReluOptions>()) alpha_ = o->alpha();
  }

 private:
  void setup(const OpContext&, const Tensor& x, const Tensor& y) override {
    alpha_m_ = quantize_multiplier(x.quant.scale[0] * alpha_ / y.quant.scale[0]);
    identity_m_ = quantize_multiplier(x.quant.scale[0] / y.quant.scale[0]);
  }
  int32_t fill(const Tensor& x, const Tensor& y, int32_t v) override {
    const int32_t value = v - zero_point(x);
    return zero_point(y) + multiply_by_quantized_multiplier(value, value >= 0 ? identity_m_ : alpha_m_);
  }

  float alpha_ = 0.2f;
  QuantizedMultiplier alpha_m_, identity_m_;
};

// RSQRT: per input value, LiteRT's integer 1/sqrt (fixed::inv_sqrt_multiplier_exp) times
// 1 / (sqrt(s_in) s_out), tabulated; inputs below the zero point (negative reals) are an error.
class RsqrtInt8 final : public LookupInt8 {
 public:
  explicit RsqrtInt8(const OpContext&) {}
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int8_t* in = x.data<int8_t>();
    const int32_t zin = zero_point(x);
    for (int64_t i = 0, n = x.num_elements(); i < n; ++i)
      DF_LITE_OP_CHECK(ctx, in[i] >= zin, "input '", x.name, "' element ", i, " is ", static_cast<int>(in[i]),
                       ", below the zero point ", zin, ": RSQRT is only defined for positive values");
    LookupInt8::eval(ctx);
  }

 private:
  void setup(const OpContext&, const Tensor& x, const Tensor& y) override {
    // sqrt and product in float, the reciprocal in double, as LiteRT's prepare.
    m_ = quantize_multiplier(1. / (std::sqrt(x.quant.scale[0]) * y.quant.scale[0]));
  }
  int32_t fill(const Tensor& x, const Tensor& y, int32_t v) override {
    constexpr int kShift = 20;
    const int32_t value = v - zero_point(x);
    if (value <= 0) return kQMax;  // 0: the largest output, as LiteRT; below 0: refused at eval
    QuantizedMultiplier inv;
    fixed::inv_sqrt_multiplier_exp(value, -1, &inv.multiplier, &inv.shift);
    inv.shift += kShift;
    const int32_t data = multiply_by_quantized_multiplier(1, inv);
    return multiply_by_quantized_multiplier(data, {m_.multiplier, m_.shift - kShift}) + zero_point(y);
  }

  QuantizedMultiplier m_;
};

// HARD_SWISH, x * relu6(x + 3) / 6, in LiteRT's 16-bit fixed point (reference_ops::HardSwish
// with HardSwishPrepare's multipliers), tabulated for the 256 inputs at prepare.
int16_t srdhm16(int16_t a, int16_t b) {  // gemmlowp's int16 SaturatingRoundingDoublingHighMul
  if (a == b && a == INT16_MIN) return INT16_MAX;
  const int32_t ab = static_cast<int32_t>(a) * b;
  const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
  return static_cast<int16_t>((ab + nudge) / (1 << 15));
}
int16_t sdhm16(int16_t a, int16_t b) {  // the same without rounding (truncating division)
  if (a == b && a == INT16_MIN) return INT16_MAX;
  return static_cast<int16_t>(static_cast<int32_t>(a) * b / (1 << 15));
}
int16_t saturating_left_shift16(int16_t v, int amount) {
  return static_cast<int16_t>(std::clamp<int64_t>(static_cast<int64_t>(v) * (int64_t{1} << amount), INT16_MIN, INT16_MAX));
}
// gemmlowp's RoundingDivideByPOT on int16, quirks included: past 15 the mask wraps to all
// ones, so a non-negative x gives 1 and a negative one -1 (LiteRT's HARD_SWISH meets this
// on layers with tiny scales).
int16_t rounding_divide_by_pot16(int16_t x, int e) {
  const auto mask = static_cast<int16_t>((int64_t{1} << e) - 1);
  const int threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  const int shifted = e >= 31 ? (x < 0 ? -1 : 0) : (x >> e);
  return static_cast<int16_t>(shifted + ((x & mask) > threshold ? 1 : 0));
}
// DownScaleInt32ToInt16Multiplier: the top 16 bits of a Q31 multiplier, rounded.
int16_t downscale_multiplier(int32_t m) {
  constexpr int32_t kRound = 1 << 15;
  if (m >= INT32_MAX - kRound) return INT16_MAX;
  return static_cast<int16_t>((m + kRound) >> 16);
}

class HardSwishInt8 final : public LookupInt8 {
 public:
  explicit HardSwishInt8(const OpContext&) {}

 private:
  void setup(const OpContext& ctx, const Tensor& x, const Tensor& y) override {
    // The multipliers in float, as LiteRT computes them.
    const float hires_input_scale = (1.0f / 128.0f) * x.quant.scale[0];
    const float reluish_scale = 3.0f / 32768.0f;
    out_m_ = quantize_multiplier(hires_input_scale / y.quant.scale[0]);
    relu_m_ = quantize_multiplier(hires_input_scale / reluish_scale);
    DF_LITE_OP_CHECK(ctx, out_m_.shift <= 0, "input scale ", x.quant.scale[0], " / output scale ", y.quant.scale[0],
                     " is too large (the output multiplier must be below 1)");
    out16_ = downscale_multiplier(out_m_.multiplier);
    relu16_ = downscale_multiplier(relu_m_.multiplier);
  }
  int32_t fill(const Tensor& x, const Tensor& y, int32_t v) override {
    const auto input = static_cast<int16_t>(v - zero_point(x));
    const auto hires = static_cast<int16_t>(input * (1 << 7));
    const int16_t preshift_out = srdhm16(hires, out16_);
    int16_t reluish = hires;
    if (relu_m_.shift > 0) reluish = saturating_left_shift16(reluish, relu_m_.shift - 1);
    reluish = srdhm16(reluish, relu16_);
    if (relu_m_.shift > 0) reluish = saturating_left_shift16(reluish, 1);
    if (relu_m_.shift < 0) reluish = rounding_divide_by_pot16(reluish, -relu_m_.shift);
    reluish = static_cast<int16_t>((reluish + (1 << 15)) >> 1);
    const int16_t preshift = sdhm16(reluish, preshift_out);
    return rounding_divide_by_pot16(preshift, -out_m_.shift) + zero_point(y);
  }

  QuantizedMultiplier out_m_, relu_m_;
  int16_t out16_ = 0, relu16_ = 0;
};

// MEAN over any axes: the sum of (q - zp_in) requantized by s_in / s_out / count, with
// LiteRT's multiplier: s_in / s_out quantized first, 1 / count folded in afterwards in integers
// (quantizing s_in / s_out / count directly differs now and then by one step).
class MeanInt8 final : public Kernel {
 public:
  explicit MeanInt8(const OpContext& ctx) {
    if (const auto* o = ctx.options<fb::ReducerOptions>()) keep_dims_ = o->keep_dims();
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    require_int8(ctx, x, "input");
    require_int8(ctx, y, "output");
    DF_LITE_OP_CHECK(ctx, ctx.input(1).is_constant(), "needs constant axes");
    std::vector<int> axes = int_values(ctx, ctx.input(1), "axes");
    for (int& a : axes)
      if (a < 0) a += x.rank();
    std::sort(axes.begin(), axes.end());
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
    reduced_.assign(static_cast<size_t>(x.rank()), false);
    for (int a : axes) {
      DF_LITE_OP_CHECK(ctx, a >= 0 && a < x.rank(), "axis out of range for input ", shape_string(x.shape));
      reduced_[static_cast<size_t>(a)] = true;
    }
    int64_t count = 1;
    std::vector<int> shape;
    for (int d = 0; d < x.rank(); ++d) {
      if (reduced_[static_cast<size_t>(d)]) count *= x.dim(d);
      if (!reduced_[static_cast<size_t>(d)]) shape.push_back(x.dim(d));
      else if (keep_dims_) shape.push_back(1);
    }
    DF_LITE_OP_CHECK(ctx, count > 0, "input ", shape_string(x.shape), " has no elements to average");
    {
      // LiteRT's Mean (and QuantizedMeanOrSum): s_in / s_out quantized, then 1 / count folded
      // into it in integers (a shift of floor(log2 count), clamped, and a truncating division).
      QuantizedMultiplier m = quantize_multiplier(static_cast<double>(x.quant.scale[0]) / static_cast<double>(y.quant.scale[0]));
      int shift = 63 - __builtin_clzll(static_cast<uint64_t>(count));
      shift = std::min(shift, 32);
      shift = std::min(shift, 31 + m.shift);
      m.multiplier = static_cast<int32_t>((static_cast<int64_t>(m.multiplier) << shift) / count);
      m.shift -= shift;
      mult_ = m;
    }
    ctx.resize_output(0, shape);
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int32_t zin = zero_point(x), zout = zero_point(y);
    const int8_t* in = x.data<int8_t>();
    int8_t* out = y.data<int8_t>();
    // Each input element's output index: the kept dimensions' coordinates, row major.
    const int rank = x.rank();
    std::vector<int64_t> out_stride(static_cast<size_t>(rank), 0);
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; --d)
      if (!reduced_[static_cast<size_t>(d)]) {
        out_stride[static_cast<size_t>(d)] = s;
        s *= x.dim(d);
      }
    sums_.assign(static_cast<size_t>(y.num_elements()), 0);
    // Runs of the innermost dimension at a time (vectorizable): added onto as many sums when
    // it is kept, summed into one when it is reduced; an odometer over the outer dimensions.
    const int64_t inner = rank ? x.dim(rank - 1) : 1;
    const bool inner_kept = rank && !reduced_[static_cast<size_t>(rank - 1)];
    std::vector<int> idx(static_cast<size_t>(rank), 0);
    int64_t o = 0;
    for (int64_t i = 0, n = x.num_elements(); i < n; i += inner) {
      const int8_t* run = in + i;
      if (inner_kept) {
        int32_t* dst = sums_.data() + o;
        for (int64_t k = 0; k < inner; ++k) dst[k] += run[k];
      } else {
        int32_t total = 0;
        for (int64_t k = 0; k < inner; ++k) total += run[k];
        sums_[static_cast<size_t>(o)] += total;
      }
      for (int d = rank - 2; d >= 0; --d) {  // the next run's coordinates, and its output index
        o += out_stride[static_cast<size_t>(d)];
        if (++idx[static_cast<size_t>(d)] < x.dim(d)) break;
        o -= out_stride[static_cast<size_t>(d)] * x.dim(d);
        idx[static_cast<size_t>(d)] = 0;
      }
    }
    // The zero point comes off once per sum: count of them in each.
    const int64_t count = x.num_elements() / std::max<int64_t>(1, y.num_elements());
    for (int32_t& v : sums_) v -= static_cast<int32_t>(zin * count);
    for (int64_t k = 0, n = y.num_elements(); k < n; ++k) {
      const int32_t v = multiply_by_quantized_multiplier(sums_[static_cast<size_t>(k)], mult_) + zout;
      out[k] = static_cast<int8_t>(std::min(std::max(v, kQMin), kQMax));
    }
  }

 private:
  bool keep_dims_ = false;
  std::vector<bool> reduced_;
  std::vector<int32_t> sums_;
  QuantizedMultiplier mult_;
};

// Replaces code's registration by one that sends int8 inputs to `make_int8` and the rest to
// the float kernel registered before.
template <class F>
void wrap(OpResolver& r, fb::BuiltinOperator code, F make_int8) {
  const auto [lo, hi] = r.version_range(code);
  const KernelFactory* found = r.find_builtin(code, lo);
  DF_LITE_CHECK(found, "[lite] int8 kernels: no float kernel registered for ", fb::EnumNameBuiltinOperator(code));
  KernelFactory float_factory = *found;
  r.add_builtin(code, [float_factory, make_int8](const OpContext& ctx) -> std::unique_ptr<Kernel> {
    if (ctx.num_inputs() > 0 && ctx.has_input(0) && ctx.input(0).type == DType::kInt8) return make_int8(ctx);
    return float_factory(ctx);
  }, lo, hi);
}

}  // namespace

void register_int8_kernels(OpResolver& r) {
  using B = fb::BuiltinOperator;
  wrap(r, B::CONV_2D, [](const OpContext& c) { return make_conv_int8(c, false); });
  wrap(r, B::DEPTHWISE_CONV_2D, [](const OpContext& c) { return make_conv_int8(c, true); });
  wrap(r, B::FULLY_CONNECTED, [](const OpContext& c) { return make_fully_connected_int8(c); });
  wrap(r, B::ADD, [](const OpContext& c) { return std::unique_ptr<Kernel>(new ArithInt8(c, Arith::kAdd)); });
  wrap(r, B::MUL, [](const OpContext& c) { return std::unique_ptr<Kernel>(new ArithInt8(c, Arith::kMul)); });
  wrap(r, B::SUB, [](const OpContext& c) { return std::unique_ptr<Kernel>(new ArithInt8(c, Arith::kSub)); });
  wrap(r, B::SQUARED_DIFFERENCE,
       [](const OpContext& c) { return std::unique_ptr<Kernel>(new ArithInt8(c, Arith::kSquaredDifference)); });
  wrap(r, B::MAX_POOL_2D, [](const OpContext& c) { return std::unique_ptr<Kernel>(new PoolInt8(c, true)); });
  wrap(r, B::AVERAGE_POOL_2D, [](const OpContext& c) { return std::unique_ptr<Kernel>(new PoolInt8(c, false)); });
  wrap(r, B::SOFTMAX, [](const OpContext& c) { return std::unique_ptr<Kernel>(new SoftmaxInt8(c)); });
  wrap(r, B::MEAN, [](const OpContext& c) { return std::unique_ptr<Kernel>(new MeanInt8(c)); });
  wrap(r, B::LOGISTIC, [](const OpContext& c) { return std::unique_ptr<Kernel>(new TableInt8(c, Table::kLogistic)); });
  wrap(r, B::TANH, [](const OpContext& c) { return std::unique_ptr<Kernel>(new TableInt8(c, Table::kTanh)); });
  wrap(r, B::GELU, [](const OpContext& c) { return std::unique_ptr<Kernel>(new TableInt8(c, Table::kGelu)); });
  wrap(r, B::RSQRT, [](const OpContext& c) { return std::unique_ptr<Kernel>(new RsqrtInt8(c)); });
  wrap(r, B::LEAKY_RELU, [](const OpContext& c) { return std::unique_ptr<Kernel>(new LeakyReluInt8(c)); });
  wrap(r, B::HARD_SWISH, [](const OpContext& c) { return std::unique_ptr<Kernel>(new HardSwishInt8(c)); });
  wrap(r, B::BATCH_MATMUL, [](const OpContext& c) { return make_batch_matmul_int8(c); });
}

}  // namespace deepflow::lite
