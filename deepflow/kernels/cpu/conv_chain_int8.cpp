// SPDX-License-Identifier: Apache-2.0
// The oneDNN kernel of an int8 fused_conv_chain (attribute int8_ranges, which the serving
// optimizer sets from calibration): the chain's input is quantized once, every value
// between layers lives in the arena as uint8 / int8 (NHWC), each layer is one int8
// convolution primitive (VNNI: vpdpbusd), and the last value is dequantized into the
// output. A layer's requantization is its primitive's post-ops, all in the real domain:
//
//   acc   = sum q_src * q_w                       (int32)
//   real  = s_src * s_w[c] * (acc + b[c] / (s_src * s_w[c]))   output scales, with the bias
//                                                  pre-divided (oneDNN adds it to acc)
//   real += s_sum * q_sum                          sum post-op (the summand's own scale)
//   q_dst = round(act(real) / s_dst), saturated    eltwise post-op with scale 1 / s_dst
//
// The scales are baked into the primitives and the quantized filters into the plan, so a
// plan belongs to one set of filter tensors: its key holds their addresses, and it keeps
// weak references to their storage, so a freed filter whose address comes back never
// matches a stale plan. Each input shape's plan holds its own quantized filters (about a
// quarter of the float filters: 25 MB for ResNet50), in an LRU of 256 plans. Only CPUs with VNNI take this path: without it oneDNN's u8 x s8
// products pass through saturating 16-bit sums; there the chain runs layer by layer over
// fake-quantized values (kernels/ref/fused.cpp), which computes the same thing.
#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "deepflow/kernels/cpu/onednn_conv.h"
#include "deepflow/kernels/cpu/onednn_util.h"
#include "deepflow/ops/conv_chain.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

namespace dn = dnnl;
using conv_chain::Int8Value;
using conv_chain::Layer;
using detail::ConvGeometry;
using Tag = dn::memory::format_tag;
using DT = dn::memory::data_type;

constexpr size_t kAlign = 64;

struct Step {
  dn::convolution_forward prim;
  dn::memory::desc weights_md, bias_md, scratchpad;
  Tensor weights, bias;  // quantized and reordered; bias divided by the output scales
  int src = 0, summand = -1, dst = 1;
  bool in_place = false;  // dst is the summand's slot
};

struct Plan {
  std::vector<Step> steps;
  std::vector<dn::memory::desc> value_md;
  std::vector<size_t> offset;
  dn::reorder input_reorder, output_reorder;
  dn::memory::desc input_md, output_md;
  size_t arena_bytes = 0, scratch_bytes = 0;
  std::vector<std::weak_ptr<Storage>> constants;  // the filters and biases the plan was made from
};
using PlanPtr = std::shared_ptr<const Plan>;

onednn::PlanCache<Plan>& plans() {
  static auto* c = new onednn::PlanCache<Plan>;  // kernels may run at exit
  return *c;
}

bool nchw(const OpCall& c, const char* attr) { return c.attr_string(attr) == "NCHW"; }
using onednn::is_ref;

bool has_vnni() {
  const int isa = int(dn::get_effective_cpu_isa());
  auto at_least = [&](dn::cpu_isa want) { return (isa & int(want)) == int(want); };
  return at_least(dn::cpu_isa::avx512_core_vnni) || at_least(dn::cpu_isa::avx2_vnni);
}

DT storage_type(const Int8Value& q) { return q.is_unsigned ? DT::u8 : DT::s8; }

dn::memory::desc value_md(const Shape& nhwc, const Int8Value& q) {
  return dn::memory::desc({nhwc[0], nhwc[3], nhwc[1], nhwc[2]}, storage_type(q), Tag::nhwc);
}

dn::reorder scaled_reorder(const dn::memory::desc& from, const dn::memory::desc& to, int mask,
                           const std::vector<float>& scales) {
  dn::primitive_attr attr;
  attr.set_output_scales(mask, scales);
  return dn::reorder(dn::reorder::primitive_desc(onednn::cpu_engine(), from, onednn::cpu_engine(), to, attr));
}

// Arena slots: a value takes a free slot (or a new one) when its layer runs and frees it
// after its last reader has run.
struct Slots {
  std::vector<size_t> bytes;
  std::vector<int> free_after;
  int take(size_t n, int now) {
    for (size_t s = 0; s < bytes.size(); ++s)
      if (free_after[s] < now && bytes[s] >= n) return int(s);
    bytes.push_back((n + kAlign - 1) / kAlign * kAlign);
    free_after.push_back(now);
    return int(bytes.size()) - 1;
  }
};

// The primitive of layer l reading value md src and writing dst, with its filters quantized.
// nullopt when only oneDNN's reference implementation would run it.
std::optional<Step> make_step(const OpCall& c, const Layer& l, const ConvGeometry& g, const dn::memory::desc& src,
                              const dn::memory::desc& dst, const std::vector<Int8Value>& q, int dst_value) {
  const float s_src = q[size_t(l.src)].scale, s_dst = q[size_t(dst_value)].scale;
  const std::vector<float> w_scale = conv_chain::int8_weight_scales(c.in(l.filters));
  std::vector<float> out_scale(w_scale.size()), inv_w(w_scale.size());
  for (size_t o = 0; o < w_scale.size(); ++o) out_scale[o] = s_src * w_scale[o], inv_w[o] = 1.f / w_scale[o];
  const dn::memory::desc bias = l.bias >= 0 ? dn::memory::desc({g.co}, DT::f32, Tag::a) : dn::memory::desc();
  dn::convolution_forward::desc d(dn::prop_kind::forward_inference, dn::algorithm::convolution_direct, src,
                                  onednn::any_weights_md(g, DT::s8), bias, dst, {g.sh, g.sw}, {g.dh - 1, g.dw - 1},
                                  {g.pad_top, g.pad_left}, {g.pad_bottom, g.pad_right});
  dn::primitive_attr attr = onednn::user_scratchpad();
  attr.set_output_scales(1 << 1, out_scale);
  dn::post_ops po;
  if (l.summand >= 0) {
    const Int8Value& qs = q[size_t(l.summand)];
    po.append_sum(qs.scale, 0, storage_type(qs) == dst.data_type() ? DT::undef : storage_type(qs));
  }
  Attrs fa = conv_chain::fused_attrs(l);
  const OpCall fc{&op_def(OpId::FusedConv2D), {}, &fa, {}};
  dn::algorithm alg{};
  float alpha = 0, beta = 0;
  if (onednn::activation_post_op(fc, alg, alpha, beta))
    po.append_eltwise(1.f / s_dst, alg, alpha, beta);
  else
    po.append_eltwise(1.f, dn::algorithm::eltwise_linear, 1.f / s_dst, 0.f);
  attr.set_post_ops(po);
  dn::convolution_forward::primitive_desc pd;
  try {
    pd = dn::convolution_forward::primitive_desc(d, attr, onednn::cpu_engine());
  } catch (const dn::error&) {
    return std::nullopt;
  }
  if (is_ref(pd)) return std::nullopt;
  Step s;
  s.prim = dn::convolution_forward(pd);
  s.weights_md = pd.weights_desc();
  s.scratchpad = pd.scratchpad_desc();
  s.src = l.src, s.summand = l.summand, s.dst = dst_value;
  // The filters once: f32 HWIO -> s8 in the primitive's layout, each channel by 1 / s_w.
  const dn::memory::desc user = onednn::hwio_md(g, DT::f32);
  s.weights = onednn::scratch_tensor(s.weights_md.get_size());
  {
    dn::memory from(user, onednn::cpu_engine(), const_cast<void*>(c.in(l.filters).raw_data()));
    dn::memory to(s.weights_md, onednn::cpu_engine(), s.weights.raw_data());
    scaled_reorder(user, s.weights_md, g.groups == 1 ? 1 : 3, inv_w).execute(onednn::thread_stream(), from, to);
    onednn::thread_stream().wait();
  }
  if (l.bias >= 0) {
    s.bias_md = bias;
    s.bias = Tensor(Shape{g.co}, DType::Float32);
    const float* b = c.in(l.bias).data<float>();
    float* sb = s.bias.data<float>();
    for (int64_t o = 0; o < g.co; ++o) sb[o] = b[o] / out_scale[size_t(o)];
  }
  return s;
}

PlanPtr make_plan(const OpCall& c, const std::vector<Layer>& layers, const std::vector<Int8Value>& q) {
  const Shape& x = c.in(0).shape();
  const bool from_nchw = nchw(c, "data_format");
  const size_t n_values = layers.size() + 1;
  auto plan = std::make_shared<Plan>();
  std::vector<Shape> shape{from_nchw ? Shape{x[0], x[2], x[3], x[1]} : x};
  std::vector<ConvGeometry> geo;
  std::vector<int> last_reader(n_values, -1);
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    const FusedConvOptions& o = l.options;
    geo.push_back(detail::conv_geometry(shape[size_t(l.src)], c.in(l.filters).shape(), o.strides, o.padding,
                                        o.dilations, o.explicit_paddings));
    shape.push_back(Shape{geo.back().n, geo.back().oh, geo.back().ow, geo.back().co});
    last_reader[size_t(l.src)] = int(i);
    if (l.summand >= 0) last_reader[size_t(l.summand)] = int(i);
  }
  last_reader.back() = int(layers.size());
  for (size_t v = 0; v < n_values; ++v) plan->value_md.push_back(value_md(shape[v], q[v]));
  Slots slots;
  std::vector<int> slot_of(n_values, -1);
  slot_of[0] = slots.take(plan->value_md[0].get_size(), -1);
  slots.free_after[size_t(slot_of[0])] = last_reader[0];
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    const size_t v = i + 1;
    std::optional<Step> s =
        make_step(c, l, geo[i], plan->value_md[size_t(l.src)], plan->value_md[v], q, int(v));
    if (!s) return nullptr;
    if (l.summand >= 0 && last_reader[size_t(l.summand)] == int(i) && l.summand != l.src) {
      s->in_place = true;
      slot_of[v] = slot_of[size_t(l.summand)];
    } else {
      slot_of[v] = slots.take(plan->value_md[v].get_size(), int(i));
    }
    slots.free_after[size_t(slot_of[v])] = std::max(slots.free_after[size_t(slot_of[v])], last_reader[v]);
    plan->scratch_bytes = std::max(plan->scratch_bytes, s->scratchpad.get_size());
    plan->steps.push_back(std::move(*s));
    plan->constants.push_back(c.in(l.filters).impl_ptr()->storage);
    if (l.bias >= 0) plan->constants.push_back(c.in(l.bias).impl_ptr()->storage);
  }
  size_t at = 0;
  std::vector<size_t> slot_offset;
  for (size_t b : slots.bytes) slot_offset.push_back(at), at += b;
  plan->arena_bytes = at;
  for (size_t v = 0; v < n_values; ++v) plan->offset.push_back(slot_offset[size_t(slot_of[v])]);
  const Shape& y = shape.back();
  plan->input_md = from_nchw ? dn::memory::desc({x[0], x[1], x[2], x[3]}, DT::f32, Tag::nchw)
                             : dn::memory::desc({x[0], x[3], x[1], x[2]}, DT::f32, Tag::nhwc);
  plan->output_md = dn::memory::desc({y[0], y[3], y[1], y[2]}, DT::f32,
                                     nchw(c, "output_format") ? Tag::nchw : Tag::nhwc);
  plan->input_reorder = scaled_reorder(plan->input_md, plan->value_md[0], 0, {1.f / q[0].scale});
  plan->output_reorder = scaled_reorder(plan->value_md.back(), plan->output_md, 0, {q.back().scale});
  return plan;
}

// The call's filters and biases are those the plan was made from (not freed and replaced).
bool same_constants(const Plan& p, const OpCall& c) {
  for (int i = 1, k = 0; i < c.num_inputs(); ++i, ++k)
    if (size_t(k) >= p.constants.size() || p.constants[size_t(k)].lock() != c.in(i).impl_ptr()->storage) return false;
  return true;
}

PlanPtr plan_of(const OpCall& c) {
  if (!has_vnni() || c.in(0).dtype() != DType::Float32 || c.attr_floats("int8_ranges").empty()) return nullptr;
  for (const Tensor& t : c.inputs)
    if (t.size() == 0) return nullptr;
  const auto& ints = c.attr_ints("layers");
  const auto& floats = c.attr_floats("layer_params");
  const auto& ranges = c.attr_floats("int8_ranges");
  std::vector<int64_t> key{int64_t(nchw(c, "data_format")), int64_t(nchw(c, "output_format"))};
  for (const Tensor& t : c.inputs) {
    key.push_back(t.rank());
    for (int d = 0; d < t.rank(); ++d) key.push_back(t.dim(d));
  }
  for (int i = 1; i < c.num_inputs(); ++i) key.push_back(int64_t(reinterpret_cast<uintptr_t>(c.in(i).raw_data())));
  key.insert(key.end(), ints.begin(), ints.end());
  for (double f : floats) key.push_back(std::bit_cast<int64_t>(f));
  for (double f : ranges) key.push_back(std::bit_cast<int64_t>(f));
  auto make = [&]() -> PlanPtr {
    const std::vector<Layer> layers = conv_chain::decode(ints, floats, c.num_inputs());
    return make_plan(c, layers, conv_chain::int8_values(ranges, layers.size()));
  };
  PlanPtr p = plans().get(key, make);
  if (p && !same_constants(*p, c)) {
    plans().erase(key);
    p = plans().get(key, make);
  }
  return p;
}

bool int8_chain_supported(const OpCall& c) { return plan_of(c) != nullptr; }

void onednn_int8_conv_chain(const OpCall& c, TensorList& out) {
  const PlanPtr p = plan_of(c);
  dn::engine& eng = onednn::cpu_engine();
  dn::stream& s = onednn::thread_stream();
  Tensor arena = onednn::scratch_tensor(p->arena_bytes), pad = onednn::scratch_tensor(p->scratch_bytes);
  auto* base = static_cast<char*>(arena.raw_data());
  std::vector<dn::memory> value(p->value_md.size());
  for (size_t v = 0; v < value.size(); ++v) value[v] = dn::memory(p->value_md[v], eng, base + p->offset[v]);
  {
    dn::memory in(p->input_md, eng, const_cast<void*>(c.in(0).raw_data()));
    p->input_reorder.execute(s, in, value[0]);
  }
  for (const Step& st : p->steps) {
    dn::memory& dst = value[size_t(st.dst)];
    if (st.summand >= 0 && !st.in_place)  // the sum post-op adds what dst holds
      onednn::copy_value(value[size_t(st.summand)], dst);
    std::unordered_map<int, dn::memory> args{
        {DNNL_ARG_SRC, value[size_t(st.src)]},
        {DNNL_ARG_WEIGHTS, dn::memory(st.weights_md, eng, const_cast<void*>(st.weights.raw_data()))},
        {DNNL_ARG_DST, dst},
        {DNNL_ARG_SCRATCHPAD, dn::memory(st.scratchpad, eng, pad.raw_data())}};
    if (st.bias.defined()) args.insert({DNNL_ARG_BIAS, dn::memory(st.bias_md, eng, const_cast<void*>(st.bias.raw_data()))});
    st.prim.execute(s, args);
  }
  dn::memory result(p->output_md, eng, out[0].raw_data());
  p->output_reorder.execute(s, value.back(), result);
  s.wait();
}

// Above the float chain's kernels (which refuse int8_ranges).
DF_REGISTER_KERNEL(FusedConvChain, {.name = "cpu:onednn-int8", .priority = kCpuPriority + 1,
                                    .supports = int8_chain_supported, .run = onednn_int8_conv_chain});

}  // namespace
}  // namespace deepflow
