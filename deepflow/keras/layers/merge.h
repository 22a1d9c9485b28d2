// SPDX-License-Identifier: Apache-2.0
// Merge layers: Concatenate, Add, Subtract, Multiply, Average, Maximum, Minimum
// (tf.keras.layers). Each takes a list of inputs and returns one tensor:
//
//   Tensor y = layers::Add()({a, b, c});
//   Tensor z = layers::Concatenate(-1)({a, b});
//
// Elementwise merges need inputs of one dtype and rank whose dims are equal or 1
// (numpy broadcasting; unknown dims match anything).
#pragma once

#include <string>

#include "deepflow/keras/layer.h"

namespace deepflow::keras::layers {

/// The base of the elementwise merges: checks the input list, then folds merge() over it.
class MergeLayer : public Layer {
 public:
  explicit MergeLayer(std::string name = "") : Layer(std::move(name)) {}
  void build(const std::vector<Shape>& input_shapes) override;
  using Layer::build;
  TensorList call(const TensorList& inputs, bool training) override;
  using Layer::call;

 protected:
  /// The merged output of the (checked) inputs.
  virtual Tensor merge(const TensorList& inputs) const = 0;
  /// Checks the count, dtypes and shapes; errors name every input.
  virtual void check(const std::vector<Shape>& shapes) const;
};

// --- Add --- x1 + x2 + ...
class AddImpl : public MergeLayer {
 public:
  explicit AddImpl(std::string name = "") : MergeLayer(std::move(name)) {}
  std::string class_name() const override { return "Add"; }

 protected:
  Tensor merge(const TensorList& inputs) const override;
};
DF_KERAS_LAYER(Add);

// --- Subtract --- x1 - x2 (exactly two inputs).
class SubtractImpl : public MergeLayer {
 public:
  explicit SubtractImpl(std::string name = "") : MergeLayer(std::move(name)) {}
  std::string class_name() const override { return "Subtract"; }

 protected:
  Tensor merge(const TensorList& inputs) const override;
  void check(const std::vector<Shape>& shapes) const override;
};
DF_KERAS_LAYER(Subtract);

// --- Multiply --- x1 * x2 * ...
class MultiplyImpl : public MergeLayer {
 public:
  explicit MultiplyImpl(std::string name = "") : MergeLayer(std::move(name)) {}
  std::string class_name() const override { return "Multiply"; }

 protected:
  Tensor merge(const TensorList& inputs) const override;
};
DF_KERAS_LAYER(Multiply);

// --- Average --- (x1 + x2 + ...) / n
class AverageImpl : public MergeLayer {
 public:
  explicit AverageImpl(std::string name = "") : MergeLayer(std::move(name)) {}
  std::string class_name() const override { return "Average"; }

 protected:
  Tensor merge(const TensorList& inputs) const override;
};
DF_KERAS_LAYER(Average);

// --- Maximum --- elementwise max of the inputs.
class MaximumImpl : public MergeLayer {
 public:
  explicit MaximumImpl(std::string name = "") : MergeLayer(std::move(name)) {}
  std::string class_name() const override { return "Maximum"; }

 protected:
  Tensor merge(const TensorList& inputs) const override;
};
DF_KERAS_LAYER(Maximum);

// --- Minimum --- elementwise min of the inputs.
class MinimumImpl : public MergeLayer {
 public:
  explicit MinimumImpl(std::string name = "") : MergeLayer(std::move(name)) {}
  std::string class_name() const override { return "Minimum"; }

 protected:
  Tensor merge(const TensorList& inputs) const override;
};
DF_KERAS_LAYER(Minimum);

// --- Concatenate --- inputs of one rank and dtype, equal dims but on `axis` -> joined
// along `axis` (which may be negative; the batch axis 0 is allowed, as in Keras).
class ConcatenateImpl : public Layer {
 public:
  explicit ConcatenateImpl(int64_t axis = -1, std::string name = "") : Layer(std::move(name)), axis_(axis) {}
  void build(const std::vector<Shape>& input_shapes) override;
  using Layer::build;
  TensorList call(const TensorList& inputs, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "Concatenate"; }
  Config get_config() const override;
  int64_t axis() const { return axis_; }

 private:
  void check(const std::vector<Shape>& shapes) const;
  int64_t axis_;
};
DF_KERAS_LAYER(Concatenate);

}  // namespace deepflow::keras::layers
