// SPDX-License-Identifier: Apache-2.0
// Core layers: InputLayer, Dense, Activation, Flatten, Reshape, Dropout.
// Each is a class `<Name>Impl` with holder `<Name>` (layer.h): `layers::Dense(64)(x)`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "deepflow/keras/layer.h"

namespace deepflow::keras::layers {

// --- InputLayer --- () -> the Keras tensor Input(shape); a Sequential's first layer fixes
// its input shape. Called on a tensor it passes it through (checking the shape).
class InputLayerImpl : public Layer {
 public:
  explicit InputLayerImpl(Shape shape, DType dtype = DType::Float32, std::string name = "");
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "InputLayer"; }
  Config get_config() const override;
  /// The Keras tensor [-1, shape...].
  const Tensor& output() const { return output_; }
  const Shape& shape() const { return shape_; }

 private:
  Shape shape_;
  DType dtype_;
  Tensor output_;
};
DF_KERAS_LAYER(InputLayer);

struct DenseOptions {
  /// activations.h name; "" for none.
  std::string activation;
  bool use_bias = true;
  InitializerPtr kernel_initializer;  ///< null: GlorotUniform
  InitializerPtr bias_initializer;    ///< null: Zeros
  RegularizerPtr kernel_regularizer, bias_regularizer;
  std::string name;
};

// --- Dense --- [..., d] -> [..., units]: activation(x kernel + bias), kernel [d, units].
class DenseImpl : public Layer {
 public:
  explicit DenseImpl(int64_t units, DenseOptions options = {});
  /// Keras's positional form: Dense(64, "relu").
  DenseImpl(int64_t units, const char* activation) : DenseImpl(units, DenseOptions{.activation = activation}) {}
  void build(const Shape& input_shape) override;
  using Layer::build;
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "Dense"; }
  Config get_config() const override;
  int64_t units() const { return units_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t units_;
  DenseOptions options_;
  Variable kernel_, bias_;
};
/// Spelled out (not DF_KERAS_LAYER) so braced options work: Dense(64, {.activation = "relu"}).
class Dense : public LayerHolder<DenseImpl> {
 public:
  using LayerHolder<DenseImpl>::LayerHolder;
  Dense(int64_t units, DenseOptions options = {}) : LayerHolder(std::make_shared<DenseImpl>(units, std::move(options))) {}
  Dense(int64_t units, const char* activation) : LayerHolder(std::make_shared<DenseImpl>(units, activation)) {}
};

// --- Activation --- x -> activation(x), same shape.
class ActivationImpl : public Layer {
 public:
  explicit ActivationImpl(std::string activation, std::string name = "");
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "Activation"; }
  Config get_config() const override;

 private:
  std::string activation_;
};
DF_KERAS_LAYER(Activation);

// --- Flatten --- [b, d1, d2, ...] -> [b, d1 * d2 * ...] (rank 1 -> [b, 1]).
class FlattenImpl : public Layer {
 public:
  explicit FlattenImpl(std::string name = "") : Layer(std::move(name)) {}
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "Flatten"; }
};
DF_KERAS_LAYER(Flatten);

// --- Reshape --- [b, ...] -> [b, target_shape...]; one target dim may be -1.
class ReshapeImpl : public Layer {
 public:
  explicit ReshapeImpl(Shape target_shape, std::string name = "");
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "Reshape"; }
  Config get_config() const override;

 private:
  Shape target_;
};
DF_KERAS_LAYER(Reshape);

// --- Dropout --- x -> same shape: in training, zeroes elements with probability `rate`
// and scales the rest by 1 / (1 - rate); identity otherwise (and when rate is 0).
class DropoutImpl : public Layer {
 public:
  explicit DropoutImpl(double rate, std::optional<int64_t> seed = std::nullopt, std::string name = "");
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "Dropout"; }
  Config get_config() const override;
  double rate() const { return rate_; }

 private:
  double rate_;
  std::optional<int64_t> seed_;
};
DF_KERAS_LAYER(Dropout);

}  // namespace deepflow::keras::layers
