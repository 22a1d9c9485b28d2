// SPDX-License-Identifier: Apache-2.0
// TensorFlow's DataType numbers (proto/tensorflow/types.proto) and deepflow's DType.
//
//   tf::tf_dtype(DType::Float32) == 1          // DT_FLOAT
//   tf::dtype_from_tf(19) == DType::Float16    // DT_HALF
//   tf::tf_dtype_name(29) == "DT_INT4"
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "deepflow/core/dtype.h"

namespace deepflow::tf {

/// The DataType number of a deepflow dtype (DT_FLOAT = 1, ..., DT_HALF = 19).
int tf_dtype(DType dtype);
/// The deepflow dtype of a DataType number; nullopt for those deepflow lacks (DT_INT16,
/// DT_COMPLEX64, DT_RESOURCE, the *_REF twins, ...).
std::optional<DType> dtype_from_tf(int tf_dtype);
/// "DT_FLOAT"; "DT_<number>" for a number TensorFlow does not define.
std::string tf_dtype_name(int tf_dtype);
/// Bytes per element of a fixed-size DataType in a checkpoint's data file (DT_BOOL: 1,
/// DT_COMPLEX128: 16); 0 for DT_STRING, DT_VARIANT, DT_RESOURCE, the 4- and 2-bit types
/// and unknown numbers.
size_t tf_dtype_size(int tf_dtype);

}  // namespace deepflow::tf
