// SPDX-License-Identifier: Apache-2.0
// matmul on oneDNN for float32 and bfloat16 (float16: kernels/cpu/half_via_float.cpp).
//
// Transposes are memory-desc strides (no copies). A b without batch dims folds a's
// batch into its rows (one 2D product); equal batch dims collapse into one; other
// shapes use oneDNN's broadcasting of size-1 batch dims. Primitive creation costs
// far more than a small product, so primitives are cached by their memory descs
// in a small LRU; the scratchpad comes from our caching allocator per call, which
// keeps a cached primitive safe to run from several threads at once.
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "deepflow/core/parallel.h"
#include "deepflow/kernels/cpu/onednn_util.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

using dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;

using onednn::cpu_engine;
using onednn::thread_stream;
using onednn::operand_strides;

dt dnnl_type(DType t) {
  switch (t) {
    case DType::BFloat16: return dt::bf16;
    case DType::Float16: return dt::f16;
    default: return dt::f32;
  }
}

// The three memory descs of one call, as plain dims and strides (also the cache key).
struct Plan {
  dims a_dims, a_strides, b_dims, b_strides, c_dims, c_strides;
  dt type = dt::f32;

  std::vector<int64_t> key() const {
    std::vector<int64_t> k{int64_t(type), int64_t(a_dims.size())};
    for (const dims* d : {&a_dims, &a_strides, &b_dims, &b_strides, &c_dims, &c_strides})
      k.insert(k.end(), d->begin(), d->end());
    return k;
  }
};

Plan make_plan(const Tensor& a, const Tensor& b, const Tensor& o, bool ta, bool tb, DType type) {
  const int64_t m = ta ? a.dim(-1) : a.dim(-2), k = ta ? a.dim(-2) : a.dim(-1), n = tb ? b.dim(-2) : b.dim(-1);
  const Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  const Shape bo(o.shape().begin(), o.shape().end() - 2);
  Plan p;
  p.type = dnnl_type(type);
  dims lead_a, lead_b, lead_c;
  if (bb.num_elements() == 1 && !ta) {
    // b is one matrix: a's batch folds into its rows, which are contiguous.
    p.a_dims = {bo.num_elements() * m, k};
    p.b_dims = {k, n};
    p.c_dims = {bo.num_elements() * m, n};
  } else if (ba == bb) {
    p.a_dims = {ba.num_elements(), m, k};
    p.b_dims = {bb.num_elements(), k, n};
    p.c_dims = {bo.num_elements(), m, n};
  } else {
    // Broadcast batch dims: pad both to the output's batch rank with leading 1s.
    const int r = bo.rank();
    for (int i = 0; i < r; ++i) {
      const int ia = i - (r - ba.rank()), ib = i - (r - bb.rank());
      p.a_dims.push_back(ia >= 0 ? ba[ia] : 1);
      p.b_dims.push_back(ib >= 0 ? bb[ib] : 1);
      p.c_dims.push_back(bo[i]);
    }
    p.a_dims.insert(p.a_dims.end(), {m, k});
    p.b_dims.insert(p.b_dims.end(), {k, n});
    p.c_dims.insert(p.c_dims.end(), {m, n});
  }
  p.a_strides = operand_strides(p.a_dims, ta);
  p.b_strides = operand_strides(p.b_dims, tb);
  p.c_strides = operand_strides(p.c_dims, false);
  return p;
}

struct Entry {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, c, scratch;
};

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& k) const {
    size_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ size_t(v)) * 1099511628211ull;
    return h;
  }
};
using PrimitiveCache = onednn::PrimitiveCache<Entry, std::vector<int64_t>, KeyHash>;

std::shared_ptr<const Entry> create(const Plan& p) {
  dnnl::memory::desc a(p.a_dims, p.type, p.a_strides), b(p.b_dims, p.type, p.b_strides),
      c(p.c_dims, p.type, p.c_strides);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), onednn::user_scratchpad(), cpu_engine());
  return std::make_shared<const Entry>(Entry{dnnl::matmul(pd), a, b, c, pd.scratchpad_desc()});
}

PrimitiveCache& cache() {
  static PrimitiveCache* c = new PrimitiveCache;  // never destroyed: kernels may run at exit
  return *c;
}

// Runs a cached primitive; false when oneDNN has none for this plan.
bool run_primitive(const Plan& p, const void* a, const void* b, void* o) {
  std::shared_ptr<const Entry> e = cache().get(p.key(), [&] { return create(p); });
  if (!e) return false;
  dnnl::engine& eng = cpu_engine();
  dnnl::memory ma(e->a, eng, const_cast<void*>(a)), mb(e->b, eng, const_cast<void*>(b)), mc(e->c, eng, o);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
  Tensor scratch;
  if (size_t bytes = e->scratch.get_size()) {
    scratch = Tensor(Shape{int64_t(bytes)}, DType::UInt8);
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(e->scratch, eng, scratch.raw_data()));
  }
  dnnl::stream& s = thread_stream();
  e->prim.execute(s, args);
  s.wait();
  return true;
}

void matmul_onednn(const OpCall& c, TensorList& out) {
  const Tensor &a = c.in(0), &b = c.in(1);
  Tensor& o = out[0];
  const bool ta = c.attr_bool("transpose_a"), tb = c.attr_bool("transpose_b");
  if (o.size() == 0) return;
  if ((ta ? a.dim(-2) : a.dim(-1)) == 0) {  // k = 0: a sum of nothing
    std::memset(o.raw_data(), 0, o.nbytes());
    return;
  }
  if (a.dtype() == DType::Float32 && a.rank() == 2 && b.rank() == 2 &&
      onednn::small_sgemm(ta, tb, o.dim(0), o.dim(1), ta ? a.dim(0) : a.dim(1), a.data<float>(), a.dim(1),
                          b.data<float>(), b.dim(1), 0.f, o.data<float>()))
    return;
  Plan p = make_plan(a, b, o, ta, tb, a.dtype());
  if (run_primitive(p, a.raw_data(), b.raw_data(), o.raw_data())) return;
  kernels_for(OpId::MatMul).back().run(c, out);  // the reference kernel: always correct
}

bool onednn_types(const OpCall& c) {
  const DType t = c.in(0).dtype();
  // float16 runs through kernels/cpu/half_via_float.cpp: oneDNN 2.6 has no CPU float16 matmul
  // without AVX512-FP16.
  return t == DType::Float32 || t == DType::BFloat16;
}

}  // namespace

DF_REGISTER_KERNEL(MatMul, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = onednn_types,
                            .run = matmul_onednn});

}  // namespace deepflow
