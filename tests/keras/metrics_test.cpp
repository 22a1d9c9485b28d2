// SPDX-License-Identifier: Apache-2.0
// keras::metrics: the Keras docs' standalone examples, accumulation over several
// update_state calls and reset_state, traced updates matching eager ones, Keras's
// resolution of "accuracy", configs and error messages.
#include "deepflow/keras/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "deepflow/function/function.h"
#include "deepflow/keras/losses.h"
#include "deepflow/ops/ops.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
namespace M = metrics;

double result_of(const Metric& m) { return cast(m.result(), DType::Float64).item<double>(); }
Tensor f32(std::vector<float> v, const Shape& s) { return constant(v, s); }
Tensor vec(std::vector<float> v) { return constant(v); }

// Runs the docs' pattern: update, check, reset, update with sample_weight, check.
void expect_doc_example(Metric& m, const Tensor& y_true, const Tensor& y_pred, const Tensor& weights, double plain,
                        double weighted) {
  m.update_state(y_true, y_pred);
  EXPECT_NEAR(result_of(m), plain, 1e-4) << m.name();
  m.reset_state();
  EXPECT_EQ(result_of(m), 0.0) << m.name() << " after reset_state";
  m.update_state(y_true, y_pred, weights);
  EXPECT_NEAR(result_of(m), weighted, 1e-4) << m.name();
}

TEST(KerasMetrics, MeanAccumulatesAndResets) {
  M::Mean m;
  m.update_state(vec({1, 3, 5, 7}));
  EXPECT_NEAR(result_of(m), 4.0, 1e-6);
  m.reset_state();
  m.update_state(vec({1, 3, 5, 7}), Tensor(), vec({1, 1, 0, 0}));
  EXPECT_NEAR(result_of(m), 2.0, 1e-6);
  // Over several calls: the weighted mean of everything seen.
  m.update_state(vec({10}), Tensor(), vec({2}));
  EXPECT_NEAR(result_of(m), (1 + 3 + 20) / 4.0, 1e-6);
  m.update_state(scalar(4.0));  // a scalar counts as one sample
  EXPECT_NEAR(result_of(m), (24 + 4) / 5.0, 1e-6);
  // Rows are averaged to one value per sample.
  M::Mean rows;
  rows.update_state(f32({1, 3, 5, 7}, {2, 2}));
  EXPECT_NEAR(result_of(rows), 4.0, 1e-6);
  EXPECT_EQ(rows.variables().size(), 2u);
  EXPECT_FALSE(rows.variables()[0].trainable());
  EXPECT_EQ(cast(rows.variables()[1].value(), DType::Float64).item<double>(), 2.0);  // count
  // Nothing seen yet: 0, not NaN (divide_no_nan).
  EXPECT_EQ(result_of(M::Mean()), 0.0);
  EXPECT_EQ(M::Mean().result().dtype(), DType::Float32);
}

TEST(KerasMetrics, AccuracyDocExamples) {
  expect_doc_example(*M::Accuracy(), f32({1, 2, 3, 4}, {4, 1}), f32({0, 2, 3, 4}, {4, 1}), vec({1, 1, 0, 0}), 0.75,
                     0.5);
  expect_doc_example(*M::BinaryAccuracy(), f32({1, 1, 0, 0}, {4, 1}), f32({0.98f, 1, 0, 0.6f}, {4, 1}),
                     vec({1, 0, 0, 1}), 0.75, 0.5);
  expect_doc_example(*M::CategoricalAccuracy(), f32({0, 0, 1, 0, 1, 0}, {2, 3}),
                     f32({0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0}, {2, 3}), vec({0.7f, 0.3f}), 0.5, 0.3);
  expect_doc_example(*M::SparseCategoricalAccuracy(), f32({2, 1}, {2, 1}),
                     f32({0.1f, 0.6f, 0.3f, 0.05f, 0.95f, 0}, {2, 3}), vec({0.7f, 0.3f}), 0.5, 0.3);
  expect_doc_example(*M::TopKCategoricalAccuracy(1), f32({0, 0, 1, 0, 1, 0}, {2, 3}),
                     f32({0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0}, {2, 3}), vec({0.7f, 0.3f}), 0.5, 0.3);
  expect_doc_example(*M::SparseTopKCategoricalAccuracy(1), constant(std::vector<int32_t>{2, 1}),
                     f32({0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0}, {2, 3}), vec({0.7f, 0.3f}), 0.5, 0.3);
}

TEST(KerasMetrics, TopKCountsTiesAndK) {
  Tensor pred = f32({0.1f, 0.5f, 0.3f, 0.1f, 0.4f, 0.4f, 0.2f, 0}, {2, 4});
  Tensor labels = constant(std::vector<int64_t>{2, 1});
  auto acc = [&](int k) {
    MetricPtr m = M::SparseTopKCategoricalAccuracy(k);
    m->update_state(labels, pred);
    return result_of(*m);
  };
  // Row 0: class 2 is second; row 1: class 1 ties with class 0 for the top (ties count, as TF's in_top_k).
  EXPECT_NEAR(acc(1), 0.5, 1e-6);
  EXPECT_NEAR(acc(2), 1.0, 1e-6);
  MetricPtr five = M::SparseTopKCategoricalAccuracy();  // k = 5 > 4 classes: always in
  five->update_state(labels, pred);
  EXPECT_NEAR(result_of(*five), 1.0, 1e-6);
}

TEST(KerasMetrics, PrecisionRecallAucDocExamples) {
  expect_doc_example(*M::Precision(), vec({0, 1, 1, 1}), vec({1, 0, 1, 1}), vec({0, 0, 1, 0}), 2.0 / 3, 1.0);
  expect_doc_example(*M::Recall(), vec({0, 1, 1, 1}), vec({1, 0, 1, 1}), vec({0, 0, 1, 0}), 2.0 / 3, 1.0);
  expect_doc_example(*M::AUC(3), vec({0, 0, 1, 1}), vec({0, 0.5f, 0.3f, 0.9f}), vec({1, 0, 0, 1}), 0.75, 1.0);
  MetricPtr p = M::Precision();
  p->update_state(vec({0, 1, 1, 1}), vec({1, 0, 1, 1}));
  EXPECT_EQ(p->result().rank(), 0);
}

TEST(KerasMetrics, AucDefaultThresholds) {
  // Perfectly ranked predictions give 1, reversed ones 0, and a mix the share of
  // (positive, negative) pairs ordered correctly: 3 of 4 below.
  MetricPtr auc = M::AUC();
  auc->update_state(vec({0, 0, 1, 1}), vec({0.1f, 0.2f, 0.7f, 0.9f}));
  EXPECT_NEAR(result_of(*auc), 1.0, 1e-6);
  auc->reset_state();
  auc->update_state(vec({1, 1, 0, 0}), vec({0.1f, 0.2f, 0.7f, 0.9f}));
  EXPECT_NEAR(result_of(*auc), 0.0, 1e-6);
  auc->reset_state();
  auc->update_state(vec({0, 1}), vec({0.1f, 0.6f}));
  auc->update_state(vec({1, 0}), vec({0.3f, 0.5f}));  // across two calls
  EXPECT_NEAR(result_of(*auc), 0.75, 1e-6);
  EXPECT_EQ(auc->variables().size(), 4u);
  EXPECT_EQ(auc->variables()[0].shape(), Shape{200});
}

TEST(KerasMetrics, MeanErrorMetricsDocExamples) {
  Tensor t = f32({0, 1, 0, 0}, {2, 2}), p = f32({1, 1, 0, 0}, {2, 2});
  expect_doc_example(*M::MeanSquaredError(), t, p, vec({1, 0}), 0.25, 0.5);
  expect_doc_example(*M::MeanAbsoluteError(), t, p, vec({1, 0}), 0.25, 0.5);
}

TEST(KerasMetrics, AccumulatesOverBatchesThenResets) {
  MetricPtr acc = M::SparseCategoricalAccuracy();
  Tensor pred = f32({0.1f, 0.6f, 0.3f, 0.05f, 0.95f, 0}, {2, 3});  // argmax 1, 1
  acc->update_state(constant(std::vector<int32_t>{1, 1}), pred);   // 2 of 2
  acc->update_state(constant(std::vector<int32_t>{0, 2}), pred);   // 0 of 2
  acc->update_state(constant(std::vector<int32_t>{1}), slice(pred, {0, 0}, {1, -1}));  // 1 of 1
  EXPECT_NEAR(result_of(*acc), 3.0 / 5, 1e-6);
  acc->reset_state();
  EXPECT_EQ(result_of(*acc), 0.0);
  acc->update_state(constant(std::vector<int32_t>{0, 1}), pred);
  EXPECT_NEAR(result_of(*acc), 0.5, 1e-6);
  // 16-bit predictions are accepted.
  MetricPtr bin = M::BinaryAccuracy();
  bin->update_state(vec({1, 0}), cast(vec({0.7f, 0.2f}), DType::Float16));
  EXPECT_NEAR(result_of(*bin), 1.0, 1e-6);
}

// A traced step updating the metrics gives what eager updates give, batch after batch,
// with one trace for every batch size.
TEST(KerasMetrics, TracedUpdatesMatchEager) {
  std::vector<MetricPtr> traced = {M::SparseCategoricalAccuracy(), M::SparseTopKCategoricalAccuracy(2),
                                   M::AUC(), std::make_shared<M::Mean>()};
  std::vector<MetricPtr> eager = {M::SparseCategoricalAccuracy(), M::SparseTopKCategoricalAccuracy(2),
                                  M::AUC(), std::make_shared<M::Mean>()};
  auto update = [](std::vector<MetricPtr>& ms, const Tensor& y, const Tensor& x) {
    ms[0]->update_state(y, x);
    ms[1]->update_state(y, x);
    Tensor positive = cast(equal(y, zeros_like(y)), DType::Float32);
    ms[2]->update_state(positive, slice(softmax(x), {0, 0}, {-1, 1}));
    ms[3]->update_state(reduce_max(x, {1}), Tensor());
  };
  FunctionOptions opts;
  opts.input_signature = Signature{{DType::Int32, Shape{-1}}, {DType::Float32, Shape{-1, 4}}};
  Function step = function(
      [&](const Tensor& y, const Tensor& x) {
        update(traced, y, x);
        return TensorList{traced[0]->result()};
      },
      opts);
  for (int64_t batch : {3, 8, 5}) {
    Tensor y = cast(random_uniform({batch}, 0, 4, DType::Float32, 70 + batch), DType::Int32);
    Tensor x = random_normal({batch, 4}, 0, 1, DType::Float32, 80 + batch);
    TensorList out = step(y, x);
    update(eager, y, x);
    EXPECT_NEAR(cast(out[0], DType::Float64).item<double>(), result_of(*eager[0]), 1e-6);
    for (size_t i = 0; i < traced.size(); ++i)
      EXPECT_NEAR(result_of(*traced[i]), result_of(*eager[i]), 1e-6) << traced[i]->name() << " batch " << batch;
  }
  EXPECT_EQ(step.trace_count(), 1);
  EXPECT_GT(result_of(*traced[2]), 0.0);
  // reset_state works on metrics updated by the graph, and the graph keeps using them.
  for (auto& m : traced) m->reset_state();
  EXPECT_EQ(result_of(*traced[0]), 0.0);
  step(constant(std::vector<int32_t>{3}), f32({0, 0, 0, 1}, {1, 4}));
  EXPECT_NEAR(result_of(*traced[0]), 1.0, 1e-6);
}

TEST(KerasMetrics, GetResolvesAccuracyAgainstTheLoss) {
  LossPtr scce = losses::SparseCategoricalCrossentropy({.from_logits = true});
  LossPtr bce = losses::BinaryCrossentropy();
  LossPtr cce = losses::CategoricalCrossentropy();
  LossPtr mse = losses::MeanSquaredError();
  EXPECT_EQ(M::get("accuracy", scce.get())->class_name(), "SparseCategoricalAccuracy");
  EXPECT_EQ(M::get("acc", bce.get())->class_name(), "BinaryAccuracy");
  EXPECT_EQ(M::get("accuracy", cce.get())->class_name(), "CategoricalAccuracy");
  EXPECT_EQ(M::get("accuracy", mse.get())->class_name(), "Accuracy");
  EXPECT_EQ(M::get("accuracy")->class_name(), "Accuracy");
  // The name is what the user wrote (what fit logs).
  EXPECT_EQ(M::get("acc", scce.get())->name(), "acc");
  EXPECT_EQ(M::get("accuracy", scce.get())->name(), "accuracy");
  EXPECT_EQ(M::get("mse")->class_name(), "MeanSquaredError");
  EXPECT_EQ(M::get("mse")->name(), "mse");
  EXPECT_EQ(M::get("mae")->class_name(), "MeanAbsoluteError");
  EXPECT_EQ(M::get("auc")->class_name(), "AUC");
  EXPECT_EQ(M::get("precision")->class_name(), "Precision");
  EXPECT_EQ(M::get("recall")->class_name(), "Recall");
  EXPECT_EQ(M::get("sparse_top_k_categorical_accuracy")->get_config()["k"], 5);
  EXPECT_EQ(M::get("Precision")->name(), "precision");
  // The resolved metric works: sparse labels with logits.
  MetricPtr acc = M::get("accuracy", scce.get());
  acc->update_state(constant(std::vector<int32_t>{1, 0}), f32({-1, 2, 3, 0.5f}, {2, 2}));
  EXPECT_NEAR(result_of(*acc), 1.0, 1e-6);
}

TEST(KerasMetrics, Configs) {
  Config c = M::BinaryAccuracy("bin", 0.7)->get_config();
  EXPECT_EQ(c["name"], "bin");
  EXPECT_EQ(c["dtype"], "float32");
  EXPECT_DOUBLE_EQ(c["threshold"].get<double>(), 0.7);
  Config auc = M::AUC(50)->get_config();
  EXPECT_EQ(auc["num_thresholds"], 50);
  EXPECT_EQ(auc["curve"], "ROC");
  EXPECT_EQ(auc["summation_method"], "interpolation");
  EXPECT_DOUBLE_EQ(M::Recall(0.3)->get_config()["thresholds"].get<double>(), 0.3);
  EXPECT_EQ(M::TopKCategoricalAccuracy(3)->get_config()["k"], 3);
  MetricPtr custom = M::MeanMetricWrapper("neg_mean", [](const Tensor&, const Tensor& p) { return neg(p); });
  custom->update_state(Tensor(), vec({1, 2, 3}));
  custom->update_state(Tensor(), vec({4}));
  EXPECT_NEAR(result_of(*custom), -2.5, 1e-6);
  EXPECT_EQ(custom->name(), "neg_mean");
  EXPECT_THAT(error_of([] { M::Accuracy()->update_state(Tensor(), vec({1})); }),
              HasSubstr("[accuracy] needs both labels and predictions"));
}

TEST(KerasMetrics, Errors) {
  EXPECT_THAT(error_of([] { M::get("acuracy"); }),
              HasSubstr("[metrics] unknown metric 'acuracy'; known: accuracy, acc, binary_accuracy"));
  EXPECT_THAT(error_of([] { M::AUC(1); }), HasSubstr("[AUC] num_thresholds must be > 1, got 1"));
  EXPECT_THAT(error_of([] { M::Precision(1.5); }), HasSubstr("[Precision] threshold must be in [0, 1], got 1.5"));
  EXPECT_THAT(error_of([] { M::SparseTopKCategoricalAccuracy(0); }),
              HasSubstr("[SparseTopKCategoricalAccuracy] k must be >= 1, got 0"));
  EXPECT_THAT(error_of([] { M::SparseCategoricalAccuracy()->update_state(zeros({4, 2}), zeros({4, 3})); }),
              HasSubstr("[sparse_categorical_accuracy] labels [4,2] do not fit predictions [4,3]"));
  EXPECT_THAT(error_of([] { M::CategoricalAccuracy()->update_state(zeros({4, 2}), zeros({4, 3})); }),
              HasSubstr("[categorical_accuracy] labels [4,2] do not fit predictions [4,3]"));
  EXPECT_THAT(error_of([] { M::BinaryAccuracy()->update_state(zeros({4}), zeros({3})); }),
              HasSubstr("[binary_accuracy] labels [4] do not fit predictions [3]"));
  EXPECT_THAT(error_of([] { M::Recall()->update_state(zeros({4}), zeros({3})); }),
              HasSubstr("[recall] labels [4] do not fit predictions [3]"));
  EXPECT_THAT(error_of([] { M::Mean().update_state(zeros({4}), Tensor(), ones({3})); }),
              HasSubstr("[mean] sample_weight [3] does not fit values [4]"));
  EXPECT_THAT(error_of([] { M::AUC()->update_state(zeros({4}), zeros({4}), ones({2})); }),
              HasSubstr("[auc] sample_weight [2] does not fit predictions [4]"));
  EXPECT_THAT(error_of([] { M::MeanSquaredError()->update_state(zeros({2, 3}), zeros({2, 4})); }),
              HasSubstr("labels [2,3] do not fit predictions [2,4]"));
}

}  // namespace
}  // namespace deepflow::keras
