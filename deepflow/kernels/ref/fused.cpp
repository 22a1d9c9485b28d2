// SPDX-License-Identifier: Apache-2.0
// Reference kernels of the fused primitives: the parts composed one element at a time with
// the reference kernels' formulas (the oracle the fused CPU kernels are tested against).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <type_traits>
#include <vector>

#include "deepflow/ops/fused_program.h"
#include "deepflow/kernels/binary_functors.h"
#include "deepflow/ops/kernel.h"
#include "deepflow/kernels/ref/conv_taps.h"
#include "deepflow/kernels/ref/ref_util.h"
#include "deepflow/ops/conv.h"
#include "deepflow/ops/conv_chain.h"

namespace deepflow {
namespace {

template <class T> T sigmoid_of(T x) {
  if (x >= 0) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}

template <class T> T activate(const std::string& act, T z) {
  if (act.empty()) return z;
  if (act == "relu") return z < 0 ? T(0) : z;
  if (act == "tanh") return std::tanh(z);
  if (act == "sigmoid") return sigmoid_of(z);
  return T(0.5) * z * (T(1) + std::erf(z / T(std::numbers::sqrt2)));  // gelu
}

// --- fused_matmul --- the matmul triple loop (double accumulation), + bias, activation.
void ref_fused_matmul(const OpCall& c, TensorList& out) {
  const Tensor &a = c.in(0), &b = c.in(1);
  Tensor& o = out[0];
  const bool ta = c.attr_bool("transpose_a"), tb = c.attr_bool("transpose_b"), has_bias = c.attr_bool("has_bias");
  const std::string& act = c.attr_string("activation");
  const int64_t ar = a.dim(-2), ac = a.dim(-1), br = b.dim(-2), bc = b.dim(-1);
  const int64_t m = ta ? ac : ar, k = ta ? ar : ac, n = tb ? br : bc;
  const Shape batch_a(a.shape().begin(), a.shape().end() - 2), batch_b(b.shape().begin(), b.shape().end() - 2);
  const Shape batch_o(o.shape().begin(), o.shape().end() - 2);
  DF_DISPATCH_FLOAT(a.dtype(), c.name(), [&] {
    using CT = compute_t<scalar_t>;
    const scalar_t* bias = has_bias ? c.in(2).data<scalar_t>() : nullptr;
    for (int64_t bi = 0; bi < batch_o.num_elements(); ++bi) {
      const scalar_t* pa = a.data<scalar_t>() + ref::broadcast_offset(batch_o, batch_a, bi) * ar * ac;
      const scalar_t* pb = b.data<scalar_t>() + ref::broadcast_offset(batch_o, batch_b, bi) * br * bc;
      scalar_t* po = o.data<scalar_t>() + bi * m * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += double(CT(ta ? pa[p * ac + i] : pa[i * ac + p])) * double(CT(tb ? pb[j * bc + p] : pb[p * bc + j]));
          CT z = CT(acc);
          if (bias) z = z + CT(bias[j]);
          po[i * n + j] = scalar_t(activate<CT>(act, z));
        }
    }
  });
}

// --- fused_conv2d --- the reference conv2d's loop (double accumulation) over the explicitly
// padded geometry, + bias, + summand, then the activation in the compute type, each step
// rounded as the unfused ops round it.
template <class T> T conv_activate(const std::string& act, T z, double alpha, double lo, double hi) {
  if (act == "relu6") return fn::Minimum::f(T(6), z < 0 ? T(0) : z);  // relu6's composite: min(6, relu(z))
  if (act == "clip") return fn::Minimum::f(fn::Maximum::f(z, T(lo)), T(hi));
  if (act == "elu") return z < 0 ? std::expm1(z) : z;
  if (act == "leaky_relu") return z > 0 ? z : z * T(alpha);
  return activate(act, z);
}

void ref_fused_conv2d(const OpCall& c, TensorList& out) {
  const detail::ConvGeometry g =
      detail::conv_geometry(c.in(0).shape(), c.in(1).shape(), c.attr_ints("strides"), c.attr_string("padding"),
                            c.attr_ints("dilations"), c.attr_ints("explicit_paddings"));
  const bool has_bias = c.attr_bool("has_bias"), has_summand = c.attr_bool("has_summand");
  const std::string& act = c.attr_string("activation");
  const double alpha = c.attr_float("alpha"), lo = c.attr_float("clip_min"), hi = c.attr_float("clip_max");
  DF_DISPATCH_FLOAT(c.in(0).dtype(), c.name(), [&] {
    using CT = compute_t<scalar_t>;
    const scalar_t *x = c.in(0).data<scalar_t>(), *w = c.in(1).data<scalar_t>();
    const scalar_t* bias = has_bias ? c.in(2).data<scalar_t>() : nullptr;
    const scalar_t* sum = has_summand ? c.in(c.num_inputs() - 1).data<scalar_t>() : nullptr;
    scalar_t* y = out[0].data<scalar_t>();
    std::vector<double> acc(size_t(out[0].size()), 0.0);
    for_each_tap(g, [&](int64_t xo, int64_t wo, int64_t yo) { acc[yo] += double(CT(x[xo])) * double(CT(w[wo])); });
    for (size_t i = 0; i < acc.size(); ++i) {
      CT z = CT(acc[i]);  // rounded once, as conv2d's output
      if (bias) z = z + CT(bias[int64_t(i) % g.co]);
      if (sum) z = z + CT(sum[i]);  // rounded again, as the add of the unfused graph
      y[i] = scalar_t(conv_activate<CT>(act, z, alpha, lo, hi));
    }
  });
}

template <class T> T apply(OpId op, T a, T b) {
  switch (op) {
    case OpId::Neg: return -a;
    case OpId::Abs: return std::fabs(a);
    case OpId::Sign: return a > 0 ? T(1) : a < 0 ? T(-1) : a;
    case OpId::Exp: return std::exp(a);
    case OpId::Log: return std::log(a);
    case OpId::Log1p: return std::log1p(a);
    case OpId::Expm1: return std::expm1(a);
    case OpId::Sqrt: return std::sqrt(a);
    case OpId::Rsqrt: return T(1) / std::sqrt(a);
    case OpId::Square: return a * a;
    case OpId::Sin: return std::sin(a);
    case OpId::Cos: return std::cos(a);
    case OpId::Tanh: return std::tanh(a);
    case OpId::Sigmoid: return sigmoid_of(a);
    case OpId::Relu: return a < 0 ? T(0) : a;
    case OpId::Erf: return std::erf(a);
    case OpId::Floor: return std::floor(a);
    case OpId::Ceil: return std::ceil(a);
    case OpId::Round: return std::nearbyint(a);
    case OpId::Add: return fn::Add::f(a, b);
    case OpId::Sub: return fn::Sub::f(a, b);
    case OpId::Mul: return fn::Mul::f(a, b);
    case OpId::Div: return fn::Div::f(a, b);
    case OpId::Pow: return fn::Pow::f(a, b);
    case OpId::Maximum: return fn::Maximum::f(a, b);
    case OpId::Minimum: return fn::Minimum::f(a, b);
    default: fail("[fused_elementwise] unsupported op ", primitive_name(op));
  }
}

// --- fused_elementwise --- one element at a time through a value stack.
void ref_fused_elementwise(const OpCall& c, TensorList& out) {
  const fused::Program p = fused::parse(c.attr_string("program"), c.num_inputs());
  Tensor& o = out[0];
  const Shape& s = o.shape();
  const int64_t row = s.rank() ? s[s.rank() - 1] : 1;
  DF_DISPATCH_FLOAT(o.dtype(), c.name(), [&] {
    using CT = compute_t<scalar_t>;
    std::vector<CT> stack;
    for (int64_t e = 0; e < o.size(); ++e) {
      stack.clear();
      for (const fused::Instr& ins : p.code) {
        if (ins.kind == fused::Instr::Input) {
          const Tensor& x = c.in(ins.index);
          const fused::Broadcast bc = fused::broadcast_of(x.shape(), s);
          const int64_t at = bc == fused::Broadcast::Full ? e : bc == fused::Broadcast::Scalar ? 0 : e % row;
          stack.push_back(CT(x.data<scalar_t>()[at]));
        } else if (ins.kind == fused::Instr::Immediate) {
          stack.push_back(CT(ins.value));
        } else if (ins.arity == 1) {
          stack.back() = apply<CT>(ins.op, stack.back(), CT(0));
        } else {
          CT b = stack.back();
          stack.pop_back();
          stack.back() = apply<CT>(ins.op, stack.back(), b);
        }
      }
      o.data<scalar_t>()[e] = scalar_t(stack.back());
    }
  });
}

}  // namespace

namespace {

// x rounded to its int8 storage (conv_chain::Int8Value) and back: what an int8 chain keeps.
Tensor fake_quantize(const Tensor& x, const conv_chain::Int8Value& q) {
  Tensor y(x.shape(), x.dtype());
  const float* in = x.data<float>();
  float* o = y.data<float>();
  const float lo = float(q.lowest()), hi = float(q.highest());
  for (int64_t i = 0; i < x.size(); ++i) o[i] = q.scale * std::clamp(std::nearbyint(in[i] / q.scale), lo, hi);
  return y;
}

// HWIO filters rounded per output channel (the last dim) to [-127, 127] steps and back.
Tensor fake_quantize_filters(const Tensor& w) {
  const int64_t co = w.dim(3), rows = w.size() / std::max<int64_t>(co, 1);
  const std::vector<float> scale = conv_chain::int8_weight_scales(w);
  const float* in = w.data<float>();
  Tensor y(w.shape(), w.dtype());
  float* out = y.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < co; ++o) {
      const float s = scale[size_t(o)];
      out[r * co + o] = s * std::clamp(std::nearbyint(in[r * co + o] / s), -127.f, 127.f);
    }
  return y;
}

}  // namespace

// An int8 chain (int8_ranges) runs here as its float layers over fake-quantized values and
// filters: exact but for the float sums (products of int8 steps, summed in float).
void ref::conv_chain_by_layers(const OpCall& c, TensorList& out, bool reference) {
  const std::vector<conv_chain::Layer> layers =
      conv_chain::decode(c.attr_ints("layers"), c.attr_floats("layer_params"), c.num_inputs());
  const std::vector<conv_chain::Int8Value> q = conv_chain::int8_values(c.attr_floats("int8_ranges"), layers.size());
  auto run = [&](OpId op, std::span<const Tensor> in, const Attrs& attrs) {
    const OpCall call{&op_def(op), in, &attrs, {}};
    return run_kernel(reference ? kernels_for(op).back() : select_kernel(call), op, in, attrs)[0];
  };
  std::vector<Tensor> values{c.in(0)};
  if (c.attr_string("data_format") == "NCHW") {
    const Attrs perm{{"perm", std::vector<int64_t>{0, 2, 3, 1}}};
    values[0] = run(OpId::Transpose, std::span<const Tensor>(&values[0], 1), perm);
  }
  if (!q.empty()) values[0] = fake_quantize(values[0], q[0]);
  for (const conv_chain::Layer& l : layers) {
    std::vector<Tensor> in{values[size_t(l.src)], q.empty() ? c.in(l.filters) : fake_quantize_filters(c.in(l.filters))};
    if (l.bias >= 0) in.push_back(c.in(l.bias));
    if (l.summand >= 0) in.push_back(values[size_t(l.summand)]);
    values.push_back(run(OpId::FusedConv2D, in, conv_chain::fused_attrs(l)));
    if (!q.empty()) values.back() = fake_quantize(values.back(), q[values.size() - 1]);
  }
  if (c.attr_string("output_format") == "NCHW") {
    const Attrs perm{{"perm", std::vector<int64_t>{0, 3, 1, 2}}};
    values.push_back(run(OpId::Transpose, std::span<const Tensor>(&values.back(), 1), perm));
  }
  std::memcpy(out[0].raw_data(), values.back().raw_data(), out[0].nbytes());  // out[0] is preallocated
}

namespace {
void ref_fused_conv_chain(const OpCall& c, TensorList& out) { ref::conv_chain_by_layers(c, out, true); }
}  // namespace

DF_REGISTER_KERNEL(FusedMatMul, {.run = ref_fused_matmul});
DF_REGISTER_KERNEL(FusedElementwise, {.run = ref_fused_elementwise});
DF_REGISTER_KERNEL(FusedConv2D, {.run = ref_fused_conv2d});
DF_REGISTER_KERNEL(FusedConvChain, {.run = ref_fused_conv_chain});

}  // namespace deepflow
