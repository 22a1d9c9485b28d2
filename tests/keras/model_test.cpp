// SPDX-License-Identifier: Apache-2.0
// Models: Sequential, functional (several inputs, shared layers, residuals), subclassed;
// compile / fit / evaluate / predict, traced and eager; summary and DOT; errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "deepflow/deepflow.h"
#include "deepflow/keras/callbacks.h"
#include "deepflow/keras/layers/core.h"
#include "deepflow/keras/model.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::expect_near;

// Two Gaussian blobs per class in 2D: separable, learnable in a few epochs.
std::pair<Tensor, Tensor> blobs(int64_t n, int64_t seed) {
  Tensor labels = cast(random_uniform({n}, 0, 2, DType::Float32, seed), DType::Int32);
  Tensor centers = cast(labels, DType::Float32) * 4.0 - 2.0;  // -2 or +2
  Tensor x = random_normal({n, 2}, 0, 0.7, DType::Float32, seed + 1) + reshape(centers, {n, 1});
  return {x, labels};
}

std::shared_ptr<Sequential> small_mlp() {
  return std::make_shared<Sequential>(std::vector<LayerPtr>{
      layers::InputLayer(Shape{2}), layers::Dense(16, "relu"), layers::Dense(2)});
}

TEST(Sequential, ShapesSummaryAndDot) {
  auto model = small_mlp();
  EXPECT_TRUE(model->built());
  EXPECT_EQ(model->model_layers().size(), 2u);
  EXPECT_EQ(model->count_params(), 2 * 16 + 16 + 16 * 2 + 2);
  std::string s = model->summary();
  EXPECT_THAT(s, HasSubstr("(Dense)"));
  EXPECT_THAT(s, HasSubstr("(None, 16)"));
  EXPECT_THAT(s, HasSubstr("Total params: 82"));
  EXPECT_THAT(s, HasSubstr("Non-trainable params: 0"));
  std::string dot = model->to_dot();
  EXPECT_THAT(dot, HasSubstr("digraph"));
  EXPECT_THAT(dot, HasSubstr("->"));
  EXPECT_EQ((*model)(ones({3, 2})).shape(), (Shape{3, 2}));
  const std::string path = ::testing::TempDir() + "/sequential.dot";
  utils::plot_model(*model, path);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  EXPECT_THAT(error_of([&] { utils::plot_model(*model, "/nonexistent-dir/m.dot"); }),
              HasSubstr("[plot_model] cannot write '/nonexistent-dir/m.dot'"));
}

TEST(Sequential, BuildsOnFirstCallWithoutAnInputLayer) {
  auto model = std::make_shared<Sequential>(std::vector<LayerPtr>{layers::Dense(4), layers::Dense(1)});
  EXPECT_FALSE(model->built());
  EXPECT_EQ((*model)(ones({5, 3})).shape(), (Shape{5, 1}));
  EXPECT_TRUE(model->built());
  EXPECT_THAT(model->summary(), HasSubstr("(None, 4)"));
}

TEST(Sequential, AddAndPopKeepWeightsAndSummaryInStep) {
  auto model = small_mlp();  // 82 params
  model->pop();
  EXPECT_EQ(model->count_params(), 2 * 16 + 16);
  EXPECT_EQ(model->model_layers().size(), 1u);
  EXPECT_THAT(model->summary(), ::testing::Not(HasSubstr("(None, 2)")));
  model->add(layers::Dense(3));
  EXPECT_EQ(model->count_params(), 2 * 16 + 16 + 16 * 3 + 3);
  EXPECT_THAT(model->summary(), HasSubstr("(None, 3)"));
  EXPECT_EQ((*model)(ones({4, 2})).shape(), (Shape{4, 3}));
  // Built by its first call, then extended: the new layer is built and listed at once.
  auto lazy = std::make_shared<Sequential>(std::vector<LayerPtr>{layers::Dense(4)});
  (*lazy)(ones({2, 5}));
  lazy->add(layers::Dense(6));
  EXPECT_EQ(lazy->count_params(), 5 * 4 + 4 + 4 * 6 + 6);
  EXPECT_THAT(lazy->summary(), HasSubstr("(None, 6)"));
}

TEST(Sequential, FitLearnsBlobsTracedAndEvaluates) {
  set_random_seed(1);
  auto [x, y] = blobs(512, 10);
  auto model = small_mlp();
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
                  .loss = {losses::SparseCategoricalCrossentropy({.from_logits = true})},
                  .metrics = {"accuracy"}});
  History h = model->fit(x, y, {.batch_size = 32, .epochs = 5, .verbose = 0, .validation_split = 0.25});
  ASSERT_EQ(h.history["loss"].size(), 5u);
  EXPECT_LT(h.history["loss"].back(), h.history["loss"].front());
  EXPECT_GT(h.history["val_accuracy"].back(), 0.95);
  auto [tx, ty] = blobs(256, 20);
  auto scores = model->evaluate(tx, ty, {.verbose = 0});
  EXPECT_GT(scores["accuracy"], 0.95);
  Tensor probs = model->predict(tx, {.batch_size = 100});  // 3 batches, the last of 56
  EXPECT_EQ(probs.shape(), (Shape{256, 2}));
  double agree = reduce_mean(cast(equal(cast(argmax(probs, 1), DType::Int32), ty), DType::Float32)).item<double>();
  EXPECT_NEAR(agree, scores["accuracy"], 1e-6);
}

TEST(Sequential, EagerAndTracedTrainingAgree) {
  auto [x, y] = blobs(96, 30);
  std::vector<std::vector<float>> finals;
  for (bool eager : {false, true}) {
    set_random_seed(5);
    auto model = small_mlp();
    model->compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}),
                    .loss = {losses::SparseCategoricalCrossentropy({.from_logits = true})},
                    .run_eagerly = eager});
    model->fit(x, y, {.batch_size = 40, .epochs = 2, .verbose = 0, .shuffle = false});
    finals.push_back(model->get_weights()[0].to_vector<float>());
  }
  ASSERT_EQ(finals[0].size(), finals[1].size());
  for (size_t i = 0; i < finals[0].size(); ++i) EXPECT_NEAR(finals[0][i], finals[1][i], 1e-5) << i;
}

TEST(Functional, TwoInputsSharedLayerAndResidual) {
  Tensor a = Input({8}, "a"), b = Input({8}, "b");
  auto shared = layers::Dense(8, "relu");
  Tensor ha = shared(a), hb = shared(b);  // one layer, two calls: shared weights
  auto merge = layers::Dense(8);
  Tensor h = merge(ha);
  auto head = layers::Dense(1);
  Tensor out = head(h);
  auto model = std::make_shared<Model>(TensorList{a, b}, TensorList{out, hb});
  EXPECT_EQ(model->model_layers().size(), 3u);  // shared once, merge, head
  EXPECT_EQ(model->trainable_weights().size(), 6u);
  TensorList ys = (*model)(TensorList{ones({4, 8}), zeros({4, 8})});
  ASSERT_EQ(ys.size(), 2u);
  EXPECT_EQ(ys[0].shape(), (Shape{4, 1}));
  expect_near(ys[1], shared(zeros({4, 8})), 1e-6);
  EXPECT_THAT(model->summary(), HasSubstr("Connected to"));
  EXPECT_EQ(model->get_layer(head->name()).get(), head.ptr().get());
  EXPECT_THAT(error_of([&] { model->get_layer("nope"); }), HasSubstr("[Model.get_layer] no layer named 'nope'"));
}

TEST(Functional, ErrorsForForeignInputsAndWrongShapes) {
  Tensor a = Input({4}), b = Input({4});
  Tensor out = layers::Dense(2)(b);
  EXPECT_THAT(error_of([&] { Model(TensorList{a}, TensorList{out}); }),
              HasSubstr("not among the model's inputs"));
  auto model = std::make_shared<Model>(TensorList{b}, TensorList{out});
  EXPECT_THAT(error_of([&] { (*model)(ones({3, 5})); }), HasSubstr("should have shape [?,4], got [3,5]"));
  EXPECT_THAT(error_of([&] { model->fit(ones({3, 4}), ones({3, 2})); }), HasSubstr("call compile() first"));
  model->compile({.optimizer = "sgd", .loss = {"mse"}});
  EXPECT_THAT(error_of([&] { model->fit(ones({3, 4}), ones({2, 2}), {.verbose = 0}); }),
              HasSubstr("same number of samples"));
  EXPECT_THAT(error_of([&] { model->compile({.optimizer = "adamx", .loss = {"mse"}}); }),
              HasSubstr("unknown optimizer 'adamx'"));
}

TEST(Subclassed, CustomModelTrains) {
  struct Mlp : Model {
    Mlp() : Model("mlp") {
      hidden = track(layers::Dense(16, "relu"));
      out = track(layers::Dense(2));
    }
    TensorList call(const TensorList& in, bool training) override { return {out(hidden(in[0], training))}; }
    using Model::call;
    layers::Dense hidden{nullptr}, out{nullptr};
  };
  set_random_seed(2);
  auto [x, y] = blobs(256, 40);
  auto model = std::make_shared<Mlp>();
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.02}),
                  .loss = {losses::SparseCategoricalCrossentropy({.from_logits = true})},
                  .metrics = {"accuracy"}});
  History h = model->fit(x, y, {.batch_size = 32, .epochs = 4, .verbose = 0});
  EXPECT_GT(h.history["accuracy"].back(), 0.95);
  EXPECT_EQ(model->trainable_weights().size(), 4u);
}

// Restores the float32 policy however a test ends.
struct PolicyScope {
  explicit PolicyScope(const char* name) { set_global_policy(name); }
  ~PolicyScope() { set_global_policy("float32"); }
};

TEST(MixedPrecision, Bfloat16TrainsWithFloat32Variables) {
  set_random_seed(3);
  auto [x, y] = blobs(256, 60);
  std::shared_ptr<Sequential> model;
  {
    PolicyScope policy("mixed_bfloat16");
    model = small_mlp();
  }
  EXPECT_EQ(model->trainable_weights()[0].dtype(), DType::Float32);
  EXPECT_EQ((*model)(ones({1, 2})).dtype(), DType::BFloat16);
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.02}),
                  .loss = {losses::SparseCategoricalCrossentropy({.from_logits = true})}, .metrics = {"accuracy"}});
  History h = model->fit(x, y, {.batch_size = 32, .epochs = 4, .verbose = 0});
  EXPECT_GT(h.history["accuracy"].back(), 0.95);
  EXPECT_EQ(model->loss_scale(), 0.0);
}

TEST(MixedPrecision, Float16ScalesTheLossAndSkipsOverflowingSteps) {
  set_random_seed(4);
  std::shared_ptr<Sequential> model;
  {
    PolicyScope policy("mixed_float16");
    model = std::make_shared<Sequential>(std::vector<LayerPtr>{layers::InputLayer(Shape{2}), layers::Dense(1)});
  }
  model->compile({.optimizer = optimizers::SGD({.learning_rate = 1e-4}), .loss = {"mse"}});
  EXPECT_EQ(model->loss_scale(), 32768.0);
  // Targets of 1000 give gradients near 2000: times 2^15 they overflow float16, so the
  // first steps are skipped (iterations does not count them) and each halves the scale,
  // until the scaled gradients fit (scale <= 32).
  Tensor x = random_normal({64, 2}, 0, 1, DType::Float32, 9), y = fill({64, 1}, 1000.0);
  model->fit(x, y, {.batch_size = 8, .epochs = 3, .verbose = 0, .shuffle = false});
  const double scale = model->loss_scale();
  EXPECT_LE(scale, 32.0);
  EXPECT_GE(scale, 8.0);
  const int64_t applied = model->optimizer()->iterations().value().item<int64_t>();
  const int64_t skipped = int64_t(std::log2(32768.0 / scale) + 0.5);  // each skip halved it once
  EXPECT_EQ(applied + skipped, 3 * 8);
  EXPECT_GT(applied, 0);
  for (const Tensor& w : model->get_weights())
    for (float v : w.to_vector<float>()) EXPECT_TRUE(std::isfinite(v));
}

// Half the labels flipped, with weight 0: the model learns the clean half only.
TEST(Fit, SampleWeightsMaskSamples) {
  auto [bx, by] = blobs(512, 80);
  Tensor x = bx, y = by;  // a lambda below captures them (clang 14 cannot capture structured bindings)
  Tensor second_half = greater_equal(arange(0, 512, 1, DType::Int32), scalar(256, DType::Int32));
  Tensor noisy = where(second_half, scalar(1, DType::Int32) - y, y);
  Tensor weights = where(second_half, scalar(0.0), scalar(1.0));
  double acc[2];
  for (int weighted = 0; weighted < 2; ++weighted) {
    set_random_seed(6);
    auto model = small_mlp();
    model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.02}),
                    .loss = {losses::SparseCategoricalCrossentropy({.from_logits = true})}, .metrics = {"accuracy"}});
    model->fit(x, noisy, {.batch_size = 32, .epochs = 6, .verbose = 0,
                          .sample_weight = weighted ? weights : Tensor()});
    acc[weighted] = model->evaluate(x, y, {.verbose = 0})["accuracy"];
  }
  EXPECT_GT(acc[1], 0.95);
  EXPECT_LT(acc[0], acc[1] - 0.1);
  auto model = small_mlp();
  model->compile({.optimizer = "sgd", .loss = {"sparse_categorical_crossentropy"}});
  EXPECT_THAT(error_of([&] { model->fit(x, y, {.verbose = 0, .sample_weight = ones({10})}); }),
              HasSubstr("[fit] sample_weight must be [512] (one per sample), got [10]"));
}

TEST(Fit, CallbacksSeeEveryHookAndCanStop) {
  struct Counter : Callback {
    int epochs = 0, begins = 0;
    int64_t batches = 0;
    void on_train_begin(const Logs&) override { ++begins; }
    void on_train_batch_end(int64_t, const Logs& logs) override {
      ++batches;
      EXPECT_TRUE(logs.count("loss"));
    }
    void on_epoch_end(int epoch, Logs& logs) override {
      ++epochs;
      EXPECT_TRUE(logs.count("val_loss"));
      if (epoch == 1) model()->stop_training = true;
    }
  };
  auto [x, y] = blobs(64, 50);
  auto model = small_mlp();
  model->compile({.optimizer = "sgd", .loss = {losses::SparseCategoricalCrossentropy({.from_logits = true})}});
  auto counter = std::make_shared<Counter>();
  History h = model->fit(x, y, {.batch_size = 16, .epochs = 10, .verbose = 0, .callbacks = {counter},
                                .validation_x = {x}, .validation_y = {y}});
  EXPECT_EQ(counter->begins, 1);
  EXPECT_EQ(counter->epochs, 2);
  EXPECT_EQ(counter->batches, 8);
  EXPECT_EQ(h.epoch, (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace deepflow::keras
