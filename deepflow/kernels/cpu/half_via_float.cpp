// SPDX-License-Identifier: Apache-2.0
// float16 kernels that compute in float32: convert the inputs (F16C, 8 lanes),
// run the best float32 kernel of the same op, round the outputs back.
//
// Why: oneDNN 2.6 creates no float16 matmul or convolution on CPUs without
// AVX512-FP16 (Zen 4 has none), so without this float16 would fall to the naive
// reference kernels. The conversion is a memory pass each way, small next to a
// matmul or convolution. One adapter serves every op in the list below.
#include <immintrin.h>

#include "deepflow/core/parallel.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

void convert_all(const Half* src, float* dst, int64_t n) {
  parallel_for(n, kParallelGrain, [&](int64_t b, int64_t e) {
    int64_t i = b;
    for (; i + 8 <= e; i += 8)
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    for (; i < e; ++i) dst[i] = float(src[i]);
  });
}

void convert_all(const float* src, Half* dst, int64_t n) {
  parallel_for(n, kParallelGrain, [&](int64_t b, int64_t e) {
    int64_t i = b;
    for (; i + 8 <= e; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < e; ++i) dst[i] = Half(src[i]);
  });
}

bool all_half(const OpCall& c) {
  for (const Tensor& t : c.inputs)
    if (t.dtype() != DType::Float16) return false;
  return !c.inputs.empty();
}

void half_via_float(const OpCall& c, TensorList& out) {
  TensorList xs;
  xs.reserve(c.inputs.size());
  for (const Tensor& t : c.inputs) {
    Tensor f(t.shape(), DType::Float32);
    convert_all(t.data<Half>(), f.data<float>(), t.size());
    xs.push_back(f);
  }
  OpCall fc{c.def, xs, c.attrs, {}};
  TensorList ys = run_kernel(select_kernel(fc), c.def->id, xs, *c.attrs);
  for (size_t i = 0; i < ys.size(); ++i) convert_all(ys[i].data<float>(), out[i].data<Half>(), ys[i].size());
}

}  // namespace

// Below the native kernels (which decline float16), above the reference.
constexpr int kHalfViaFloatPriority = kCpuPriority - 10;
#define DF_HALF_VIA_FLOAT_(Name)                                                                  \
  DF_REGISTER_KERNEL(Name, {.name = "cpu:f16-via-f32", .priority = kHalfViaFloatPriority, \
                            .supports = all_half, .run = half_via_float})
DF_HALF_VIA_FLOAT_(MatMul);
DF_HALF_VIA_FLOAT_(Conv2D);
DF_HALF_VIA_FLOAT_(Conv2DBackpropInput);
DF_HALF_VIA_FLOAT_(Conv2DBackpropFilter);
DF_HALF_VIA_FLOAT_(MaxPool);
DF_HALF_VIA_FLOAT_(AvgPool);
DF_HALF_VIA_FLOAT_(AvgPoolGrad);
#undef DF_HALF_VIA_FLOAT_

}  // namespace deepflow
