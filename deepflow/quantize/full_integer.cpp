// SPDX-License-Identifier: Apache-2.0
// Full integer quantization of a float LiteModel with calibrated ranges, by TFLite's int8
// spec (specs.md 5.3-5.4, lite.md 3.2): activations asymmetric per tensor with an integral
// zero point (0.0 exact), weights symmetric per output channel in [-127, 127], biases int32
// at s_in * s_w[c], shared parameters through the ops that only move data, fixed output
// parameters for LOGISTIC / SOFTMAX / TANH, QUANTIZE and DEQUANTIZE at the interface.
// Tensor indices of the float model keep their meaning (new tensors are appended), which
// the error report relies on.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <numeric>

#include "deepflow/core/error.h"
#include "deepflow/quantize/quantize_internal.h"

namespace deepflow::quantize::detail {

namespace {

using Op = fb::BuiltinOperator;
using TT = fb::TensorType;

// Ops with an int8 kernel (here and in LiteRT), and which of them pass parameters through.
bool has_int8_kernel(Op code) {
  switch (code) {
    case Op::CONV_2D:
    case Op::DEPTHWISE_CONV_2D:
    case Op::FULLY_CONNECTED:
    case Op::ADD:
    case Op::SUB:
    case Op::MUL:
    case Op::SQUARED_DIFFERENCE:
    case Op::RSQRT:
    case Op::GELU:
    case Op::HARD_SWISH:
    case Op::LEAKY_RELU:
    case Op::MAX_POOL_2D:
    case Op::AVERAGE_POOL_2D:
    case Op::MEAN:
    case Op::SOFTMAX:
    case Op::LOGISTIC:
    case Op::TANH:
    case Op::RESHAPE:
    case Op::SQUEEZE:
    case Op::TRANSPOSE:
    case Op::PAD:
    case Op::SLICE:
    case Op::STRIDED_SLICE:
    case Op::GATHER:
    case Op::CONCATENATION: return true;
    default: return false;
  }
}
bool shares_params(Op code) {
  switch (code) {
    case Op::MAX_POOL_2D:
    case Op::AVERAGE_POOL_2D:
    case Op::RESHAPE:
    case Op::SQUEEZE:
    case Op::TRANSPOSE:
    case Op::PAD:
    case Op::SLICE:
    case Op::STRIDED_SLICE:
    case Op::GATHER:
    case Op::CONCATENATION: return true;
    default: return false;
  }
}

struct Params {
  double scale = 1;
  int64_t zero_point = 0;
};

// The int8 asymmetric parameters of [rmin, rmax] widened to contain 0 (lite.md 3.2).
Params asymmetric(double rmin, double rmax) {
  rmin = std::min(rmin, 0.0), rmax = std::max(rmax, 0.0);
  if (rmax - rmin < 1e-6) {  // ExpandVerySmallRange
    const double mid = (rmin + rmax) / 2;
    rmin = mid - 0.5e-6, rmax = mid + 0.5e-6;
    rmin = std::min(rmin, 0.0), rmax = std::max(rmax, 0.0);
  }
  constexpr double qmin = -128, qmax = 127;
  const double scale = (rmax - rmin) / (qmax - qmin);
  const double zp_from_min = qmin - rmin / scale, zp_from_max = qmax - rmax / scale;
  const double err_min = std::fabs(qmin) + std::fabs(rmin / scale), err_max = std::fabs(qmax) + std::fabs(rmax / scale);
  const double zp = err_min < err_max ? zp_from_min : zp_from_max;
  return {scale, int64_t(std::clamp(std::round(zp), qmin, qmax))};
}

struct UnionFind {
  std::vector<int32_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int32_t find(int32_t x) { return parent[size_t(x)] == x ? x : parent[size_t(x)] = find(parent[size_t(x)]); }
  void join(int32_t a, int32_t b) { parent[size_t(find(a))] = find(b); }
};

void set_params(LiteTensor& t, Params p) {
  t.quant = {.scale = {float(p.scale)}, .zero_point = {p.zero_point}, .dimension = 0};
}

// Symmetric int8 weights along `dim` (-1: per tensor); returns the scales.
std::vector<float> quantize_weights(LiteTensor& w, int dim) {
  const std::vector<float> f = w.floats();
  const int64_t channels = dim < 0 ? 1 : w.shape[size_t(dim)];
  int64_t inner = 1;
  for (size_t k = size_t(dim + 1); dim >= 0 && k < w.shape.size(); ++k) inner *= w.shape[k];
  std::vector<double> amax(size_t(channels), 0.0);
  auto channel = [&](size_t k) { return dim < 0 ? size_t(0) : size_t((int64_t(k) / inner) % channels); };
  for (size_t k = 0; k < f.size(); ++k) amax[channel(k)] = std::max(amax[channel(k)], std::fabs(double(f[k])));
  std::vector<float> scales;
  for (double a : amax) scales.push_back(float(a > 0 ? a / 127.0 : 1.0));
  std::vector<uint8_t> q(f.size());
  for (size_t k = 0; k < f.size(); ++k)
    q[k] = uint8_t(int8_t(std::clamp(std::round(double(f[k]) / double(scales[channel(k)])), -127.0, 127.0)));
  w.type = TT::INT8;
  w.data = std::move(q);
  w.quant = {.scale = scales, .zero_point = std::vector<int64_t>(scales.size(), 0), .dimension = std::max(dim, 0)};
  return scales;
}

void quantize_bias(LiteTensor& b, double s_in, const std::vector<float>& s_w) {
  const std::vector<float> f = b.floats();
  std::vector<int32_t> q(f.size());
  std::vector<float> scales;
  for (size_t c = 0; c < f.size(); ++c) {
    const double s = s_in * double(s_w[s_w.size() == 1 ? 0 : c]);
    const double v = std::round(double(f[c]) / s);
    DF_CHECK(std::fabs(v) < 2147483647.0, "[lite::convert] bias '", b.name, "' value ", f[c],
             " does not fit int32 at scale ", s);
    q[c] = int32_t(v);
  }
  for (float w : s_w) scales.push_back(float(s_in * double(w)));
  b.type = TT::INT32;
  b.data.assign(reinterpret_cast<const uint8_t*>(q.data()), reinterpret_cast<const uint8_t*>(q.data() + q.size()));
  b.quant = {.scale = scales, .zero_point = std::vector<int64_t>(scales.size(), 0), .dimension = 0};
}

void quantize_constant(LiteTensor& t, Params p) {
  const std::vector<float> f = t.floats();
  std::vector<uint8_t> q(f.size());
  for (size_t k = 0; k < f.size(); ++k)
    q[k] = uint8_t(int8_t(std::clamp(std::round(double(f[k]) / p.scale) + double(p.zero_point), -128.0, 127.0)));
  t.type = TT::INT8;
  t.data = std::move(q);
  set_params(t, p);
}

}  // namespace

LiteModel quantize_full_integer(const LiteModel& fm, const std::vector<Range>& ranges, const ConverterOptions& options) {
  LiteModel m = fm;
  // 1. Every op needs an int8 kernel; list the ones without.
  std::string missing;
  int n_missing = 0;
  for (const LiteOp& op : m.ops) {
    const bool float_in = !op.inputs.empty() && m.tensors[size_t(op.inputs[0])].type == TT::FLOAT32;
    if (float_in && !has_int8_kernel(op.code)) {
      missing += std::string("\n  ") + fb::EnumNameBuiltinOperator(op.code) + " (from node '" + op.source + "')";
      ++n_missing;
    }
  }
  DF_CHECK(n_missing == 0, "[lite::convert] full integer quantization: ", n_missing,
           " op(s) have no int8 kernel (nothing stays float silently; convert without a representative dataset "
           "for dynamic-range or float16 weights instead):", missing);

  // 2. Weights and biases: per-channel symmetric; their tensors leave the activation pool.
  // Equal constants were merged by the graph passes; each op gets its own copy to quantize.
  std::vector<bool> weight(m.tensors.size(), false);
  for (LiteOp& op : m.ops) {
    if (op.code != Op::CONV_2D && op.code != Op::DEPTHWISE_CONV_2D && op.code != Op::FULLY_CONNECTED) continue;
    DF_CHECK(m.tensors[size_t(op.inputs[1])].constant, "[lite::convert] ", fb::EnumNameBuiltinOperator(op.code),
             " (node '", op.source, "'): the weights must be constant for int8");
    for (size_t i = 1; i < op.inputs.size() && i < 3; ++i) {
      int32_t& t = op.inputs[i];
      if (t < 0) continue;
      if (weight.size() <= size_t(t) || weight[size_t(t)] || m.consumers(t).size() > 1) {
        LiteTensor copy = m.tensors[size_t(t)];
        copy.name += "/" + op.source;
        t = m.add_tensor(std::move(copy));
        weight.resize(m.tensors.size(), false);
      }
      weight[size_t(t)] = true;
    }
  }
  weight.resize(m.tensors.size(), false);

  // A CONCATENATION input whose producer fixes its parameters (LOGISTIC, SOFTMAX, TANH) gets
  // a requantized copy (a QUANTIZE, int8 to int8), as TensorFlow's converter inserts: the
  // concatenation's group then takes calibrated parameters instead of one producer's.
  std::vector<Range> calibrated = ranges;
  {
    std::vector<int> fixed_producer(m.tensors.size(), 0);  // 1: 1/256, -128; 2: 1/128, 0
    for (const LiteOp& op : m.ops) {
      if (op.code == Op::LOGISTIC || op.code == Op::SOFTMAX) fixed_producer[size_t(op.outputs[0])] = 1;
      if (op.code == Op::TANH) fixed_producer[size_t(op.outputs[0])] = 2;
    }
    std::vector<LiteOp> rewritten;
    for (LiteOp op : m.ops) {
      if (op.code == Op::CONCATENATION) {
        bool all_same_fixed = true;
        for (int32_t in : op.inputs) all_same_fixed = all_same_fixed && fixed_producer[size_t(in)] != 0 &&
                                                      fixed_producer[size_t(in)] == fixed_producer[size_t(op.inputs[0])];
        for (int32_t& in : op.inputs) {
          if (all_same_fixed || fixed_producer[size_t(in)] == 0) continue;
          LiteTensor copy = m.tensors[size_t(in)];
          copy.name += "/requantized";
          const int32_t t = m.add_tensor(std::move(copy));
          fixed_producer.push_back(0);
          calibrated.resize(m.tensors.size());
          if (size_t(in) < ranges.size()) calibrated[size_t(t)] = ranges[size_t(in)];
          rewritten.push_back({.code = Op::QUANTIZE, .inputs = {in}, .outputs = {t}, .source = op.source});
          in = t;
        }
      }
      rewritten.push_back(std::move(op));
    }
    m.ops = std::move(rewritten);
    weight.resize(m.tensors.size(), false);
  }

  // 3. Activation parameters: groups of tensors that share them, each group's range the union.
  UnionFind groups(m.tensors.size());
  for (const LiteOp& op : m.ops) {
    if (!shares_params(op.code)) continue;
    const size_t data_inputs = op.code == Op::CONCATENATION ? op.inputs.size() : 1;
    for (size_t i = 0; i < data_inputs; ++i) groups.join(op.inputs[i], op.outputs[0]);
  }
  std::map<int32_t, Params> fixed;  // group root -> parameters an op demands
  for (const LiteOp& op : m.ops) {
    std::optional<Params> p;
    if (op.code == Op::LOGISTIC || op.code == Op::SOFTMAX) p = Params{1.0 / 256, -128};
    if (op.code == Op::TANH) p = Params{1.0 / 128, 0};
    if (!p) continue;
    const int32_t root = groups.find(op.outputs[0]);
    auto [it, fresh] = fixed.emplace(root, *p);
    DF_CHECK(fresh || (it->second.scale == p->scale && it->second.zero_point == p->zero_point),
             "[lite::convert] tensor '", m.tensors[size_t(op.outputs[0])].name,
             "' must take two different fixed int8 parameters");
  }
  struct GroupRange : Range {
    bool trained = false;
    GroupRange() = default;
    GroupRange(double lo, double hi, bool s, bool t) : Range{lo, hi, s}, trained(t) {}
    GroupRange& operator=(const Range& r) {
      Range::operator=(r);
      return *this;
    }
  };
  std::map<int32_t, GroupRange> group_range;
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    const LiteTensor& lt = m.tensors[t];
    if (lt.type != TT::FLOAT32 || weight[t]) continue;
    Range r = t < calibrated.size() ? calibrated[t] : Range{};
    if (lt.has_range) r = {lt.range_min, lt.range_max, true};
    if (lt.constant) {
      const std::vector<float> f = lt.floats();
      if (f.empty()) continue;
      r = {*std::min_element(f.begin(), f.end()), *std::max_element(f.begin(), f.end()), true};
    }
    if (!r.seen) continue;
    GroupRange& g = group_range[groups.find(int32_t(t))];
    if (lt.has_range && !g.trained) g = {r.min, r.max, true, true};  // a trained range replaces calibration
    else if (g.trained && !lt.has_range) continue;
    else if (!g.seen) g = r;
    else g.min = std::min(g.min, r.min), g.max = std::max(g.max, r.max);
  }
  // Without calibration (a QAT model), values between FakeQuants (the MUL and ADD of a
  // batch norm after an activation) get the interval their inputs' ranges bound.
  for (const LiteOp& op : m.ops) {
    if (op.code != Op::MUL && op.code != Op::ADD && op.code != Op::SUB) continue;
    const int32_t out = groups.find(op.outputs[0]);
    auto a = group_range.find(groups.find(op.inputs[0])), b = group_range.find(groups.find(op.inputs[1]));
    if (group_range.count(out) || a == group_range.end() || b == group_range.end()) continue;
    const double a0 = a->second.min, a1 = a->second.max, b0 = b->second.min, b1 = b->second.max;
    Range r{0, 0, true};
    if (op.code == Op::ADD) r.min = a0 + b0, r.max = a1 + b1;
    if (op.code == Op::SUB) r.min = a0 - b1, r.max = a1 - b0;
    if (op.code == Op::MUL) {
      const double c[] = {a0 * b0, a0 * b1, a1 * b0, a1 * b1};
      r.min = *std::min_element(c, c + 4), r.max = *std::max_element(c, c + 4);
    }
    group_range[out] = r;
  }
  std::vector<std::optional<Params>> params(m.tensors.size());
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    const LiteTensor& lt = m.tensors[t];
    if (lt.type != TT::FLOAT32 || weight[t]) continue;
    const int32_t root = groups.find(int32_t(t));
    if (auto f = fixed.find(root); f != fixed.end()) {
      params[t] = f->second;
    } else if (auto g = group_range.find(root); g != group_range.end()) {
      params[t] = asymmetric(g->second.min, g->second.max);
    }
  }
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    LiteTensor& lt = m.tensors[t];
    if (lt.type != TT::FLOAT32 || weight[t]) continue;
    const bool used = !m.consumers(int32_t(t)).empty() || m.producer(int32_t(t)) >= 0;
    if (!used) continue;
    DF_CHECK(params[t].has_value(), "[lite::convert] tensor '", lt.name,
             "' has no int8 range: no FakeQuant (quantization-aware training) covers it and calibration saw no "
             "values for it (give a representative dataset)");
    if (lt.constant) quantize_constant(lt, *params[t]);
    else {
      lt.type = TT::INT8;
      set_params(lt, *params[t]);
    }
  }
  // 4. Now the weights (the input scales are known) and biases.
  for (const LiteOp& op : m.ops) {
    if (op.code != Op::CONV_2D && op.code != Op::DEPTHWISE_CONV_2D && op.code != Op::FULLY_CONNECTED) continue;
    const int dim = op.code == Op::CONV_2D ? 0 : op.code == Op::DEPTHWISE_CONV_2D ? 3 : -1;
    const std::vector<float> s_w = quantize_weights(m.tensors[size_t(op.inputs[1])], dim);
    if (op.inputs.size() > 2 && op.inputs[2] >= 0)
      quantize_bias(m.tensors[size_t(op.inputs[2])], m.tensors[size_t(op.inputs[0])].quant.scale[0], s_w);
  }

  // 5. The interface.
  auto interface_type = [](DType d, const char* what) {
    DF_CHECK(d == DType::Float32 || d == DType::Int8 || d == DType::UInt8, "[lite::convert] ", what,
             " must be float32, int8 or uint8, got ", dtype_name(d));
    return d;
  };
  const DType in_type = interface_type(options.inference_input_type, "inference_input_type");
  const DType out_type = interface_type(options.inference_output_type, "inference_output_type");
  std::vector<LiteOp> front;
  for (int32_t& input : m.inputs) {
    LiteTensor& q = m.tensors[size_t(input)];
    if (in_type == DType::Int8) continue;
    LiteTensor outer = q;
    outer.quant = {};
    if (in_type == DType::UInt8) {
      outer.type = TT::UINT8;
      set_params(outer, {q.quant.scale[0], q.quant.zero_point[0] + 128});
    } else {
      outer.type = TT::FLOAT32;
    }
    q.name += "_int8";
    const int32_t o = m.add_tensor(outer);
    front.push_back({.code = Op::QUANTIZE, .inputs = {o}, .outputs = {input}, .source = "input"});
    input = o;
  }
  m.ops.insert(m.ops.begin(), front.begin(), front.end());
  for (int32_t& output : m.outputs) {
    if (out_type == DType::Int8) continue;
    LiteTensor& q = m.tensors[size_t(output)];
    LiteTensor outer = q;
    outer.quant = {};
    if (out_type == DType::UInt8) {
      outer.type = TT::UINT8;
      set_params(outer, {q.quant.scale[0], q.quant.zero_point[0] + 128});
    } else {
      outer.type = TT::FLOAT32;
    }
    m.tensors[size_t(output)].name += "_int8";
    const int32_t o = m.add_tensor(outer);
    m.add_op({.code = out_type == DType::UInt8 ? Op::QUANTIZE : Op::DEQUANTIZE, .inputs = {output}, .outputs = {o},
              .source = "output"});
    output = o;
  }
  return m;
}

}  // namespace deepflow::quantize::detail
