// SPDX-License-Identifier: Apache-2.0
// Metrics (tf.keras.metrics). State lives in float32 Variables updated with assign_add,
// and every update is built from ops (no host reads), so a metric updates the same way
// eagerly and inside a traced train step. Formulas follow Keras 3
// (keras/src/metrics/{reduction_metrics,accuracy_metrics,confusion_metrics,metrics_utils}.py).
#include "deepflow/keras/metrics.h"
#include "deepflow/keras/loss_util.h"

#include <nlohmann/json.hpp>

#include <utility>

#include "deepflow/ops/ops.h"

namespace deepflow::keras {
namespace {

using detail::cast_to;
using detail::fits;
using detail::shapes_do_not_fit;
using detail::squeeze_or_expand;

constexpr double kEpsilon = 1e-7;  // keras.backend.epsilon()


// a / b, 0 where b == 0 (Keras's divide_no_nan).
Tensor divide_no_nan(const Tensor& a, const Tensor& b) {
  Tensor zero = equal(b, zeros_like(b));
  Tensor safe = where(zero, ones_like(b), b);
  return where(zero, zeros_like(a), a / safe);
}

Axes range_axes(int from, int to) {
  Axes axes;
  for (int i = from; i < to; ++i) axes.push_back(i);
  return axes;
}

// Float predictions in float32 (16-bit ones upcast, as the metric's dtype).
Tensor predictions_f32(const std::string& metric, const Tensor& y_pred) {
  DF_CHECK(y_pred.defined(), "[", metric, "] needs predictions");
  return cast_to(y_pred, DType::Float32);
}

// Integer class labels as float64 (exact for every int32 label), a trailing 1 squeezed;
// checked against y_pred's shape without its class dim.
Tensor sparse_labels(const std::string& metric, const Tensor& y_true, const Tensor& y_pred) {
  DF_CHECK(y_pred.rank() >= 1, "[", metric, "] predictions must have rank >= 1, got shape ", y_pred.shape());
  Tensor t = y_true;
  if (t.rank() == y_pred.rank() && t.dim(-1) == 1) t = squeeze(t, {-1});
  Shape batch = y_pred.shape();
  batch.erase(batch.rank() - 1);
  if (!t.shape().compatible_with(batch)) shapes_do_not_fit(metric, y_true, y_pred);
  return t;
}

// --- per-sample functions of the accuracies ---

Tensor accuracy_fn(const std::string& m, const Tensor& y_true, const Tensor& y_pred) {
  DF_CHECK(y_pred.defined(), "[", m, "] needs predictions");
  const bool half = y_pred.dtype() == DType::Float16 || y_pred.dtype() == DType::BFloat16;
  Tensor p = half ? cast(y_pred, DType::Float32) : y_pred;  // exact match: float64 and ints stay
  auto [t, p2] = squeeze_or_expand(cast_to(y_true, p.dtype()), p);
  if (!fits(t.shape(), p2.shape())) shapes_do_not_fit(m, y_true, y_pred);
  return cast(equal(t, p2), DType::Float32);
}

Tensor binary_accuracy_fn(const std::string& m, const Tensor& y_true, const Tensor& y_pred, double threshold) {
  Tensor p = predictions_f32(m, y_pred);
  auto [t, p2] = squeeze_or_expand(cast_to(y_true, DType::Float32), p);
  if (!fits(t.shape(), p2.shape())) shapes_do_not_fit(m, y_true, y_pred);
  Tensor predicted = cast(greater(p2, scalar_like(p2, threshold)), DType::Float32);
  return cast(equal(t, predicted), DType::Float32);
}

Tensor categorical_accuracy_fn(const std::string& m, const Tensor& y_true, const Tensor& y_pred) {
  if (!y_true.shape().compatible_with(y_pred.shape()) || y_pred.rank() < 1) shapes_do_not_fit(m, y_true, y_pred);
  return cast(equal(argmax(y_true, -1), argmax(y_pred, -1)), DType::Float32);
}

Tensor sparse_categorical_accuracy_fn(const std::string& m, const Tensor& y_true, const Tensor& y_pred) {
  Tensor t = cast_to(sparse_labels(m, y_true, y_pred), DType::Float64);
  return cast(equal(t, cast(argmax(y_pred, -1), DType::Float64)), DType::Float32);
}

// TensorFlow's in_top_k: the target is in the top k when fewer than k classes score
// strictly higher than it (so ties at the boundary count as in).
Tensor in_top_k(const std::string& m, const Tensor& targets, const Tensor& y_pred, int k) {
  Tensor p = predictions_f32(m, y_pred);
  const int64_t classes = p.dim(-1);
  DF_CHECK(classes >= 0, "[", m, "] needs a known number of classes, predictions are ", p.shape());
  Tensor mask = greater(one_hot(cast_to(targets, DType::Int32), classes), scalar(0.5f));
  Tensor target_score = reduce_sum(where(mask, p, zeros_like(p)), {-1}, true);
  Tensor higher = reduce_sum(cast(greater(p, target_score), DType::Float32), {-1});
  return cast(less(higher, scalar(double(k))), DType::Float32);
}

// Keras's MeanMetricWrapper: the weighted mean of fn(y_true, y_pred).
using MetricFn = std::function<Tensor(const Tensor&, const Tensor&)>;

class FunctionMetric : public metrics::Mean {
 public:
  FunctionMetric(std::string cls, std::string name, MetricFn fn, Config extra = Config::object())
      : Mean(std::move(name)), cls_(std::move(cls)), fn_(std::move(fn)), extra_(std::move(extra)) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override {
    // A user's MeanMetricWrapper function may ignore either argument; the built-ins need both.
    DF_CHECK(cls_ == "MeanMetricWrapper" || (y_true.defined() && y_pred.defined()), "[", name(),
             "] needs both labels and predictions");
    Mean::update_state(fn_(y_true, y_pred), Tensor(), sample_weight);
  }
  std::string class_name() const override { return cls_; }
  Config get_config() const override {
    Config c = Mean::get_config();
    for (auto& [k, v] : extra_.items()) c[k] = v;
    return c;
  }

 private:
  std::string cls_;
  MetricFn fn_;
  Config extra_;
};

// --- confusion-matrix metrics ---

struct Confusion {
  Tensor tp, fp, tn, fn;  // [num_thresholds] each
};

// Counts (weighted) true/false positives/negatives of `y_pred > threshold` for every
// threshold at once: predictions [1, N] against thresholds [T, 1], summed over N.
Confusion confusion(const std::string& m, const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight,
                    const Tensor& thresholds) {
  DF_CHECK(y_true.defined(), "[", m, "] needs labels");
  auto [p, t] = squeeze_or_expand(predictions_f32(m, y_pred), y_true);
  if (!p.shape().compatible_with(t.shape())) shapes_do_not_fit(m, y_true, y_pred);
  Tensor labels = reshape(not_equal(cast_to(t, DType::Float32), zeros_like(cast_to(t, DType::Float32))), {1, -1});
  Tensor pred_pos = greater(reshape(p, {1, -1}), reshape(thresholds, {-1, 1}));
  Tensor not_labels = logical_not(labels), pred_neg = logical_not(pred_pos);
  Tensor w;
  if (sample_weight.defined()) {
    auto [p2, w2] = squeeze_or_expand(p, cast_to(sample_weight, DType::Float32));
    while (w2.rank() > 0 && w2.rank() < p2.rank()) w2 = expand_dims(w2, -1);
    DF_CHECK(w2.rank() == 0 || fits(w2.shape(), p2.shape()), "[", m, "] sample_weight ", sample_weight.shape(),
             " does not fit predictions ", y_pred.shape());
    w = reshape(broadcast_like(w2, p2), {1, -1});
  }
  auto count = [&](const Tensor& a, const Tensor& b) {
    Tensor hits = cast(logical_and(a, b), DType::Float32);
    if (w.defined()) hits = hits * w;
    return reduce_sum(hits, {1});
  };
  return {count(labels, pred_pos), count(not_labels, pred_pos), count(not_labels, pred_neg), count(labels, pred_neg)};
}

// Precision (tp / (tp + fp)) or recall (tp / (tp + fn)) at one threshold.
class ThresholdMetric : public Metric {
 public:
  ThresholdMetric(bool precision, double threshold, std::string name)
      : Metric(std::move(name)), precision_(precision), threshold_(threshold) {
    DF_CHECK(threshold >= 0 && threshold <= 1, "[", precision ? "Precision" : "Recall",
             "] threshold must be in [0, 1], got ", threshold);
    tp_ = add_variable("true_positives", {1});
    other_ = add_variable(precision ? "false_positives" : "false_negatives", {1});
  }
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override {
    Confusion c = confusion(name(), y_true, y_pred, sample_weight, constant({float(threshold_)}));
    tp_.assign_add(c.tp);
    other_.assign_add(precision_ ? c.fp : c.fn);
  }
  Tensor result() const override {
    Tensor tp = tp_.value();
    return reshape(divide_no_nan(tp, tp + other_.value()), Shape{});
  }
  std::string class_name() const override { return precision_ ? "Precision" : "Recall"; }
  Config get_config() const override {
    Config c = Metric::get_config();
    c["thresholds"] = threshold_;
    c["top_k"] = nullptr;
    c["class_id"] = nullptr;
    return c;
  }

 private:
  bool precision_;
  double threshold_;
  Variable tp_, other_;
};

// ROC AUC by the trapezoid ("interpolation") Riemann sum over num_thresholds thresholds.
class AUCMetric : public Metric {
 public:
  AUCMetric(int num_thresholds, std::string name) : Metric(std::move(name)), n_(num_thresholds) {
    DF_CHECK(num_thresholds > 1, "[AUC] num_thresholds must be > 1, got ", num_thresholds);
    // Keras: i / (n - 1) inside, with -eps and 1 + eps at the ends so 0 and 1 are counted.
    std::vector<float> th(static_cast<size_t>(n_));
    th[0] = float(0.0 - kEpsilon);
    for (int i = 1; i + 1 < n_; ++i) th[size_t(i)] = float(double(i) / (n_ - 1));
    th[size_t(n_ - 1)] = float(1.0 + kEpsilon);
    thresholds_ = constant(th);
    tp_ = add_variable("true_positives", {n_});
    fp_ = add_variable("false_positives", {n_});
    tn_ = add_variable("true_negatives", {n_});
    fn_ = add_variable("false_negatives", {n_});
  }
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override {
    Confusion c = confusion(name(), y_true, y_pred, sample_weight, thresholds_);
    tp_.assign_add(c.tp);
    fp_.assign_add(c.fp);
    tn_.assign_add(c.tn);
    fn_.assign_add(c.fn);
  }
  Tensor result() const override {
    Tensor tp = tp_.value(), fp = fp_.value();
    Tensor recall = divide_no_nan(tp, tp + fn_.value());
    Tensor fp_rate = divide_no_nan(fp, fp + tn_.value());
    auto head = [&](const Tensor& x) { return slice(x, {0}, {n_ - 1}); };
    auto tail = [&](const Tensor& x) { return slice(x, {1}, {n_ - 1}); };
    Tensor heights = (head(recall) + tail(recall)) * 0.5;
    return reduce_sum((head(fp_rate) - tail(fp_rate)) * heights);
  }
  std::string class_name() const override { return "AUC"; }
  Config get_config() const override {
    Config c = Metric::get_config();
    c["num_thresholds"] = n_;
    c["curve"] = "ROC";
    c["summation_method"] = "interpolation";
    c["multi_label"] = false;
    c["num_labels"] = nullptr;
    c["label_weights"] = nullptr;
    c["from_logits"] = false;
    return c;
  }

 private:
  int n_;
  Tensor thresholds_;
  Variable tp_, fp_, tn_, fn_;
};

}  // namespace

// --- Metric ---

Metric::Metric(std::string name) : name_(std::move(name)) {}

void Metric::reset_state() {
  for (Variable& v : variables_) v.assign(zeros(v.shape(), v.dtype()));
}

Config Metric::get_config() const { return {{"name", name_}, {"dtype", "float32"}}; }

Variable Metric::add_variable(const std::string& name, const Shape& shape, DType dtype) {
  Variable v(zeros(shape, dtype), name, /*trainable=*/false);
  variables_.push_back(v);
  return v;
}

namespace metrics {

// --- Mean ---

Mean::Mean(std::string name) : Metric(std::move(name)) {
  total_ = add_variable("total");
  count_ = add_variable("count");
}

// Keras's reduce_to_samplewise_values: values are averaged down to the weights' rank,
// weighted, then averaged down to one value per sample.
void Mean::update_state(const Tensor& values, const Tensor& /*unused*/, const Tensor& sample_weight) {
  DF_CHECK(values.defined(), "[", name(), "] needs values");
  Tensor v = cast_to(values, DType::Float32);
  Tensor w;
  if (sample_weight.defined()) {
    auto [v2, w2] = squeeze_or_expand(v, cast_to(sample_weight, DType::Float32));
    DF_CHECK(w2.rank() <= v2.rank() && fits(w2.shape(), Shape(v2.shape().begin(), v2.shape().begin() + w2.rank())),
             "[", name(), "] sample_weight ", sample_weight.shape(), " does not fit values ", values.shape());
    if (v2.rank() > w2.rank()) v2 = reduce_mean(v2, range_axes(w2.rank(), v2.rank()));
    w2 = broadcast_like(w2, v2);
    v = v2 * w2;
    w = w2.rank() > 1 ? reduce_mean(w2, range_axes(1, w2.rank())) : w2;
  }
  if (v.rank() > 1) v = reduce_mean(v, range_axes(1, v.rank()));
  total_.assign_add(reduce_sum(v));
  if (w.defined()) count_.assign_add(reduce_sum(w));
  else if (v.rank() >= 1) count_.assign_add(cast(size(v), DType::Float32));
  else count_.assign_add(scalar(1.0));
}

Tensor Mean::result() const { return divide_no_nan(total_.value(), count_.value()); }

MetricPtr MeanMetricWrapper(std::string name, std::function<Tensor(const Tensor&, const Tensor&)> fn) {
  DF_CHECK(fn != nullptr, "[MeanMetricWrapper] '", name, "' needs a function");
  return std::make_shared<FunctionMetric>("MeanMetricWrapper", std::move(name), std::move(fn));
}

MetricPtr Accuracy(std::string name) {
  auto fn = [](const Tensor& t, const Tensor& p) { return accuracy_fn("accuracy", t, p); };
  return std::make_shared<FunctionMetric>("Accuracy", std::move(name), fn);
}

MetricPtr BinaryAccuracy(std::string name, double threshold) {
  auto fn = [threshold](const Tensor& t, const Tensor& p) {
    return binary_accuracy_fn("binary_accuracy", t, p, threshold);
  };
  return std::make_shared<FunctionMetric>("BinaryAccuracy", std::move(name), fn, Config{{"threshold", threshold}});
}

MetricPtr CategoricalAccuracy(std::string name) {
  auto fn = [](const Tensor& t, const Tensor& p) { return categorical_accuracy_fn("categorical_accuracy", t, p); };
  return std::make_shared<FunctionMetric>("CategoricalAccuracy", std::move(name), fn);
}

MetricPtr SparseCategoricalAccuracy(std::string name) {
  auto fn = [](const Tensor& t, const Tensor& p) {
    return sparse_categorical_accuracy_fn("sparse_categorical_accuracy", t, p);
  };
  return std::make_shared<FunctionMetric>("SparseCategoricalAccuracy", std::move(name), fn);
}

MetricPtr SparseTopKCategoricalAccuracy(int k, std::string name) {
  DF_CHECK(k >= 1, "[SparseTopKCategoricalAccuracy] k must be >= 1, got ", k);
  auto fn = [k](const Tensor& t, const Tensor& p) {
    const char* m = "sparse_top_k_categorical_accuracy";
    return in_top_k(m, sparse_labels(m, t, p), p, k);
  };
  return std::make_shared<FunctionMetric>("SparseTopKCategoricalAccuracy", std::move(name), fn, Config{{"k", k}});
}

MetricPtr TopKCategoricalAccuracy(int k, std::string name) {
  DF_CHECK(k >= 1, "[TopKCategoricalAccuracy] k must be >= 1, got ", k);
  auto fn = [k](const Tensor& t, const Tensor& p) {
    const char* m = "top_k_categorical_accuracy";
    if (!t.shape().compatible_with(p.shape()) || p.rank() < 1) shapes_do_not_fit(m, t, p);
    return in_top_k(m, argmax(t, -1, DType::Int32), p, k);
  };
  return std::make_shared<FunctionMetric>("TopKCategoricalAccuracy", std::move(name), fn, Config{{"k", k}});
}

MetricPtr Precision(double threshold, std::string name) {
  return std::make_shared<ThresholdMetric>(true, threshold, std::move(name));
}

MetricPtr Recall(double threshold, std::string name) {
  return std::make_shared<ThresholdMetric>(false, threshold, std::move(name));
}

MetricPtr AUC(int num_thresholds, std::string name) {
  return std::make_shared<AUCMetric>(num_thresholds, std::move(name));
}

MetricPtr MeanSquaredError(std::string name) {
  LossPtr loss = losses::MeanSquaredError({.reduction = Reduction::None});
  auto fn = [loss](const Tensor& t, const Tensor& p) { return loss->call(t, p); };
  return std::make_shared<FunctionMetric>("MeanSquaredError", std::move(name), fn);
}

MetricPtr MeanAbsoluteError(std::string name) {
  LossPtr loss = losses::MeanAbsoluteError({.reduction = Reduction::None});
  auto fn = [loss](const Tensor& t, const Tensor& p) { return loss->call(t, p); };
  return std::make_shared<FunctionMetric>("MeanAbsoluteError", std::move(name), fn);
}

MetricPtr get(const std::string& name, const Loss* loss) {
  // Keras keeps the name the user wrote ("acc" logs as "acc").
  if (name == "accuracy" || name == "acc") {
    const std::string cls = loss ? loss->class_name() : "";
    if (cls == "SparseCategoricalCrossentropy") return SparseCategoricalAccuracy(name);
    if (cls == "BinaryCrossentropy") return BinaryAccuracy(name);
    if (cls == "CategoricalCrossentropy") return CategoricalAccuracy(name);
    return Accuracy(name);
  }
  if (name == "binary_accuracy") return BinaryAccuracy(name);
  if (name == "categorical_accuracy") return CategoricalAccuracy(name);
  if (name == "sparse_categorical_accuracy") return SparseCategoricalAccuracy(name);
  if (name == "top_k_categorical_accuracy") return TopKCategoricalAccuracy(5, name);
  if (name == "sparse_top_k_categorical_accuracy") return SparseTopKCategoricalAccuracy(5, name);
  if (name == "precision") return Precision(0.5, name);
  if (name == "recall") return Recall(0.5, name);
  if (name == "auc") return AUC(200, name);
  if (name == "mse" || name == "mean_squared_error") return MeanSquaredError(name);
  if (name == "mae" || name == "mean_absolute_error") return MeanAbsoluteError(name);
  // Class names give the metric under its default name.
  if (name == "Accuracy") return Accuracy();
  if (name == "BinaryAccuracy") return BinaryAccuracy();
  if (name == "CategoricalAccuracy") return CategoricalAccuracy();
  if (name == "SparseCategoricalAccuracy") return SparseCategoricalAccuracy();
  if (name == "TopKCategoricalAccuracy") return TopKCategoricalAccuracy();
  if (name == "SparseTopKCategoricalAccuracy") return SparseTopKCategoricalAccuracy();
  if (name == "Precision") return Precision();
  if (name == "Recall") return Recall();
  if (name == "AUC") return AUC();
  if (name == "MeanSquaredError") return MeanSquaredError();
  if (name == "MeanAbsoluteError") return MeanAbsoluteError();
  fail("[metrics] unknown metric '", name,
       "'; known: accuracy, acc, binary_accuracy, categorical_accuracy, sparse_categorical_accuracy, "
       "top_k_categorical_accuracy, sparse_top_k_categorical_accuracy, precision, recall, auc, mse, "
       "mean_squared_error, mae, mean_absolute_error (or the class names)");
}

}  // namespace metrics
}  // namespace deepflow::keras
