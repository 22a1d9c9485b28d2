// SPDX-License-Identifier: Apache-2.0
// fused_conv_chain: a sequence of fused_conv2d layers as one op (see deepflow/graph/passes.h).
// Its meaning is the layers' fused_conv2d calls in order; `infer` and the gradient replay
// them with fused_conv2d itself, so the chain checks and differentiates exactly like them.
#include "deepflow/ops/conv_chain.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>

#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace conv_chain {
namespace {

constexpr std::array<const char*, 3> kPaddings{"VALID", "SAME", "EXPLICIT"};
constexpr std::array<const char*, 8> kActivations{"", "relu", "relu6", "clip", "elu", "sigmoid", "tanh",
                                                  "leaky_relu"};

template <size_t N>
int64_t code_of(const std::array<const char*, N>& names, const std::string& s, const char* what) {
  for (size_t i = 0; i < N; ++i)
    if (s == names[i]) return int64_t(i);
  fail("[fused_conv_chain] unknown ", what, " \"", s, "\"");
}

std::vector<int64_t> pair_of(const std::vector<int64_t>& v, const char* what) {
  if (v.size() == 1) return {v[0], v[0]};
  DF_CHECK(v.size() == 2, "[fused_conv_chain] ", what, " must be 1 or 2 ints {h, w}, got ", attr_to_string(AttrValue(v)));
  return v;
}

}  // namespace

void encode(int src, int summand, bool has_bias, const FusedConvOptions& o, std::vector<int64_t>& ints,
            std::vector<double>& floats) {
  const auto s = pair_of(o.strides, "strides"), d = pair_of(o.dilations, "dilations");
  const bool ex = o.padding == "EXPLICIT";
  DF_CHECK(!ex || o.explicit_paddings.size() == 4, "[fused_conv_chain] EXPLICIT padding needs 4 explicit_paddings, got ",
           attr_to_string(AttrValue(o.explicit_paddings)));
  ints.insert(ints.end(), {int64_t(src), int64_t(summand), int64_t(has_bias), s[0], s[1], d[0], d[1],
                           code_of(kPaddings, o.padding, "padding"), ex ? o.explicit_paddings[0] : 0,
                           ex ? o.explicit_paddings[1] : 0, ex ? o.explicit_paddings[2] : 0,
                           ex ? o.explicit_paddings[3] : 0, code_of(kActivations, o.activation, "activation")});
  floats.insert(floats.end(), {o.alpha, o.clip_min, o.clip_max});
}

std::vector<Layer> decode(const std::vector<int64_t>& ints, const std::vector<double>& floats, int num_inputs) {
  const size_t n = ints.size() / kIntsPerLayer;
  DF_CHECK(n > 0 && ints.size() == n * kIntsPerLayer && floats.size() == n * kFloatsPerLayer,
           "[fused_conv_chain] layers must hold ", kIntsPerLayer, " ints and layer_params ", kFloatsPerLayer,
           " floats per layer (at least one), got ", ints.size(), " and ", floats.size());
  std::vector<Layer> out(n);
  int input = 1;
  for (size_t i = 0; i < n; ++i) {
    const int64_t* r = &ints[i * kIntsPerLayer];
    const double* f = &floats[i * kFloatsPerLayer];
    Layer& l = out[i];
    DF_CHECK(r[0] >= 0 && r[0] <= int64_t(i) && r[1] >= -1 && r[1] <= int64_t(i),
             "[fused_conv_chain] layer ", i, " reads value ", r[0], " and sums value ", r[1],
             ": a layer reads the input (0) or an earlier layer's result (1..", i, "); -1 is no summand");
    DF_CHECK(r[7] >= 0 && r[7] < int64_t(kPaddings.size()) && r[12] >= 0 && r[12] < int64_t(kActivations.size()),
             "[fused_conv_chain] layer ", i, " has padding code ", r[7], " and activation code ", r[12],
             " (known: 0..", kPaddings.size() - 1, " and 0..", kActivations.size() - 1, ")");
    l.src = int(r[0]);
    l.summand = int(r[1]);
    l.filters = input++;
    l.bias = r[2] ? input++ : -1;
    FusedConvOptions& o = l.options;
    o.strides = {r[3], r[4]};
    o.dilations = {r[5], r[6]};
    o.padding = kPaddings[size_t(r[7])];
    if (o.padding == "EXPLICIT") o.explicit_paddings = {r[8], r[9], r[10], r[11]};
    o.activation = kActivations[size_t(r[12])];
    o.alpha = f[0], o.clip_min = f[1], o.clip_max = f[2];
  }
  DF_CHECK(input == num_inputs, "[fused_conv_chain] its ", n, " layers take ", input,
           " inputs (the input, then each layer's filters and bias), got ", num_inputs);
  return out;
}

Attrs fused_attrs(const Layer& l) {
  const FusedConvOptions& o = l.options;
  return {{"strides", o.strides},           {"padding", o.padding},       {"explicit_paddings", o.explicit_paddings},
          {"dilations", o.dilations},       {"activation", o.activation}, {"alpha", o.alpha},
          {"clip_min", o.clip_min},         {"clip_max", o.clip_max},     {"has_bias", l.bias >= 0},
          {"has_summand", l.summand >= 0}, {"constant_filter", true}};
}

Int8Value int8_value(double lo, double hi) {
  Int8Value v;
  v.is_unsigned = lo >= 0;
  const double m = v.is_unsigned ? hi / 255 : std::max(std::abs(lo), std::abs(hi)) / 127;
  v.scale = m > 0 ? float(m) : 1.f;
  return v;
}

std::vector<float> int8_weight_scales(const Tensor& filters) {
  const int64_t co = filters.dim(3), rows = filters.size() / std::max<int64_t>(co, 1);
  std::vector<float> m(size_t(co), 0.f);
  const float* w = filters.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < co; ++o) m[size_t(o)] = std::max(m[size_t(o)], std::abs(w[r * co + o]));
  for (float& s : m) s = int8_weight_scale(s);
  return m;
}

std::vector<Int8Value> int8_values(const std::vector<double>& ranges, size_t num_layers) {
  if (ranges.empty()) return {};
  DF_CHECK(ranges.size() == 2 * (num_layers + 1), "[fused_conv_chain] int8_ranges must hold {lo, hi} for each of the ",
           num_layers + 1, " values (the input, then each layer's result): ", 2 * (num_layers + 1), " floats, got ",
           ranges.size());
  std::vector<Int8Value> out;
  for (size_t v = 0; v <= num_layers; ++v) {
    const double lo = ranges[2 * v], hi = ranges[2 * v + 1];
    DF_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi, "[fused_conv_chain] int8_ranges of value ", v,
             " is [", lo, ", ", hi, "]: need finite lo <= hi");
    out.push_back(int8_value(lo, hi));
  }
  return out;
}

}  // namespace conv_chain

namespace {

using conv_chain::Layer;

std::vector<Layer> layers_of(const OpCall& c) {
  return conv_chain::decode(c.attr_ints("layers"), c.attr_floats("layer_params"), c.num_inputs());
}

// data_format (the input's) or output_format: true for NCHW.
bool nchw(const OpCall& c, const char* attr = "data_format") {
  const std::string& f = c.attr_string(attr);
  DF_CHECK(f == "NHWC" || f == "NCHW", "[fused_conv_chain] ", attr, " must be \"NHWC\" or \"NCHW\", got \"", f, "\"");
  return f == "NCHW";
}

// fused_conv2d's inputs for layer l over the chain's values.
std::vector<Tensor> layer_inputs(const OpCall& c, const Layer& l, const std::vector<Tensor>& values) {
  std::vector<Tensor> in{values[size_t(l.src)], c.in(l.filters)};
  if (l.bias >= 0) in.push_back(c.in(l.bias));
  if (l.summand >= 0) in.push_back(values[size_t(l.summand)]);
  return in;
}

Tensor symbolic(DType t, const Shape& s) {
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = t;
  impl->shape = s;
  return Tensor(impl);
}

void infer_fused_conv_chain(const OpCall& c, TypeList& out) {
  DF_CHECK(c.num_inputs() >= 1, "[fused_conv_chain] needs an input");
  const std::vector<Layer> layers = layers_of(c);
  const Shape& x = c.in(0).shape();
  DF_CHECK(x.rank() == 4, "[fused_conv_chain] expects a rank-4 input, got ", x);
  std::vector<Tensor> values{nchw(c) ? symbolic(c.in(0).dtype(), Shape{x[0], x[2], x[3], x[1]}) : c.in(0)};
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::vector<Tensor> in = layer_inputs(c, layers[i], values);
    TypeList t;
    try {
      t = infer_types(OpId::FusedConv2D, in, conv_chain::fused_attrs(layers[i]));
    } catch (const Error& e) {
      fail("[fused_conv_chain] layer ", i, ": ", e.what());
    }
    values.push_back(symbolic(t[0].dtype, t[0].shape));
  }
  if (!c.attr_floats("int8_ranges").empty()) {
    conv_chain::int8_values(c.attr_floats("int8_ranges"), layers.size());
    DF_CHECK(c.in(0).dtype() == DType::Float32, "[fused_conv_chain] int8_ranges needs a float32 chain, got ",
             dtype_name(c.in(0).dtype()));
  }
  const Shape& y = values.back().shape();
  out.push_back({values.back().dtype(), nchw(c, "output_format") ? Shape{y[0], y[3], y[1], y[2]} : y});
}

// Replays the layers with fused_conv2d, then runs each one's vjp backwards, summing the
// gradients of values that several layers read.
TensorList vjp_fused_conv_chain(const OpCall& c, const TensorList& g) {
  const std::vector<Layer> layers = layers_of(c);
  const bool from_nchw = nchw(c);
  std::vector<Tensor> values{from_nchw ? transpose(c.in(0), {0, 2, 3, 1}) : c.in(0)};
  std::vector<Attrs> attrs;
  for (const Layer& l : layers) {
    attrs.push_back(conv_chain::fused_attrs(l));
    const std::vector<Tensor> in = layer_inputs(c, l, values);
    values.push_back(dispatch1(OpId::FusedConv2D, std::span<const Tensor>(in), attrs.back()));
  }
  std::vector<Tensor> dv(values.size());
  TensorList dx(size_t(c.num_inputs()));
  dv.back() = nchw(c, "output_format") ? transpose(g[0], {0, 2, 3, 1}) : g[0];
  auto accumulate = [](Tensor& acc, const Tensor& d) {
    if (d.defined()) acc = acc.defined() ? add(acc, d) : d;
  };
  const OpDef& def = op_def(OpId::FusedConv2D);
  for (size_t i = layers.size(); i-- > 0;) {
    if (!dv[i + 1].defined()) continue;
    const Layer& l = layers[i];
    const std::vector<Tensor> in = layer_inputs(c, l, values);
    TensorList ys{values[i + 1]};
    TensorList d = def.vjp(OpCall{&def, in, &attrs[i], ys}, {dv[i + 1]});
    accumulate(dv[size_t(l.src)], d[0]);
    accumulate(dx[size_t(l.filters)], d[1]);
    if (l.bias >= 0) accumulate(dx[size_t(l.bias)], d[2]);
    if (l.summand >= 0) accumulate(dv[size_t(l.summand)], d.back());
  }
  if (dv[0].defined()) dx[0] = from_nchw ? transpose(dv[0], {0, 3, 1, 2}) : dv[0];
  return dx;
}

}  // namespace

DF_DEFINE_OP(FusedConvChain, {.num_inputs = -1,
                              .attrs = {AttrSpec::required_of("layers", AttrKind::Ints),
                                        AttrSpec::required_of("layer_params", AttrKind::Floats),
                                        {"data_format", "NHWC"}, {"output_format", "NHWC"},
                                        {"int8_ranges", std::vector<double>{}}},
                              .infer = infer_fused_conv_chain, .vjp = vjp_fused_conv_chain});

Tensor fused_conv_chain(const Tensor& input, const std::vector<ConvChainLayer>& layers,
                        const std::string& data_format, const std::string& output_format,
                        const std::vector<double>& int8_ranges) {
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<Tensor> inputs{input};
  for (const ConvChainLayer& l : layers) {
    conv_chain::encode(l.src, l.summand, l.bias.defined(), l.options, ints, floats);
    inputs.push_back(l.filters);
    if (l.bias.defined()) inputs.push_back(l.bias);
  }
  return dispatch1(OpId::FusedConvChain, std::span<const Tensor>(inputs),
                   {{"layers", ints}, {"layer_params", floats}, {"data_format", data_format}, {"output_format", output_format},
                    {"int8_ranges", int8_ranges}});
}

}  // namespace deepflow
