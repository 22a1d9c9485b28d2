// SPDX-License-Identifier: Apache-2.0
// Optimized CPU kernels of the unary primitives for float32, and for bfloat16
// and float16 through float32 blocks: flat `omp simd` loops split across threads.
//
// The transcendental functions vectorize through glibc's libmvec (see
// kernels/cpu/vector_math.h). Measured on 1M random floats against float64, the largest relative
// error is 3e-7 (5e-7 for exp and sigmoid on their wide path below), inside the
// 1e-6 we aim for and the 1e-5 the op table allows against the reference kernels.
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "deepflow/core/parallel.h"
#include "deepflow/kernels/cpu/vector_math.h"
#include "deepflow/ops/kernel.h"


namespace deepflow {
namespace {

// Element functions on float: the reference kernels' formulas, written to vectorize.
struct Neg { static float f(float x) { return -x; } };
struct Abs { static float f(float x) { return std::fabs(x); } };
struct Sign { static float f(float x) { return x > 0 ? 1.f : x < 0 ? -1.f : x; } };
// libmvec's expf leaves its fast path (by 20-50x) where |x| > 87.3, i.e. where the
// result overflows or is subnormal, which masked logits (-1e9) hit all the time.
// Blocks holding such values use exp(x/2)^2 instead, with x clamped to +-174 so
// that x/2 stays on the fast path; the square overflows and underflows correctly.
constexpr float kExpFastRange = 87.f;
constexpr float kExpClamp = 174.f;
constexpr float kExpZeroBelow = -104.f;  // exp(-104) < half the smallest subnormal
// Clamps x to [-m, m]; NaN passes through. One select on |x| (two selects in a row
// defeat GCC's if-conversion without -fno-trapping-math).
float clamp_abs(float x, float m) {
  float a = std::fabs(x);
  return std::copysign(a > m ? m : a, x);
}
struct Exp {
  static constexpr bool kHasWide = true;
  static float f(float x) { return expf(x); }
  static float wide(float x) {
    float t = expf(0.5f * clamp_abs(x, kExpClamp));
    // Where exp(x) is 0 anyway, square 0 rather than underflow (subnormal results cost
    // ~100 cycles). A bit mask, not a select: a second select stops GCC's if-conversion.
    const uint32_t keep = 0u - uint32_t(!(x < kExpZeroBelow));  // NaN keeps
    t = std::bit_cast<float>(std::bit_cast<uint32_t>(t) & keep);
    return t * t;
  }
};
struct Log { static float f(float x) { return logf(x); } };
struct Log1p { static float f(float x) { return log1pf(x); } };
struct Expm1 { static float f(float x) { return expm1f(x); } };
struct Sqrt { static float f(float x) { return std::sqrt(x); } };
struct Rsqrt { static float f(float x) { return 1.f / std::sqrt(x); } };
struct Square { static float f(float x) { return x * x; } };
struct Sin { static float f(float x) { return sinf(x); } };
struct Cos { static float f(float x) { return cosf(x); } };
struct Tanh { static float f(float x) { return tanhf(x); } };
// With e = exp(-|x|) in (0, 1]: 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0, so
// neither overflows and small results keep their relative precision.
// (signbit, not x < 0, in the select: GCC if-converts it without -fno-trapping-math.)
struct Sigmoid {
  static constexpr bool kHasWide = true;
  static float from_e(float x, float e) { return (std::signbit(x) ? e : 1.f) / (1.f + e); }
  static float f(float x) { return from_e(x, expf(-std::fabs(x))); }
  static float wide(float x) { return from_e(x, Exp::wide(-std::fabs(x))); }
};
struct Relu { static float f(float x) { return x < 0 ? 0.f : x; } };
struct Erf { static float f(float x) { return erff(x); } };
struct Floor { static float f(float x) { return std::floor(x); } };
struct Ceil { static float f(float x) { return std::ceil(x); } };
struct Round { static float f(float x) { return std::nearbyint(x); } };

template <class Op>
void map_f32(const float* x, float* y, int64_t n) {
  if constexpr (requires { Op::kHasWide; }) {
    constexpr int64_t kSub = 256;
    for (int64_t b = 0; b < n; b += kSub) {
      const int64_t m = std::min(kSub, n - b);
      int wide = 0;
#pragma omp simd reduction(| : wide)
      for (int64_t i = 0; i < m; ++i) wide |= int(std::fabs(x[b + i]) > kExpFastRange);
      if (wide) {
#pragma omp simd
        for (int64_t i = 0; i < m; ++i) y[b + i] = Op::wide(x[b + i]);
      } else {
#pragma omp simd
        for (int64_t i = 0; i < m; ++i) y[b + i] = Op::f(x[b + i]);
      }
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = Op::f(x[i]);
  }
}

// 16-bit types: widen a block to float, compute, narrow (round to nearest even).
constexpr int64_t kBlock = 512;

void widen(const Half* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  for (; i < n; ++i) y[i] = float(x[i]);
}
void narrow(const float* x, Half* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) y[i] = Half(x[i]);
}
void widen(const BFloat16* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = BFloat16::to_float(x[i].bits);
}
void narrow(const float* x, BFloat16* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i].bits = BFloat16::from_float(x[i]);
}

template <class Op, class T>
void map_block(const T* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    map_f32<Op>(x, y, n);
  } else {
    alignas(64) float buf[kBlock];
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t m = std::min(kBlock, n - b);
      widen(x + b, buf, m);
      map_f32<Op>(buf, buf, m);
      narrow(buf, y + b, m);
    }
  }
}

template <class Op>
void cpu_unary(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  auto run = [&]<class T>() {
    const T* px = x.data<T>();
    T* po = o.data<T>();
    parallel_for(o.size(), kParallelGrain, [&](int64_t b, int64_t e) { map_block<Op>(px + b, po + b, e - b); });
  };
  switch (x.dtype()) {
    case DType::Float32: run.template operator()<float>(); break;
    case DType::BFloat16: run.template operator()<BFloat16>(); break;
    case DType::Float16: run.template operator()<Half>(); break;
    default: dtype_unsupported(c.name(), x.dtype());
  }
}

// --- relu_grad --- g * (y > 0) in one pass (a product, as the reference and TensorFlow:
// a non-finite g where y <= 0 gives NaN). Reads element i of g and y before writing
// element i (blockwise for 16-bit types), so the output may share either input's buffer.
// The 0/1 factor is a bit mask of 1.0f: GCC leaves `float(y > 0)` a scalar branch.
void relu_grad_f32(const float* g, const float* y, float* o, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    o[i] = g[i] * std::bit_cast<float>((0u - uint32_t(y[i] > 0.f)) & std::bit_cast<uint32_t>(1.f));
}

template <class T>
void relu_grad_block(const T* g, const T* y, T* o, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    relu_grad_f32(g, y, o, n);
  } else {
    alignas(64) float bg[kBlock], by[kBlock];
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t m = std::min(kBlock, n - b);
      widen(g + b, bg, m);
      widen(y + b, by, m);
      relu_grad_f32(bg, by, bg, m);
      narrow(bg, o + b, m);
    }
  }
}

void cpu_relu_grad(const OpCall& c, TensorList& out) {
  auto run = [&]<class T>() {
    const T *g = c.in(0).data<T>(), *y = c.in(1).data<T>();
    T* o = out[0].data<T>();
    parallel_for(out[0].size(), kParallelGrain,
                 [&](int64_t b, int64_t e) { relu_grad_block(g + b, y + b, o + b, e - b); });
  };
  switch (c.in(0).dtype()) {
    case DType::Float32: run.template operator()<float>(); break;
    case DType::BFloat16: run.template operator()<BFloat16>(); break;
    case DType::Float16: run.template operator()<Half>(); break;
    default: dtype_unsupported(c.name(), c.in(0).dtype());
  }
}

bool f32_or_16bit(const OpCall& c) {
  DType t = c.in(0).dtype();
  return t == DType::Float32 || t == DType::BFloat16 || t == DType::Float16;
}

}  // namespace

#define DF_CPU_UNARY_(Name) \
  DF_REGISTER_KERNEL(Name, {.name = "cpu:simd", .priority = kCpuPriority, .supports = f32_or_16bit, \
                            .run = cpu_unary<Name>})
DF_CPU_UNARY_(Neg);
DF_CPU_UNARY_(Abs);
DF_CPU_UNARY_(Sign);
DF_CPU_UNARY_(Exp);
DF_CPU_UNARY_(Log);
DF_CPU_UNARY_(Log1p);
DF_CPU_UNARY_(Expm1);
DF_CPU_UNARY_(Sqrt);
DF_CPU_UNARY_(Rsqrt);
DF_CPU_UNARY_(Square);
DF_CPU_UNARY_(Sin);
DF_CPU_UNARY_(Cos);
DF_CPU_UNARY_(Tanh);
DF_CPU_UNARY_(Sigmoid);
DF_CPU_UNARY_(Relu);
DF_CPU_UNARY_(Erf);
DF_CPU_UNARY_(Floor);
DF_CPU_UNARY_(Ceil);
DF_CPU_UNARY_(Round);
#undef DF_CPU_UNARY_
DF_REGISTER_KERNEL(ReluGrad, {.name = "cpu:simd", .priority = kCpuPriority, .supports = f32_or_16bit,
                              .run = cpu_relu_grad});

}  // namespace deepflow
