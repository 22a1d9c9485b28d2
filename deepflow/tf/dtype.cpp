// SPDX-License-Identifier: Apache-2.0
#include "deepflow/tf/dtype.h"

#include "tensorflow/types.pb.h"

namespace deepflow::tf {

int tf_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32: return tensorflow::DT_FLOAT;
    case DType::Float64: return tensorflow::DT_DOUBLE;
    case DType::Float16: return tensorflow::DT_HALF;
    case DType::BFloat16: return tensorflow::DT_BFLOAT16;
    case DType::Int8: return tensorflow::DT_INT8;
    case DType::UInt8: return tensorflow::DT_UINT8;
    case DType::Int32: return tensorflow::DT_INT32;
    case DType::Int64: return tensorflow::DT_INT64;
    case DType::Bool: return tensorflow::DT_BOOL;
    case DType::String: return tensorflow::DT_STRING;
  }
  return tensorflow::DT_INVALID;
}

std::optional<DType> dtype_from_tf(int tf_dtype) {
  switch (tf_dtype) {
    case tensorflow::DT_FLOAT: return DType::Float32;
    case tensorflow::DT_DOUBLE: return DType::Float64;
    case tensorflow::DT_HALF: return DType::Float16;
    case tensorflow::DT_BFLOAT16: return DType::BFloat16;
    case tensorflow::DT_INT8: return DType::Int8;
    case tensorflow::DT_UINT8: return DType::UInt8;
    case tensorflow::DT_INT32: return DType::Int32;
    case tensorflow::DT_INT64: return DType::Int64;
    case tensorflow::DT_BOOL: return DType::Bool;
    case tensorflow::DT_STRING: return DType::String;
    default: return std::nullopt;
  }
}

std::string tf_dtype_name(int tf_dtype) {
  if (tensorflow::DataType_IsValid(tf_dtype)) return tensorflow::DataType_Name(tensorflow::DataType(tf_dtype));
  return "DT_" + std::to_string(tf_dtype);
}

size_t tf_dtype_size(int tf_dtype) {
  switch (tf_dtype) {
    case tensorflow::DT_BOOL:
    case tensorflow::DT_INT8:
    case tensorflow::DT_UINT8:
    case tensorflow::DT_QINT8:
    case tensorflow::DT_QUINT8:
    case tensorflow::DT_FLOAT8_E5M2:
    case tensorflow::DT_FLOAT8_E4M3FN:
    case tensorflow::DT_FLOAT8_E4M3FNUZ:
    case tensorflow::DT_FLOAT8_E4M3B11FNUZ:
    case tensorflow::DT_FLOAT8_E5M2FNUZ: return 1;
    case tensorflow::DT_INT16:
    case tensorflow::DT_UINT16:
    case tensorflow::DT_QINT16:
    case tensorflow::DT_QUINT16:
    case tensorflow::DT_HALF:
    case tensorflow::DT_BFLOAT16: return 2;
    case tensorflow::DT_FLOAT:
    case tensorflow::DT_INT32:
    case tensorflow::DT_UINT32:
    case tensorflow::DT_QINT32: return 4;
    case tensorflow::DT_DOUBLE:
    case tensorflow::DT_INT64:
    case tensorflow::DT_UINT64:
    case tensorflow::DT_COMPLEX64: return 8;
    case tensorflow::DT_COMPLEX128: return 16;
    default: return 0;
  }
}

}  // namespace deepflow::tf
