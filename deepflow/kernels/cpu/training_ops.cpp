// SPDX-License-Identifier: Apache-2.0
// Optimized kernels of the optimizer updates (ops/training_ops.cpp).
#include <cmath>

#include "deepflow/core/parallel.h"
#include "deepflow/kernels/kernel.h"

namespace deepflow {

namespace {
// float32 Adam in one pass: each element of var, m, v and grad is read once and each
// output written once. The loop has no branches so the compiler vectorizes it
// (sqrt and division included, since we build with -fno-math-errno).
void cpu_apply_adam(const OpCall& c, TensorList& out) {
  const float b1 = float(1 - c.attr_float("beta_1")), b2 = float(1 - c.attr_float("beta_2"));
  const float eps = float(c.attr_float("epsilon"));
  const float* __restrict var = c.in(0).data<float>();
  const float* __restrict m = c.in(1).data<float>();
  const float* __restrict v = c.in(2).data<float>();
  const float* __restrict g = c.in(3).data<float>();
  const float lr = c.in(4).data<float>()[0];
  float* __restrict var_o = out[0].data<float>();
  float* __restrict m_o = out[1].data<float>();
  float* __restrict v_o = out[2].data<float>();
  // Memory bound: a thread per ~64K elements (768 KiB of traffic) pays for its wake-up.
  parallel_for(out[0].size(), 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float gi = g[i];
      const float m_new = m[i] + (gi - m[i]) * b1;
      const float v_new = v[i] + (gi * gi - v[i]) * b2;
      m_o[i] = m_new;
      v_o[i] = v_new;
      var_o[i] = var[i] - lr * m_new / (std::sqrt(v_new) + eps);
    }
  });
}

bool f32(const OpCall& c) { return c.in(0).dtype() == DType::Float32; }
}  // namespace

DF_REGISTER_KERNEL(ApplyAdam, {.name = "cpu:simd", .priority = kCpuPriority, .supports = f32, .run = cpu_apply_adam});

}  // namespace deepflow
