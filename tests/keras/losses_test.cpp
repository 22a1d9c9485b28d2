// SPDX-License-Identifier: Apache-2.0
// keras::losses: the Keras docs' standalone examples, sample weights and reductions,
// from_logits against the probability form, label smoothing, float64 gradient checks,
// traced use with an unknown batch dim, mixed precision, configs and error messages.
#include "deepflow/keras/losses.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "deepflow/autodiff/gradcheck.h"
#include "deepflow/autodiff/tape.h"
#include "deepflow/function/function.h"
#include "deepflow/ops/ops.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::expect_near;
namespace L = losses;

double val(const Tensor& t) { return cast(t, DType::Float64).item<double>(); }
Tensor f32(std::vector<float> v, const Shape& s) { return constant(v, s); }
Tensor f64(std::vector<double> v, const Shape& s) { return constant(v, s, DType::Float64); }

// The docs' inputs: y_true [[0,1],[0,0]] with y_pred [[0.6,0.4],[0.4,0.6]] (or [[1,1],[1,0]]).
Tensor doc_true() { return f32({0, 1, 0, 0}, {2, 2}); }
Tensor doc_pred() { return f32({0.6f, 0.4f, 0.4f, 0.6f}, {2, 2}); }
// The categorical docs' inputs.
Tensor cat_true() { return f32({0, 1, 0, 0, 0, 1}, {2, 3}); }
Tensor cat_pred() { return f32({0.05f, 0.95f, 0, 0.1f, 0.8f, 0.1f}, {2, 3}); }

// Checks a loss against the docs' four numbers: default, sample_weight, "sum", "none".
void expect_doc_example(const std::function<LossPtr(Reduction)>& make, const Tensor& y_true, const Tensor& y_pred,
                        std::vector<float> weights, double mean, double weighted, double sum,
                        std::vector<float> none, double tol = 1e-3) {
  LossPtr loss = make(Reduction::SumOverBatchSize);
  Tensor l = (*loss)(y_true, y_pred);
  EXPECT_EQ(l.rank(), 0);
  EXPECT_EQ(l.dtype(), DType::Float32);
  EXPECT_NEAR(val(l), mean, tol) << loss->name();
  EXPECT_NEAR(val((*loss)(y_true, y_pred, constant(weights))), weighted, tol) << loss->name();
  EXPECT_NEAR(val((*make(Reduction::Sum))(y_true, y_pred)), sum, tol) << loss->name();
  Tensor per = (*make(Reduction::None))(y_true, y_pred);
  ASSERT_EQ(per.shape(), Shape{int64_t(none.size())});
  expect_near(per, constant(none), tol);
}

TEST(KerasLosses, MeanSquaredErrorDocExample) {
  expect_doc_example([](Reduction r) { return L::MeanSquaredError({.reduction = r}); }, doc_true(),
                     f32({1, 1, 1, 0}, {2, 2}), {0.7f, 0.3f}, 0.5, 0.25, 1.0, {0.5f, 0.5f});
}

TEST(KerasLosses, MeanAbsoluteErrorDocExample) {
  expect_doc_example([](Reduction r) { return L::MeanAbsoluteError({.reduction = r}); }, doc_true(),
                     f32({1, 1, 1, 0}, {2, 2}), {0.7f, 0.3f}, 0.5, 0.25, 1.0, {0.5f, 0.5f});
}

TEST(KerasLosses, HuberDocExample) {
  expect_doc_example([](Reduction r) { return L::Huber({.reduction = r}); }, doc_true(), doc_pred(), {1, 0},
                     0.155, 0.09, 0.31, {0.18f, 0.13f});
  // Beyond delta the loss is linear: |e| = 2 with delta 1 gives 2 - 0.5.
  EXPECT_NEAR(val((*L::Huber())(f32({0}, {1}), f32({2}, {1}))), 1.5, 1e-6);
  EXPECT_NEAR(val((*L::Huber({.delta = 3}))(f32({0}, {1}), f32({2}, {1}))), 2.0, 1e-6);
}

TEST(KerasLosses, BinaryCrossentropyDocExamples) {
  expect_doc_example([](Reduction r) { return L::BinaryCrossentropy({.reduction = r}); }, doc_true(), doc_pred(),
                     {1, 0}, 0.815, 0.458, 1.630, {0.916f, 0.714f});
  Tensor logits = f32({-18.6f, 0.51f, 2.94f, -12.8f}, {2, 2});
  expect_doc_example(
      [](Reduction r) { return L::BinaryCrossentropy({.from_logits = true, .reduction = r}); }, doc_true(),
      logits, {0.8f, 0.2f}, 0.865, 0.243, 1.730, {0.235f, 1.496f});
  // One sample of four values (rank-1 inputs give a scalar per-sample loss).
  LossPtr bce = L::BinaryCrossentropy({.from_logits = true});
  EXPECT_NEAR(val((*bce)(f32({0, 1, 0, 0}, {4}), reshape(logits, {4}))), 0.865, 1e-3);
}

TEST(KerasLosses, CategoricalCrossentropyDocExample) {
  expect_doc_example([](Reduction r) { return L::CategoricalCrossentropy({.reduction = r}); }, cat_true(),
                     cat_pred(), {0.3f, 0.7f}, 1.177, 0.814, 2.354, {0.0513f, 2.303f});
}

TEST(KerasLosses, SparseCategoricalCrossentropyDocExample) {
  expect_doc_example([](Reduction r) { return L::SparseCategoricalCrossentropy({.reduction = r}); },
                     constant(std::vector<int32_t>{1, 2}), cat_pred(), {0.3f, 0.7f}, 1.177, 0.814, 2.354,
                     {0.0513f, 2.303f});
}

TEST(KerasLosses, KLDivergenceDocExample) {
  expect_doc_example([](Reduction r) { return L::KLDivergence({.reduction = r}); }, doc_true(), doc_pred(),
                     {0.8f, 0.2f}, 0.458, 0.366, 0.916, {0.916f, -3.08e-06f});
}

TEST(KerasLosses, SparseLabelsAnyIntegerDtypeAndTrailingOne) {
  LossPtr loss = L::SparseCategoricalCrossentropy();
  const double want = 1.177;
  EXPECT_NEAR(val((*loss)(constant(std::vector<int64_t>{1, 2}), cat_pred())), want, 1e-3);
  EXPECT_NEAR(val((*loss)(constant(std::vector<uint8_t>{1, 2}), cat_pred())), want, 1e-3);
  EXPECT_NEAR(val((*loss)(f32({1, 2}, {2}), cat_pred())), want, 1e-3);
  EXPECT_NEAR(val((*loss)(f32({1, 2}, {2, 1}), cat_pred())), want, 1e-3);
  EXPECT_NEAR(val((*loss)(constant(std::vector<int32_t>{1, 2}, {2, 1}), cat_pred())), want, 1e-3);
}

TEST(KerasLosses, SampleWeightShapesAndReductions) {
  LossPtr mse = L::MeanSquaredError();
  Tensor t = doc_true(), p = f32({1, 1, 1, 0}, {2, 2});  // per-sample [0.5, 0.5]
  EXPECT_NEAR(val((*mse)(t, p, f32({0.7f, 0.3f}, {2, 1}))), 0.25, 1e-6);  // [B,1] squeezed
  EXPECT_NEAR(val((*mse)(t, p, scalar(2.0))), 1.0, 1e-6);                  // scalar: scales
  // sum_over_batch_size divides by the number of per-sample values, weighted or not:
  // zero weights still count (Keras).
  EXPECT_NEAR(val((*mse)(t, p, f32({1, 0}, {2}))), 0.25, 1e-6);
  // Per-sample losses of rank 2 ([2,3] from [2,3,4] inputs): per-row weights broadcast
  // over the trailing dim, and the mean divides by all 6 values.
  Tensor yt = random_uniform({2, 3, 4}, 0, 1, DType::Float32, 3);
  Tensor yp = random_uniform({2, 3, 4}, 0, 1, DType::Float32, 4);
  Tensor per = (*L::MeanSquaredError({.reduction = Reduction::None}))(yt, yp);
  ASSERT_EQ(per.shape(), (Shape{2, 3}));
  EXPECT_NEAR(val((*mse)(yt, yp)), val(reduce_mean(per)), 1e-6);
  EXPECT_NEAR(val((*L::MeanSquaredError({.reduction = Reduction::Sum}))(yt, yp)), val(reduce_sum(per)), 1e-5);
  Tensor w = f32({2, 0}, {2});
  Tensor want = reduce_sum(per * f32({2, 0}, {2, 1})) / 6.0;
  EXPECT_NEAR(val((*mse)(yt, yp, w)), val(want), 1e-6);
  // Labels [B] against predictions [B,1] (a regression model's output).
  EXPECT_NEAR(val((*mse)(f32({1, 2}, {2}), f32({2, 4}, {2, 1}))), 2.5, 1e-6);
}

TEST(KerasLosses, LabelSmoothing) {
  // Binary: targets squeezed towards 0.5: t * 0.8 + 0.1.
  LossPtr bce = L::BinaryCrossentropy({.label_smoothing = 0.2});
  const double t[4] = {0.1, 0.9, 0.1, 0.1}, p[4] = {0.6, 0.4, 0.4, 0.6};
  double want = 0;
  for (int i = 0; i < 4; ++i) want += -(t[i] * std::log(p[i]) + (1 - t[i]) * std::log(1 - p[i])) / 4;
  EXPECT_NEAR(val((*bce)(doc_true(), doc_pred())), want, 1e-5);
  // Categorical: t * (1 - ls) + ls / num_classes.
  LossPtr cce = L::CategoricalCrossentropy({.label_smoothing = 0.3});
  const double q[2][3] = {{0.05, 0.95, 1e-7}, {0.1, 0.8, 0.1}};
  const double y[2][3] = {{0, 1, 0}, {0, 0, 1}};
  double want_c = 0;
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < 3; ++c) want_c += -(y[b][c] * 0.7 + 0.1) * std::log(q[b][c]) / 2;
  EXPECT_NEAR(val((*cce)(cat_true(), cat_pred())), want_c, 1e-4);
  // from_logits smooths the same way.
  Tensor logits = f32({1, -2, 0.5f, 3, 0, -1}, {2, 3});
  LossPtr cce_logits = L::CategoricalCrossentropy({.from_logits = true, .label_smoothing = 0.3});
  EXPECT_NEAR(val((*cce_logits)(cat_true(), logits)), val((*cce)(cat_true(), softmax(logits))), 1e-5);
}

TEST(KerasLosses, FromLogitsEqualsProbabilities) {
  Tensor logits = random_normal({4, 5}, 0, 2, DType::Float64, 7);
  Tensor onehot = one_hot(constant(std::vector<int32_t>{0, 3, 4, 1}), 5, 1, 0, -1, DType::Float64);
  Tensor labels = constant(std::vector<int32_t>{0, 3, 4, 1});
  auto same = [](const Tensor& a, const Tensor& b) { EXPECT_NEAR(val(a), val(b), 1e-9); };
  same((*L::CategoricalCrossentropy({.from_logits = true}))(onehot, logits),
       (*L::CategoricalCrossentropy())(onehot, softmax(logits)));
  same((*L::SparseCategoricalCrossentropy({.from_logits = true}))(labels, logits),
       (*L::SparseCategoricalCrossentropy())(labels, softmax(logits)));
  Tensor bin = cast(greater(random_uniform({4, 5}, 0, 1, DType::Float64, 8), scalar(0.5, DType::Float64)),
                    DType::Float64);
  same((*L::BinaryCrossentropy({.from_logits = true}))(bin, logits), (*L::BinaryCrossentropy())(bin, sigmoid(logits)));
  // CategoricalCrossentropy over axis 0 equals axis -1 on the transposed inputs.
  same((*L::CategoricalCrossentropy({.from_logits = true, .axis = 0}))(transpose(onehot), transpose(logits)),
       (*L::CategoricalCrossentropy({.from_logits = true}))(onehot, logits));
  same((*L::CategoricalCrossentropy({.axis = 0}))(transpose(onehot), transpose(softmax(logits))),
       (*L::CategoricalCrossentropy())(onehot, softmax(logits)));
  // Large logits stay finite with from_logits (the probability form clips to eps).
  Tensor big = f64({200, -200}, {1, 2});
  EXPECT_NEAR(val((*L::CategoricalCrossentropy({.from_logits = true}))(f64({0, 1}, {1, 2}), big)), 400, 1e-9);
  EXPECT_NEAR(val((*L::CategoricalCrossentropy())(f64({0, 1}, {1, 2}), softmax(big))), -std::log(1e-7), 1e-6);
}

// Float64 central differences against the tape's gradient, for each loss and both forms.
TEST(KerasLosses, GradientsMatchFiniteDifferences) {
  Tensor probs = random_uniform({3, 4}, 0.1, 0.9, DType::Float64, 11);
  Tensor logits = random_normal({3, 4}, 0, 1.5, DType::Float64, 12);
  Tensor soft = random_uniform({3, 4}, 0.1, 0.9, DType::Float64, 13);
  Tensor onehot = one_hot(constant(std::vector<int32_t>{2, 0, 3}), 4, 1, 0, -1, DType::Float64);
  Tensor labels = constant(std::vector<int32_t>{2, 0, 3});
  Tensor binary = f64({0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0}, {3, 4});
  Tensor weights = f64({0.5, 2, 1}, {3});
  struct Case {
    const char* what;
    LossPtr loss;
    Tensor y_true, x;
  };
  std::vector<Case> cases = {
      {"mse", L::MeanSquaredError(), soft, probs},
      {"mae", L::MeanAbsoluteError(), soft, probs},
      {"huber", L::Huber({.delta = 0.3}), soft, probs},
      {"bce", L::BinaryCrossentropy(), binary, probs},
      {"bce smoothed", L::BinaryCrossentropy({.label_smoothing = 0.1}), binary, probs},
      {"bce logits", L::BinaryCrossentropy({.from_logits = true}), binary, logits},
      {"cce", L::CategoricalCrossentropy(), onehot, probs},
      {"cce logits", L::CategoricalCrossentropy({.from_logits = true, .label_smoothing = 0.1}), onehot, logits},
      {"scce", L::SparseCategoricalCrossentropy(), labels, probs},
      {"scce logits", L::SparseCategoricalCrossentropy({.from_logits = true}), labels, logits},
      {"kld", L::KLDivergence(), soft, probs},
  };
  for (const Case& c : cases) {
    auto r = gradcheck([&](const TensorList& in) { return TensorList{(*c.loss)(c.y_true, in[0], weights)}; }, {c.x});
    EXPECT_LE(r.max_error, 1e-6) << c.what << ": " << r.worst;
  }
}

TEST(KerasLosses, GradientsMatchHandFormulas) {
  // Softmax cross-entropy from logits: d mean / d logits = (softmax - y) / B.
  Tensor logits = random_normal({3, 4}, 0, 1, DType::Float64, 21);
  Tensor onehot = one_hot(constant(std::vector<int32_t>{1, 0, 3}), 4, 1, 0, -1, DType::Float64);
  GradientTape tape;
  tape.watch(logits);
  Tensor l = (*L::CategoricalCrossentropy({.from_logits = true}))(onehot, logits);
  expect_near(tape.gradient(l, logits), (softmax(logits) - onehot) / 3.0, 1e-12);
  // Mean squared error: 2 (p - t) / (B * C).
  Tensor p = random_normal({3, 4}, 0, 1, DType::Float64, 22);
  GradientTape tape2;
  tape2.watch(p);
  Tensor m = (*L::MeanSquaredError())(onehot, p);
  expect_near(tape2.gradient(m, p), (p - onehot) * (2.0 / 12), 1e-12);
}

TEST(KerasLosses, MixedPrecisionComputesInFloat32) {
  Tensor logits32 = random_normal({4, 5}, 0, 1, DType::Float32, 31);
  Tensor labels = constant(std::vector<int32_t>{0, 1, 2, 3});
  for (DType half : {DType::Float16, DType::BFloat16}) {
    Tensor logits16 = cast(logits32, half);
    LossPtr loss = L::SparseCategoricalCrossentropy({.from_logits = true});
    Tensor l16 = (*loss)(labels, logits16);
    EXPECT_EQ(l16.dtype(), DType::Float32);
    EXPECT_NEAR(val(l16), val((*loss)(labels, cast(logits16, DType::Float32))), 1e-6);
    Tensor mse = (*L::MeanSquaredError())(cast(logits32, half), logits16, cast(ones({4}), half));
    EXPECT_EQ(mse.dtype(), DType::Float32);
    EXPECT_NEAR(val(mse), 0.0, 1e-6);
  }
  // float64 stays float64 (the gradient checks rely on it).
  EXPECT_EQ((*L::MeanSquaredError())(f64({1}, {1}), f64({2}, {1})).dtype(), DType::Float64);
}

TEST(KerasLosses, InTracedFunctionWithUnknownBatch) {
  FunctionOptions opts;
  opts.input_signature =
      Signature{{DType::Int32, Shape{-1}}, {DType::Float32, Shape{-1, 3}}, {DType::Float32, Shape{-1}}};
  LossPtr loss = L::SparseCategoricalCrossentropy({.from_logits = true});
  LossPtr mse = L::MeanSquaredError();
  Function f = function(
      [&](const Tensor& y, const Tensor& x, const Tensor& w) {
        Tensor onehot = one_hot(y, 3);
        GradientTape tape;
        tape.watch(x);
        Tensor l = (*loss)(y, x, w);
        Tensor g = tape.gradient(l, x);
        return TensorList{l, g, (*mse)(onehot, x)};
      },
      opts);
  for (int64_t batch : {2, 5}) {
    Tensor y = cast(random_uniform({batch}, 0, 3, DType::Float32, 40 + batch), DType::Int32);
    Tensor x = random_normal({batch, 3}, 0, 1, DType::Float32, 50 + batch);
    Tensor w = random_uniform({batch}, 0, 2, DType::Float32, 60 + batch);
    TensorList out = f(y, x, w);
    GradientTape tape;
    tape.watch(x);
    Tensor l = (*loss)(y, x, w);
    Tensor g = tape.gradient(l, x);
    EXPECT_NEAR(val(out[0]), val(l), 1e-6);
    expect_near(out[1], g, 1e-6);
    EXPECT_NEAR(val(out[2]), val((*mse)(one_hot(y, 3), x)), 1e-6);
  }
  EXPECT_EQ(f.trace_count(), 1);
}

TEST(KerasLosses, ConfigsAndNames) {
  EXPECT_EQ(L::get("mse")->class_name(), "MeanSquaredError");
  EXPECT_EQ(L::get("mse")->name(), "mean_squared_error");
  EXPECT_EQ(L::get("mae")->class_name(), "MeanAbsoluteError");
  EXPECT_EQ(L::get("huber")->name(), "huber_loss");
  EXPECT_EQ(L::get("kld")->class_name(), "KLDivergence");
  EXPECT_EQ(L::get("SparseCategoricalCrossentropy")->name(), "sparse_categorical_crossentropy");
  EXPECT_EQ(L::get("binary_crossentropy")->reduction(), Reduction::SumOverBatchSize);

  LossPtr cce = L::CategoricalCrossentropy(
      {.from_logits = true, .label_smoothing = 0.1, .reduction = Reduction::Sum, .name = "cce"});
  Config s = L::serialize(*cce);
  EXPECT_EQ(s["class_name"], "CategoricalCrossentropy");
  EXPECT_EQ(s["config"]["name"], "cce");
  EXPECT_EQ(s["config"]["reduction"], "sum");
  EXPECT_EQ(s["config"]["from_logits"], true);
  EXPECT_DOUBLE_EQ(s["config"]["label_smoothing"].get<double>(), 0.1);
  LossPtr back = L::deserialize(Config::parse(s.dump()));
  EXPECT_EQ(back->class_name(), "CategoricalCrossentropy");
  EXPECT_EQ(back->name(), "cce");
  EXPECT_EQ(back->reduction(), Reduction::Sum);
  Tensor logits = f32({1, -2, 0.5f, 3, 0, -1}, {2, 3});
  EXPECT_NEAR(val((*back)(cat_true(), logits)), val((*cce)(cat_true(), logits)), 1e-7);

  LossPtr huber = L::deserialize(L::serialize(*L::Huber({.delta = 0.25})));
  EXPECT_DOUBLE_EQ(huber->get_config()["delta"].get<double>(), 0.25);
  EXPECT_EQ(L::deserialize(Config("kl_divergence"))->class_name(), "KLDivergence");
  EXPECT_EQ(L::deserialize(Config{{"class_name", "MeanAbsoluteError"}})->name(), "mean_absolute_error");
}

TEST(KerasLosses, Errors) {
  EXPECT_EQ(error_of([] { (*L::SparseCategoricalCrossentropy())(zeros({32, 1}, DType::Int32), zeros({32, 5, 10})); }),
            "[sparse_categorical_crossentropy] labels [32,1] do not fit predictions [32,5,10]");
  EXPECT_THAT(error_of([] { (*L::MeanSquaredError())(zeros({2, 3}), zeros({2, 4})); }),
              HasSubstr("[mean_squared_error] labels [2,3] do not fit predictions [2,4]"));
  EXPECT_THAT(error_of([] { (*L::CategoricalCrossentropy())(zeros({2, 1}), zeros({2, 3})); }),
              HasSubstr("[categorical_crossentropy] labels [2,1] do not fit predictions [2,3]"));
  EXPECT_THAT(error_of([] { (*L::BinaryCrossentropy({.name = "bce"}))(zeros({4, 2}), zeros({3, 2})); }),
              HasSubstr("[bce] labels [4,2] do not fit predictions [3,2]"));
  EXPECT_THAT(error_of([] { (*L::MeanSquaredError())(zeros({2}), zeros({2}, DType::Int32)); }),
              HasSubstr("[mean_squared_error] predictions must be floating, got int32"));
  EXPECT_THAT(error_of([] { (*L::MeanSquaredError())(zeros({2, 2}), zeros({2, 2}), ones({3})); }),
              HasSubstr("[mean_squared_error] sample_weight [3] does not fit the losses [2]"));
  EXPECT_THAT(error_of([] { L::SparseCategoricalCrossentropy({.label_smoothing = 0.1}); }),
              HasSubstr("[sparse_categorical_crossentropy] label_smoothing is not supported"));
  EXPECT_THAT(error_of([] { (*L::SparseCategoricalCrossentropy({.axis = 0}))(zeros({2}), zeros({2, 3})); }),
              HasSubstr("[sparse_categorical_crossentropy] only axis=-1 is supported, got axis=0"));
  EXPECT_THAT(error_of([] { L::BinaryCrossentropy({.label_smoothing = 1.5}); }),
              HasSubstr("[binary_crossentropy] label_smoothing must be in [0, 1], got 1.5"));
  EXPECT_THAT(
      error_of([] { (*L::SparseCategoricalCrossentropy())(constant(std::vector<int32_t>{3}), ones({1, 3})); }),
      HasSubstr("received a label value of 3"));
  EXPECT_THAT(error_of([] { L::get("msee"); }), HasSubstr("[losses] unknown loss 'msee'; known: mse,"));
  EXPECT_THAT(error_of([] { L::deserialize(Config{{"class_name", "Hinge"}}); }),
              HasSubstr("[losses] unknown loss class 'Hinge'"));
  EXPECT_THAT(error_of([] {
                L::deserialize(Config{{"class_name", "MeanSquaredError"}, {"config", {{"reduction", "avg"}}}});
              }),
              HasSubstr("[losses] unknown reduction 'avg'; known: sum_over_batch_size, sum, none"));
}

}  // namespace
}  // namespace deepflow::keras
