// SPDX-License-Identifier: Apache-2.0
// Normalization layers: BatchNormalization, LayerNormalization.
// Each is a class `<Name>Impl` with holder `<Name>` (layer.h): `layers::BatchNormalization()(x)`.
//
// Under a mixed policy (16-bit compute) both normalize in float32 with their float32
// weights and cast the result back to the compute dtype, as Keras does.
#pragma once

#include <string>
#include <vector>

#include "deepflow/keras/layer.h"

namespace deepflow::keras::layers {

struct BatchNormalizationOptions {
  /// The feature axis (kept); statistics are taken over every other axis.
  int64_t axis = -1;
  double momentum = 0.99;
  double epsilon = 1e-3;
  /// Add the trainable offset `beta`.
  bool center = true;
  /// Multiply by the trainable scale `gamma`.
  bool scale = true;
  InitializerPtr beta_initializer;             ///< null: Zeros
  InitializerPtr gamma_initializer;            ///< null: Ones
  InitializerPtr moving_mean_initializer;      ///< null: Zeros
  InitializerPtr moving_variance_initializer;  ///< null: Ones
  RegularizerPtr beta_regularizer, gamma_regularizer;
  std::string name;
};

// --- BatchNormalization --- x [..., c, ...] -> same shape (tf.keras.layers.BatchNormalization).
// training (and the layer trainable): normalizes with the batch mean and biased variance
// over every axis but `axis`, and updates
//   moving_mean     = moving_mean * momentum + mean * (1 - momentum)
//   moving_variance = moving_variance * momentum + variance * (1 - momentum)
// (Variable::assign: the update is a node of a traced step and runs on every call).
// Otherwise (or when frozen, as Keras): normalizes with the moving statistics.
// y = (x - mean) / sqrt(variance + epsilon) * gamma + beta.
class BatchNormalizationImpl : public Layer {
 public:
  explicit BatchNormalizationImpl(BatchNormalizationOptions options = {});
  void build(const Shape& input_shape) override;
  using Layer::build;
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "BatchNormalization"; }
  Config get_config() const override;
  const BatchNormalizationOptions& options() const { return options_; }
  /// Undefined when center (beta) or scale (gamma) is off.
  const Variable& gamma() const { return gamma_; }
  const Variable& beta() const { return beta_; }
  const Variable& moving_mean() const { return moving_mean_; }
  const Variable& moving_variance() const { return moving_variance_; }

 private:
  BatchNormalizationOptions options_;
  int64_t axis_ = -1;  // normalized against the built rank
  int rank_ = 0;
  Variable gamma_, beta_, moving_mean_, moving_variance_;
};
/// Spelled out (not DF_KERAS_LAYER) so braced options work: BatchNormalization({.momentum = 0.9}).
class BatchNormalization : public LayerHolder<BatchNormalizationImpl> {
 public:
  using LayerHolder<BatchNormalizationImpl>::LayerHolder;
  BatchNormalization(BatchNormalizationOptions options = {})  // NOLINT: options convert
      : LayerHolder(std::make_shared<BatchNormalizationImpl>(std::move(options))) {}
};

struct LayerNormalizationOptions {
  /// The axes normalized over (each sample's mean and variance); gamma and beta span them.
  std::vector<int64_t> axis = {-1};
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  InitializerPtr beta_initializer;   ///< null: Zeros
  InitializerPtr gamma_initializer;  ///< null: Ones
  RegularizerPtr beta_regularizer, gamma_regularizer;
  std::string name;
};

// --- LayerNormalization --- x -> same shape (tf.keras.layers.LayerNormalization):
// y = (x - mean) / sqrt(variance + epsilon) * gamma + beta with the mean and biased
// variance of each sample over `axis`; gamma and beta have shape [x.dim(a) for a in axis].
class LayerNormalizationImpl : public Layer {
 public:
  explicit LayerNormalizationImpl(LayerNormalizationOptions options = {});
  void build(const Shape& input_shape) override;
  using Layer::build;
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "LayerNormalization"; }
  Config get_config() const override;
  const Variable& gamma() const { return gamma_; }
  const Variable& beta() const { return beta_; }

 private:
  // options_.axis for an input of this shape: non-negative, ascending.
  std::vector<int64_t> axes_for(const Shape& shape) const;

  LayerNormalizationOptions options_;
  Shape param_shape_;  // the input's dims on the axes: gamma's and beta's shape
  Variable gamma_, beta_;
};
/// Spelled out so braced options work: LayerNormalization({.axis = {1, 2}}).
class LayerNormalization : public LayerHolder<LayerNormalizationImpl> {
 public:
  using LayerHolder<LayerNormalizationImpl>::LayerHolder;
  LayerNormalization(LayerNormalizationOptions options = {})  // NOLINT: options convert
      : LayerHolder(std::make_shared<LayerNormalizationImpl>(std::move(options))) {}
};

}  // namespace deepflow::keras::layers
