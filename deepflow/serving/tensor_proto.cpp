// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/tensor_proto.h"

#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

#include "deepflow/serving/status.h"
#include "deepflow/tf/dtype.h"
#include "tensorflow/tensor.pb.h"

namespace deepflow::serving {
namespace {

// tensor_content is little-endian; the copies below are plain memcpy.
static_assert(std::endian::native == std::endian::little, "tensor_proto.cpp assumes a little-endian host");

// A request names its shape, and the typed fields may fill it from one value: without
// a bound a 20-byte request could ask for terabytes. 2^31 elements and 2 GiB (what a
// protobuf message can carry as tensor_content) are the most a request may expand to.
constexpr int64_t kMaxElements = int64_t(1) << 31;
constexpr int64_t kMaxBytes = int64_t(1) << 31;

// Every DataType number TensorFlow defines, for messages about dtypes deepflow lacks.
const char* tf_enum_name(int e) {
  switch (e) {
    case tensorflow::DT_INVALID: return "DT_INVALID";
    case tensorflow::DT_FLOAT: return "DT_FLOAT";
    case tensorflow::DT_DOUBLE: return "DT_DOUBLE";
    case tensorflow::DT_INT32: return "DT_INT32";
    case tensorflow::DT_UINT8: return "DT_UINT8";
    case tensorflow::DT_INT16: return "DT_INT16";
    case tensorflow::DT_INT8: return "DT_INT8";
    case tensorflow::DT_STRING: return "DT_STRING";
    case tensorflow::DT_COMPLEX64: return "DT_COMPLEX64";
    case tensorflow::DT_INT64: return "DT_INT64";
    case tensorflow::DT_BOOL: return "DT_BOOL";
    case tensorflow::DT_QINT8: return "DT_QINT8";
    case tensorflow::DT_QUINT8: return "DT_QUINT8";
    case tensorflow::DT_QINT32: return "DT_QINT32";
    case tensorflow::DT_BFLOAT16: return "DT_BFLOAT16";
    case tensorflow::DT_QINT16: return "DT_QINT16";
    case tensorflow::DT_QUINT16: return "DT_QUINT16";
    case tensorflow::DT_UINT16: return "DT_UINT16";
    case tensorflow::DT_COMPLEX128: return "DT_COMPLEX128";
    case tensorflow::DT_HALF: return "DT_HALF";
    case tensorflow::DT_RESOURCE: return "DT_RESOURCE";
    case tensorflow::DT_VARIANT: return "DT_VARIANT";
    case tensorflow::DT_UINT32: return "DT_UINT32";
    case tensorflow::DT_UINT64: return "DT_UINT64";
    case 24: return "DT_FLOAT8_E5M2";
    case 25: return "DT_FLOAT8_E4M3FN";
    case 26: return "DT_FLOAT8_E4M3FNUZ";
    case 28: return "DT_FLOAT8_E5M2FNUZ";
    case 29: return "DT_INT4";
    case 30: return "DT_UINT4";
    default: return nullptr;
  }
}

// The repeated field that carries a dtype's values, for messages.
const char* value_field(DType t) {
  switch (t) {
    case DType::Float32: return "float_val";
    case DType::Float64: return "double_val";
    case DType::Float16:
    case DType::BFloat16: return "half_val";
    case DType::Int8:
    case DType::UInt8:
    case DType::Int32: return "int_val";
    case DType::Int64: return "int64_val";
    case DType::Bool: return "bool_val";
    case DType::String: return "string_val";
  }
  return "?";
}

// Which typed fields hold values, so that values in the wrong field are an error
// rather than TensorFlow's silent zeros.
std::string nonempty_fields(const tensorflow::TensorProto& p) {
  std::string out;
  auto add = [&](int n, const char* name) {
    if (n > 0) out += std::string(out.empty() ? "" : ", ") + name + " (" + std::to_string(n) + ")";
  };
  add(p.float_val_size(), "float_val");
  add(p.double_val_size(), "double_val");
  add(p.int_val_size(), "int_val");
  add(p.string_val_size(), "string_val");
  add(p.scomplex_val_size(), "scomplex_val");
  add(p.int64_val_size(), "int64_val");
  add(p.bool_val_size(), "bool_val");
  add(p.dcomplex_val_size(), "dcomplex_val");
  add(p.half_val_size(), "half_val");
  add(p.uint32_val_size(), "uint32_val");
  add(p.uint64_val_size(), "uint64_val");
  return out;
}

int own_field_size(const tensorflow::TensorProto& p, DType t) {
  switch (t) {
    case DType::Float32: return p.float_val_size();
    case DType::Float64: return p.double_val_size();
    case DType::Float16:
    case DType::BFloat16: return p.half_val_size();
    case DType::Int8:
    case DType::UInt8:
    case DType::Int32: return p.int_val_size();
    case DType::Int64: return p.int64_val_size();
    case DType::Bool: return p.bool_val_size();
    case DType::String: return p.string_val_size();
  }
  return 0;
}

std::string shape_text(const tensorflow::TensorShapeProto& s) {
  std::ostringstream os;
  os << "[";
  for (int i = 0; i < s.dim_size(); ++i) os << (i ? "," : "") << s.dim(i).size();
  os << "]";
  return os.str();
}

[[noreturn]] void invalid(const std::string& msg) {
  throw ServingError(Code::InvalidArgument, "[tensor_from_proto] " + msg);
}

// Copies n values from a repeated field (or fills from one) into dst, converting each
// with `conv`; `count` is the shape's element count.
template <class T, class Field, class Conv>
void read_values(const Field& field, int64_t count, T* dst, const std::string& what, Conv conv) {
  int64_t n = field.size();
  if (n == count) {
    for (int64_t i = 0; i < n; ++i) dst[i] = conv(field.Get(int(i)));
  } else if (n == 1) {
    T v = conv(field.Get(0));
    for (int64_t i = 0; i < count; ++i) dst[i] = v;
  } else if (n == 0) {
    for (int64_t i = 0; i < count; ++i) dst[i] = T();
  } else {
    invalid(what + " has " + std::to_string(n) + " values; the shape needs " + std::to_string(count) +
            " (or exactly 1, which fills the shape)");
  }
}

}  // namespace

int tf_dtype_enum(DType dtype) {
  const int t = tf::tf_dtype(dtype);
  if (t == tensorflow::DT_INVALID)
    throw ServingError(Code::Internal, "[tf_dtype_enum] unknown dtype " + std::to_string(int(dtype)));
  return t;
}

const char* tf_dtype_name(DType dtype) { return tf_enum_name(tf_dtype_enum(dtype)); }

DType dtype_from_tf_enum(int tf_dtype) {
  if (std::optional<DType> d = tf::dtype_from_tf(tf_dtype)) return *d;
  if (tf_dtype == tensorflow::DT_INVALID)
    throw ServingError(Code::InvalidArgument, "[dtype_from_tf_enum] the tensor has no dtype (DT_INVALID)");
  if (const char* name = tf_enum_name(tf_dtype))
    throw ServingError(Code::Unimplemented,
                       std::string("[dtype_from_tf_enum] dtype ") + name + " is not supported by deepflow serving");
  if (tf_dtype > 100 && tf_enum_name(tf_dtype - 100))
    throw ServingError(Code::InvalidArgument, std::string("[dtype_from_tf_enum] reference dtype ") +
                                                  tf_enum_name(tf_dtype - 100) + "_REF cannot be sent in a request");
  throw ServingError(Code::InvalidArgument, "[dtype_from_tf_enum] unknown DataType number " + std::to_string(tf_dtype));
}

void shape_to_proto(const Shape& shape, tensorflow::TensorShapeProto* proto) {
  proto->Clear();
  for (int64_t d : shape) proto->add_dim()->set_size(d < 0 ? -1 : d);
}

namespace {
void release_nothing(void*, void*) {}  // a borrowed request buffer belongs to its proto
}  // namespace

Tensor tensor_from_proto(const tensorflow::TensorProto& proto, bool borrow) {
  DType dtype = dtype_from_tf_enum(proto.dtype());
  const char* tf_name = tf_enum_name(proto.dtype());
  const auto& sp = proto.tensor_shape();
  std::string desc = std::string(tf_name) + " tensor of shape " + shape_text(sp);
  if (sp.unknown_rank()) invalid(desc + ": a request tensor needs a known rank (unknown_rank is set)");
  if (sp.dim_size() > kMaxRank)
    invalid(desc + ": rank " + std::to_string(sp.dim_size()) + " exceeds the maximum " + std::to_string(kMaxRank));
  // The element count is checked before anything is allocated, dim by dim, so that no
  // product overflows.
  Shape shape;
  int64_t count = 1;
  for (const auto& d : sp.dim()) {
    if (d.size() < 0) invalid(desc + ": dimension " + std::to_string(d.size()) + " is negative");
    if (d.size() > 0 && count > kMaxElements / d.size())
      invalid(desc + ": more than " + std::to_string(kMaxElements) + " elements");
    count *= d.size();
    shape.push_back(d.size());
  }
  if (count > kMaxElements) invalid(desc + ": more than " + std::to_string(kMaxElements) + " elements");
  // For strings this counts the std::string objects, which one string_val can fill.
  int64_t elem = int64_t(dtype_size(dtype));
  if (count * elem > kMaxBytes)
    invalid(desc + ": " + std::to_string(count * elem) + " bytes exceed the limit of " + std::to_string(kMaxBytes));

  const std::string& content = proto.tensor_content();
  if (!content.empty()) {
    // As TensorFlow, tensor_content wins over the typed fields when both are set.
    if (dtype == DType::String)
      throw ServingError(Code::Unimplemented, "[tensor_from_proto] " + desc +
                                                  ": DT_STRING in tensor_content is not supported; use string_val");
    if (int64_t(content.size()) != count * elem)
      invalid(desc + ": tensor_content has " + std::to_string(content.size()) + " bytes; the shape needs " +
              std::to_string(count) + " x " + std::to_string(elem) + " = " + std::to_string(count * elem));
    if (borrow && dtype != DType::Bool && count > 0 &&
        reinterpret_cast<uintptr_t>(content.data()) % dtype_size(dtype) == 0) {
      auto impl = std::make_shared<TensorImpl>();
      impl->shape = shape;
      impl->dtype = dtype;
      impl->id = TensorImpl::next_id();
      impl->storage =
          std::make_shared<Storage>(const_cast<char*>(content.data()), content.size(), &release_nothing, nullptr);
      return Tensor(std::move(impl));
    }
    Tensor t(shape, dtype);
    if (dtype == DType::Bool) {
      // A bool byte other than 0 or 1 is undefined behaviour to load: normalize.
      bool* dst = t.data<bool>();
      for (int64_t i = 0; i < count; ++i) dst[i] = content[size_t(i)] != 0;
    } else if (count > 0) {
      std::memcpy(t.raw_data(), content.data(), content.size());
    }
    return t;
  }

  // Values sent in a field that this dtype does not read are a client bug that
  // TensorFlow would silently turn into zeros.
  std::string own = value_field(dtype);
  std::string fields = nonempty_fields(proto);
  if (own_field_size(proto, dtype) == 0 && !fields.empty())
    invalid(desc + ": its values go in " + own + " (or tensor_content), but the request set " + fields);
  std::string what = desc + ": " + own;

  Tensor t(shape, dtype);
  switch (dtype) {
    case DType::Float32: read_values(proto.float_val(), count, t.data<float>(), what, [](float v) { return v; }); break;
    case DType::Float64:
      read_values(proto.double_val(), count, t.data<double>(), what, [](double v) { return v; });
      break;
    case DType::Float16:
      read_values(proto.half_val(), count, t.data<Half>(), what, [](int32_t v) {
        Half h;
        h.bits = uint16_t(uint32_t(v) & 0xffffu);
        return h;
      });
      break;
    case DType::BFloat16:
      read_values(proto.half_val(), count, t.data<BFloat16>(), what, [](int32_t v) {
        BFloat16 h;
        h.bits = uint16_t(uint32_t(v) & 0xffffu);
        return h;
      });
      break;
    // int_val carries the narrow integer types; TensorFlow truncates, and so do we.
    case DType::Int8:
      read_values(proto.int_val(), count, t.data<int8_t>(), what, [](int32_t v) { return int8_t(v); });
      break;
    case DType::UInt8:
      read_values(proto.int_val(), count, t.data<uint8_t>(), what, [](int32_t v) { return uint8_t(v); });
      break;
    case DType::Int32: read_values(proto.int_val(), count, t.data<int32_t>(), what, [](int32_t v) { return v; }); break;
    case DType::Int64:
      read_values(proto.int64_val(), count, t.data<int64_t>(), what, [](int64_t v) { return v; });
      break;
    case DType::Bool: read_values(proto.bool_val(), count, t.data<bool>(), what, [](bool v) { return v; }); break;
    case DType::String:
      read_values(proto.string_val(), count, t.data<std::string>(), what, [](const std::string& v) { return v; });
      break;
  }
  return t;
}

void tensor_to_proto(const Tensor& tensor, tensorflow::TensorProto* proto) {
  if (!tensor.defined() || tensor.is_symbolic())
    throw ServingError(Code::Internal, "[tensor_to_proto] the tensor has no values (undefined or symbolic)");
  proto->Clear();
  proto->set_dtype(tensorflow::DataType(tf_dtype_enum(tensor.dtype())));
  shape_to_proto(tensor.shape(), proto->mutable_tensor_shape());
  int64_t n = tensor.size();
  if (tensor.dtype() == DType::String) {
    const std::string* s = tensor.data<std::string>();
    proto->mutable_string_val()->Reserve(int(n));
    for (int64_t i = 0; i < n; ++i) proto->add_string_val(s[i]);
    return;
  }
  if (n == 0) return;
  std::string* content = proto->mutable_tensor_content();
  content->resize(tensor.nbytes());
  if (tensor.dtype() == DType::Bool) {
    const bool* b = tensor.data<bool>();
    for (int64_t i = 0; i < n; ++i) (*content)[size_t(i)] = b[i] ? 1 : 0;
  } else {
    std::memcpy(content->data(), tensor.raw_data(), tensor.nbytes());
  }
}

}  // namespace deepflow::serving
