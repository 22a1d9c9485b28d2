// SPDX-License-Identifier: Apache-2.0
#include "deepflow/kernels/cpu/onednn_util.h"

#include <algorithm>

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

}  // namespace deepflow::onednn
