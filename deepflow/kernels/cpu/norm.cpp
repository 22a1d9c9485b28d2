// SPDX-License-Identifier: Apache-2.0
// oneDNN kernels of the fused normalizations, for float32 and bfloat16 x.
//
// x [..., c] is handed to oneDNN as a 2D matrix [n, c] (n = every leading dim):
// `nc` for batch normalization, whose statistics run down the columns, and `ab`
// with [n] statistics for layer normalization, whose statistics run along the
// rows. Statistics and scale/shift are float32 in oneDNN, which is our U for
// bfloat16 x; layer_norm's bfloat16 gamma/beta are widened per call. oneDNN's
// batch-norm training returns the biased variance: we keep it (the saved
// variance) and write the Bessel-corrected copy. Layer norm saves the inverse
// std, so its backward rebuilds the variance as 1 / inv_std^2 - eps. Calls
// oneDNN cannot run (float64, float16, empty tensors) fall back to the reference.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <unordered_map>

#include "deepflow/core/parallel.h"
#include "deepflow/kernels/cpu/onednn_util.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

namespace dn = dnnl;
using onednn::cpu_engine;
using onednn::thread_stream;
using DT = dn::memory::data_type;
using Tag = dn::memory::format_tag;
using Flags = dn::normalization_flags;

struct Prim {
  dn::primitive prim;
  dn::memory::desc scratchpad;
};
using PrimPtr = std::shared_ptr<const Prim>;

onednn::PrimitiveCache<Prim>& cache() {
  static auto* c = new onednn::PrimitiveCache<Prim>;  // never destroyed: kernels may run at exit
  return *c;
}

bool is_grad(const OpCall& c) { return c.def->id == OpId::FusedBatchNormGrad || c.def->id == OpId::LayerNormGrad; }
bool is_batch_norm(const OpCall& c) { return c.def->id == OpId::FusedBatchNorm || c.def->id == OpId::FusedBatchNormGrad; }
const Tensor& x_of(const OpCall& c) { return c.in(is_grad(c) ? 1 : 0); }

// x as [n, c], where n = batch * spatial (batch: x's first dim, spatial: the dims between).
struct Geometry {
  int64_t n, c, batch;
  DT dt;
};
Geometry geometry_of(const OpCall& c) {
  const Tensor& x = x_of(c);
  return {x.size() / x.dim(-1), x.dim(-1), x.rank() > 1 ? x.dim(0) : 1, *onednn::data_type(x.dtype())};
}

// Batch norm sees x as NHWC {batch, c, 1, spatial}: a plain 2D `nc` matrix would get oneDNN's
// ncsp kernel, which is several times slower than its nspc one on channels-last data.
dn::memory::desc bn_md(const Geometry& g) { return {{g.batch, g.c, 1, g.n / g.batch}, g.dt, Tag::nhwc}; }
dn::memory::desc data_md(const Geometry& g) { return {{g.n, g.c}, g.dt, Tag::ab}; }
dn::memory::desc vec_md(int64_t n) { return {{n}, DT::f32, Tag::a}; }
Flags flags(bool global_stats) {
  Flags f = Flags::use_scale | Flags::use_shift;
  return global_stats ? f | Flags::use_global_stats : f;
}

template <class P, class PD>
PrimPtr make_prim(const PD& pd) {
  return std::make_shared<const Prim>(Prim{P(pd), pd.scratchpad_desc()});
}
// Inference batch norm uses the given statistics (use_global_stats); training computes them.
dn::batch_normalization_forward::primitive_desc bn_fwd_pd(const Geometry& g, float eps, bool training,
                                                          dn::prop_kind kind) {
  using F = dn::batch_normalization_forward;
  return {F::desc(kind, bn_md(g), eps, flags(!training)), onednn::user_scratchpad(), cpu_engine()};
}
// Layer norm always runs as training, which outputs the statistics we save.
dn::layer_normalization_forward::primitive_desc ln_fwd_pd(const Geometry& g, float eps) {
  using F = dn::layer_normalization_forward;
  return {F::desc(dn::prop_kind::forward_training, data_md(g), vec_md(g.n), eps, flags(false)),
          onednn::user_scratchpad(), cpu_engine()};
}

// The cached primitive for a call, or null when oneDNN cannot run it.
PrimPtr prim_for(const OpCall& c) {
  const Tensor& x = x_of(c);
  if (x.dtype() != DType::Float32 && x.dtype() != DType::BFloat16) return nullptr;
  if (x.size() == 0) return nullptr;
  const Geometry g = geometry_of(c);
  const float eps = float(c.attr_float("epsilon"));
  const bool bn = is_batch_norm(c), training = bn && c.attr_bool("is_training");
  const std::string key = detail::cat(c.name(), ' ', dtype_short_name(x.dtype()), ' ', g.batch, ',', g.n, ',', g.c, ' ',
                                      std::bit_cast<uint32_t>(eps), training ? " t" : " i");
  return cache().get(key, [&]() -> PrimPtr {
    if (bn) {
      if (c.def->id == OpId::FusedBatchNorm) return make_prim<dn::batch_normalization_forward>(
            bn_fwd_pd(g, eps, training, training ? dn::prop_kind::forward_training : dn::prop_kind::forward_inference));
      // Backward computes the training gradient, or scale * inv_std * dy with global stats.
      using B = dn::batch_normalization_backward;
      B::desc d(dn::prop_kind::backward, bn_md(g), bn_md(g), eps, flags(!training));
      return make_prim<B>(B::primitive_desc(d, onednn::user_scratchpad(), cpu_engine(),
                                           bn_fwd_pd(g, eps, training, dn::prop_kind::forward_training)));
    }
    if (c.def->id == OpId::LayerNorm) return make_prim<dn::layer_normalization_forward>(ln_fwd_pd(g, eps));
    using B = dn::layer_normalization_backward;
    B::desc d(dn::prop_kind::backward, data_md(g), data_md(g), vec_md(g.n), eps, flags(false));
    return make_prim<B>(B::primitive_desc(d, onednn::user_scratchpad(), cpu_engine(), ln_fwd_pd(g, eps)));
  });
}

bool supported(const OpCall& c) { return prim_for(c) != nullptr; }

// A float32 view of a per-channel or per-row vector: the tensor itself, or a widened copy.
struct F32 {
  Tensor t;
  float* data() const { return static_cast<float*>(t.raw_data()); }
};
F32 as_f32(const Tensor& t) {
  if (t.dtype() == DType::Float32) return {t};
  Tensor f(t.shape(), DType::Float32);
  const BFloat16* s = t.data<BFloat16>();
  for (int64_t i = 0; i < t.size(); ++i) f.data<float>()[i] = float(s[i]);
  return {f};
}
void store(const Tensor& f32, Tensor& out) {
  if (out.dtype() == DType::Float32) return;  // written in place
  for (int64_t i = 0; i < out.size(); ++i) out.data<BFloat16>()[i] = BFloat16(f32.data<float>()[i]);
}
// The float32 buffer an output is computed in: the output itself, or a temporary for bfloat16.
Tensor f32_target(const Tensor& out) { return out.dtype() == DType::Float32 ? out : Tensor(out.shape(), DType::Float32); }

// oneDNN's backward with use_shift insists on a shift argument it does not read: zeros.
Tensor unused_shift(int64_t c) { return zeros(Shape{c}, DType::Float32); }

void execute(const Prim& p, std::unordered_map<int, dn::memory> args) {
  Tensor pad = onednn::scratch_tensor(p.scratchpad.get_size());
  args.emplace(DNNL_ARG_SCRATCHPAD, dn::memory(p.scratchpad, cpu_engine(), pad.raw_data()));
  dn::stream& s = thread_stream();
  p.prim.execute(s, args);
  s.wait();
}

dn::memory mem(const dn::memory::desc& md, const Tensor& t) { return dn::memory(md, cpu_engine(), t.raw_data()); }
dn::memory mem(const dn::memory::desc& md, float* p) { return dn::memory(md, cpu_engine(), p); }

// --- fused_batch_norm --- x [n, c] -> y, batch_mean, batch_variance (Bessel-corrected), saved_variance.
void onednn_batch_norm(const OpCall& c, TensorList& out) {
  PrimPtr p = prim_for(c);
  const Geometry g = geometry_of(c);
  const bool training = c.attr_bool("is_training");
  std::unordered_map<int, dn::memory> args{
      {DNNL_ARG_SRC, mem(bn_md(g), c.in(0))}, {DNNL_ARG_DST, mem(bn_md(g), out[0])},
      {DNNL_ARG_SCALE, mem(vec_md(g.c), c.in(1))}, {DNNL_ARG_SHIFT, mem(vec_md(g.c), c.in(2))}};
  if (training) {
    args.emplace(DNNL_ARG_MEAN, mem(vec_md(g.c), out[1]));
    args.emplace(DNNL_ARG_VARIANCE, mem(vec_md(g.c), out[3]));
  } else {
    args.emplace(DNNL_ARG_MEAN, mem(vec_md(g.c), c.in(3)));
    args.emplace(DNNL_ARG_VARIANCE, mem(vec_md(g.c), c.in(4)));
  }
  execute(*p, std::move(args));
  float *mean = out[1].data<float>(), *bvar = out[2].data<float>(), *saved = out[3].data<float>();
  if (training) {
    const double bessel = double(g.n) / double(std::max<int64_t>(g.n - 1, 1));
    for (int64_t k = 0; k < g.c; ++k) bvar[k] = float(double(saved[k]) * bessel);
  } else {
    std::memcpy(mean, c.in(3).raw_data(), size_t(g.c) * sizeof(float));
    std::memcpy(bvar, c.in(4).raw_data(), size_t(g.c) * sizeof(float));
    std::memcpy(saved, c.in(4).raw_data(), size_t(g.c) * sizeof(float));
  }
}

// --- fused_batch_norm_grad --- dy, x [n, c]; scale, mean, variance [c] -> dx, dscale, doffset.
void onednn_batch_norm_grad(const OpCall& c, TensorList& out) {
  PrimPtr p = prim_for(c);
  const Geometry g = geometry_of(c);
  Tensor shift = unused_shift(g.c);
  execute(*p, {{DNNL_ARG_DIFF_DST, mem(bn_md(g), c.in(0))}, {DNNL_ARG_SRC, mem(bn_md(g), c.in(1))},
               {DNNL_ARG_SCALE, mem(vec_md(g.c), c.in(2))}, {DNNL_ARG_SHIFT, mem(vec_md(g.c), shift)}, {DNNL_ARG_MEAN, mem(vec_md(g.c), c.in(3))},
               {DNNL_ARG_VARIANCE, mem(vec_md(g.c), c.in(4))}, {DNNL_ARG_DIFF_SRC, mem(bn_md(g), out[0])},
               {DNNL_ARG_DIFF_SCALE, mem(vec_md(g.c), out[1])}, {DNNL_ARG_DIFF_SHIFT, mem(vec_md(g.c), out[2])}});
}

// --- layer_norm --- x [n, c]; gamma, beta [c] -> y, mean [n], inv_std [n].
void onednn_layer_norm(const OpCall& c, TensorList& out) {
  PrimPtr p = prim_for(c);
  const Geometry g = geometry_of(c);
  const double eps = c.attr_float("epsilon");
  F32 gamma = as_f32(c.in(1)), beta = as_f32(c.in(2));
  float* inv_std = out[2].data<float>();  // holds the variance until converted below
  execute(*p, {{DNNL_ARG_SRC, mem(data_md(g), c.in(0))}, {DNNL_ARG_DST, mem(data_md(g), out[0])},
               {DNNL_ARG_SCALE, mem(vec_md(g.c), gamma.data())}, {DNNL_ARG_SHIFT, mem(vec_md(g.c), beta.data())},
               {DNNL_ARG_MEAN, mem(vec_md(g.n), out[1])}, {DNNL_ARG_VARIANCE, mem(vec_md(g.n), inv_std)}});
  parallel_for(g.n, kParallelGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) inv_std[i] = float(1.0 / std::sqrt(double(inv_std[i]) + eps));
  });
}

// --- layer_norm_grad --- dy, x [n, c]; gamma [c]; mean, inv_std [n] -> dx, dgamma, dbeta.
void onednn_layer_norm_grad(const OpCall& c, TensorList& out) {
  PrimPtr p = prim_for(c);
  const Geometry g = geometry_of(c);
  const double eps = c.attr_float("epsilon");
  F32 gamma = as_f32(c.in(2));
  Tensor shift = unused_shift(g.c), var(Shape{g.n}, DType::Float32), dgamma = f32_target(out[1]), dbeta = f32_target(out[2]);
  const float* inv_std = c.in(4).data<float>();
  float* v = var.data<float>();
  parallel_for(g.n, kParallelGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) v[i] = float(1.0 / (double(inv_std[i]) * double(inv_std[i])) - eps);
  });
  execute(*p, {{DNNL_ARG_DIFF_DST, mem(data_md(g), c.in(0))}, {DNNL_ARG_SRC, mem(data_md(g), c.in(1))},
               {DNNL_ARG_SCALE, mem(vec_md(g.c), gamma.data())}, {DNNL_ARG_SHIFT, mem(vec_md(g.c), shift)},
               {DNNL_ARG_MEAN, mem(vec_md(g.n), c.in(3))},
               {DNNL_ARG_VARIANCE, mem(vec_md(g.n), var)}, {DNNL_ARG_DIFF_SRC, mem(data_md(g), out[0])},
               {DNNL_ARG_DIFF_SCALE, mem(vec_md(g.c), dgamma)}, {DNNL_ARG_DIFF_SHIFT, mem(vec_md(g.c), dbeta)}});
  store(dgamma, out[1]);
  store(dbeta, out[2]);
}

}  // namespace

DF_REGISTER_KERNEL(FusedBatchNorm, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = supported,
                                    .run = onednn_batch_norm});
DF_REGISTER_KERNEL(FusedBatchNormGrad, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = supported,
                                        .run = onednn_batch_norm_grad});
DF_REGISTER_KERNEL(LayerNorm, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = supported,
                               .run = onednn_layer_norm});
DF_REGISTER_KERNEL(LayerNormGrad, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = supported,
                                   .run = onednn_layer_norm_grad});

}  // namespace deepflow
