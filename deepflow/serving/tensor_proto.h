// SPDX-License-Identifier: Apache-2.0
// deepflow::Tensor <-> tensorflow.TensorProto (proto/tensorflow/: TensorFlow's
// tensor.proto, tensor_shape.proto and types.proto with their package, names and field
// numbers), as TF Serving's gRPC API carries them.
//
// Reading accepts both encodings TensorFlow writes: tensor_content (raw little-endian
// bytes) and the typed repeated fields (float_val, int_val, int64_val, string_val,
// bool_val, double_val, half_val), including TF's rule that a single value fills the
// whole shape. Writing uses tensor_content for numbers and string_val for strings.
// Unsupported dtypes are UNIMPLEMENTED; a size that disagrees with the shape is
// INVALID_ARGUMENT naming both.
#pragma once

#include "deepflow/core/tensor.h"

namespace tensorflow {
class TensorProto;
class TensorShapeProto;
}  // namespace tensorflow

namespace deepflow::serving {

/// The tensor a request carries (every field checked: dtype, shape, sizes, values). With
/// `borrow`, numeric tensor_content is not copied: the tensor points into the proto's bytes,
/// which must outlive it unchanged (a request, for the duration of its call; the 602 KB copy
/// of a ResNet50 image was a third of the server's overhead). Bool and the typed fields
/// (float_val, ...) are always copied, as is content not aligned for its dtype.
Tensor tensor_from_proto(const tensorflow::TensorProto& proto, bool borrow = false);
void tensor_to_proto(const Tensor& tensor, tensorflow::TensorProto* proto);

/// TensorFlow's DataType numbers (DT_FLOAT = 1, ...) and names ("DT_FLOAT").
int tf_dtype_enum(DType dtype);
DType dtype_from_tf_enum(int tf_dtype);  ///< UNIMPLEMENTED for dtypes deepflow lacks
const char* tf_dtype_name(DType dtype);
/// -1 dims stay -1 (TF's unknown size).
void shape_to_proto(const Shape& shape, tensorflow::TensorShapeProto* proto);

}  // namespace deepflow::serving
