// SPDX-License-Identifier: Apache-2.0
// ONNX TensorProto.DataType numbers <-> deepflow dtypes.
#include "deepflow/core/error.h"
#include "deepflow/onnx/op_importer.h"

namespace deepflow::onnx {
namespace {
// TensorProto.DataType (onnx.proto).
enum : int32_t {
  kUndefined = 0, kFloat = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt16 = 5, kInt32 = 6, kInt64 = 7,
  kString = 8, kBool = 9, kFloat16 = 10, kDouble = 11, kUint32 = 12, kUint64 = 13, kComplex64 = 14,
  kComplex128 = 15, kBfloat16 = 16,
};
}  // namespace

const char* onnx_type_name(int32_t t) {
  static const char* const kNames[] = {"UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16", "INT16",
                                       "INT32",     "INT64",  "STRING",    "BOOL",       "FLOAT16", "DOUBLE",
                                       "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  return t >= 0 && t <= kBfloat16 ? kNames[t] : "UNKNOWN";
}

DType dtype_from_onnx(int32_t t) {
  switch (t) {
    case kFloat: return DType::Float32;
    case kDouble: return DType::Float64;
    case kFloat16: return DType::Float16;
    case kBfloat16: return DType::BFloat16;
    case kInt8: return DType::Int8;
    case kUint8: return DType::UInt8;
    case kInt32: return DType::Int32;
    case kInt64: return DType::Int64;
    case kBool: return DType::Bool;
    case kString: return DType::String;
    default: fail("[onnx::import] unsupported tensor element type ", onnx_type_name(t), " (", t, ")");
  }
}

int32_t dtype_to_onnx(DType d) {
  switch (d) {
    case DType::Float32: return kFloat;
    case DType::Float64: return kDouble;
    case DType::Float16: return kFloat16;
    case DType::BFloat16: return kBfloat16;
    case DType::Int8: return kInt8;
    case DType::UInt8: return kUint8;
    case DType::Int32: return kInt32;
    case DType::Int64: return kInt64;
    case DType::Bool: return kBool;
    case DType::String: return kString;
  }
  fail("[onnx::export] dtype ", d, " has no ONNX type");
}

}  // namespace deepflow::onnx
