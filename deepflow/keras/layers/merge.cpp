// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/layers/merge.h"

#include <nlohmann/json.hpp>

#include "deepflow/core/error.h"
#include "deepflow/keras/serialization.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras::layers {
namespace {

std::string shapes_of(const std::vector<Shape>& shapes) {
  std::string s;
  for (const Shape& sh : shapes) s += (s.empty() ? "" : ", ") + sh.to_string();
  return s;
}

std::vector<Shape> shapes_of(const TensorList& xs) {
  std::vector<Shape> out;
  for (const Tensor& x : xs) out.push_back(x.shape());
  return out;
}

// Inputs must share one dtype (the ops do not promote); the message lists every input.
void check_dtypes(const std::string& layer, const TensorList& xs) {
  bool same = true;
  for (const Tensor& x : xs) {
    DF_CHECK(x.defined(), "[", layer, "] got an undefined input");
    same &= x.dtype() == xs[0].dtype();
  }
  if (same) return;
  std::string s;
  for (const Tensor& x : xs) s += (s.empty() ? "" : ", ") + std::string(dtype_name(x.dtype())) + x.shape().to_string();
  fail("[", layer, "] inputs must have the same dtype, got ", s);
}

}  // namespace

// --- elementwise merges ---

void MergeLayer::check(const std::vector<Shape>& shapes) const {
  // Keras 3 also takes a list of one; a merge of one input is almost always a mistake (and
  // the only way a single tensor reaches call()), so at least two as in Keras 2.
  DF_CHECK(shapes.size() >= 2, "[", name(), "] ", class_name(), " needs a list of at least 2 inputs, got ",
           shapes.size(), shapes.empty() ? "" : ": ", shapes_of(shapes));
  const int rank = shapes[0].rank();
  bool ok = true;
  for (const Shape& s : shapes) ok &= s.rank() == rank;
  for (int d = 0; ok && d < rank; ++d) {
    int64_t known = 1;  // the one size other than 1 (and unknown) allowed on dim d
    for (const Shape& s : shapes) {
      const int64_t n = s[d];
      if (n < 0 || n == 1) continue;
      ok &= known == 1 || known == n;
      known = n;
    }
  }
  DF_CHECK(ok, "[", name(), "] ", class_name(), " needs inputs of one rank whose dims are equal or 1, got ",
           shapes_of(shapes));
}

void MergeLayer::build(const std::vector<Shape>& input_shapes) { check(input_shapes); }

TensorList MergeLayer::call(const TensorList& inputs, bool) {
  check(shapes_of(inputs));
  check_dtypes(name(), inputs);
  return {merge(inputs)};
}

Tensor AddImpl::merge(const TensorList& xs) const {
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = y + xs[i];
  return y;
}

void SubtractImpl::check(const std::vector<Shape>& shapes) const {
  DF_CHECK(shapes.size() == 2, "[", name(), "] Subtract needs exactly 2 inputs, got ", shapes.size(),
           shapes.empty() ? "" : ": ", shapes_of(shapes));
  MergeLayer::check(shapes);
}

Tensor SubtractImpl::merge(const TensorList& xs) const { return xs[0] - xs[1]; }

Tensor MultiplyImpl::merge(const TensorList& xs) const {
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = y * xs[i];
  return y;
}

Tensor AverageImpl::merge(const TensorList& xs) const {
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = y + xs[i];
  return y / double(xs.size());
}

Tensor MaximumImpl::merge(const TensorList& xs) const {
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = maximum(y, xs[i]);
  return y;
}

Tensor MinimumImpl::merge(const TensorList& xs) const {
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = minimum(y, xs[i]);
  return y;
}

// --- Concatenate ---

void ConcatenateImpl::check(const std::vector<Shape>& shapes) const {
  DF_CHECK(shapes.size() >= 2, "[", name(), "] Concatenate needs a list of at least 2 inputs, got ", shapes.size(),
           shapes.empty() ? "" : ": ", shapes_of(shapes));
  const int rank = shapes[0].rank();
  DF_CHECK(axis_ >= -rank && axis_ < rank && rank > 0, "[", name(), "] axis ", axis_,
           " is out of range for inputs of rank ", rank, ": ", shapes_of(shapes));
  const int axis = int(axis_ < 0 ? axis_ + rank : axis_);
  bool ok = true;
  for (const Shape& s : shapes) ok &= s.rank() == rank;
  for (int d = 0; ok && d < rank; ++d) {
    if (d == axis) continue;
    int64_t known = -1;
    for (const Shape& s : shapes) {
      if (s[d] < 0) continue;
      ok &= known < 0 || known == s[d];
      known = s[d];
    }
  }
  DF_CHECK(ok, "[", name(), "] Concatenate needs inputs of one rank with equal dims except on axis ", axis_,
           ", got ", shapes_of(shapes));
}

void ConcatenateImpl::build(const std::vector<Shape>& input_shapes) { check(input_shapes); }

TensorList ConcatenateImpl::call(const TensorList& inputs, bool) {
  check(shapes_of(inputs));
  check_dtypes(name(), inputs);
  return {concat(inputs, axis_)};
}

Config ConcatenateImpl::get_config() const {
  Config c = Layer::get_config();
  c["axis"] = axis_;
  return c;
}

// --- registration (serialization.h) ---

namespace {

template <class Holder>
void register_merge(const char* cls) {
  register_layer(cls, [](const Config& c) -> LayerPtr { return Holder(serialization::name_of(c)); });
}

const bool kRegistered = [] {
  register_merge<Add>("Add");
  register_merge<Subtract>("Subtract");
  register_merge<Multiply>("Multiply");
  register_merge<Average>("Average");
  register_merge<Maximum>("Maximum");
  register_merge<Minimum>("Minimum");
  register_layer("Concatenate", [](const Config& c) -> LayerPtr {
    return Concatenate(serialization::value_or<int64_t>(c, "axis", -1), serialization::name_of(c));
  });
  return true;
}();

}  // namespace
}  // namespace deepflow::keras::layers
