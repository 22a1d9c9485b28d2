// SPDX-License-Identifier: Apache-2.0
// Losses (tf.keras.losses): per-sample values reduced to a scalar.
//
//   auto loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true});
//   Tensor l = (*loss)(labels, logits);   // mean over the batch
//
// call() gives one value per sample (the mean over the last axis where Keras takes
// it); operator() weights them by sample_weight and reduces: "sum_over_batch_size"
// (the default: sum / number of samples), "sum", or "none". Inputs in float16/bfloat16
// are computed in float32. Shape errors name the loss and both shapes:
// "[sparse_categorical_crossentropy] labels [32,1] do not fit predictions [32,5,10]".
#pragma once

#include <memory>
#include <string>

#include "deepflow/core/tensor.h"
#include "deepflow/keras/config.h"

namespace deepflow::keras {

enum class Reduction { SumOverBatchSize, Sum, None };

class Loss {
 public:
  Loss(std::string name, Reduction reduction);
  virtual ~Loss() = default;
  /// Per-sample losses, shape y_pred.shape minus the last axis (or as Keras defines it).
  virtual Tensor call(const Tensor& y_true, const Tensor& y_pred) const = 0;
  /// Weighted and reduced; sample_weight (optional) broadcasts against call()'s result.
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) const;
  const std::string& name() const { return name_; }
  Reduction reduction() const { return reduction_; }
  virtual std::string class_name() const = 0;
  virtual Config get_config() const;

 private:
  std::string name_;
  Reduction reduction_;
};
using LossPtr = std::shared_ptr<const Loss>;

namespace losses {

struct Options {
  Reduction reduction = Reduction::SumOverBatchSize;
  std::string name;  ///< empty: the snake_case default ("mean_squared_error", ...)
};
// Flat (no base struct) so designated initializers can set every field together.
struct CrossentropyOptions {
  bool from_logits = false;
  double label_smoothing = 0.0;  ///< not for the sparse loss
  int axis = -1;
  Reduction reduction = Reduction::SumOverBatchSize;
  std::string name;
  operator Options() const { return {reduction, name}; }  // NOLINT: the common part
};
struct HuberOptions {
  double delta = 1.0;
  Reduction reduction = Reduction::SumOverBatchSize;
  std::string name;
  operator Options() const { return {reduction, name}; }  // NOLINT: the common part
};

LossPtr MeanSquaredError(Options options = {});
LossPtr MeanAbsoluteError(Options options = {});
LossPtr Huber(HuberOptions options = {});
/// Targets in {0, 1}, predictions probabilities (or logits with from_logits).
LossPtr BinaryCrossentropy(CrossentropyOptions options = {});
/// One-hot (or soft) targets over the last axis.
LossPtr CategoricalCrossentropy(CrossentropyOptions options = {});
/// Integer class targets of shape y_pred.shape[:-1] (a trailing 1 is squeezed, as Keras).
LossPtr SparseCategoricalCrossentropy(CrossentropyOptions options = {});
/// sum(y_true * log(y_true / y_pred)) over the last axis, both clipped to [eps, 1].
LossPtr KLDivergence(Options options = {});

/// By Keras name: "mse", "mean_squared_error", "mae", "huber", "binary_crossentropy",
/// "categorical_crossentropy", "sparse_categorical_crossentropy", "kl_divergence"/"kld",
/// or the class name; throws "[losses] unknown loss 'x'; known: ...".
LossPtr get(const std::string& name);
Config serialize(const Loss& loss);
LossPtr deserialize(const Config& config);

}  // namespace losses
}  // namespace deepflow::keras
