// SPDX-License-Identifier: Apache-2.0
// The oneDNN kernel of fused_conv_chain: every layer one convolution primitive (a 1x1 conv
// and the 3x3 depthwise conv after it one primitive, where oneDNN fuses them natively: the
// expanded tensor is then never written), with the values between layers in oneDNN's
// blocked layout (nChw16c with AVX-512, else nChw8c). 3x3 stride-1 convs run as Winograd
// convolutions where oneDNN has them (see winograd_candidate).
//
// Why blocked: oneDNN 2.6 runs NHWC convolutions with its brgemm kernels, while with
// nChw16c it picks its direct jit kernels (jit_1x1, jit_dw), which are 12% (batch 1) to 20%
// (batch 8) faster on mobilenet_v2's convs (a standalone chain of its 52 convs, measured on
// the 2-core box); a chain only reorders at its two ends. Why one op: a model's chain of 52
// fused_conv2d calls cost ~16 us each around the primitive (dispatch, descriptors, memory
// objects); here a plan per input shape holds the primitives, the value layouts and where
// each value lives in one arena, so a call only wraps pointers and runs.
//
// Values live in an arena whose slots are reused once a value's last reader has run; a
// layer with a summand that nobody reads afterwards writes into the summand's slot (the
// sum post-op adds what dst holds), else the summand is copied there first.
// A chain oneDNN cannot plan (a layer only its reference implementation would run, a dtype
// other than float32) runs layer by layer through fused_conv2d's own kernels.
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "deepflow/kernels/cpu/onednn_conv.h"
#include "deepflow/kernels/cpu/onednn_util.h"
#include "deepflow/ops/kernel.h"
#include "deepflow/kernels/ref/ref_util.h"
#include "deepflow/ops/conv_chain.h"

namespace deepflow {
namespace {

namespace dn = dnnl;
using conv_chain::Layer;
using detail::ConvGeometry;
using Tag = dn::memory::format_tag;
using DT = dn::memory::data_type;

constexpr size_t kAlign = 64;

// A layer's filters as the primitive wants them: their layout, ours (HWIO), the reorder
// between them when they differ, and the input index of the filters.
struct Weights {
  dn::memory::desc want, user;
  std::optional<dn::reorder> reorder;
  int input = -1;
};

// One primitive: a layer, or a 1x1 layer with the depthwise layer after it as oneDNN's
// depthwise post-op (its filters and bias in `dw`, `dw_bias`).
struct Step {
  dn::convolution_forward prim;
  Weights weights, dw;
  dn::memory::desc bias, dw_bias, scratchpad;
  int src = 0, summand = -1, dst = 1, bias_input = -1, dw_bias_input = -1;
  bool in_place = false;  // dst is the summand's slot
};

struct Plan {
  std::vector<Step> steps;
  std::vector<dn::memory::desc> value_md;  // per value: 0 the input, k layer k-1's result
  std::vector<size_t> offset;              // per value: arena offset (value 0: unused when direct)
  bool input_direct = false;               // layer 0 reads the caller's input as it is
  std::optional<dn::reorder> input_reorder, output_reorder;
  dn::memory::desc input_md, output_md;
  size_t arena_bytes = 0, scratch_bytes = 0;
};
using PlanPtr = std::shared_ptr<const Plan>;

onednn::PlanCache<Plan>& plans() {
  static auto* c = new onednn::PlanCache<Plan>;  // kernels may run at exit
  return *c;
}

bool nchw(const OpCall& c, const char* attr = "data_format") { return c.attr_string(attr) == "NCHW"; }

Tag blocked_tag() {
  const auto isa = int(dn::get_effective_cpu_isa()), avx512 = int(dn::cpu_isa::avx512_core);
  return (isa & avx512) == avx512 ? Tag::nChw16c : Tag::nChw8c;
}

dn::memory::desc act_md(const Shape& nhwc, Tag tag) {
  return dn::memory::desc({nhwc[0], nhwc[3], nhwc[1], nhwc[2]}, DT::f32, tag);
}

using onednn::is_ref;

// fused_conv2d's attributes of a layer, as an OpCall for activation_post_op.
struct LayerCall {
  explicit LayerCall(const Layer& l) : attrs(conv_chain::fused_attrs(l)), call{&op_def(OpId::FusedConv2D), {}, &attrs, {}} {}
  Attrs attrs;
  OpCall call;
};

void append_activation(dn::post_ops& po, const OpCall& fc) {
  dn::algorithm alg{};
  float alpha = 0, beta = 0;
  if (onednn::activation_post_op(fc, alg, alpha, beta)) po.append_eltwise(1.f, alg, alpha, beta);
}

// The primitive of layer l (geometry g) from src to dst; with `dw`, the depthwise layer
// after it (geometry dg) as a post-op, whose result is then the primitive's dst.
dn::convolution_forward::primitive_desc layer_pd(const ConvGeometry& g, const Layer& l, const dn::memory::desc& src,
                                                 const dn::memory::desc& dst, const Layer* dw = nullptr,
                                                 const ConvGeometry* dg = nullptr,
                                                 dn::algorithm alg = dn::algorithm::convolution_direct) {
  const dn::memory::desc bias = l.bias >= 0 ? dn::memory::desc({g.co}, DT::f32, Tag::a) : dn::memory::desc();
  dn::convolution_forward::desc d(dn::prop_kind::forward_inference, alg, src,
                                  onednn::any_weights_md(g, DT::f32), bias, dst, {g.sh, g.sw},
                                  {g.dh - 1, g.dw - 1}, {g.pad_top, g.pad_left}, {g.pad_bottom, g.pad_right});
  dn::primitive_attr attr = onednn::user_scratchpad();
  dn::post_ops po;
  if (l.summand >= 0) po.append_sum(1.f);
  append_activation(po, LayerCall(l).call);
  if (dw) {
    po.append_dw(DT::f32, DT::f32, DT::f32, dg->kh, dg->sh, dg->pad_top, 0, {});
    append_activation(po, LayerCall(*dw).call);
  }
  attr.set_post_ops(po);
  return {d, attr, onednn::cpu_engine()};
}

// A 3x3 stride-1 conv with at least 32 channels each way runs as Winograd's F(4x4, 3x3) or
// F(2x2, 3x3) where oneDNN has them (AVX-512 only): resnet18's such layers take 1.3-1.8x
// less time at batch 1 (64 channels at 56 px: 1.09 -> 0.62 ms; 512 at 7 px: 1.21 -> 0.95)
// and 1.7-2.4x less at batch 8 (median per layer, 2 threads: `ONEDNN_VERBOSE=1
// [DEEPFLOW_CONV_WINOGRAD=0] deepflow_bench --benchmark_filter=onnx/resnet18/b8/`). It
// rounds differently: resnet18's max relative error against PyTorch goes from 1.6e-6 to
// 2.2e-6. DEEPFLOW_CONV_WINOGRAD=0 turns it off (the direct kernels then run).
bool winograd_candidate(const ConvGeometry& g) {
  static const bool allowed = [] {
    const char* e = std::getenv("DEEPFLOW_CONV_WINOGRAD");
    return !e || std::string(e) != "0";
  }();
  return allowed && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.groups == 1 &&
         g.ci >= 32 && g.co >= 32;
}

Weights weights_of(const dn::memory::desc& want, const ConvGeometry& g, int input) {
  Weights w{want, onednn::hwio_md(g, DT::f32), std::nullopt, input};
  if (w.want != w.user)
    w.reorder = dn::reorder(dn::reorder::primitive_desc(onednn::cpu_engine(), w.user, onednn::cpu_engine(), w.want));
  return w;
}

// Whether layer d (geometry dg), a 3x3 depthwise conv of layer l's result (geometry g, a
// plain 1x1 conv) that nothing else reads, can be l's depthwise post-op.
bool dw_fusable(const Layer& l, const ConvGeometry& g, const Layer& d, const ConvGeometry& dg, int readers) {
  const bool pointwise = g.kh == 1 && g.kw == 1 && g.groups == 1 && g.sh == 1 && g.sw == 1 && g.pad_top == 0 &&
                         g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0 && l.summand < 0;
  const bool depthwise = dg.groups == dg.ci && dg.co == dg.ci && dg.kh == 3 && dg.kw == 3 && dg.sh == dg.sw &&
                         dg.dh == 1 && dg.dw == 1 && dg.pad_top == 1 && dg.pad_left == 1 && d.summand < 0 &&
                         d.bias >= 0;
  return pointwise && depthwise && readers == 1;
}

// Slots of the arena: a value takes a free slot (or a new one) when its layer runs and frees
// it after its last reader.
class SlotAllocator {
 public:
  int take(size_t bytes, int now) {
    int best = -1;
    for (int s = 0; s < int(slots_.size()); ++s)
      if (slots_[size_t(s)].free_after < now && (best < 0 || fits_better(s, best, bytes))) best = s;
    if (best < 0) {
      slots_.push_back({0, 0});
      best = int(slots_.size()) - 1;
    }
    slots_[size_t(best)].bytes = std::max(slots_[size_t(best)].bytes, (bytes + kAlign - 1) / kAlign * kAlign);
    return best;
  }
  void hold_until(int slot, int last_reader) { slots_[size_t(slot)].free_after = last_reader; }
  // Arena offsets of the slots, and the arena's size.
  std::vector<size_t> offsets(size_t* total) const {
    std::vector<size_t> o;
    size_t at = 0;
    for (const Slot& s : slots_) o.push_back(at), at += s.bytes;
    *total = at;
    return o;
  }

 private:
  struct Slot {
    size_t bytes;
    int free_after;
  };
  // Prefer the smallest slot that fits, else the largest (it grows least).
  bool fits_better(int s, int best, size_t bytes) const {
    const size_t a = slots_[size_t(s)].bytes, b = slots_[size_t(best)].bytes;
    if ((a >= bytes) != (b >= bytes)) return a >= bytes;
    return a >= bytes ? a < b : a > b;
  }
  std::vector<Slot> slots_;
};

PlanPtr make_plan(const OpCall& c, const std::vector<Layer>& layers) {
  const Tag blocked = blocked_tag();
  const Shape& x = c.in(0).shape();
  const bool from_nchw = nchw(c);
  const size_t n_values = layers.size() + 1;
  auto plan = std::make_shared<Plan>();
  std::vector<Shape> shape{from_nchw ? Shape{x[0], x[2], x[3], x[1]} : x};
  std::vector<int> last_reader(n_values, -1);
  bool input_elsewhere = false;  // value 0 read by more than layer 0's convolution
  for (size_t i = 0; i < layers.size(); ++i) {
    last_reader[size_t(layers[i].src)] = int(i);
    if (layers[i].summand >= 0) last_reader[size_t(layers[i].summand)] = int(i);
    input_elsewhere |= (layers[i].src == 0 && i > 0) || layers[i].summand == 0;
  }
  last_reader.back() = int(layers.size());  // the result outlives the layers
  plan->input_md = from_nchw ? dn::memory::desc({x[0], x[1], x[2], x[3]}, DT::f32, Tag::nchw) : act_md(x, Tag::nhwc);
  std::vector<ConvGeometry> geo;
  for (const Layer& l : layers) {
    const FusedConvOptions& o = l.options;
    geo.push_back(detail::conv_geometry(shape[size_t(l.src)], c.in(l.filters).shape(), o.strides, o.padding,
                                        o.dilations, o.explicit_paddings));
    const ConvGeometry& g = geo.back();
    shape.push_back(Shape{g.n, g.oh, g.ow, g.co});
  }
  std::vector<int> readers(n_values, 0);
  for (const Layer& l : layers) {
    ++readers[size_t(l.src)];
    if (l.summand >= 0) ++readers[size_t(l.summand)];
  }
  plan->value_md.resize(n_values);
  for (size_t v = 0; v < n_values; ++v) plan->value_md[v] = act_md(shape[v], blocked);
  SlotAllocator slots;
  std::vector<int> slot_of(n_values, -1);
  for (size_t i = 0; i < layers.size();) {
    const Layer& l = layers[i];
    const ConvGeometry& g = geo[i];
    std::optional<dn::convolution_forward::primitive_desc> pd;
    if (i == 0 && l.src == 0 && !input_elsewhere) {
      // The first layer may read the caller's layout itself (a 3-channel stem reads NCHW).
      try {
        auto direct = layer_pd(g, l, plan->input_md, plan->value_md[1]);
        if (!is_ref(direct)) pd = direct, plan->input_direct = true, plan->value_md[0] = plan->input_md;
      } catch (const dn::error&) {
      }
    }
    // A 1x1 conv and the depthwise conv after it as one primitive, where oneDNN fuses them
    // natively (jit_1x1 with a large enough result; else it would run them one by one).
    bool fused = false;
    if (!pd && i + 1 < layers.size() && layers[i + 1].src == int(i) + 1 &&
        dw_fusable(l, g, layers[i + 1], geo[i + 1], readers[i + 1])) {
      try {
        auto both = layer_pd(g, l, plan->value_md[size_t(l.src)], plan->value_md[i + 1], &layers[i + 1], &geo[i + 1]);
        if (std::string(both.impl_info_str()).rfind("jit_1x1", 0) == 0 && both.dst_desc() == plan->value_md[i + 2])
          pd = both, fused = true;
      } catch (const dn::error&) {
      }
    }
    if (!pd && winograd_candidate(g)) {
      try {
        pd = layer_pd(g, l, plan->value_md[size_t(l.src)], plan->value_md[i + 1], nullptr, nullptr,
                      dn::algorithm::convolution_winograd);
      } catch (const dn::error&) {  // no Winograd kernel for this ISA or these post-ops
      }
    }
    if (!pd) pd = layer_pd(g, l, plan->value_md[size_t(l.src)], plan->value_md[i + 1]);
    if (is_ref(*pd)) return nullptr;
    Step s;
    s.prim = dn::convolution_forward(*pd);
    s.weights = weights_of(pd->weights_desc(), g, l.filters);
    if (l.bias >= 0) s.bias = dn::memory::desc({g.co}, DT::f32, Tag::a);
    s.bias_input = l.bias;
    s.src = l.src, s.summand = l.summand, s.dst = int(i) + 1 + int(fused);
    if (fused) {
      const Layer& d = layers[i + 1];
      s.dw = weights_of(pd->query_md(dn::query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS), geo[i + 1],
                        d.filters);
      s.dw_bias = pd->query_md(dn::query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS);
      s.dw_bias_input = d.bias;
    }
    s.scratchpad = pd->scratchpad_desc();
    plan->scratch_bytes = std::max(plan->scratch_bytes, s.scratchpad.get_size());
    // Value 0 takes its slot before the first layer; each result when its layer runs.
    if (i == 0 && !plan->input_direct) {
      slot_of[0] = slots.take(plan->value_md[0].get_size(), -1);
      slots.hold_until(slot_of[0], last_reader[0]);
    }
    const size_t v = size_t(s.dst);
    const dn::memory::desc& dst = plan->value_md[v];
    if (l.summand >= 0 && last_reader[size_t(l.summand)] == int(i) && l.summand != l.src &&
        slot_of[size_t(l.summand)] >= 0 && plan->value_md[size_t(l.summand)] == dst) {
      s.in_place = true;
      slot_of[v] = slot_of[size_t(l.summand)];
    } else {
      slot_of[v] = slots.take(dst.get_size(), int(i));
    }
    slots.hold_until(slot_of[v], last_reader[v]);
    plan->steps.push_back(std::move(s));
    i += fused ? 2 : 1;
  }
  std::vector<size_t> slot_offset = slots.offsets(&plan->arena_bytes);
  for (size_t v = 0; v < n_values; ++v) plan->offset.push_back(slot_of[v] >= 0 ? slot_offset[size_t(slot_of[v])] : 0);
  if (!plan->input_direct)
    plan->input_reorder = dn::reorder(
        dn::reorder::primitive_desc(onednn::cpu_engine(), plan->input_md, onednn::cpu_engine(), plan->value_md[0]));
  plan->output_md = act_md(shape.back(), nchw(c, "output_format") ? Tag::nchw : Tag::nhwc);
  plan->output_reorder = dn::reorder(dn::reorder::primitive_desc(onednn::cpu_engine(), plan->value_md.back(),
                                                                 onednn::cpu_engine(), plan->output_md));
  return plan;
}

PlanPtr plan_of(const OpCall& c) {
  // int8 chains run in conv_chain_int8.cpp, or layer by layer where it cannot.
  if (c.in(0).dtype() != DType::Float32 || !c.attr_floats("int8_ranges").empty()) return nullptr;
  for (const Tensor& t : c.inputs)
    if (t.size() == 0) return nullptr;
  const auto& ints = c.attr_ints("layers");
  const auto& floats = c.attr_floats("layer_params");
  std::vector<int64_t> key{int64_t(nchw(c)), int64_t(nchw(c, "output_format"))};
  key.reserve(ints.size() + floats.size() + size_t(c.num_inputs()) * 5 + 2);
  for (const Tensor& t : c.inputs) {
    key.push_back(t.rank());
    for (int d = 0; d < t.rank(); ++d) key.push_back(t.dim(d));
  }
  key.insert(key.end(), ints.begin(), ints.end());
  for (double f : floats) key.push_back(std::bit_cast<int64_t>(f));
  return plans().get(key, [&]() -> PlanPtr {
    return make_plan(c, conv_chain::decode(ints, floats, c.num_inputs()));
  });
}

bool chain_supported(const OpCall& c) { return plan_of(c) != nullptr; }

void onednn_conv_chain(const OpCall& c, TensorList& out) {
  const PlanPtr p = plan_of(c);
  dn::engine& eng = onednn::cpu_engine();
  dn::stream& s = onednn::thread_stream();
  Tensor arena = onednn::scratch_tensor(p->arena_bytes), pad = onednn::scratch_tensor(p->scratch_bytes);
  auto* base = static_cast<char*>(arena.raw_data());
  // Memory objects are cheap (0.17 us each); the padded channels of a blocked value need no
  // zeroing here, as oneDNN's convolutions and reorders write them (as zeros) themselves.
  std::vector<dn::memory> value(p->value_md.size());
  value[0] = dn::memory(p->value_md[0], eng, p->input_direct ? c.in(0).raw_data() : base + p->offset[0]);
  if (p->input_reorder) {
    dn::memory in(p->input_md, eng, c.in(0).raw_data());
    p->input_reorder->execute(s, in, value[0]);
  }
  std::vector<Tensor> filters;  // keeps reordered filters alive until the stream is done
  auto weights = [&](const Weights& w) {
    const Tensor& f = c.in(w.input);
    if (!w.reorder) return dn::memory(w.user, eng, f.raw_data());
    filters.push_back(onednn::constant_filter(f, w.want, *w.reorder, w.user));
    return dn::memory(w.want, eng, filters.back().raw_data());
  };
  for (const Step& st : p->steps) {
    dn::memory& dst = value[size_t(st.dst)] = dn::memory(p->value_md[size_t(st.dst)], eng, base + p->offset[size_t(st.dst)]);
    if (st.summand >= 0 && !st.in_place)  // the sum post-op adds what dst holds
      onednn::copy_value(value[size_t(st.summand)], dst);
    std::unordered_map<int, dn::memory> args{{DNNL_ARG_SRC, value[size_t(st.src)]},
                                             {DNNL_ARG_WEIGHTS, weights(st.weights)},
                                             {DNNL_ARG_DST, dst},
                                             {DNNL_ARG_SCRATCHPAD, dn::memory(st.scratchpad, eng, pad.raw_data())}};
    if (st.bias_input >= 0)
      args.insert({DNNL_ARG_BIAS, dn::memory(st.bias, eng, c.in(st.bias_input).raw_data())});
    if (st.dw.input >= 0) {
      args.insert({DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, weights(st.dw)});
      args.insert({DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, dn::memory(st.dw_bias, eng, c.in(st.dw_bias_input).raw_data())});
    }
    st.prim.execute(s, args);
  }
  dn::memory result(p->output_md, eng, out[0].raw_data());
  p->output_reorder->execute(s, value.back(), result);
  s.wait();
}

void conv_chain_by_layers(const OpCall& c, TensorList& out) { ref::conv_chain_by_layers(c, out, false); }

DF_REGISTER_KERNEL(FusedConvChain, {.name = "cpu:onednn", .priority = kCpuPriority, .supports = chain_supported,
                                    .run = onednn_conv_chain});
DF_REGISTER_KERNEL(FusedConvChain, {.name = "cpu:layers", .priority = kCpuPriority / 2, .run = conv_chain_by_layers});

}  // namespace
}  // namespace deepflow
