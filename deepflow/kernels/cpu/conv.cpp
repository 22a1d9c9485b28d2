// SPDX-License-Identifier: Apache-2.0
// oneDNN kernels of convolution and pooling (NHWC activations, HWIO filters),
// and a direct OpenMP kernel of max_pool_grad.
//
// Activations are handed to oneDNN as nhwc, so they need no reorder. Filters are
// described as HWIO (grouped: hwigo, via explicit strides), while the primitive
// is created with format `any` so oneDNN picks its blocked weights layout; the
// filters are then reordered per call (tensors may be Variables written in
// place, so reordered weights are not kept across calls). Primitives are cached
// by geometry and dtype in a small LRU; a call oneDNN cannot implement (float64,
// float16 without hardware support, empty tensors) falls back to the next kernel.
//
// fused_conv2d (float32) is one convolution_forward with the bias, a sum post-op (the residual
// summand, which oneDNN accumulates into dst, so dst is first filled with it) and an eltwise
// post-op, in that order.
// The one exception to "reorder per call": when its attribute constant_filter is set (the
// fuse_conv pass sets it for filters that are const nodes, whose tensors nobody writes), the
// reordered filter is kept in a byte-bounded LRU keyed by the filter buffer's address and the
// layout the primitive wants. An entry holds only a weak reference to the buffer's storage, so
// a freed filter (whose address the allocator may hand out again) never matches an entry.
// Whoever sets constant_filter by hand promises the same: the filter's bytes never change.
#include <bit>
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "deepflow/core/parallel.h"
#include "deepflow/kernels/cpu/onednn_conv.h"
#include "deepflow/kernels/cpu/onednn_util.h"
#include "deepflow/ops/kernel.h"
#include "deepflow/ops/conv.h"

namespace deepflow {

namespace onednn {

namespace dn = dnnl;
using detail::ConvGeometry;
using Tag = dn::memory::format_tag;
using DT = dn::memory::data_type;

dn::memory::desc hwio_md(const ConvGeometry& g, DT dt) {
  if (g.groups == 1) return dn::memory::desc({g.co, g.ci, g.kh, g.kw}, dt, Tag::hwio);
  // Logical {G, O/G, I/G, KH, KW} over our [kh, kw, I/G, G * O/G] buffer.
  const int64_t cig = g.ci / g.groups, cog = g.co / g.groups;
  return dn::memory::desc({g.groups, cog, cig, g.kh, g.kw}, dt,
                          dn::memory::dims{cog, 1, g.co, g.kw * cig * g.co, cig * g.co});
}
dn::memory::desc any_weights_md(const ConvGeometry& g, DT dt) {
  if (g.groups == 1) return dn::memory::desc({g.co, g.ci, g.kh, g.kw}, dt, Tag::any);
  return dn::memory::desc({g.groups, g.co / g.groups, g.ci / g.groups, g.kh, g.kw}, dt, Tag::any);
}

bool activation_post_op(const OpCall& c, dn::algorithm& alg, float& alpha, float& beta) {
  const std::string& act = c.attr_string("activation");
  alpha = beta = 0.f;
  if (act.empty()) return false;
  if (act == "relu") {
    alg = dn::algorithm::eltwise_relu;
  } else if (act == "leaky_relu") {
    alg = dn::algorithm::eltwise_relu, alpha = float(c.attr_float("alpha"));
  } else if (act == "relu6" || act == "clip") {
    alg = dn::algorithm::eltwise_clip;
    alpha = act == "clip" ? float(c.attr_float("clip_min")) : 0.f;
    beta = act == "clip" ? float(c.attr_float("clip_max")) : 6.f;
  } else if (act == "elu") {
    alg = dn::algorithm::eltwise_elu, alpha = 1.f;
  } else if (act == "sigmoid") {
    alg = dn::algorithm::eltwise_logistic;
  } else {
    alg = dn::algorithm::eltwise_tanh;
  }
  return true;
}

namespace {
// Reordered constant filters (see the file comment), at most kCapacityBytes of them.
class FilterCache {
 public:
  static constexpr size_t kCapacityBytes = size_t(256) << 20;

  // The filter in layout `want`, reordered by `reorder` on a miss.
  Tensor get(const Tensor& filters, const dn::memory::desc& want, const dn::reorder& reorder,
             const dn::memory::desc& user) {
    const void* addr = filters.raw_data();
    const std::shared_ptr<Storage>& storage = filters.impl_ptr()->storage;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = lru_.begin(); it != lru_.end(); ++it)
        if (it->addr == addr && it->weights == want && it->storage.lock() == storage) {
          lru_.splice(lru_.begin(), lru_, it);
          return it->reordered;
        }
    }
    Tensor out = scratch_tensor(want.get_size());  // slow: outside the lock
    dn::memory src(user, cpu_engine(), filters.raw_data()), dst(want, cpu_engine(), out.raw_data());
    reorder.execute(thread_stream(), src, dst);
    thread_stream().wait();
    std::lock_guard<std::mutex> lock(mu_);
    // Entries of freed filters can never match again: drop them first.
    for (auto it = lru_.begin(); it != lru_.end();) {
      if (it->storage.expired()) {
        bytes_ -= it->bytes;
        it = lru_.erase(it);
      } else {
        ++it;
      }
    }
    lru_.push_front({addr, want, storage, out, out.nbytes()});
    bytes_ += out.nbytes();
    while (bytes_ > kCapacityBytes && lru_.size() > 1) {
      bytes_ -= lru_.back().bytes;
      lru_.pop_back();
    }
    return out;
  }

 private:
  struct Entry {
    const void* addr;
    dn::memory::desc weights;
    std::weak_ptr<Storage> storage;
    Tensor reordered;
    size_t bytes;
  };
  std::mutex mu_;
  std::list<Entry> lru_;  // a model has tens to hundreds of filters: a scan costs less than a run
  size_t bytes_ = 0;
};

FilterCache& filter_cache() {
  static auto* c = new FilterCache;  // never destroyed: kernels may run at exit
  return *c;
}

}  // namespace

Tensor constant_filter(const Tensor& filters, const dn::memory::desc& want, const dn::reorder& reorder,
                       const dn::memory::desc& user) {
  return filter_cache().get(filters, want, reorder, user);
}

}  // namespace onednn

namespace {

namespace dn = dnnl;
using detail::ConvGeometry;
using Tag = dn::memory::format_tag;
using DT = dn::memory::data_type;

using onednn::cpu_engine;
using onednn::scratch_tensor;
using onednn::thread_stream;
using onednn::user_scratchpad;
using onednn::any_weights_md;
using onednn::hwio_md;
using onednn::activation_post_op;
std::optional<DT> dnnl_type(DType t) { return onednn::data_type(t); }

// A ready primitive: `weights` is the layout it wants for filters (conv only) and
// `reorder` converts between that layout and HWIO when they differ.
struct Prim {
  dn::primitive prim;
  dn::memory::desc weights;
  std::optional<dn::reorder> reorder;
  dn::memory::desc scratchpad;
};
using PrimPtr = std::shared_ptr<const Prim>;

onednn::PrimitiveCache<Prim>& cache() {
  static auto* c = new onednn::PrimitiveCache<Prim>;  // never destroyed: kernels may run at exit
  return *c;
}

std::string geometry_key(const char* op, DType t, const ConvGeometry& g) {
  return detail::cat(op, ' ', dtype_short_name(t), ' ', g.n, ',', g.h, ',', g.w, ',', g.ci, ' ', g.kh, ',', g.kw, ',',
                     g.co, ',', g.groups, ' ', g.sh, ',', g.sw, ',', g.dh, ',', g.dw, ' ', g.pad_top, ',', g.pad_left,
                     ',', g.pad_bottom, ',', g.pad_right);
}

// --- memory descriptors: NHWC activations, HWIO filters ---
dn::memory::desc act_md(int64_t n, int64_t h, int64_t w, int64_t c, DT dt) {
  return dn::memory::desc({n, c, h, w}, dt, Tag::nhwc);
}
dn::memory::desc src_md(const ConvGeometry& g, DT dt) { return act_md(g.n, g.h, g.w, g.ci, dt); }
dn::memory::desc dst_md(const ConvGeometry& g, DT dt) { return act_md(g.n, g.oh, g.ow, g.co, dt); }
dn::memory::dims strides_of(const ConvGeometry& g) { return {g.sh, g.sw}; }
dn::memory::dims dilations_of(const ConvGeometry& g) { return {g.dh - 1, g.dw - 1}; }  // oneDNN counts gaps
dn::memory::dims pad_l(const ConvGeometry& g) { return {g.pad_top, g.pad_left}; }
dn::memory::dims pad_r(const ConvGeometry& g) { return {g.pad_bottom, g.pad_right}; }

dn::convolution_forward::primitive_desc conv_fwd_pd(const ConvGeometry& g, DT dt, dn::prop_kind kind) {
  dn::convolution_forward::desc d(kind, dn::algorithm::convolution_direct, src_md(g, dt), any_weights_md(g, dt),
                                  dst_md(g, dt), strides_of(g), dilations_of(g), pad_l(g), pad_r(g));
  return {d, user_scratchpad(), cpu_engine()};
}

template <class PD>
PrimPtr finish(const PD& pd, dn::primitive prim, const dn::memory::desc& chosen, const ConvGeometry& g, DT dt,
               bool to_user) {
  auto p = std::make_shared<Prim>();
  p->prim = std::move(prim);
  p->weights = chosen;
  p->scratchpad = pd.scratchpad_desc();
  dn::memory::desc user = hwio_md(g, dt);
  if (chosen != user)
    p->reorder = to_user ? dn::reorder(dn::reorder::primitive_desc(cpu_engine(), chosen, cpu_engine(), user))
                         : dn::reorder(dn::reorder::primitive_desc(cpu_engine(), user, cpu_engine(), chosen));
  return p;
}

bool has_empty(const OpCall& c) {
  for (const Tensor& t : c.inputs)
    if (t.size() == 0) return true;
  return false;
}

// input_sizes with its batch (-1 in graphs with an unknown batch, see ops/conv.cpp) from dy's.
Shape input_sizes_of(const OpCall& c, const Tensor& dy) {
  Shape s(c.attr_ints("input_sizes"));
  if (s.rank() == 4 && s[0] < 0) s[0] = dy.dim(0);
  return s;
}

ConvGeometry geometry_of(const OpCall& c) {
  const auto& s = c.attr_ints("strides");
  const auto& d = c.attr_ints("dilations");
  const std::string& p = c.attr_string("padding");
  switch (c.def->id) {
    case OpId::Conv2D: return detail::conv_geometry(c.in(0).shape(), c.in(1).shape(), s, p, d);
    case OpId::Conv2DBackpropInput: return detail::conv_geometry(input_sizes_of(c, c.in(1)), c.in(0).shape(), s, p, d);
    default: return detail::conv_geometry(c.in(0).shape(), Shape(c.attr_ints("filter_sizes")), s, p, d);
  }
}

// The cached primitive for a conv call, or null when oneDNN cannot run it.
PrimPtr conv_prim(const OpCall& c) {
  auto dt = dnnl_type(c.in(0).dtype());
  if (!dt || has_empty(c)) return nullptr;
  const ConvGeometry g = geometry_of(c);
  if (g.n * g.h * g.w * g.oh * g.ow * g.co == 0) return nullptr;
  const OpId id = c.def->id;
  return cache().get(geometry_key(c.name(), c.in(0).dtype(), g), [&]() -> PrimPtr {
    if (id == OpId::Conv2D) {
      auto pd = conv_fwd_pd(g, *dt, dn::prop_kind::forward_inference);
      return finish(pd, dn::convolution_forward(pd), pd.weights_desc(), g, *dt, false);
    }
    auto hint = conv_fwd_pd(g, *dt, dn::prop_kind::forward_training);
    if (id == OpId::Conv2DBackpropInput) {
      dn::convolution_backward_data::desc d(dn::algorithm::convolution_direct, src_md(g, *dt), any_weights_md(g, *dt),
                                            dst_md(g, *dt), strides_of(g), dilations_of(g), pad_l(g), pad_r(g));
      dn::convolution_backward_data::primitive_desc pd(d, user_scratchpad(), cpu_engine(), hint);
      return finish(pd, dn::convolution_backward_data(pd), pd.weights_desc(), g, *dt, false);
    }
    dn::convolution_backward_weights::desc d(dn::algorithm::convolution_direct, src_md(g, *dt),
                                             any_weights_md(g, *dt), dst_md(g, *dt), strides_of(g), dilations_of(g),
                                             pad_l(g), pad_r(g));
    dn::convolution_backward_weights::primitive_desc pd(d, user_scratchpad(), cpu_engine(), hint);
    return finish(pd, dn::convolution_backward_weights(pd), pd.diff_weights_desc(), g, *dt, true);
  });
}

bool conv_supported(const OpCall& c) { return conv_prim(c) != nullptr; }

// --- conv2d, conv2d_backprop_input, conv2d_backprop_filter ---
void onednn_conv(const OpCall& c, TensorList& out) {
  PrimPtr p = conv_prim(c);
  const ConvGeometry g = geometry_of(c);
  const DT dt = *dnnl_type(c.in(0).dtype());
  dn::engine& eng = cpu_engine();
  dn::stream& s = thread_stream();
  const OpId id = c.def->id;
  // Which tensor holds the filters, and where the activations go.
  const Tensor& filters = id == OpId::Conv2D ? c.in(1) : id == OpId::Conv2DBackpropInput ? c.in(0) : out[0];
  dn::memory user_w(hwio_md(g, dt), eng, filters.raw_data());
  Tensor w_buf;
  dn::memory w = user_w;
  if (p->reorder) {
    w_buf = scratch_tensor(p->weights.get_size());
    w = dn::memory(p->weights, eng, w_buf.raw_data());
    if (id != OpId::Conv2DBackpropFilter) p->reorder->execute(s, user_w, w);
  }
  Tensor pad = scratch_tensor(p->scratchpad.get_size());
  dn::memory scratch(p->scratchpad, eng, pad.raw_data());
  std::unordered_map<int, dn::memory> args{{DNNL_ARG_SCRATCHPAD, scratch}};
  if (id == OpId::Conv2D) {
    args.insert({{DNNL_ARG_SRC, dn::memory(src_md(g, dt), eng, c.in(0).raw_data())},
                 {DNNL_ARG_WEIGHTS, w},
                 {DNNL_ARG_DST, dn::memory(dst_md(g, dt), eng, out[0].raw_data())}});
  } else if (id == OpId::Conv2DBackpropInput) {
    args.insert({{DNNL_ARG_DIFF_SRC, dn::memory(src_md(g, dt), eng, out[0].raw_data())},
                 {DNNL_ARG_WEIGHTS, w},
                 {DNNL_ARG_DIFF_DST, dn::memory(dst_md(g, dt), eng, c.in(1).raw_data())}});
  } else {
    args.insert({{DNNL_ARG_SRC, dn::memory(src_md(g, dt), eng, c.in(0).raw_data())},
                 {DNNL_ARG_DIFF_WEIGHTS, w},
                 {DNNL_ARG_DIFF_DST, dn::memory(dst_md(g, dt), eng, c.in(1).raw_data())}});
  }
  p->prim.execute(s, args);
  if (p->reorder && id == OpId::Conv2DBackpropFilter) p->reorder->execute(s, w, user_w);
  s.wait();
}

// --- fused_conv2d ---

ConvGeometry fused_geometry(const OpCall& c) {
  return detail::conv_geometry(c.in(0).shape(), c.in(1).shape(), c.attr_ints("strides"), c.attr_string("padding"),
                               c.attr_ints("dilations"), c.attr_ints("explicit_paddings"));
}


PrimPtr fused_prim(const OpCall& c) {
  if (c.in(0).dtype() != DType::Float32 || has_empty(c)) return nullptr;
  const ConvGeometry g = fused_geometry(c);
  if (g.n * g.h * g.w * g.oh * g.ow * g.co == 0) return nullptr;
  const bool has_bias = c.attr_bool("has_bias"), has_summand = c.attr_bool("has_summand");
  dn::algorithm alg{};
  float alpha = 0, beta = 0;
  const bool act = activation_post_op(c, alg, alpha, beta);
  const std::string key = detail::cat(geometry_key(c.name(), DType::Float32, g), ' ', has_bias, ' ', has_summand,
                                      ' ', c.attr_string("activation"), ' ', alpha, ' ', beta);
  return cache().get(key, [&]() -> PrimPtr {
    const DT dt = DT::f32;
    const dn::memory::desc bias = has_bias ? dn::memory::desc({g.co}, dt, Tag::a) : dn::memory::desc();
    dn::convolution_forward::desc d(dn::prop_kind::forward_inference, dn::algorithm::convolution_direct,
                                    src_md(g, dt), any_weights_md(g, dt), bias, dst_md(g, dt), strides_of(g),
                                    dilations_of(g), pad_l(g), pad_r(g));
    dn::primitive_attr attr = user_scratchpad();
    dn::post_ops po;
    if (has_summand) po.append_sum(1.f);
    if (act) po.append_eltwise(1.f, alg, alpha, beta);
    if (has_summand || act) attr.set_post_ops(po);
    dn::convolution_forward::primitive_desc pd(d, attr, cpu_engine());
    return finish(pd, dn::convolution_forward(pd), pd.weights_desc(), g, dt, false);
  });
}

bool fused_supported(const OpCall& c) { return fused_prim(c) != nullptr; }

void onednn_fused_conv(const OpCall& c, TensorList& out) {
  PrimPtr p = fused_prim(c);
  const ConvGeometry g = fused_geometry(c);
  const DT dt = DT::f32;
  dn::engine& eng = cpu_engine();
  dn::stream& s = thread_stream();
  const Tensor& filters = c.in(1);
  const dn::memory::desc user = hwio_md(g, dt);
  Tensor w_buf;
  dn::memory w(user, eng, filters.raw_data());
  if (p->reorder && c.attr_bool("constant_filter")) {
    w_buf = onednn::constant_filter(filters, p->weights, *p->reorder, user);
    w = dn::memory(p->weights, eng, w_buf.raw_data());
  } else if (p->reorder) {
    w_buf = scratch_tensor(p->weights.get_size());
    dn::memory user_w = w;
    w = dn::memory(p->weights, eng, w_buf.raw_data());
    p->reorder->execute(s, user_w, w);
  }
  if (c.attr_bool("has_summand")) {
    // The sum post-op adds dst's old contents. One copy costs less than a separate add, which
    // reads two tensors; none is needed when the output already took the summand's buffer.
    const auto* from = static_cast<const char*>(c.in(c.num_inputs() - 1).raw_data());
    auto* to = static_cast<char*>(out[0].raw_data());
    if (from != to) {
      const int64_t bytes = int64_t(out[0].nbytes());
      parallel_for(bytes, int64_t(sizeof(float)) * kParallelGrain, [&](int64_t b, int64_t e) {
        std::memcpy(to + b, from + b, size_t(e - b));
      });
    }
  }
  Tensor pad = scratch_tensor(p->scratchpad.get_size());
  std::unordered_map<int, dn::memory> args{
      {DNNL_ARG_SRC, dn::memory(src_md(g, dt), eng, c.in(0).raw_data())},
      {DNNL_ARG_WEIGHTS, w},
      {DNNL_ARG_DST, dn::memory(dst_md(g, dt), eng, out[0].raw_data())},
      {DNNL_ARG_SCRATCHPAD, dn::memory(p->scratchpad, eng, pad.raw_data())}};
  if (c.attr_bool("has_bias")) args.insert({DNNL_ARG_BIAS, dn::memory({{g.co}, dt, Tag::a}, eng, c.in(2).raw_data())});
  p->prim.execute(s, args);
  s.wait();
}

// --- max_pool, avg_pool, avg_pool_grad ---
// max_pool's padding may be EXPLICIT; oneDNN's pooling_max never picks a padded cell, which
// is max_pool's -inf padding.
ConvGeometry pool_geometry_of(const OpCall& c) {
  const Shape x = c.def->id == OpId::AvgPoolGrad ? input_sizes_of(c, c.in(0)) : c.in(0).shape();
  if (c.def->id == OpId::MaxPool)
    return detail::pool_geometry(x, c.attr_ints("ksize"), c.attr_ints("strides"), c.attr_string("padding"),
                                 c.attr_ints("explicit_paddings"));
  return detail::pool_geometry(x, c.attr_ints("ksize"), c.attr_ints("strides"), c.attr_string("padding"));
}

dn::pooling_forward::primitive_desc pool_fwd_pd(const ConvGeometry& g, DT dt, dn::algorithm alg, dn::prop_kind kind) {
  dn::pooling_forward::desc d(kind, alg, src_md(g, dt), dst_md(g, dt), strides_of(g), {g.kh, g.kw}, pad_l(g), pad_r(g));
  return {d, user_scratchpad(), cpu_engine()};
}

PrimPtr pool_prim(const OpCall& c) {
  auto dt = dnnl_type(c.in(0).dtype());
  if (!dt || has_empty(c)) return nullptr;
  const ConvGeometry g = pool_geometry_of(c);
  if (g.n * g.h * g.w * g.co == 0) return nullptr;
  const OpId id = c.def->id;
  return cache().get(geometry_key(c.name(), c.in(0).dtype(), g), [&]() -> PrimPtr {
    auto p = std::make_shared<Prim>();
    // SAME windows at the border average only their valid cells, as TensorFlow.
    const auto alg = id == OpId::MaxPool ? dn::algorithm::pooling_max : dn::algorithm::pooling_avg_exclude_padding;
    if (id == OpId::AvgPoolGrad) {
      auto hint = pool_fwd_pd(g, *dt, alg, dn::prop_kind::forward_training);
      dn::pooling_backward::desc d(alg, src_md(g, *dt), dst_md(g, *dt), strides_of(g), {g.kh, g.kw}, pad_l(g),
                                   pad_r(g));
      dn::pooling_backward::primitive_desc pd(d, user_scratchpad(), cpu_engine(), hint);
      p->prim = dn::pooling_backward(pd);
      p->scratchpad = pd.scratchpad_desc();
    } else {
      auto pd = pool_fwd_pd(g, *dt, alg, dn::prop_kind::forward_inference);
      p->prim = dn::pooling_forward(pd);
      p->scratchpad = pd.scratchpad_desc();
    }
    return p;
  });
}

bool pool_supported(const OpCall& c) { return pool_prim(c) != nullptr; }

void onednn_pool(const OpCall& c, TensorList& out) {
  PrimPtr p = pool_prim(c);
  const ConvGeometry g = pool_geometry_of(c);
  const DT dt = *dnnl_type(c.in(0).dtype());
  dn::engine& eng = cpu_engine();
  Tensor pad = scratch_tensor(p->scratchpad.get_size());
  dn::memory scratch(p->scratchpad, eng, pad.raw_data());
  dn::memory big(src_md(g, dt), eng, c.def->id == OpId::AvgPoolGrad ? out[0].raw_data() : c.in(0).raw_data());
  dn::memory small(dst_md(g, dt), eng, c.def->id == OpId::AvgPoolGrad ? c.in(0).raw_data() : out[0].raw_data());
  if (c.def->id == OpId::AvgPoolGrad)
    p->prim.execute(thread_stream(), {{DNNL_ARG_DIFF_SRC, big}, {DNNL_ARG_DIFF_DST, small}, {DNNL_ARG_SCRATCHPAD, scratch}});
  else
    p->prim.execute(thread_stream(), {{DNNL_ARG_SRC, big}, {DNNL_ARG_DST, small}, {DNNL_ARG_SCRATCHPAD, scratch}});
  thread_stream().wait();
}

// --- max_pool_grad --- x [n,h,w,c], dy [n,oh,ow,c] -> dx [n,h,w,c]. Each window's
// gradient goes to its first maximum in row-major scan order (strict >, the reference's
// rule, so a NaN wins only as the first cell). Channels are innermost and vectorized: a
// branch-free scan keeps (best value, cell number) per channel, and dx is written with a
// select per cell instead of a scatter.
// Selects are integer masks: GCC does not if-convert two float selects in a row without
// -fno-trapping-math, and masked stores in a branchy loop cost 5x the plain loop.
constexpr int64_t kPoolChanBlock = 128;
template <class T> using PoolBits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
template <class T> PoolBits<T> bits_of(T v) { return std::bit_cast<PoolBits<T>>(v); }
template <class T> PoolBits<T> mask_of(bool b) { return PoolBits<T>(0) - PoolBits<T>(b); }

// The first maximum over the window rows [h0, h1) x cols [w0, w1) of image n, channels
// [c0, c0 + nc): arg[k] = the cell's number in scan order.
template <class T>
void window_argmax(const ConvGeometry& g, const T* x, int64_t n, int64_t h0, int64_t h1, int64_t w0, int64_t w1,
                   int64_t c0, int64_t nc, PoolBits<T>* arg) {
  using B = PoolBits<T>;
  B best[kPoolChanBlock];
  B j = 0;
  for (int64_t ih = h0; ih < h1; ++ih)
    for (int64_t iw = w0; iw < w1; ++iw, ++j) {
      const T* p = x + ((n * g.h + ih) * g.w + iw) * g.ci + c0;
      if (j == 0) {
#pragma omp simd
        for (int64_t k = 0; k < nc; ++k) {
          best[k] = bits_of(p[k]);
          arg[k] = 0;
        }
        continue;
      }
#pragma omp simd
      for (int64_t k = 0; k < nc; ++k) {
        const B m = mask_of<T>(p[k] > std::bit_cast<T>(best[k]));
        best[k] = (best[k] & ~m) | (bits_of(p[k]) & m);
        arg[k] = (arg[k] & ~m) | (j & m);
      }
    }
}

// The input rows (or cols) that output row o owns when windows do not overlap: bands of
// `s` cells that tile [0, size), the first from 0 and the last to the end, so cells no
// window covers (stride > window, VALID leftovers) are written too (as zeros).
std::pair<int64_t, int64_t> band(int64_t o, int64_t count, int64_t s, int64_t pad, int64_t size) {
  return {o == 0 ? 0 : std::min(o * s - pad, size), o == count - 1 ? size : std::min((o + 1) * s - pad, size)};
}

// stride >= window: every input cell is in at most one window, so dx is written exactly
// once, with no zeroing pass and no accumulation (the copy of dy is exact, as the
// reference's double sum of one term). Task = (image, output row).
template <class T>
void max_pool_grad_disjoint(const ConvGeometry& g, const T* x, const T* dy, T* dx, int64_t n, int64_t oh) {
  const auto [r0, r1] = band(oh, g.oh, g.sh, g.pad_top, g.h);
  const int64_t h0 = std::max<int64_t>(oh * g.sh - g.pad_top, 0), h1 = std::min(oh * g.sh - g.pad_top + g.kh, g.h);
  for (int64_t ih = r0; ih < r1; ++ih)
    if (ih < h0 || ih >= h1) std::fill_n(dx + (n * g.h + ih) * g.w * g.ci, g.w * g.ci, T(0));
  PoolBits<T> arg[kPoolChanBlock];
  for (int64_t ow = 0; ow < g.ow; ++ow) {
    const auto [q0, q1] = band(ow, g.ow, g.sw, g.pad_left, g.w);
    const int64_t w0 = std::max<int64_t>(ow * g.sw - g.pad_left, 0), w1 = std::min(ow * g.sw - g.pad_left + g.kw, g.w);
    for (int64_t c0 = 0; c0 < g.ci; c0 += kPoolChanBlock) {
      const int64_t nc = std::min(kPoolChanBlock, g.ci - c0);
      window_argmax(g, x, n, h0, h1, w0, w1, c0, nc, arg);
      const T* gy = dy + ((n * g.oh + oh) * g.ow + ow) * g.co + c0;
      for (int64_t ih = h0; ih < h1; ++ih)
        for (int64_t iw = q0; iw < q1; ++iw) {
          T* d = dx + ((n * g.h + ih) * g.w + iw) * g.ci + c0;
          if (iw < w0 || iw >= w1) {
            std::fill_n(d, nc, T(0));
            continue;
          }
          const auto j = PoolBits<T>((ih - h0) * (w1 - w0) + (iw - w0));
          // dy + 0 turns -0 into +0, as the reference's 0.0 + dy does.
#pragma omp simd
          for (int64_t k = 0; k < nc; ++k) d[k] = std::bit_cast<T>(bits_of(T(gy[k] + T(0))) & mask_of<T>(arg[k] == j));
        }
    }
  }
}

// Overlapping windows: a cell may collect several gradients, summed in double in window
// order as the reference does, so the result is bit-identical. Adding a masked +0.0 to
// every cell of the window keeps the loop vectorized and changes no sum (the sums start
// at +0.0 and never become -0.0). Task = (image, channel block).
template <class T>
void max_pool_grad_overlap(const ConvGeometry& g, const T* x, const T* dy, T* dx, int64_t n, int64_t c0,
                           std::vector<double>& acc) {
  const int64_t nc = std::min(kPoolChanBlock, g.ci - c0);
  acc.assign(size_t(g.h * g.w * nc), 0.0);
  PoolBits<T> arg[kPoolChanBlock];
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    const int64_t h0 = std::max<int64_t>(oh * g.sh - g.pad_top, 0), h1 = std::min(oh * g.sh - g.pad_top + g.kh, g.h);
    for (int64_t ow = 0; ow < g.ow; ++ow) {
      const int64_t w0 = std::max<int64_t>(ow * g.sw - g.pad_left, 0),
                    w1 = std::min(ow * g.sw - g.pad_left + g.kw, g.w);
      if (h0 >= h1 || w0 >= w1) continue;
      window_argmax(g, x, n, h0, h1, w0, w1, c0, nc, arg);
      const T* gy = dy + ((n * g.oh + oh) * g.ow + ow) * g.co + c0;
      PoolBits<T> j = 0;
      for (int64_t ih = h0; ih < h1; ++ih)
        for (int64_t iw = w0; iw < w1; ++iw, ++j) {
          double* a = acc.data() + (ih * g.w + iw) * nc;
#pragma omp simd
          for (int64_t k = 0; k < nc; ++k)
            a[k] += std::bit_cast<double>(bits_of(double(gy[k])) & mask_of<double>(arg[k] == j));
        }
    }
  }
  for (int64_t i = 0; i < g.h * g.w; ++i) {
    T* d = dx + (n * g.h * g.w + i) * g.ci + c0;
    const double* a = acc.data() + i * nc;
#pragma omp simd
    for (int64_t k = 0; k < nc; ++k) d[k] = T(a[k]);
  }
}

void cpu_max_pool_grad(const OpCall& c, TensorList& out) {
  const ConvGeometry g = detail::pool_geometry(c.in(0).shape(), c.attr_ints("ksize"), c.attr_ints("strides"),
                                               c.attr_string("padding"), c.attr_ints("explicit_paddings"));
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T *x = c.in(0).data<T>(), *dy = c.in(2).data<T>();
    T* dx = out[0].data<T>();
    if (g.oh <= 0 || g.ow <= 0) {
      std::fill_n(dx, out[0].size(), T(0));
      return;
    }
    if (g.sh >= g.kh && g.sw >= g.kw) {
      const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, g.sh * g.w * g.ci));
      parallel_for(g.n * g.oh, grain, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) max_pool_grad_disjoint(g, x, dy, dx, t / g.oh, t % g.oh);
      });
      return;
    }
    const int64_t blocks = (g.ci + kPoolChanBlock - 1) / kPoolChanBlock;
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, g.h * g.w * g.ci / blocks));
    parallel_for(g.n * blocks, grain, [&](int64_t b, int64_t e) {
      std::vector<double> acc;
      for (int64_t t = b; t < e; ++t) max_pool_grad_overlap(g, x, dy, dx, t / blocks, (t % blocks) * kPoolChanBlock, acc);
    });
  };
  if (c.in(0).dtype() == DType::Float32) run(float());
  else run(double());
}
bool f32_or_f64(const OpCall& c) { return c.in(0).dtype() == DType::Float32 || c.in(0).dtype() == DType::Float64; }

}  // namespace

DF_REGISTER_KERNEL(Conv2D, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = conv_supported,
                            .run = onednn_conv});
DF_REGISTER_KERNEL(Conv2DBackpropInput, {.name = "cpu:onednn", .priority = kCpuPriority,
                                         .supports = conv_supported, .run = onednn_conv});
DF_REGISTER_KERNEL(Conv2DBackpropFilter, {.name = "cpu:onednn", .priority = kCpuPriority,
                                          .supports = conv_supported, .run = onednn_conv});
DF_REGISTER_KERNEL(FusedConv2D, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = fused_supported,
                                 .run = onednn_fused_conv});
DF_REGISTER_KERNEL(MaxPool, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = pool_supported,
                             .run = onednn_pool});
DF_REGISTER_KERNEL(AvgPool, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = pool_supported,
                             .run = onednn_pool});
DF_REGISTER_KERNEL(AvgPoolGrad, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = pool_supported,
                                 .run = onednn_pool});
DF_REGISTER_KERNEL(MaxPoolGrad, {.name = "cpu:omp", .priority = kCpuPriority, .supports = f32_or_f64,
                                 .run = cpu_max_pool_grad});

}  // namespace deepflow
