// SPDX-License-Identifier: Apache-2.0
// lite::Tensor: one tensor of a .tflite subgraph as the interpreter holds it. Its bytes live
// in the model file (constants), in the subgraph's planned arena (activations), or in
// storage of its own (tensors whose shape is only known while the op runs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace deepflow::lite {

namespace fb {
struct SparsityParameters;
}

/// TFLite's TensorType numbering.
enum class DType : int8_t {
  kFloat32 = 0, kFloat16 = 1, kInt32 = 2, kUInt8 = 3, kInt64 = 4, kString = 5, kBool = 6,
  kInt16 = 7, kComplex64 = 8, kInt8 = 9, kFloat64 = 10, kComplex128 = 11, kUInt64 = 12,
  kResource = 13, kVariant = 14, kUInt32 = 15, kUInt16 = 16, kInt4 = 17, kBFloat16 = 18,
};

/// Bytes per element; 0 for types without a fixed size (string, resource, variant, int4).
size_t dtype_size(DType t);
/// TFLite's name of the type ("FLOAT32", "INT8", ...); "TYPE(n)" for an unknown value.
const char* dtype_name(DType t);

/// Affine quantization: real = scale * (q - zero_point). One entry: per tensor; more:
/// per slice along `dim`. Empty scale: not quantized.
struct QuantParams {
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  int dim = 0;
};

/// Where a tensor's bytes come from.
enum class Storage : uint8_t {
  kNone,      // not allocated yet (or an optional input left out)
  kConstant,  // model data (or an aligned copy of it); read-only
  kArena,     // the subgraph's planned activation memory
  kDynamic,   // its own heap block, sized while its op runs
};

/// Shape "[1,224,224,3]" for messages.
std::string shape_string(const std::vector<int>& shape);

/// One tensor. Kernels read `shape`, `type`, `quant` and `data<T>()`.
struct Tensor {
  std::string name;
  DType type = DType::kFloat32;
  std::vector<int> shape;
  std::vector<int> shape_signature;  // -1 where the converter left a dimension unknown
  QuantParams quant;
  /// A constant stored sparse (the DENSIFY op's input): the file's table, else nullptr.
  const fb::SparsityParameters* sparsity = nullptr;
  bool is_variable = false;
  Storage storage = Storage::kNone;
  std::byte* data_ptr = nullptr;
  size_t bytes = 0;
  std::unique_ptr<std::byte[]> owned;  // kDynamic (and aligned copies of constants)
  size_t owned_capacity = 0;

  int rank() const { return static_cast<int>(shape.size()); }
  /// Dimension i; negative i counts from the end.
  int dim(int i) const { return shape[static_cast<size_t>(i < 0 ? i + rank() : i)]; }
  int64_t num_elements() const;
  template <class T>
  T* data() {
    return reinterpret_cast<T*>(data_ptr);
  }
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(data_ptr);
  }
  bool is_constant() const { return storage == Storage::kConstant; }
  bool quantized() const { return !quant.scale.empty(); }
};

/// Product of the dimensions.
int64_t num_elements(const std::vector<int>& shape);

}  // namespace deepflow::lite
