// SPDX-License-Identifier: Apache-2.0
// DEQUANTIZE (float16, int8, uint8, int16 -> float32; per tensor or per axis) and QUANTIZE
// (float32 -> int8 / uint8 / int16, and int8 <-> uint8 requantization), with TFLite's
// rounding (lite.md §2.10). A DEQUANTIZE of a constant (a float16 or int8 weight) is folded
// at allocate_tensors() like any op on constants (Subgraph's constant folding), and so is
// DENSIFY, which expands a weight stored sparse.
#include <cmath>
#include <cstring>

#include "deepflow/lite/kernels/gemm.h"
#include "deepflow/lite/kernels/kernel_util.h"
#include "deepflow/lite/kernels/requant_simd.h"

#if DF_LITE_VNNI_BUILD
#define DF_LITE_X86_QUANT 1
#define DF_LITE_AVX512_QUANT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#endif

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

#if DF_LITE_X86_QUANT
DF_LITE_INTRINSICS_BEGIN
// float -> int8 / uint8 as the scalar loop: zp + round(x / scale) (IEEE division, rounding
// half away from zero: trunc, plus one step where the remainder is at least one half),
// clamped. The value is clamped in float first so that huge values and NaN (which max_ps
// replaces by the bound, as the scalar cast and clamp do) convert safely.
DF_LITE_AVX512_QUANT void quantize_avx512(const float* in, int64_t n, float scale, int32_t zp, int32_t lo, int32_t hi,
                                          bool to_unsigned, void* out) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512 flo = _mm512_set1_ps(static_cast<float>(lo - zp - 1)), fhi = _mm512_set1_ps(static_cast<float>(hi - zp + 1));
  const __m512 half = _mm512_set1_ps(0.5f);
  const __m512i vzp = _mm512_set1_epi32(zp), vlo = _mm512_set1_epi32(lo), vhi = _mm512_set1_epi32(hi);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (n - i)) - 1);
    __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(m, in + i), s);
    v = _mm512_min_ps(_mm512_max_ps(v, flo), fhi);
    const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 frac = _mm512_abs_ps(_mm512_sub_ps(v, t));
    const __mmask16 up = _mm512_cmp_ps_mask(frac, half, _CMP_GE_OQ);
    __m512i q = _mm512_cvttps_epi32(t);
    const __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
    q = _mm512_mask_add_epi32(q, up & ~neg, q, _mm512_set1_epi32(1));
    q = _mm512_mask_sub_epi32(q, up & neg, q, _mm512_set1_epi32(1));
    q = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(q, vzp), vlo), vhi);
    if (to_unsigned) {
      _mm_mask_storeu_epi8(static_cast<uint8_t*>(out) + i, m, _mm512_cvtusepi32_epi8(q));
    } else {
      _mm_mask_storeu_epi8(static_cast<int8_t*>(out) + i, m, _mm512_cvtsepi32_epi8(q));
    }
  }
}
DF_LITE_INTRINSICS_END
#endif

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
#if DF_LITE_X86_QUANT
      if (y.type != DType::kInt16 && simd() == Simd::kAvx512)
        return quantize_avx512(in, n, scale, static_cast<int32_t>(zp), lo, hi, y.type == DType::kUInt8, y.data_ptr);
#endif
      for (int64_t i = 0; i < n; ++i) store(i, zp + static_cast<int64_t>(std::round(in[i] / scale)));
      return;
    }
    // Requantization between int8 and uint8 (model interfaces, a converter's requantize before
    // a concatenation): LiteRT's Requantize, (q - zp_in) times s_in / s_out as a quantized
    // multiplier (rounding twice), plus zp_out.
    const QuantizedMultiplier m = quantize_multiplier(static_cast<double>(x.quant.scale[0]) / static_cast<double>(scale));
    const auto zin = static_cast<int32_t>(x.quant.zero_point[0]);
    for (int64_t i = 0; i < n; ++i) {
      const int32_t q = x.type == DType::kInt8 ? x.data<int8_t>()[i] : x.data<uint8_t>()[i];
      store(i, zp + multiply_by_quantized_multiplier(q - zin, m));
    }
  }
};

// DENSIFY: a constant stored sparse (TFLite's SparsityParameters: a traversal order over the
// dimensions and their blocks, each level DENSE or SPARSE_CSR) to its dense form. The values
// come in traversal order; each is placed at the dense index its level indices name.
class Densify final : public Kernel {
 public:
  explicit Densify(const OpContext&) {}
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    DF_LITE_OP_CHECK(ctx, x.sparsity && x.is_constant(), "input '", x.name, "' is not a sparse constant");
    DF_LITE_OP_CHECK(ctx, dtype_size(x.type) > 0 && x.type == ctx.output(0).type, "input is ", dtype_name(x.type),
                     ", output ", dtype_name(ctx.output(0).type));
    const fb::SparsityParameters& sp = *x.sparsity;
    const int rank = x.rank();
    order_ = sp.traversal_order() ? std::vector<int>(sp.traversal_order()->begin(), sp.traversal_order()->end())
                                  : std::vector<int>();
    block_map_ = sp.block_map() ? std::vector<int>(sp.block_map()->begin(), sp.block_map()->end()) : std::vector<int>();
    const int levels = static_cast<int>(order_.size());
    DF_LITE_OP_CHECK(ctx, levels >= rank && levels == rank + static_cast<int>(block_map_.size()) && sp.dim_metadata() &&
                              static_cast<int>(sp.dim_metadata()->size()) == levels,
                     "sparsity of '", x.name, "' has ", levels, " levels, ", block_map_.size(), " blocks for rank ", rank);
    std::vector<char> seen(static_cast<size_t>(levels), 0);
    for (int i = 0; i < levels; ++i) {
      const int d = order_[static_cast<size_t>(i)];
      DF_LITE_OP_CHECK(ctx, d >= 0 && d < levels && !seen[static_cast<size_t>(d)] && (i < rank) == (d < rank),
                       "traversal order ", shape_string(order_), " is not a permutation (dimensions, then blocks)");
      seen[static_cast<size_t>(d)] = 1;
    }
    levels_.clear();
    for (int i = 0; i < levels; ++i) {
      const fb::DimensionMetadata& m = *sp.dim_metadata()->Get(static_cast<uint32_t>(i));
      Level level;
      level.sparse = m.format() == fb::DimensionType::SPARSE_CSR;
      level.size = m.dense_size();
      if (level.sparse) {
        level.segments = index_vector(ctx, m.array_segments_type(), m.array_segments());
        level.indices = index_vector(ctx, m.array_indices_type(), m.array_indices());
      }
      levels_.push_back(std::move(level));
    }
    block_size_.clear();
    for (size_t b = 0; b < block_map_.size(); ++b) {
      DF_LITE_OP_CHECK(ctx, block_map_[b] >= 0 && block_map_[b] < rank, "block_map ", shape_string(block_map_));
      // A block level's dense_size is its block's size (the level that traverses it).
      int size = 0;
      for (int i = 0; i < levels; ++i)
        if (order_[static_cast<size_t>(i)] == rank + static_cast<int>(b)) size = levels_[static_cast<size_t>(i)].size;
      DF_LITE_OP_CHECK(ctx, size > 0, "block ", b, " has no size");
      block_size_.push_back(size);
    }
    ctx.resize_output(0, x.shape);
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    std::memset(y.data_ptr, 0, y.bytes);
    esize_ = dtype_size(x.type);
    count_ = static_cast<int64_t>(x.bytes / esize_);
    next_ = 0;
    std::vector<int> idx(levels_.size(), 0);
    fill(ctx, x, y, idx, 0, 0);
  }

 private:
  struct Level {
    bool sparse = false;
    int size = 0;
    std::vector<int64_t> segments, indices;
  };

  static std::vector<int64_t> index_vector(const OpContext& ctx, fb::SparseIndexVector type, const void* v) {
    std::vector<int64_t> out;
    auto copy = [&](const auto* table) {
      DF_LITE_OP_CHECK(ctx, table && table->values(), "a sparse level has no index vector");
      out.assign(table->values()->begin(), table->values()->end());
    };
    switch (type) {
      case fb::SparseIndexVector::Int32Vector: copy(static_cast<const fb::Int32Vector*>(v)); break;
      case fb::SparseIndexVector::Uint16Vector: copy(static_cast<const fb::Uint16Vector*>(v)); break;
      case fb::SparseIndexVector::Uint8Vector: copy(static_cast<const fb::Uint8Vector*>(v)); break;
      default: ctx.fail("a sparse level has index vector type ", static_cast<int>(type));
    }
    return out;
  }

  void fill(const OpContext& ctx, const Tensor& x, Tensor& y, std::vector<int>& idx, size_t level, int64_t prev) {
    if (level == levels_.size()) {
      const int rank = x.rank();
      std::vector<int64_t> dense(static_cast<size_t>(rank), 0);
      for (int i = 0; i < rank; ++i) dense[static_cast<size_t>(order_[static_cast<size_t>(i)])] = idx[static_cast<size_t>(i)];
      for (size_t i = static_cast<size_t>(rank); i < idx.size(); ++i) {
        const auto b = static_cast<size_t>(order_[i] - rank);
        auto& d = dense[static_cast<size_t>(block_map_[b])];
        d = d * block_size_[b] + idx[i];
      }
      int64_t flat = 0;
      for (int i = 0; i < rank; ++i) {
        DF_LITE_OP_CHECK(ctx, dense[static_cast<size_t>(i)] >= 0 && dense[static_cast<size_t>(i)] < x.dim(i), "sparse index ", dense[static_cast<size_t>(i)],
                         " is out of range for dimension ", i, " of ", shape_string(x.shape));
        flat = flat * x.dim(i) + dense[static_cast<size_t>(i)];
      }
      DF_LITE_OP_CHECK(ctx, next_ < count_, "input '", x.name, "' has fewer values (", count_, ") than its indices name");
      std::memcpy(y.data_ptr + flat * static_cast<int64_t>(esize_), x.data_ptr + next_ * static_cast<int64_t>(esize_), esize_);
      ++next_;
      return;
    }
    const Level& l = levels_[level];
    if (!l.sparse) {
      for (int i = 0; i < l.size; ++i) {
        idx[level] = i;
        fill(ctx, x, y, idx, level + 1, prev * l.size + i);
      }
      return;
    }
    DF_LITE_OP_CHECK(ctx, prev + 1 < static_cast<int64_t>(l.segments.size()), "sparse level ", level,
                     " has too few segments");
    const int64_t lo = l.segments[static_cast<size_t>(prev)], hi = l.segments[static_cast<size_t>(prev + 1)];
    DF_LITE_OP_CHECK(ctx, lo >= 0 && lo <= hi && hi <= static_cast<int64_t>(l.indices.size()), "sparse level ", level,
                     " has segment [", lo, ", ", hi, ") of ", l.indices.size(), " indices");
    for (int64_t i = lo; i < hi; ++i) {
      idx[level] = static_cast<int>(l.indices[static_cast<size_t>(i)]);
      fill(ctx, x, y, idx, level + 1, i);
    }
  }

  std::vector<int> order_, block_map_, block_size_;
  std::vector<Level> levels_;
  size_t esize_ = 1;
  int64_t count_ = 0, next_ = 0;
};

}  // namespace

void register_quant_kernels(OpResolver& r) {
  r.add_builtin(fb::BuiltinOperator::DEQUANTIZE, make_factory<Dequantize>(), 1, 6);
  r.add_builtin(fb::BuiltinOperator::QUANTIZE, make_factory<Quantize>(), 1, 4);
  r.add_builtin(fb::BuiltinOperator::DENSIFY, make_factory<Densify>(), 1, 1);
}

}  // namespace deepflow::lite
