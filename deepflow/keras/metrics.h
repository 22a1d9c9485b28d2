// SPDX-License-Identifier: Apache-2.0
// Metrics (tf.keras.metrics): stateful accumulators over batches.
//
//   auto acc = keras::metrics::SparseCategoricalAccuracy();
//   acc->update_state(labels, logits);     // eagerly or inside a traced step
//   double a = acc->result().item<double>();
//   acc->reset_state();
//
// State lives in Variables (totals and counts) updated with assign_add, so a traced
// train step updates its metrics in the graph; result() is computed from the
// variables (a float32 scalar, or a vector for per-threshold metrics).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "deepflow/core/tensor.h"
#include "deepflow/keras/config.h"
#include "deepflow/keras/losses.h"
#include "deepflow/ops/variable.h"

namespace deepflow::keras {

class Metric {
 public:
  explicit Metric(std::string name);
  virtual ~Metric() = default;
  Metric(const Metric&) = delete;
  Metric& operator=(const Metric&) = delete;
  /// Accumulates one batch; sample_weight (optional) weights each sample.
  virtual void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) = 0;
  /// The value so far (float32).
  virtual Tensor result() const = 0;
  /// Zeroes every state variable.
  virtual void reset_state();
  const std::string& name() const { return name_; }
  const std::vector<Variable>& variables() const { return variables_; }
  virtual std::string class_name() const = 0;
  virtual Config get_config() const;

 protected:
  /// A float32 (default) state variable filled with zeros, non-trainable.
  Variable add_variable(const std::string& name, const Shape& shape = {}, DType dtype = DType::Float32);

 private:
  std::string name_;
  std::vector<Variable> variables_;
};
using MetricPtr = std::shared_ptr<Metric>;

namespace metrics {

/// The weighted mean of the values given to update_state(values) (y_pred unused).
class Mean : public Metric {
 public:
  explicit Mean(std::string name = "mean");
  void update_state(const Tensor& values, const Tensor& unused = Tensor(), const Tensor& sample_weight = Tensor()) override;
  Tensor result() const override;
  std::string class_name() const override { return "Mean"; }

 private:
  Variable total_, count_;
};

/// The mean of a function of (y_true, y_pred) per sample (the base of the accuracies).
MetricPtr MeanMetricWrapper(std::string name, std::function<Tensor(const Tensor&, const Tensor&)> fn);

/// y_true == y_pred elementwise (after rounding nothing): exact match.
MetricPtr Accuracy(std::string name = "accuracy");
/// y_pred > threshold against y_true in {0, 1}.
MetricPtr BinaryAccuracy(std::string name = "binary_accuracy", double threshold = 0.5);
/// argmax(y_pred) == argmax(y_true) (one-hot targets).
MetricPtr CategoricalAccuracy(std::string name = "categorical_accuracy");
/// argmax(y_pred) == y_true (integer targets, a trailing 1 squeezed).
MetricPtr SparseCategoricalAccuracy(std::string name = "sparse_categorical_accuracy");
/// y_true (integer) among the k largest of y_pred.
MetricPtr SparseTopKCategoricalAccuracy(int k = 5, std::string name = "sparse_top_k_categorical_accuracy");
MetricPtr TopKCategoricalAccuracy(int k = 5, std::string name = "top_k_categorical_accuracy");
/// Binary (y_pred > threshold) precision and recall.
MetricPtr Precision(double threshold = 0.5, std::string name = "precision");
MetricPtr Recall(double threshold = 0.5, std::string name = "recall");
/// ROC AUC by Riemann sums over num_thresholds thresholds (Keras's "interpolation").
MetricPtr AUC(int num_thresholds = 200, std::string name = "auc");
/// The mean of a loss (what fit reports for "loss" and "mse" given as a metric).
MetricPtr MeanSquaredError(std::string name = "mean_squared_error");
MetricPtr MeanAbsoluteError(std::string name = "mean_absolute_error");

/// By Keras name ("accuracy"/"acc", "binary_accuracy", "categorical_accuracy",
/// "sparse_categorical_accuracy", "top_k_categorical_accuracy",
/// "sparse_top_k_categorical_accuracy", "precision", "recall", "auc", "mse", "mae");
/// throws "[metrics] unknown metric 'x'; known: ...". "accuracy" resolves against the
/// loss as Keras does: sparse for a sparse loss, binary for binary cross-entropy,
/// categorical for categorical cross-entropy, exact match otherwise (pass the loss).
MetricPtr get(const std::string& name, const Loss* loss = nullptr);

}  // namespace metrics
}  // namespace deepflow::keras
