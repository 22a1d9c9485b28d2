// SPDX-License-Identifier: Apache-2.0
// tf.train.Example building and parsing on the generated protobuf classes (which accept
// packed and unpacked lists alike). parse_example fills each dense output in place and
// reuses one Example message across the batch, so a batch costs one allocation per
// output tensor plus protobuf's own per-example parse.
#include "deepflow/data/example.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "example.pb.h"

namespace deepflow::data {
namespace {

using ::deepflow::detail::cat;

const char* kind_name(tensorflow::Feature::KindCase k) {
  switch (k) {
    case tensorflow::Feature::kBytesList: return "a bytes_list";
    case tensorflow::Feature::kFloatList: return "a float_list";
    case tensorflow::Feature::kInt64List: return "an int64_list";
    default: return "empty (no list set)";
  }
}

tensorflow::Feature::KindCase kind_for(DType t) {
  switch (t) {
    case DType::Float32: return tensorflow::Feature::kFloatList;
    case DType::Int64: return tensorflow::Feature::kInt64List;
    default: return tensorflow::Feature::kBytesList;
  }
}

void check_dtype(const char* where, const std::string& name, DType t) {
  DF_CHECK(t == DType::Float32 || t == DType::Int64 || t == DType::String, "[", where, "] feature '", name, "': dtype ",
           dtype_name(t), " is not supported; use float32, int64 or string");
}

// The number of values a Feature holds (0 for one with no list set).
int64_t value_count(const tensorflow::Feature& f) {
  switch (f.kind_case()) {
    case tensorflow::Feature::kBytesList: return f.bytes_list().value_size();
    case tensorflow::Feature::kFloatList: return f.float_list().value_size();
    case tensorflow::Feature::kInt64List: return f.int64_list().value_size();
    default: return 0;
  }
}

// Copies the feature's values into dst[0, n) of dtype t (the kind already checked).
void copy_values(const tensorflow::Feature& f, DType t, void* dst) {
  if (value_count(f) == 0) return;
  switch (t) {
    case DType::Float32:
      std::copy(f.float_list().value().begin(), f.float_list().value().end(), static_cast<float*>(dst));
      break;
    case DType::Int64:
      std::copy(f.int64_list().value().begin(), f.int64_list().value().end(), static_cast<int64_t*>(dst));
      break;
    default: std::copy(f.bytes_list().value().begin(), f.bytes_list().value().end(), static_cast<std::string*>(dst));
  }
}

// Element i of src into element j of dst (same dtype), strings by assignment.
void copy_element(const Tensor& src, int64_t i, Tensor& dst, int64_t j) {
  if (dst.dtype() == DType::String)
    dst.data<std::string>()[j] = src.data<std::string>()[i];
  else if (dst.dtype() == DType::Float32)
    dst.data<float>()[j] = src.data<float>()[i];
  else
    dst.data<int64_t>()[j] = src.data<int64_t>()[i];
}

// Checks a feature's kind against the spec's dtype; a Feature with no list set is an
// empty list of any kind.
void check_kind(const char* where, const std::string& name, int64_t example, const tensorflow::Feature& f, DType t) {
  if (f.kind_case() == tensorflow::Feature::KIND_NOT_SET || f.kind_case() == kind_for(t)) return;
  fail("[", where, "] feature '", name, "' of example ", example, " is ", kind_name(f.kind_case()),
       "; the spec asks for ", dtype_name(t), " (", kind_name(kind_for(t)), ")");
}

struct SparseBuilder {
  DType dtype;
  std::vector<int64_t> indices;  // (example, position) pairs
  std::vector<float> floats;
  std::vector<int64_t> int64s;
  std::vector<std::string> bytes;
  int64_t longest = 0;
};

ParsedExamples parse_batch(const char* where, const Tensor& serialized, int64_t batch,
                           const std::map<std::string, FeatureSpec>& features) {
  ParsedExamples out;
  std::map<std::string, SparseBuilder> sparse;
  // Validate the spec and allocate the dense outputs before reading any example.
  for (const auto& [name, spec] : features) {
    if (const auto* fixed = std::get_if<FixedLenFeature>(&spec)) {
      check_dtype(where, name, fixed->dtype);
      DF_CHECK(fixed->shape.is_fully_defined(), "[", where, "] feature '", name, "': FixedLenFeature shape ",
               fixed->shape, " must be fully defined");
      const int64_t n = fixed->shape.num_elements();
      if (fixed->default_value.defined()) {
        const Tensor& d = fixed->default_value;
        DF_CHECK(d.dtype() == fixed->dtype, "[", where, "] feature '", name, "': default_value is ",
                 dtype_name(d.dtype()), ", the feature is ", dtype_name(fixed->dtype));
        DF_CHECK(d.size() == n || d.size() == 1, "[", where, "] feature '", name, "': default_value has shape ",
                 d.shape(), " (", d.size(), " values); the feature has shape ", fixed->shape, " (", n, " values)");
      }
      Shape shape = fixed->shape;
      shape.insert(0, batch);
      out.dense.emplace(name, Tensor(shape, fixed->dtype));
    } else {
      const DType t = std::get<VarLenFeature>(spec).dtype;
      check_dtype(where, name, t);
      sparse.emplace(name, SparseBuilder{t});
    }
  }

  tensorflow::Example ex;
  const std::string* records = serialized.data<std::string>();
  for (int64_t i = 0; i < batch; ++i) {
    const std::string& bytes = records[i];
    DF_CHECK(ex.ParseFromString(bytes), "[", where, "] example ", i, " is not a valid tf.train.Example (", bytes.size(),
             " bytes)");
    const auto& map = ex.features().feature();
    for (const auto& [name, spec] : features) {
      const auto it = map.find(name);
      if (const auto* fixed = std::get_if<FixedLenFeature>(&spec)) {
        Tensor& dst = out.dense.at(name);
        const int64_t n = fixed->shape.num_elements();
        if (it == map.end()) {
          DF_CHECK(fixed->default_value.defined(), "[", where, "] example ", i, " has no feature '", name,
                   "' and its FixedLenFeature has no default_value");
          const Tensor& d = fixed->default_value;
          for (int64_t k = 0; k < n; ++k) copy_element(d, d.size() == 1 ? 0 : k, dst, i * n + k);
          continue;
        }
        check_kind(where, name, i, it->second, fixed->dtype);
        const int64_t got = value_count(it->second);
        DF_CHECK(got == n, "[", where, "] feature '", name, "' of example ", i, ": expected ", n, " ",
                 dtype_name(fixed->dtype), " values (shape ", fixed->shape, "), got ", got);
        copy_values(it->second, fixed->dtype, static_cast<char*>(dst.raw_data()) + i * n * dtype_size(dst.dtype()));
      } else if (it != map.end()) {
        SparseBuilder& sb = sparse.at(name);
        check_kind(where, name, i, it->second, sb.dtype);
        const int64_t got = value_count(it->second);
        for (int64_t k = 0; k < got; ++k) {
          sb.indices.push_back(i);
          sb.indices.push_back(k);
        }
        sb.longest = std::max(sb.longest, got);
        if (got == 0) continue;
        const tensorflow::Feature& f = it->second;
        if (sb.dtype == DType::Float32)
          sb.floats.insert(sb.floats.end(), f.float_list().value().begin(), f.float_list().value().end());
        else if (sb.dtype == DType::Int64)
          sb.int64s.insert(sb.int64s.end(), f.int64_list().value().begin(), f.int64_list().value().end());
        else
          sb.bytes.insert(sb.bytes.end(), f.bytes_list().value().begin(), f.bytes_list().value().end());
      }
    }
  }

  for (auto& [name, sb] : sparse) {
    const int64_t n = int64_t(sb.indices.size() / 2);
    SparseTensor st;
    st.indices = constant(sb.indices, Shape{n, 2});
    st.values = sb.dtype == DType::Float32 ? constant(sb.floats, Shape{n})
                : sb.dtype == DType::Int64 ? constant(sb.int64s, Shape{n})
                                           : constant(sb.bytes, Shape{n});
    st.dense_shape = constant(std::vector<int64_t>{batch, sb.longest}, Shape{2});
    out.sparse.emplace(name, std::move(st));
  }
  return out;
}

void check_serialized(const char* where, const Tensor& serialized, int rank) {
  DF_CHECK(serialized.defined() && !serialized.is_symbolic(), "[", where, "] serialized must be a concrete tensor");
  DF_CHECK(serialized.dtype() == DType::String, "[", where, "] serialized must be a string tensor, got ",
           dtype_name(serialized.dtype()));
  DF_CHECK(serialized.rank() == rank, "[", where, "] serialized must be ", rank == 1 ? "a vector [batch]" : "a scalar",
           " of strings, got shape ", serialized.shape());
}

void escape_bytes(std::ostream& os, const std::string& s) {
  os << '"';
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      os << char(c);
    } else {
      char b[5];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      os << b;
    }
  }
  os << '"';
}

}  // namespace

ExampleBuilder& ExampleBuilder::set(const std::string& name, std::vector<float> values) {
  features_[name] = Value{2, std::move(values), {}, {}};
  return *this;
}
ExampleBuilder& ExampleBuilder::set(const std::string& name, std::vector<int64_t> values) {
  features_[name] = Value{3, {}, std::move(values), {}};
  return *this;
}
ExampleBuilder& ExampleBuilder::set(const std::string& name, std::vector<std::string> values) {
  features_[name] = Value{1, {}, {}, std::move(values)};
  return *this;
}

std::string ExampleBuilder::serialize() const {
  tensorflow::Example ex;
  auto& map = *ex.mutable_features()->mutable_feature();
  for (const auto& [name, v] : features_) {
    tensorflow::Feature& f = map[name];
    if (v.kind == 2)
      f.mutable_float_list()->mutable_value()->Add(v.floats.begin(), v.floats.end());
    else if (v.kind == 3)
      f.mutable_int64_list()->mutable_value()->Add(v.int64s.begin(), v.int64s.end());
    else
      for (const auto& b : v.bytes) f.mutable_bytes_list()->add_value(b);
    if (v.kind == 1 && v.bytes.empty()) f.mutable_bytes_list();  // an empty list keeps its kind
    if (v.kind == 2 && v.floats.empty()) f.mutable_float_list();
    if (v.kind == 3 && v.int64s.empty()) f.mutable_int64_list();
  }
  std::string out;
  {
    google::protobuf::io::StringOutputStream sos(&out);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);  // map entries sorted by key
    ex.SerializeToCodedStream(&cos);
  }
  return out;
}

std::string FeatureValues::to_string() const {
  std::ostringstream os;
  auto list = [&](const char* name, const auto& values, auto print) {
    os << name << " [";
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) os << ", ";
      print(values[i]);
    }
    os << "]";
  };
  switch (kind) {
    case Kind::Float: list("float_list", floats, [&](float v) { os << v; }); break;
    case Kind::Int64: list("int64_list", int64s, [&](int64_t v) { os << v; }); break;
    case Kind::Bytes: list("bytes_list", bytes, [&](const std::string& v) { escape_bytes(os, v); }); break;
    case Kind::None: os << "none"; break;
  }
  return os.str();
}

std::map<std::string, FeatureValues> read_example(std::string_view serialized) {
  tensorflow::Example ex;
  DF_CHECK(serialized.size() <= size_t(INT32_MAX) && ex.ParseFromArray(serialized.data(), int(serialized.size())),
           "[read_example] not a valid tf.train.Example (", serialized.size(), " bytes)");
  std::map<std::string, FeatureValues> out;
  for (const auto& [name, f] : ex.features().feature()) {
    FeatureValues v;
    switch (f.kind_case()) {
      case tensorflow::Feature::kBytesList:
        v.kind = FeatureValues::Kind::Bytes;
        v.bytes.assign(f.bytes_list().value().begin(), f.bytes_list().value().end());
        break;
      case tensorflow::Feature::kFloatList:
        v.kind = FeatureValues::Kind::Float;
        v.floats.assign(f.float_list().value().begin(), f.float_list().value().end());
        break;
      case tensorflow::Feature::kInt64List:
        v.kind = FeatureValues::Kind::Int64;
        v.int64s.assign(f.int64_list().value().begin(), f.int64_list().value().end());
        break;
      default: break;
    }
    out.emplace(name, std::move(v));
  }
  return out;
}

ParsedExamples parse_example(const Tensor& serialized, const std::map<std::string, FeatureSpec>& features) {
  check_serialized("parse_example", serialized, 1);
  return parse_batch("parse_example", serialized, serialized.dim(0), features);
}

ParsedExamples parse_single_example(const Tensor& serialized, const std::map<std::string, FeatureSpec>& features) {
  check_serialized("parse_single_example", serialized, 0);
  ParsedExamples p = parse_batch("parse_single_example", serialized, 1, features);
  for (auto& [name, t] : p.dense) {
    Shape s = t.shape();
    s.erase(0);
    t = t.view(s);
  }
  for (auto& [name, st] : p.sparse) {
    const int64_t n = st.indices.dim(0);
    std::vector<int64_t> pos(static_cast<size_t>(n));
    const int64_t* idx = st.indices.data<int64_t>();
    for (int64_t k = 0; k < n; ++k) pos[size_t(k)] = idx[2 * k + 1];
    st.indices = constant(pos, Shape{n, 1});
    st.dense_shape = constant(std::vector<int64_t>{st.dense_shape.data<int64_t>()[1]}, Shape{1});
  }
  return p;
}

Element ParsedExamples::to_element() const {
  std::map<std::string, Tensor> all(dense.begin(), dense.end());
  for (const auto& [name, st] : sparse) {
    all.emplace(name + "/indices", st.indices);
    all.emplace(name + "/values", st.values);
    all.emplace(name + "/dense_shape", st.dense_shape);
  }
  return Element::dict(std::vector<std::pair<std::string, Tensor>>(all.begin(), all.end()));
}

}  // namespace deepflow::data
