// SPDX-License-Identifier: Apache-2.0
// The converter's in-memory .tflite model: one subgraph of tensors and operators in
// execution order, built by lowering (lower.h), rewritten by the quantizers
// (quantize_weights.h, full_integer.h) and serialized by serialize_lite_model() into a real
// "TFL3" flatbuffer (schema/tflite.fbs): buffer 0 the empty sentinel, constant data
// 16-byte aligned, operator codes with both the deprecated byte code and the int32 one,
// op versions by LiteRT's rules (lite.md 1.7), one SignatureDef, min_runtime_version metadata.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/tflite_generated.h"

namespace deepflow::quantize {

namespace fb = ::deepflow::lite::fb;

/// real = scale * (q - zero_point); one entry per tensor, or per slice along `dimension`.
struct LiteQuant {
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  int32_t dimension = 0;
  bool empty() const { return scale.empty(); }
};

struct LiteTensor {
  std::string name;
  fb::TensorType type = fb::TensorType::FLOAT32;
  std::vector<int32_t> shape;            ///< with 1 for each unknown dim
  std::vector<int32_t> shape_signature;  ///< -1 for unknown dims; empty when none is
  bool constant = false;
  std::vector<uint8_t> data;  ///< a constant's bytes (little-endian, row-major)
  LiteQuant quant;
  /// A range fixed by quantization-aware training (a FakeQuant on this value): full integer
  /// quantization takes it over calibration.
  bool has_range = false;
  double range_min = 0, range_max = 0;

  int64_t num_elements() const;
  /// A float32 constant's values (checked).
  std::vector<float> floats() const;
};

/// The option fields of the ops the converter writes; each op reads the ones it has.
struct LiteOptions {
  fb::Padding padding = fb::Padding::VALID;
  int32_t stride_w = 1, stride_h = 1, dilation_w = 1, dilation_h = 1;
  int32_t filter_w = 1, filter_h = 1, depth_multiplier = 1;
  fb::ActivationFunctionType activation = fb::ActivationFunctionType::NONE;
  int32_t axis = 0, batch_dims = 0;
  bool keep_dims = false, keep_num_dims = false, adj_x = false, adj_y = false;
  bool asymmetric_quantize_inputs = false;
  float beta = 1.f, alpha = 0.f;
  std::vector<int32_t> new_shape;
  int32_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_axis_mask = 0;
  fb::TensorType in_type = fb::TensorType::FLOAT32, out_type = fb::TensorType::FLOAT32;
  bool align_corners = false, half_pixel_centers = false;
};

struct LiteOp {
  fb::BuiltinOperator code = fb::BuiltinOperator::ADD;
  int32_t version = 1;
  std::vector<int32_t> inputs;  ///< -1: an optional input left out
  std::vector<int32_t> outputs;
  LiteOptions options;
  std::string source;  ///< the deepflow node it came from, for messages and the error report
};

struct LiteModel {
  std::vector<LiteTensor> tensors;
  std::vector<LiteOp> ops;
  std::vector<int32_t> inputs, outputs;
  /// The signature's keys for inputs and outputs (same order as inputs / outputs).
  std::vector<std::string> input_names, output_names;
  std::string signature_key = "serving_default";
  std::string description = "deepflow";

  /// Appends a tensor; returns its index.
  int32_t add_tensor(LiteTensor t);
  /// A constant tensor of raw bytes.
  int32_t add_constant(const std::string& name, fb::TensorType type, std::vector<int32_t> shape,
                       std::vector<uint8_t> bytes);
  int32_t add_float_constant(const std::string& name, std::vector<int32_t> shape, const std::vector<float>& v);
  int32_t add_int32_constant(const std::string& name, std::vector<int32_t> shape, const std::vector<int32_t>& v);
  /// An activation tensor with `like`'s shape (signature too) and the given type.
  int32_t add_like(const std::string& name, int32_t like, fb::TensorType type);
  int32_t add_op(LiteOp op);
  /// Ops reading tensor t, by op index.
  std::vector<int32_t> consumers(int32_t t) const;
  /// Index of the op writing tensor t, or -1 (inputs, constants).
  int32_t producer(int32_t t) const;
};

/// Bytes of a .tflite file (one subgraph, one signature). Op versions are computed here from
/// the ops' tensor types (lite.md 1.7); LiteOp::version is a floor.
std::string serialize_lite_model(const LiteModel& model);

/// The element size of a tensor type (1 for INT8/UINT8/BOOL, 2 for FLOAT16, ...).
int64_t lite_type_size(fb::TensorType t);

}  // namespace deepflow::quantize
