// SPDX-License-Identifier: Apache-2.0
// Optimized CPU kernels of the fused primitives (float32).
//
// fused_matmul: one oneDNN matmul primitive with the bias and an eltwise post-op, so the
// product is written once, already biased and activated (cached by geometry like matmul's).
// fused_elementwise: the program runs over L1-sized blocks, one `omp simd` loop per
// instruction, with one block buffer per stack slot: memory is read and written once per
// element, however long the chain. The element functions are those of kernels/cpu/unary.cpp
// (libmvec's SIMD transcendental functions, with the same wide path for exp and sigmoid).
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "deepflow/core/parallel.h"
#include "deepflow/ops/fused_program.h"
#include "deepflow/kernels/binary_functors.h"
#include "deepflow/kernels/cpu/onednn_util.h"
#include "deepflow/kernels/cpu/vector_math.h"
#include "deepflow/ops/kernel.h"


namespace deepflow {
namespace {

// --- fused_matmul on oneDNN ---

using dims = dnnl::memory::dims;
using onednn::operand_strides;

struct MatMulEntry {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, bias, c, scratch;
};

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& k) const {
    size_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ size_t(v)) * 1099511628211ull;
    return h;
  }
};

onednn::PrimitiveCache<MatMulEntry, std::vector<int64_t>, KeyHash>& matmul_cache() {
  static auto* c = new onednn::PrimitiveCache<MatMulEntry, std::vector<int64_t>, KeyHash>;  // never destroyed
  return *c;
}

int activation_code(const std::string& a) {
  return a.empty() ? 0 : a == "relu" ? 1 : a == "tanh" ? 2 : a == "sigmoid" ? 3 : 4;
}

std::shared_ptr<const MatMulEntry> make_matmul(const dims& ad, const dims& bd, const dims& cd, bool ta, bool tb,
                                               bool has_bias, int act) {
  using dt = dnnl::memory::data_type;
  dnnl::memory::desc a(ad, dt::f32, operand_strides(ad, ta)), b(bd, dt::f32, operand_strides(bd, tb)),
      c(cd, dt::f32, operand_strides(cd, false));
  dims bias_dims(cd.size(), 1);
  bias_dims.back() = cd.back();
  dnnl::memory::desc bias = has_bias ? dnnl::memory::desc(bias_dims, dt::f32, operand_strides(bias_dims, false))
                                     : dnnl::memory::desc();
  dnnl::primitive_attr attr = onednn::user_scratchpad();
  if (act) {
    static const dnnl::algorithm algs[] = {dnnl::algorithm::eltwise_relu, dnnl::algorithm::eltwise_relu,
                                           dnnl::algorithm::eltwise_tanh, dnnl::algorithm::eltwise_logistic,
                                           dnnl::algorithm::eltwise_gelu_erf};
    dnnl::post_ops po;
    po.append_eltwise(1.f, algs[act], 0.f, 0.f);
    attr.set_post_ops(po);
  }
  dnnl::matmul::desc d = has_bias ? dnnl::matmul::desc(a, b, bias, c) : dnnl::matmul::desc(a, b, c);
  dnnl::matmul::primitive_desc pd(d, attr, onednn::cpu_engine());
  return std::make_shared<const MatMulEntry>(MatMulEntry{dnnl::matmul(pd), a, b, bias, c, pd.scratchpad_desc()});
}

// b one matrix and a not transposed: a's batch folds into rows; or equal batch dims.
bool matmul_supported(const OpCall& c) {
  const Tensor &a = c.in(0), &b = c.in(1);
  if (a.dtype() != DType::Float32) return false;
  const Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  return (bb.num_elements() == 1 && !c.attr_bool("transpose_a")) || ba == bb;
}

// A small 2D product with no activation or relu: sgemm writes the product, then one
// pass over the (cache-resident) result adds the bias and applies relu. (Seeding c with
// the bias and asking sgemm for beta = 1 was no faster in a noisy A/B: 48 vs 46 us.)
// `m` rows of a (its batch dims folded in, a not transposed) times b.
bool small_matmul(const Tensor& a, const Tensor& b, const float* bias, Tensor& o, int64_t m, bool tb, int act) {
  const int64_t k = a.dim(-1), n = tb ? b.dim(0) : b.dim(1);
  float* pc = o.data<float>();
  if (!onednn::small_sgemm(false, tb, m, n, k, a.data<float>(), k, b.data<float>(), b.dim(1), 0.f, pc))
    return false;
  if (!bias && act == 0) return true;
  parallel_for(m, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      float* row = pc + i * n;
      if (bias && act == 1) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) {
          const float v = row[j] + bias[j];
          row[j] = v < 0 ? 0.f : v;
        }
      } else if (bias) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
      } else {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) row[j] = row[j] < 0 ? 0.f : row[j];
      }
    }
  });
  return true;
}

// One row of a times a transposed b ([n, k], rows contiguous: a classifier's Gemm with
// transB at batch 1): each b row is read once, with eight independent FMA chains per dot
// (one chain is latency-bound: 1280 x 1000 weight in cache, 1 thread: 152 vs 58 us) and the
// bias and relu applied as the dots finish. dnnl_sgemm's m = 1 path is slower (same weight
// not in cache: 260-300 vs 155-200 us). From 2 rows on, oneDNN is as fast or faster, cold
// or warm, than this loop with the rows register-blocked (8 x 1280 x 1000 cold, 1 thread:
// 540 vs 940 us; 2 x 128 x 64: 1.2 vs 1.7 us), so it takes them. Each output is one
// thread's fixed-order sum: thread-count independent.
float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

float dot(const float* x, const float* w, int64_t k) {
  constexpr int kChains = 8;
  __m256 acc[kChains];
  for (__m256& v : acc) v = _mm256_setzero_ps();
  int64_t q = 0;
  for (; q + 8 * kChains <= k; q += 8 * kChains)
    for (int u = 0; u < kChains; ++u)
      acc[u] = _mm256_fmadd_ps(_mm256_loadu_ps(x + q + 8 * u), _mm256_loadu_ps(w + q + 8 * u), acc[u]);
  for (; q + 8 <= k; q += 8) acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(x + q), _mm256_loadu_ps(w + q), acc[0]);
  for (int u = 1; u < kChains; ++u) acc[0] = _mm256_add_ps(acc[0], acc[u]);
  float s = hsum(acc[0]);
  for (; q < k; ++q) s += x[q] * w[q];
  return s;
}

void gemv_row(const float* a, const float* b, const float* bias, float* o, int64_t n, int64_t k, int act) {
  parallel_for(n, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(k, 1)), [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      const float s = dot(a, b + j * k, k) + (bias ? bias[j] : 0.f);
      o[j] = act == 1 && s < 0 ? 0.f : s;
    }
  });
}

void cpu_fused_matmul(const OpCall& c, TensorList& out) {
  const Tensor &a = c.in(0), &b = c.in(1);
  Tensor& o = out[0];
  const bool ta = c.attr_bool("transpose_a"), tb = c.attr_bool("transpose_b"), has_bias = c.attr_bool("has_bias");
  const int act = activation_code(c.attr_string("activation"));
  const int64_t m = ta ? a.dim(-1) : a.dim(-2), k = ta ? a.dim(-2) : a.dim(-1), n = tb ? b.dim(-2) : b.dim(-1);
  const Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  if (o.size() == 0) return;
  dims ad, bd, cd;
  if (bb.num_elements() == 1 && !ta) {
    const int64_t rows = o.size() / n;
    ad = {rows, k};
    bd = {k, n};
    cd = {rows, n};
  } else {
    ad = {ba.num_elements(), m, k};
    bd = {bb.num_elements(), k, n};
    cd = {ba.num_elements(), m, n};
  }
  if (k == 0) {  // oneDNN wants k > 0; the product is zeros: let the reference add bias and activate
    kernels_for(OpId::FusedMatMul).back().run(c, out);
    return;
  }
  // ad has two dims exactly when a is not transposed and its batch dims fold into rows.
  if (ad.size() == 2 && act <= 1 && tb && ad[0] == 1) {
    gemv_row(a.data<float>(), b.data<float>(), has_bias ? c.in(2).data<float>() : nullptr, o.data<float>(), n, k, act);
    return;
  }
  if (ad.size() == 2 && act <= 1 && small_matmul(a, b, has_bias ? c.in(2).data<float>() : nullptr, o, ad[0], tb, act))
    return;
  std::vector<int64_t> key{int64_t(ad.size()), ta, tb, has_bias, act};
  for (const dims* d : {&ad, &bd, &cd}) key.insert(key.end(), d->begin(), d->end());
  auto e = matmul_cache().get(key, [&] { return make_matmul(ad, bd, cd, ta, tb, has_bias, act); });
  if (!e) {
    kernels_for(OpId::FusedMatMul).back().run(c, out);
    return;
  }
  dnnl::engine& eng = onednn::cpu_engine();
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnnl::memory(e->a, eng, a.raw_data())},
                                             {DNNL_ARG_WEIGHTS, dnnl::memory(e->b, eng, b.raw_data())},
                                             {DNNL_ARG_DST, dnnl::memory(e->c, eng, o.raw_data())}};
  if (has_bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e->bias, eng, c.in(2).raw_data()));
  Tensor scratch;
  if (size_t bytes = e->scratch.get_size()) {
    scratch = onednn::scratch_tensor(bytes);
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(e->scratch, eng, scratch.raw_data()));
  }
  dnnl::stream& s = onednn::thread_stream();
  e->prim.execute(s, args);
  s.wait();
}

// --- fused_elementwise: blocked interpreter ---

constexpr int64_t kBlock = 256;
constexpr float kExpFastRange = 87.f, kExpClamp = 174.f, kExpZeroBelow = -104.f;

float clamp_abs(float x, float m) {
  float a = std::fabs(x);
  return std::copysign(a > m ? m : a, x);
}
float exp_wide(float x) {
  float t = expf(0.5f * clamp_abs(x, kExpClamp));
  const uint32_t keep = 0u - uint32_t(!(x < kExpZeroBelow));
  t = std::bit_cast<float>(std::bit_cast<uint32_t>(t) & keep);
  return t * t;
}
float sigmoid_from(float x, float e) { return (std::signbit(x) ? e : 1.f) / (1.f + e); }

bool any_wide(const float* x, int64_t m) {
  int wide = 0;
#pragma omp simd reduction(| : wide)
  for (int64_t i = 0; i < m; ++i) wide |= int(std::fabs(x[i]) > kExpFastRange);
  return wide != 0;
}

#define DF_MAP_(expr)                                   \
  _Pragma("omp simd") for (int64_t i = 0; i < m; ++i) { \
    const float x = a[i];                               \
    y[i] = (expr);                                      \
  }                                                     \
  return;

// y = op(a) over one block (y may be a).
void unary_block(OpId op, const float* a, float* y, int64_t m) {
  switch (op) {
    case OpId::Neg: DF_MAP_(-x)
    case OpId::Abs: DF_MAP_(std::fabs(x))
    case OpId::Sign: DF_MAP_(x > 0 ? 1.f : x < 0 ? -1.f : x)
    case OpId::Exp:
      if (any_wide(a, m)) { DF_MAP_(exp_wide(x)) }
      DF_MAP_(expf(x))
    case OpId::Log: DF_MAP_(logf(x))
    case OpId::Log1p: DF_MAP_(log1pf(x))
    case OpId::Expm1: DF_MAP_(expm1f(x))
    case OpId::Sqrt: DF_MAP_(std::sqrt(x))
    case OpId::Rsqrt: DF_MAP_(1.f / std::sqrt(x))
    case OpId::Square: DF_MAP_(x * x)
    case OpId::Sin: DF_MAP_(sinf(x))
    case OpId::Cos: DF_MAP_(cosf(x))
    case OpId::Tanh: DF_MAP_(tanhf(x))
    case OpId::Sigmoid:
      if (any_wide(a, m)) { DF_MAP_(sigmoid_from(x, exp_wide(-std::fabs(x)))) }
      DF_MAP_(sigmoid_from(x, expf(-std::fabs(x))))
    case OpId::Relu: DF_MAP_(x < 0 ? 0.f : x)
    case OpId::Erf: DF_MAP_(erff(x))
    case OpId::Floor: DF_MAP_(std::floor(x))
    case OpId::Ceil: DF_MAP_(std::ceil(x))
    case OpId::Round: DF_MAP_(std::nearbyint(x))
    default: return;
  }
}
#undef DF_MAP_

template <class Op>
void binary_loop(const float* a, const float* b, float* y, int64_t m) {
#pragma omp simd
  for (int64_t i = 0; i < m; ++i) y[i] = Op::f(a[i], b[i]);
}

// y = op(a, b) over one block (y may be a or b).
void binary_block(OpId op, const float* a, const float* b, float* y, int64_t m) {
  switch (op) {
    case OpId::Add: return binary_loop<fn::Add>(a, b, y, m);
    case OpId::Sub: return binary_loop<fn::Sub>(a, b, y, m);
    case OpId::Mul: return binary_loop<fn::Mul>(a, b, y, m);
    case OpId::Div: return binary_loop<fn::Div>(a, b, y, m);
    case OpId::Pow: return binary_loop<fn::Pow>(a, b, y, m);
    case OpId::Maximum: return binary_loop<fn::Maximum>(a, b, y, m);
    case OpId::Minimum: return binary_loop<fn::Minimum>(a, b, y, m);
    default: return;
  }
}

// Operands are read where they lie: a full input straight from its tensor, scalars and
// immediates from blocks filled once per thread, rows from a block tiled once when the row
// length divides the block (blocks then all start at a row boundary), else copied per block.
// Each instruction writes its stack slot's buffer; the last one writes the output.
void cpu_fused_elementwise(const OpCall& c, TensorList& out) {
  const fused::Program& p = fused::parse_cached(c.attr_string("program"), c.num_inputs());
  Tensor& o = out[0];
  const Shape& s = o.shape();
  const int64_t row = s.rank() ? s[s.rank() - 1] : 1, n = o.size();
  const int num_inputs = c.num_inputs();
  std::vector<const float*> src;
  std::vector<fused::Broadcast> kind;
  for (int i = 0; i < num_inputs; ++i) {
    src.push_back(c.in(i).data<float>());
    kind.push_back(fused::broadcast_of(c.in(i).shape(), s));
  }
  const bool tiled_rows = row > 0 && kBlock % row == 0;
  int immediates = 0;
  for (const fused::Instr& ins : p.code) immediates += ins.kind == fused::Instr::Immediate;
  float* po = o.data<float>();
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  // A block costs about one element per instruction; aim for kParallelGrain elements of work.
  const int64_t grain =
      std::max<int64_t>(1, kParallelGrain / (kBlock * std::max<int64_t>(1, int64_t(p.code.size()) / 2)));
  parallel_for(blocks, grain, [&](int64_t b0, int64_t b1) {
    // Slots: one per stack level, then one per input (scalars and rows), then one per immediate.
    const int64_t slots = p.max_depth + num_inputs + immediates;
    thread_local std::vector<float> storage;  // scratch only: no need to zero it per call
    if (storage.size() < size_t(slots * kBlock) + 16) storage.resize(size_t(slots * kBlock) + 16);
    float* base = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(storage.data()) + 63) & ~uintptr_t(63));
    float* stack_buf = base;
    float* input_buf = base + p.max_depth * kBlock;
    float* imm_buf = input_buf + num_inputs * kBlock;
    for (int i = 0; i < num_inputs; ++i) {
      float* d = input_buf + i * kBlock;
      if (kind[size_t(i)] == fused::Broadcast::Scalar) std::fill(d, d + kBlock, src[size_t(i)][0]);
      if (kind[size_t(i)] == fused::Broadcast::Row && tiled_rows)
        for (int64_t j = 0; j < kBlock; j += row) std::memcpy(d + j, src[size_t(i)], size_t(row) * sizeof(float));
    }
    {
      int k = 0;
      for (const fused::Instr& ins : p.code)
        if (ins.kind == fused::Instr::Immediate) {
          std::fill(imm_buf + k * kBlock, imm_buf + (k + 1) * kBlock, float(ins.value));
          ++k;
        }
    }
    std::vector<const float*> val(size_t(p.max_depth));
    const size_t last = p.code.size() - 1;
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t start = blk * kBlock, m = std::min(kBlock, n - start);
      int sp = 0, imm = 0;
      for (size_t pc = 0; pc < p.code.size(); ++pc) {
        const fused::Instr& ins = p.code[pc];
        if (ins.kind == fused::Instr::Input) {
          const int i = ins.index;
          const float* x = input_buf + i * kBlock;
          if (kind[size_t(i)] == fused::Broadcast::Full) {
            x = src[size_t(i)] + start;
          } else if (kind[size_t(i)] == fused::Broadcast::Row && !tiled_rows) {
            float* d = input_buf + i * kBlock;
            for (int64_t done = 0, j = start % row; done < m;) {
              const int64_t len = std::min(row - j, m - done);
              std::memcpy(d + done, src[size_t(i)] + j, size_t(len) * sizeof(float));
              done += len;
              j = 0;
            }
          }
          val[size_t(sp++)] = x;
        } else if (ins.kind == fused::Instr::Immediate) {
          val[size_t(sp++)] = imm_buf + (imm++) * kBlock;
        } else {
          const int at = sp - ins.arity;
          float* y = pc == last ? po + start : stack_buf + at * kBlock;
          if (ins.arity == 1) unary_block(ins.op, val[size_t(at)], y, m);
          else binary_block(ins.op, val[size_t(at)], val[size_t(at + 1)], y, m);
          val[size_t(at)] = y;
          sp = at + 1;
        }
      }
      if (p.code[last].kind != fused::Instr::Op) std::memcpy(po + start, val[0], size_t(m) * sizeof(float));
    }
  });
}

bool elementwise_supported(const OpCall& c) { return c.in(0).dtype() == DType::Float32; }

}  // namespace

DF_REGISTER_KERNEL(FusedMatMul, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = matmul_supported,
                                 .run = cpu_fused_matmul});
DF_REGISTER_KERNEL(FusedElementwise, {.name = "cpu:simd", .priority = kCpuPriority,
                                      .supports = elementwise_supported, .run = cpu_fused_elementwise});

}  // namespace deepflow
