// SPDX-License-Identifier: Apache-2.0
// fit / evaluate / predict fed by a data::Dataset: the same training as tensors,
// sample weights, steps_per_epoch, validation data and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "deepflow/deepflow.h"
#include "deepflow/keras/callbacks.h"
#include "deepflow/keras/layers/core.h"
#include "deepflow/keras/model.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using ::testing::HasSubstr;
using data::Dataset;
using testing::error_of;

std::pair<Tensor, Tensor> blobs(int64_t n, int64_t seed) {
  Tensor labels = cast(random_uniform({n}, 0, 2, DType::Float32, seed), DType::Int32);
  Tensor centers = cast(labels, DType::Float32) * 4.0 - 2.0;
  Tensor x = random_normal({n, 2}, 0, 0.7, DType::Float32, seed + 1) + reshape(centers, {n, 1});
  return {x, labels};
}

std::shared_ptr<Sequential> compiled_mlp(bool eager = false) {
  set_random_seed(5);
  auto model = std::make_shared<Sequential>(
      std::vector<LayerPtr>{layers::InputLayer(Shape{2}), layers::Dense(16, "relu"), layers::Dense(2)});
  model->compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}),
                  .loss = {losses::SparseCategoricalCrossentropy({.from_logits = true})},
                  .metrics = {"accuracy"},
                  .run_eagerly = eager});
  return model;
}

std::vector<float> flat_weights(Model& m) {
  std::vector<float> out;
  for (const Tensor& w : m.get_weights()) {
    std::vector<float> v = w.to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

TEST(FitDataset, SameWeightsAsFitOnTensors) {
  auto [x, y] = blobs(100, 3);  // 100 = 3 batches of 32 and one of 4
  for (bool eager : {false, true}) {
    auto a = compiled_mlp(eager);
    History ha = a->fit(x, y, {.batch_size = 32, .epochs = 3, .verbose = 0, .shuffle = false});
    auto b = compiled_mlp(eager);
    History hb = b->fit(Dataset::from_tensor_slices({x, y}).batch(32), {.epochs = 3, .verbose = 0});
    const std::vector<float> wa = flat_weights(*a), wb = flat_weights(*b);
    ASSERT_EQ(wa.size(), wb.size());
    for (size_t i = 0; i < wa.size(); ++i) ASSERT_EQ(wa[i], wb[i]) << "weight " << i << (eager ? " eager" : " traced");
    EXPECT_EQ(ha.history["loss"], hb.history["loss"]);
    EXPECT_EQ(ha.history["accuracy"], hb.history["accuracy"]);
  }
}

TEST(FitDataset, SampleWeightsEvaluateAndPredict) {
  auto [x, y] = blobs(64, 7);
  Tensor w = concat({ones({32}), zeros({32})}, 0);
  auto a = compiled_mlp();
  a->fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .shuffle = false, .sample_weight = w});
  auto b = compiled_mlp();
  b->fit(Dataset::from_tensor_slices({x, y, w}).batch(16), {.epochs = 2, .verbose = 0});
  EXPECT_EQ(flat_weights(*a), flat_weights(*b));

  auto scores_t = a->evaluate(x, y, {.batch_size = 16, .verbose = 0});
  auto scores_d = a->evaluate(Dataset::from_tensor_slices({x, y}).batch(16), {.verbose = 0});
  EXPECT_NEAR(scores_t["loss"], scores_d["loss"], 1e-6);
  EXPECT_NEAR(scores_t["accuracy"], scores_d["accuracy"], 1e-9);

  Tensor pt = a->predict(x, {.batch_size = 10});
  // targets after the inputs are ignored by predict
  TensorList pd = a->predict(Dataset::from_tensor_slices({x, y}).batch(10));
  ASSERT_EQ(pd.size(), 1u);
  EXPECT_EQ(pd[0].shape(), Shape({64, 2}));
  EXPECT_EQ(pd[0].to_vector<float>(), pt.to_vector<float>());
}

TEST(FitDataset, StepsPerEpochValidationAndShuffledEpochs) {
  auto [x, y] = blobs(256, 11);
  auto [vx, vy] = blobs(64, 12);
  auto model = compiled_mlp();
  Dataset train = Dataset::from_tensor_slices({x, y}).shuffle(256, {.seed = 1}).batch(32).repeat();
  int batches = 0;
  CallbackPtr counter =
      callbacks::LambdaCallback({.on_train_batch_end = [&](int64_t, const Logs&) { ++batches; }});
  History h = model->fit(train, {.epochs = 4, .verbose = 0, .callbacks = {counter}, .steps_per_epoch = 5,
                                 .validation_data = Dataset::from_tensor_slices({vx, vy}).batch(32)});
  EXPECT_EQ(batches, 20);
  ASSERT_EQ(h.history["val_loss"].size(), 4u);
  EXPECT_LT(h.history["loss"].back(), h.history["loss"].front());
  EXPECT_GT(h.history["val_accuracy"].back(), 0.9);

  // A finite dataset that runs out under steps_per_epoch stops with a warning.
  auto m2 = compiled_mlp();
  ::testing::internal::CaptureStderr();
  History h2 = m2->fit(Dataset::from_tensor_slices({x, y}).batch(32), {.epochs = 5, .verbose = 0, .steps_per_epoch = 3});
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("ran out of data after 2 steps"));
  EXPECT_EQ(h2.epoch.size(), 3u);  // 8 batches: epochs of 3, 3, then 2 and out
}

TEST(FitDataset, Errors) {
  auto [bx, by] = blobs(16, 1);
  Tensor x = bx, y = by;  // lambdas below capture them (clang 14 cannot capture structured bindings)
  auto model = compiled_mlp();
  EXPECT_THAT(error_of([&] { model->fit(Dataset::from_tensor_slices({x, y}).batch(4).repeat(), {.verbose = 0}); }),
              HasSubstr("[fit] the dataset is infinite (repeat() without a count?): give steps_per_epoch"));
  EXPECT_THAT(error_of([&] { model->fit(Dataset::from_tensor_slices({x}).batch(4), {.verbose = 0}); }),
              HasSubstr("[fit] dataset element 0 has 1 components (float32[4,2]); the model takes 1 input(s) and 1 "
                        "target(s)"));
  EXPECT_THAT(error_of([&] { model->evaluate(Dataset::from_tensor_slices({x, y, y}).batch(4), {.verbose = 0}); }),
              HasSubstr("[evaluate] dataset element 0 has 3 components"));
  EXPECT_THAT(error_of([&] { model->fit(Dataset(), {.verbose = 0}); }), HasSubstr("[fit] the dataset is undefined"));
  EXPECT_THAT(error_of([&] { model->fit(Dataset::range(3), {.verbose = 0, .steps_per_epoch = 0}); }),
              HasSubstr("steps_per_epoch must be positive"));
}

}  // namespace
}  // namespace deepflow::keras
