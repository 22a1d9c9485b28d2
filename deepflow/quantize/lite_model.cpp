// SPDX-License-Identifier: Apache-2.0
// LiteModel's helpers and its serialization to a .tflite flatbuffer.
#include "deepflow/quantize/lite_model.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "deepflow/core/error.h"

namespace deepflow::quantize {

int64_t lite_type_size(fb::TensorType t) {
  switch (t) {
    case fb::TensorType::FLOAT32:
    case fb::TensorType::INT32:
    case fb::TensorType::UINT32: return 4;
    case fb::TensorType::FLOAT16:
    case fb::TensorType::INT16:
    case fb::TensorType::UINT16: return 2;
    case fb::TensorType::INT64:
    case fb::TensorType::FLOAT64:
    case fb::TensorType::UINT64: return 8;
    case fb::TensorType::INT8:
    case fb::TensorType::UINT8:
    case fb::TensorType::BOOL: return 1;
    default: fail("[lite::convert] no element size for tensor type ", fb::EnumNameTensorType(t));
  }
}

int64_t LiteTensor::num_elements() const {
  int64_t n = 1;
  for (int32_t d : shape) n *= d;
  return n;
}

std::vector<float> LiteTensor::floats() const {
  DF_CHECK(constant && type == fb::TensorType::FLOAT32, "[lite::convert] tensor '", name,
           "' is not a float32 constant");
  std::vector<float> v(data.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), data.data(), data.size());
  return v;
}

int32_t LiteModel::add_tensor(LiteTensor t) {
  tensors.push_back(std::move(t));
  return int32_t(tensors.size() - 1);
}

int32_t LiteModel::add_constant(const std::string& name, fb::TensorType type, std::vector<int32_t> shape,
                                std::vector<uint8_t> bytes) {
  LiteTensor t{.name = name, .type = type, .shape = std::move(shape), .constant = true, .data = std::move(bytes)};
  DF_CHECK(int64_t(t.data.size()) == t.num_elements() * lite_type_size(type), "[lite::convert] constant '", name,
           "': ", t.data.size(), " bytes for ", t.num_elements(), " elements");
  return add_tensor(std::move(t));
}

template <typename T>
static std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

int32_t LiteModel::add_float_constant(const std::string& name, std::vector<int32_t> shape, const std::vector<float>& v) {
  return add_constant(name, fb::TensorType::FLOAT32, std::move(shape), bytes_of(v));
}

int32_t LiteModel::add_int32_constant(const std::string& name, std::vector<int32_t> shape,
                                      const std::vector<int32_t>& v) {
  return add_constant(name, fb::TensorType::INT32, std::move(shape), bytes_of(v));
}

int32_t LiteModel::add_like(const std::string& name, int32_t like, fb::TensorType type) {
  const LiteTensor& l = tensors.at(size_t(like));
  return add_tensor({.name = name, .type = type, .shape = l.shape, .shape_signature = l.shape_signature});
}

int32_t LiteModel::add_op(LiteOp op) {
  ops.push_back(std::move(op));
  return int32_t(ops.size() - 1);
}

std::vector<int32_t> LiteModel::consumers(int32_t t) const {
  std::vector<int32_t> out;
  for (size_t i = 0; i < ops.size(); ++i)
    if (std::find(ops[i].inputs.begin(), ops[i].inputs.end(), t) != ops[i].inputs.end()) out.push_back(int32_t(i));
  return out;
}

int32_t LiteModel::producer(int32_t t) const {
  for (size_t i = 0; i < ops.size(); ++i)
    if (std::find(ops[i].outputs.begin(), ops[i].outputs.end(), t) != ops[i].outputs.end()) return int32_t(i);
  return -1;
}

namespace {

using fb::BuiltinOperator;
using fb::TensorType;

// LiteRT's op_version.cc rules for the ops and types the converter writes (lite.md 1.7).
int32_t op_version(const LiteModel& m, const LiteOp& op) {
  auto type = [&](size_t i) {
    return i < op.inputs.size() && op.inputs[i] >= 0 ? m.tensors[size_t(op.inputs[i])].type : TensorType::FLOAT32;
  };
  auto per_channel = [&](size_t i) { return m.tensors[size_t(op.inputs[i])].quant.scale.size() > 1; };
  const bool int8 = type(0) == TensorType::INT8;
  const bool hybrid = type(0) == TensorType::FLOAT32 && op.inputs.size() > 1 && type(1) == TensorType::INT8;
  int32_t v = 1;
  switch (op.code) {
    case BuiltinOperator::CONV_2D: v = int8 ? 3 : hybrid ? (per_channel(1) ? 5 : 2) : 1; break;
    case BuiltinOperator::DEPTHWISE_CONV_2D:
      v = int8 ? 3 : hybrid ? (per_channel(1) ? 6 : 4) : (op.options.dilation_w != 1 || op.options.dilation_h != 1) ? 2 : 1;
      break;
    case BuiltinOperator::FULLY_CONNECTED:
      v = op.options.keep_num_dims ? 5 : int8 ? 4 : hybrid ? (op.options.asymmetric_quantize_inputs ? 9 : 3) : 1;
      break;
    case BuiltinOperator::BATCH_MATMUL: v = int8 ? 2 : hybrid ? (op.options.asymmetric_quantize_inputs ? 4 : 1) : 1; break;
    case BuiltinOperator::ADD:
    case BuiltinOperator::SUB:
    case BuiltinOperator::MUL:
    case BuiltinOperator::SOFTMAX:
    case BuiltinOperator::AVERAGE_POOL_2D:
    case BuiltinOperator::MAX_POOL_2D:
    case BuiltinOperator::LOGISTIC:
    case BuiltinOperator::TANH:
    case BuiltinOperator::MEAN:
    case BuiltinOperator::CONCATENATION:
    case BuiltinOperator::PAD:
    case BuiltinOperator::TRANSPOSE:
    case BuiltinOperator::MAXIMUM:
    case BuiltinOperator::MINIMUM:
    case BuiltinOperator::RELU:
    case BuiltinOperator::RELU6:
    case BuiltinOperator::SQUARED_DIFFERENCE:
    case BuiltinOperator::RSQRT:
    case BuiltinOperator::GELU: v = int8 ? 2 : 1; break;
    case BuiltinOperator::DEQUANTIZE:
      v = type(0) == TensorType::FLOAT16 ? 3 : (type(0) == TensorType::INT8 ? (per_channel(0) ? 5 : 2) : 1);
      break;
    default: break;
  }
  return std::max(v, op.version);
}

// The builtin options table of one op (NONE for ops whose table is empty or absent).
std::pair<fb::BuiltinOptions, flatbuffers::Offset<void>> options(flatbuffers::FlatBufferBuilder& b, const LiteOp& op) {
  const LiteOptions& o = op.options;
  using O = fb::BuiltinOptions;
  switch (op.code) {
    case BuiltinOperator::CONV_2D:
      return {O::Conv2DOptions, fb::CreateConv2DOptions(b, o.padding, o.stride_w, o.stride_h, o.activation,
                                                        o.dilation_w, o.dilation_h).Union()};
    case BuiltinOperator::DEPTHWISE_CONV_2D:
      return {O::DepthwiseConv2DOptions,
              fb::CreateDepthwiseConv2DOptions(b, o.padding, o.stride_w, o.stride_h, o.depth_multiplier, o.activation,
                                               o.dilation_w, o.dilation_h).Union()};
    case BuiltinOperator::MAX_POOL_2D:
    case BuiltinOperator::AVERAGE_POOL_2D:
      return {O::Pool2DOptions, fb::CreatePool2DOptions(b, o.padding, o.stride_w, o.stride_h, o.filter_w, o.filter_h,
                                                        o.activation).Union()};
    case BuiltinOperator::FULLY_CONNECTED:
      return {O::FullyConnectedOptions,
              fb::CreateFullyConnectedOptions(b, o.activation, fb::FullyConnectedOptionsWeightsFormat::DEFAULT,
                                              o.keep_num_dims, o.asymmetric_quantize_inputs).Union()};
    case BuiltinOperator::BATCH_MATMUL:
      return {O::BatchMatMulOptions,
              fb::CreateBatchMatMulOptions(b, o.adj_x, o.adj_y, o.asymmetric_quantize_inputs).Union()};
    case BuiltinOperator::SOFTMAX: return {O::SoftmaxOptions, fb::CreateSoftmaxOptions(b, o.beta).Union()};
    case BuiltinOperator::CONCATENATION:
      return {O::ConcatenationOptions, fb::CreateConcatenationOptions(b, o.axis, o.activation).Union()};
    case BuiltinOperator::ADD: return {O::AddOptions, fb::CreateAddOptions(b, o.activation).Union()};
    case BuiltinOperator::SUB: return {O::SubOptions, fb::CreateSubOptions(b, o.activation).Union()};
    case BuiltinOperator::MUL: return {O::MulOptions, fb::CreateMulOptions(b, o.activation).Union()};
    case BuiltinOperator::DIV: return {O::DivOptions, fb::CreateDivOptions(b, o.activation).Union()};
    case BuiltinOperator::RESHAPE:
      return {O::ReshapeOptions, fb::CreateReshapeOptions(b, b.CreateVector(o.new_shape)).Union()};
    case BuiltinOperator::MEAN:
    case BuiltinOperator::SUM:
    case BuiltinOperator::REDUCE_MAX:
    case BuiltinOperator::REDUCE_MIN:
    case BuiltinOperator::REDUCE_PROD:
      return {O::ReducerOptions, fb::CreateReducerOptions(b, o.keep_dims).Union()};
    case BuiltinOperator::GATHER: return {O::GatherOptions, fb::CreateGatherOptions(b, o.axis, o.batch_dims).Union()};
    case BuiltinOperator::STRIDED_SLICE:
      return {O::StridedSliceOptions, fb::CreateStridedSliceOptions(b, o.begin_mask, o.end_mask, o.ellipsis_mask,
                                                                    o.new_axis_mask, o.shrink_axis_mask).Union()};
    case BuiltinOperator::CAST: return {O::CastOptions, fb::CreateCastOptions(b, o.in_type, o.out_type).Union()};
    case BuiltinOperator::ARG_MAX: return {O::ArgMaxOptions, fb::CreateArgMaxOptions(b, o.out_type).Union()};
    case BuiltinOperator::LEAKY_RELU: return {O::LeakyReluOptions, fb::CreateLeakyReluOptions(b, o.alpha).Union()};
    case BuiltinOperator::GELU: return {O::GeluOptions, fb::CreateGeluOptions(b, false).Union()};
    case BuiltinOperator::PACK:
      return {O::PackOptions, fb::CreatePackOptions(b, o.depth_multiplier, o.axis).Union()};
    default: return {O::NONE, 0};
  }
}

}  // namespace

std::string serialize_lite_model(const LiteModel& m) {
  flatbuffers::FlatBufferBuilder b(1 << 16);
  // Buffers: 0 is the empty sentinel; each constant gets its own, 16-byte aligned.
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers{fb::CreateBuffer(b)};
  std::vector<uint32_t> buffer_of(m.tensors.size(), 0);
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const LiteTensor& t = m.tensors[i];
    if (!t.constant) continue;
    b.ForceVectorAlignment(t.data.size(), 1, 16);
    auto data = b.CreateVector(t.data);
    buffer_of[i] = uint32_t(buffers.size());
    buffers.push_back(fb::CreateBuffer(b, data));
  }
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const LiteTensor& t = m.tensors[i];
    flatbuffers::Offset<fb::QuantizationParameters> q = 0;
    if (!t.quant.empty())
      q = fb::CreateQuantizationParameters(b, 0, 0, b.CreateVector(t.quant.scale), b.CreateVector(t.quant.zero_point),
                                           fb::QuantizationDetails::NONE, 0, t.quant.dimension);
    auto sig = t.shape_signature.empty() ? 0 : b.CreateVector(t.shape_signature);
    tensors.push_back(fb::CreateTensor(b, b.CreateVector(t.shape), t.type, buffer_of[i], b.CreateString(t.name), q,
                                       false, 0, sig, /*has_rank=*/true));
  }
  // Operator codes: one per (builtin, version).
  std::map<std::pair<int32_t, int32_t>, uint32_t> code_index;
  std::vector<flatbuffers::Offset<fb::OperatorCode>> codes;
  std::vector<flatbuffers::Offset<fb::Operator>> ops;
  for (const LiteOp& op : m.ops) {
    const int32_t code = int32_t(op.code), version = op_version(m, op);
    auto [it, fresh] = code_index.emplace(std::pair{code, version}, uint32_t(codes.size()));
    if (fresh)
      codes.push_back(fb::CreateOperatorCode(b, int8_t(std::min(code, 127)), 0, version, op.code));
    auto [otype, opts] = options(b, op);
    ops.push_back(fb::CreateOperator(b, it->second, b.CreateVector(op.inputs), b.CreateVector(op.outputs), otype, opts));
  }
  auto subgraph = fb::CreateSubGraph(b, b.CreateVector(tensors), b.CreateVector(m.inputs), b.CreateVector(m.outputs),
                                     b.CreateVector(ops), b.CreateString("main"));
  auto tensor_maps = [&](const std::vector<int32_t>& idx, const std::vector<std::string>& names) {
    std::vector<flatbuffers::Offset<fb::TensorMap>> v;
    for (size_t i = 0; i < idx.size(); ++i)
      v.push_back(fb::CreateTensorMap(b, b.CreateString(i < names.size() ? names[i] : m.tensors[size_t(idx[i])].name),
                                      uint32_t(idx[i])));
    return b.CreateVector(v);
  };
  auto sig_inputs = tensor_maps(m.inputs, m.input_names);
  auto sig_outputs = tensor_maps(m.outputs, m.output_names);
  auto signature = fb::CreateSignatureDef(b, sig_inputs, sig_outputs, b.CreateString(m.signature_key), 0);
  // min_runtime_version: LiteRT's metadata entry, a NUL-padded version string.
  std::vector<uint8_t> version(16, 0);
  const std::string v = "2.3.0";
  std::memcpy(version.data(), v.data(), v.size());
  b.ForceVectorAlignment(version.size(), 1, 16);
  auto version_data = b.CreateVector(version);
  const uint32_t version_buffer = uint32_t(buffers.size());
  buffers.push_back(fb::CreateBuffer(b, version_data));
  auto metadata = fb::CreateMetadata(b, b.CreateString("min_runtime_version"), version_buffer);
  auto model = fb::CreateModel(b, 3, b.CreateVector(codes), b.CreateVector(std::vector{subgraph}),
                               b.CreateString(m.description), b.CreateVector(buffers), 0,
                               b.CreateVector(std::vector{metadata}), b.CreateVector(std::vector{signature}));
  b.Finish(model, "TFL3");
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

}  // namespace deepflow::quantize
