// SPDX-License-Identifier: Apache-2.0
#include "deepflow/lite/tensor.h"

#include <sstream>

namespace deepflow::lite {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32: case DType::kInt32: case DType::kUInt32: return 4;
    case DType::kFloat16: case DType::kInt16: case DType::kUInt16: case DType::kBFloat16: return 2;
    case DType::kUInt8: case DType::kInt8: case DType::kBool: return 1;
    case DType::kInt64: case DType::kUInt64: case DType::kFloat64: case DType::kComplex64: return 8;
    case DType::kComplex128: return 16;
    default: return 0;
  }
}

const char* dtype_name(DType t) {
  static const char* const kNames[] = {"FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "STRING", "BOOL",
                                       "INT16", "COMPLEX64", "INT8", "FLOAT64", "COMPLEX128", "UINT64",
                                       "RESOURCE", "VARIANT", "UINT32", "UINT16", "INT4", "BFLOAT16"};
  const int i = static_cast<int>(t);
  if (i >= 0 && i < static_cast<int>(std::size(kNames))) return kNames[i];
  return "UNKNOWN_TYPE";
}

std::string shape_string(const std::vector<int>& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << ']';
  return os.str();
}

int64_t num_elements(const std::vector<int>& shape) {
  int64_t n = 1;
  for (int d : shape) n *= d;
  return n;
}

int64_t Tensor::num_elements() const { return lite::num_elements(shape); }

}  // namespace deepflow::lite
