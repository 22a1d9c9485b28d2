// SPDX-License-Identifier: Apache-2.0
#include "deepflow/kernels/cpu/onednn_util.h"

#include <algorithm>
#include <cstring>

#include "deepflow/core/parallel.h"

namespace deepflow::onednn {

dnnl::engine& cpu_engine() {
  static dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);  // never destroyed: kernels may run at exit
  return *e;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream s(cpu_engine());
  return s;
}

std::optional<dnnl::memory::data_type> data_type(DType t) {
  switch (t) {
    case DType::Float32: return dnnl::memory::data_type::f32;
    case DType::BFloat16: return dnnl::memory::data_type::bf16;
    case DType::Float16: return dnnl::memory::data_type::f16;
    default: return std::nullopt;
  }
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

Tensor scratch_tensor(size_t bytes) { return Tensor(Shape{int64_t(std::max<size_t>(bytes, 1))}, DType::UInt8); }

dnnl::memory::dims operand_strides(const dnnl::memory::dims& logical, bool transposed) {
  const size_t r = logical.size();
  dnnl::memory::dims stored = logical, st(r);
  if (transposed) std::swap(stored[r - 1], stored[r - 2]);
  int64_t acc = 1;
  for (size_t i = r; i-- > 0;) {
    st[i] = acc;
    acc *= stored[i];
  }
  if (transposed) std::swap(st[r - 1], st[r - 2]);
  return st;
}

// Below about 4M multiply-adds (an MLP layer at batch 32 and its gradients) sgemm beats
// a matmul primitive: it skips the memory objects and argument map a primitive needs
// per call (1.6 vs 3.7 us on 32x10x128, 32 vs 34-37 us on 32x784x128, measured on the
// 2-core box), while bigger products (64x3136x1024: 2.7 vs 2.3 ms) are faster as
// primitives.
bool small_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float beta, float* c) {
  if (m * n * k > kSmallGemmMacs) return false;
  return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.f, a, lda, b, ldb, beta, c, n) == dnnl_success;
}

void copy_value(const dnnl::memory& from, const dnnl::memory& to) {
  const auto* src = static_cast<const char*>(from.get_data_handle());
  auto* dst = static_cast<char*>(to.get_data_handle());
  const int64_t bytes = int64_t(to.get_desc().get_size());
  parallel_for(bytes, int64_t(sizeof(float)) * kParallelGrain,
               [&](int64_t b, int64_t e) { std::memcpy(dst + b, src + b, size_t(e - b)); });
}

}  // namespace deepflow::onednn
