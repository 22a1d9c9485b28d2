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
#include <memory>
#include <optional>
#include <unordered_map>

#include "deepflow/core/parallel.h"
#include "deepflow/kernels/cpu/onednn_util.h"
#include "deepflow/kernels/kernel.h"
#include "deepflow/ops/conv.h"

namespace deepflow {
namespace {

namespace dn = dnnl;
using detail::ConvGeometry;
using Tag = dn::memory::format_tag;
using DT = dn::memory::data_type;

using onednn::cpu_engine;
using onednn::scratch_tensor;
using onednn::thread_stream;
using onednn::user_scratchpad;
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

// --- max_pool, avg_pool, avg_pool_grad ---
ConvGeometry pool_geometry_of(const OpCall& c) {
  const Shape x = c.def->id == OpId::AvgPoolGrad ? input_sizes_of(c, c.in(0)) : c.in(0).shape();
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

// --- max_pool_grad --- x [n,h,w,c], dy [n,oh,ow,c] -> dx. Direct: per (image, channel
// block), scan each window's cells in row-major order keeping the first maximum (strict >,
// the reference's rule), with channels innermost so NHWC rows are read contiguously.
template <class T>
void max_pool_grad_block(const ConvGeometry& g, const T* x, const T* dy, T* dx, int64_t n, int64_t c0, int64_t c1) {
  constexpr int64_t kBlock = 64;
  T best[kBlock];
  int64_t where[kBlock];
  const int64_t nc = c1 - c0;
  for (int64_t ih = 0; ih < g.h; ++ih)
    for (int64_t iw = 0; iw < g.w; ++iw)
      for (int64_t k = 0; k < nc; ++k) dx[((n * g.h + ih) * g.w + iw) * g.ci + c0 + k] = T(0);
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    const int64_t h0 = std::max<int64_t>(oh * g.sh - g.pad_top, 0), h1 = std::min(oh * g.sh - g.pad_top + g.kh, g.h);
    for (int64_t ow = 0; ow < g.ow; ++ow) {
      const int64_t w0 = std::max<int64_t>(ow * g.sw - g.pad_left, 0), w1 = std::min(ow * g.sw - g.pad_left + g.kw, g.w);
      bool first = true;
      for (int64_t ih = h0; ih < h1; ++ih)
        for (int64_t iw = w0; iw < w1; ++iw) {
          const int64_t off = ((n * g.h + ih) * g.w + iw) * g.ci + c0;
          for (int64_t k = 0; k < nc; ++k)
            if (first || x[off + k] > best[k]) {
              best[k] = x[off + k];
              where[k] = off + k;
            }
          first = false;
        }
      const T* gy = dy + ((n * g.oh + oh) * g.ow + ow) * g.co + c0;
      if (!first)
        for (int64_t k = 0; k < nc; ++k) dx[where[k]] += gy[k];
    }
  }
}

void cpu_max_pool_grad(const OpCall& c, TensorList& out) {
  const ConvGeometry g = detail::pool_geometry(c.in(0).shape(), c.attr_ints("ksize"), c.attr_ints("strides"),
                                               c.attr_string("padding"));
  const int64_t blocks = (g.ci + 63) / 64;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T *x = c.in(0).data<T>(), *dy = c.in(2).data<T>();
    T* dx = out[0].data<T>();
    parallel_for(g.n * blocks, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t n = t / blocks, c0 = (t % blocks) * 64;
        max_pool_grad_block(g, x, dy, dx, n, c0, std::min(c0 + 64, g.ci));
      }
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
DF_REGISTER_KERNEL(MaxPool, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = pool_supported,
                             .run = onednn_pool});
DF_REGISTER_KERNEL(AvgPool, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = pool_supported,
                             .run = onednn_pool});
DF_REGISTER_KERNEL(AvgPoolGrad, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = pool_supported,
                                 .run = onednn_pool});
DF_REGISTER_KERNEL(MaxPoolGrad, {.name = "cpu:omp", .priority = kCpuPriority, .supports = f32_or_f64,
                                 .run = cpu_max_pool_grad});

}  // namespace deepflow
