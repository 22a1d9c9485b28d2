// SPDX-License-Identifier: Apache-2.0
// The LiteModel rewrites that need no calibration: activation folding (every mode), float16
// weights and dynamic-range int8 weights.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "deepflow/core/error.h"
#include "deepflow/core/half.h"
#include "deepflow/quantize/quantize_internal.h"

namespace deepflow::quantize::detail {

using Op = fb::BuiltinOperator;
using Act = fb::ActivationFunctionType;

void erase_op(LiteModel& m, size_t i) { m.ops.erase(m.ops.begin() + std::ptrdiff_t(i)); }

namespace {

bool has_activation_slot(Op code) {
  switch (code) {
    case Op::CONV_2D:
    case Op::DEPTHWISE_CONV_2D:
    case Op::FULLY_CONNECTED:
    case Op::ADD:
    case Op::SUB:
    case Op::MUL:
    case Op::AVERAGE_POOL_2D:
    case Op::MAX_POOL_2D:
    case Op::CONCATENATION: return true;
    default: return false;
  }
}

bool is_output(const LiteModel& m, int32_t t) { return std::find(m.outputs.begin(), m.outputs.end(), t) != m.outputs.end(); }

}  // namespace

void fuse_activations(LiteModel& m) {
  for (size_t i = 0; i < m.ops.size();) {
    const LiteOp& op = m.ops[i];
    Act act;
    if (op.code == Op::RELU) act = Act::RELU;
    else if (op.code == Op::RELU6) act = Act::RELU6;
    else if (op.code == Op::RELU_N1_TO_1) act = Act::RELU_N1_TO_1;
    else {
      ++i;
      continue;
    }
    const int32_t x = op.inputs[0];
    const int32_t p = m.producer(x);
    if (p < 0 || !has_activation_slot(m.ops[size_t(p)].code) ||
        m.ops[size_t(p)].options.activation != Act::NONE || m.consumers(x).size() != 1 || is_output(m, x)) {
      ++i;
      continue;
    }
    m.ops[size_t(p)].options.activation = act;
    m.ops[size_t(p)].outputs[0] = op.outputs[0];
    erase_op(m, i);
  }
}

void quantize_float16(LiteModel& m) {
  std::vector<LiteOp> dequantize;
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    LiteTensor& w = m.tensors[t];
    if (!w.constant || w.type != fb::TensorType::FLOAT32 || m.consumers(int32_t(t)).empty()) continue;
    const std::vector<float> f = w.floats();
    std::vector<uint8_t> bytes(f.size() * 2);
    for (size_t k = 0; k < f.size(); ++k) {
      const uint16_t h = Half(f[k]).bits;
      std::memcpy(&bytes[2 * k], &h, 2);
    }
    LiteTensor half{.name = w.name + "_fp16", .type = fb::TensorType::FLOAT16, .shape = w.shape, .constant = true,
                    .data = std::move(bytes)};
    w.constant = false;
    w.data.clear();
    const int32_t h = m.add_tensor(std::move(half));
    dequantize.push_back({.code = Op::DEQUANTIZE, .inputs = {h}, .outputs = {int32_t(t)}, .source = "float16"});
  }
  m.ops.insert(m.ops.begin(), dequantize.begin(), dequantize.end());
}

void quantize_dynamic_range(LiteModel& m, int64_t min_elements) {
  for (LiteOp& op : m.ops) {
    int dim;  // the per-channel axis of the weights, -1 for per-tensor
    if (op.code == Op::CONV_2D) dim = 0;
    else if (op.code == Op::DEPTHWISE_CONV_2D) dim = 3;
    else if (op.code == Op::FULLY_CONNECTED || op.code == Op::BATCH_MATMUL) dim = -1;
    else continue;
    if (op.inputs.size() < 2 || m.tensors[size_t(op.inputs[0])].type != fb::TensorType::FLOAT32) continue;
    {
      const LiteTensor& w = m.tensors[size_t(op.inputs[1])];
      if (!w.constant || w.type != fb::TensorType::FLOAT32 || w.num_elements() < min_elements) continue;
    }
    if (m.consumers(op.inputs[1]).size() > 1) {  // equal constants merged by the graph passes
      LiteTensor copy = m.tensors[size_t(op.inputs[1])];
      copy.name += "/" + op.source;
      op.inputs[1] = m.add_tensor(std::move(copy));
    }
    LiteTensor& w = m.tensors[size_t(op.inputs[1])];
    const std::vector<float> f = w.floats();
    const int64_t channels = dim < 0 ? 1 : w.shape[size_t(dim)];
    int64_t inner = 1;  // elements after the channel axis
    for (size_t k = size_t(dim + 1); dim >= 0 && k < w.shape.size(); ++k) inner *= w.shape[k];
    std::vector<double> max_abs(size_t(channels), 0.0);
    for (size_t k = 0; k < f.size(); ++k) {
      const size_t c = dim < 0 ? 0 : size_t((int64_t(k) / inner) % channels);
      max_abs[c] = std::max(max_abs[c], std::fabs(double(f[k])));
    }
    w.quant = {};
    for (double a : max_abs) {
      w.quant.scale.push_back(float(a > 0 ? a / 127.0 : 1.0));
      w.quant.zero_point.push_back(0);
    }
    w.quant.dimension = std::max(dim, 0);
    std::vector<uint8_t> q(f.size());
    for (size_t k = 0; k < f.size(); ++k) {
      const size_t c = dim < 0 ? 0 : size_t((int64_t(k) / inner) % channels);
      const double v = std::round(double(f[k]) / double(w.quant.scale[c]));
      q[k] = uint8_t(int8_t(std::clamp(v, -127.0, 127.0)));
    }
    w.type = fb::TensorType::INT8;
    w.data = std::move(q);
    if (op.code == Op::FULLY_CONNECTED || op.code == Op::BATCH_MATMUL) op.options.asymmetric_quantize_inputs = true;
  }
}

}  // namespace deepflow::quantize::detail
