// SPDX-License-Identifier: Apache-2.0
// tf.train.Example: building serialized examples and parsing batches of them into
// tensors (tf.io.parse_example / parse_single_example), on TensorFlow's wire format
// (proto/example.proto). Lives in the deepflow_proto library: link it to use these.
//
//   std::string ex = ExampleBuilder()
//                        .set("image", std::vector<float>(784, 0.f))
//                        .set("label", std::vector<int64_t>{7})
//                        .set("id", std::vector<std::string>{"a17"})
//                        .serialize();
//   ParsedExamples p = parse_example(batch_of_strings, {
//       {"image", FixedLenFeature{DType::Float32, {28, 28}}},
//       {"label", FixedLenFeature{DType::Int64, {}, scalar(0, DType::Int64)}},
//       {"tags", VarLenFeature{DType::String}}});
//   p.dense.at("image");          // float32 [batch, 28, 28]
//   p.sparse.at("tags").values;   // string [n]
//
// In a pipeline: ds.batch(32).map([&](const Element& e) {
//   return parse_example(e[0], features).to_element(); })
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "deepflow/core/tensor.h"
#include "deepflow/data/dataset.h"

namespace deepflow::data {

// --- building and reading single examples ---

/// Builds one tf.train.Example. Setting a name again replaces its values. The
/// overloads take vectors: write `std::vector<int64_t>{1, 2}` or `{1.f, 2.f}`
/// (a bare `{1, 2}` is ambiguous between float and int64 on purpose).
class ExampleBuilder {
 public:
  /// A float_list feature.
  ExampleBuilder& set(const std::string& name, std::vector<float> values);
  /// An int64_list feature.
  ExampleBuilder& set(const std::string& name, std::vector<int64_t> values);
  /// A bytes_list feature (any bytes, not only text).
  ExampleBuilder& set(const std::string& name, std::vector<std::string> values);
  /// The Example's wire bytes (what TensorFlow's SerializeToString gives, float and
  /// int64 lists packed). Map entries are written sorted by name, so equal builders
  /// give equal bytes.
  std::string serialize() const;

 private:
  struct Value {
    int kind = 0;  // 1 bytes, 2 float, 3 int64: Feature's field numbers
    std::vector<float> floats;
    std::vector<int64_t> int64s;
    std::vector<std::string> bytes;
  };
  std::map<std::string, Value> features_;
};

/// One feature of a parsed Example, as the proto holds it.
struct FeatureValues {
  enum class Kind { None, Bytes, Float, Int64 };  ///< None: a Feature with no list set
  Kind kind = Kind::None;
  std::vector<std::string> bytes;
  std::vector<float> floats;
  std::vector<int64_t> int64s;
  /// "float_list [1, 2.5]", "int64_list [7]", "bytes_list ["a\x00"]", "none".
  std::string to_string() const;
  friend bool operator==(const FeatureValues&, const FeatureValues&) = default;
};

/// Every feature of a serialized Example, by name (for tests and tools). Throws
/// "[read_example] not a valid tf.train.Example (N bytes)".
std::map<std::string, FeatureValues> read_example(std::string_view serialized);

// --- parsing into tensors ---

/// A feature with the same number of values in every example (tf.io.FixedLenFeature):
/// parsed to a dense tensor [batch, shape...]. dtype is Float32 (float_list), Int64
/// (int64_list) or String (bytes_list). default_value (undefined: required) fills
/// examples that lack the feature; it must have the shape's element count (any
/// shape, read row-major) or be a single value repeated.
struct FixedLenFeature {
  DType dtype = DType::Float32;
  Shape shape;
  Tensor default_value;
};

/// A feature with any number of values per example (tf.io.VarLenFeature): parsed to
/// a SparseTensor.
struct VarLenFeature {
  DType dtype = DType::Float32;
};

using FeatureSpec = std::variant<FixedLenFeature, VarLenFeature>;

/// tf.sparse.SparseTensor: values[i] sits at indices[i] in a tensor of dense_shape.
/// From parse_example: indices int64 [n, 2] (example, position in its list) in
/// row-major order, values [n], dense_shape int64 [2] = (batch, longest list).
/// parse_single_example drops the example column: [n, 1] and [1].
struct SparseTensor {
  Tensor indices;
  Tensor values;
  Tensor dense_shape;
};

struct ParsedExamples {
  std::map<std::string, Tensor> dense;         ///< FixedLenFeature results
  std::map<std::string, SparseTensor> sparse;  ///< VarLenFeature results
  /// A dict element: dense features by name, each sparse one as three components
  /// "<name>/indices", "<name>/values", "<name>/dense_shape"; names sorted.
  Element to_element() const;
};

/// tf.io.parse_example: `serialized` is a string tensor [batch] of Examples. Features
/// not in the spec are ignored. Errors name the feature and the example index:
///   "[parse_example] example 3 has no feature 'label' and its FixedLenFeature has no default_value"
///   "[parse_example] feature 'x' of example 0: expected 4 float32 values (shape [2,2]), got 3"
///   "[parse_example] feature 'x' of example 1 is an int64_list; the spec asks for float32 (a float_list)"
///   "[parse_example] example 2 is not a valid tf.train.Example (17 bytes)"
/// Packed and unpacked list encodings both parse.
ParsedExamples parse_example(const Tensor& serialized, const std::map<std::string, FeatureSpec>& features);

/// tf.io.parse_single_example: one Example (a string scalar); dense results have no
/// batch dimension. Errors as parse_example's with "[parse_single_example]".
ParsedExamples parse_single_example(const Tensor& serialized, const std::map<std::string, FeatureSpec>& features);

}  // namespace deepflow::data
