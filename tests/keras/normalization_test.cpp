// SPDX-License-Identifier: Apache-2.0
// keras::layers BatchNormalization and LayerNormalization: hand-computed outputs in
// training and inference, moving statistics (biased variance, as Keras) eagerly and in
// traced steps, the non-last axis path, frozen layers, mixed precision, gradients,
// Keras tensors, configs and errors.
#include "deepflow/keras/layers/normalization.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <vector>

#include "deepflow/autodiff/tape.h"
#include "deepflow/function/function.h"
#include "deepflow/ops/ops.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::expect_near;
using BNOptions = layers::BatchNormalizationOptions;
using LNOptions = layers::LayerNormalizationOptions;

// Columns: [1, 2, 3, 4] (mean 2.5, biased variance 1.25, unbiased 5/3) and
// [0, 0, 4, 4] (mean 2, biased variance 4, unbiased 16/3).
Tensor batch() { return constant({1, 0, 2, 0, 3, 4, 4, 4}, {4, 2}); }
const double kMean[2] = {2.5, 2.0};
const double kVar[2] = {1.25, 4.0};

// (x - mean) / sqrt(var + eps) * gamma + beta, per column of batch().
Tensor normalized(const double* mean, const double* var, const double* gamma, const double* beta, double eps) {
  std::vector<float> x = batch().to_vector<float>(), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = i % 2;
    y[i] = float((x[i] - mean[c]) / std::sqrt(var[c] + eps) * gamma[c] + beta[c]);
  }
  return constant(y, {4, 2});
}

layers::BatchNormalization bn_with(double momentum) {
  auto bn = layers::BatchNormalization({.momentum = momentum});
  bn(batch(), false);  // builds
  bn->set_weights({constant({2.f, 1.f}), constant({0.5f, -1.f}), constant({0.f, 0.f}), constant({1.f, 1.f})});
  return bn;
}
const double kGamma[2] = {2, 1}, kBeta[2] = {0.5, -1};

TEST(KerasBatchNormalization, WeightsAndKerasTensors) {
  auto bn = layers::BatchNormalization();
  Tensor y = bn(Input({5, 3}));
  EXPECT_EQ(y.shape(), Shape({-1, 5, 3}));
  ASSERT_EQ(bn->weights().size(), 4u);
  EXPECT_EQ(bn->trainable_weights().size(), 2u);
  EXPECT_EQ(bn->non_trainable_weights().size(), 2u);
  EXPECT_EQ(bn->gamma().name(), bn->name() + "/gamma");
  EXPECT_EQ(bn->moving_variance().name(), bn->name() + "/moving_variance");
  EXPECT_FALSE(bn->moving_mean().trainable());
  expect_near(bn->gamma().value(), ones({3}), 0);
  expect_near(bn->beta().value(), zeros({3}), 0);
  expect_near(bn->moving_mean().value(), zeros({3}), 0);
  expect_near(bn->moving_variance().value(), ones({3}), 0);
  EXPECT_EQ(bn->count_params(), 12);

  auto no_affine = layers::BatchNormalization(BNOptions{.center = false, .scale = false});
  no_affine(Input({4}));
  EXPECT_EQ(no_affine->weights().size(), 2u);
  EXPECT_TRUE(no_affine->trainable_weights().empty());
}

TEST(KerasBatchNormalization, TrainingUsesBatchStatisticsAndUpdatesMovingOnes) {
  auto bn = bn_with(0.5);
  Tensor y = bn(batch(), true);
  expect_near(y, normalized(kMean, kVar, kGamma, kBeta, 1e-3), 1e-5);
  // moving = moving * 0.5 + batch * 0.5 with the biased variance (1.25, 4), not 5/3, 16/3.
  expect_near(bn->moving_mean().value(), constant({1.25f, 1.f}), 1e-6);
  expect_near(bn->moving_variance().value(), constant({1.125f, 2.5f}), 1e-6);
  bn(batch(), true);
  bn(batch(), true);
  expect_near(bn->moving_mean().value(), constant({2.1875f, 1.75f}), 1e-6);
  expect_near(bn->moving_variance().value(), constant({1.21875f, 3.625f}), 1e-6);

  // Inference normalizes with the moving statistics and leaves them alone.
  Tensor z = bn(batch(), false);
  const double mm[2] = {2.1875, 1.75}, mv[2] = {1.21875, 3.625};
  expect_near(z, normalized(mm, mv, kGamma, kBeta, 1e-3), 1e-5);
  expect_near(bn->moving_mean().value(), constant({2.1875f, 1.75f}), 0);
  // The learning phase decides when training is not passed.
  {
    LearningPhaseScope phase(true);
    bn(batch());
  }
  expect_near(bn->moving_mean().value(), constant({2.34375f, 1.875f}), 1e-6);
}

TEST(KerasBatchNormalization, DefaultMomentumAndEpsilon) {
  auto bn = layers::BatchNormalization();
  Tensor y = bn(batch(), true);
  const double g[2] = {1, 1}, b[2] = {0, 0};
  expect_near(y, normalized(kMean, kVar, g, b, 1e-3), 1e-5);
  expect_near(bn->moving_mean().value(), constant({0.025f, 0.02f}), 1e-6);
  expect_near(bn->moving_variance().value(), constant({0.99f + 0.0125f, 0.99f + 0.04f}), 1e-6);
}

TEST(KerasBatchNormalization, TracedStepUpdatesOnEveryRun) {
  for (bool unknown_batch : {false, true}) {
    SCOPED_TRACE(unknown_batch ? "batch dim unknown" : "static shape");
    auto bn = bn_with(0.5);
    FunctionOptions o;
    if (unknown_batch) o.input_signature = Signature{{DType::Float32, Shape{-1, 2}}};
    Function step = function([&](const Tensor& x) { return bn(x, true); }, o);
    Tensor y = step(batch())[0];
    expect_near(y, normalized(kMean, kVar, kGamma, kBeta, 1e-3), 1e-5);
    expect_near(bn->moving_mean().value(), constant({1.25f, 1.f}), 1e-6);
    expect_near(bn->moving_variance().value(), constant({1.125f, 2.5f}), 1e-6);
    step(batch());
    step(batch());
    EXPECT_EQ(step.trace_count(), 1);
    expect_near(bn->moving_mean().value(), constant({2.1875f, 1.75f}), 1e-6);
    expect_near(bn->moving_variance().value(), constant({1.21875f, 3.625f}), 1e-6);

    // An inference function sees the assignments made by the training one.
    Function infer = function([&](const Tensor& x) { return bn(x, false); }, o);
    const double mm[2] = {2.1875, 1.75}, mv[2] = {1.21875, 3.625};
    expect_near(infer(batch())[0], normalized(mm, mv, kGamma, kBeta, 1e-3), 1e-5);
    expect_near(bn->moving_mean().value(), constant({2.1875f, 1.75f}), 0);
  }
}

TEST(KerasBatchNormalization, TracedTrainStepWithGradients) {
  // A fit()-like step: forward in training, gradient inside the trace, an SGD update of
  // the trainable weights; the moving statistics still update on every run.
  auto bn = bn_with(0.5);
  auto eager = bn_with(0.5);
  Tensor w = constant({1, -2, 0.5, 3, 2, 1, -1, 0}, {4, 2});
  auto step_of = [&](const layers::BatchNormalization& layer) {
    return [&, layer](const Tensor& x) {
      GradientTape tape;
      Tensor loss = reduce_sum(layer(x, true) * w);
      std::vector<Variable> ws = layer->trainable_weights();
      std::vector<Tensor> g = tape.gradient(loss, ws);
      for (size_t i = 0; i < ws.size(); ++i) ws[i].assign_sub(g[i] * 0.1);
      return loss;
    };
  };
  FunctionOptions o;
  o.input_signature = Signature{{DType::Float32, Shape{-1, 2}}};
  Function step = function(step_of(bn), o);
  auto eager_step = step_of(eager);
  for (int i = 0; i < 3; ++i) {
    step(batch());
    eager_step(batch());
  }
  expect_near(bn->moving_mean().value(), constant({2.1875f, 1.75f}), 1e-6);
  expect_near(bn->moving_variance().value(), constant({1.21875f, 3.625f}), 1e-6);
  expect_near(bn->gamma().value(), eager->gamma().value(), 1e-5);
  expect_near(bn->beta().value(), eager->beta().value(), 1e-5);
  // beta moved by 3 steps of 0.1 * sum(w) per column.
  expect_near(bn->beta().value(), constant({0.5f - 0.3f * 2.5f, -1.f - 0.3f * 2.f}), 1e-5);
}

TEST(KerasBatchNormalization, Rank4AndOtherAxisMatchChannelsLast) {
  Tensor x = random_normal({3, 4, 5, 2}, 1.0, 2.0, DType::Float32, 7);
  auto bn = layers::BatchNormalization(BNOptions{.momentum = 0.0});
  Tensor y = bn(x, true);
  auto [mean, var] = moments(x, {0, 1, 2});
  expect_near(y, (x - mean) / sqrt(var + 1e-3), 1e-4);
  expect_near(bn->moving_mean().value(), mean, 1e-5);
  expect_near(bn->moving_variance().value(), var, 1e-5);

  // axis 1 of [n, c, l] is axis -1 of its transpose [n, l, c].
  Tensor z = random_normal({4, 3, 5}, 0.0, 1.0, DType::Float32, 8);
  auto a1 = layers::BatchNormalization(BNOptions{.axis = 1, .momentum = 0.5});
  auto last = layers::BatchNormalization(BNOptions{.momentum = 0.5});
  Tensor zt = transpose(z, {0, 2, 1});
  a1(z, false);
  last(zt, false);
  a1->set_weights({constant({1.5f, 2.f, 0.5f}), constant({0.f, 1.f, -1.f}), zeros({3}), ones({3})});
  last->set_weights(a1->get_weights());
  EXPECT_EQ(a1->gamma().shape(), Shape({3}));
  expect_near(a1(z, true), transpose(last(zt, true), {0, 2, 1}), 1e-5);
  expect_near(a1->moving_mean().value(), last->moving_mean().value(), 1e-6);
  expect_near(a1->moving_variance().value(), last->moving_variance().value(), 1e-6);
  expect_near(a1(z, false), transpose(last(zt, false), {0, 2, 1}), 1e-5);
  EXPECT_EQ(a1(Input({3, 5})).shape(), Shape({-1, 3, 5}));
}

TEST(KerasBatchNormalization, FrozenLayerRunsInInferenceMode) {
  auto bn = bn_with(0.5);
  bn->set_trainable(false);
  Tensor y = bn(batch(), true);
  const double mm[2] = {0, 0}, mv[2] = {1, 1};
  expect_near(y, normalized(mm, mv, kGamma, kBeta, 1e-3), 1e-5);
  expect_near(bn->moving_mean().value(), zeros({2}), 0);
  EXPECT_TRUE(bn->trainable_weights().empty());
}

TEST(KerasBatchNormalization, GradientsReachGammaAndBeta) {
  auto bn = bn_with(0.5);
  Tensor w = constant({1, -2, 0.5, 3, 2, 1, -1, 0}, {4, 2});
  GradientTape tape(/*persistent=*/true);
  Tensor x = batch();
  tape.watch(x);
  Tensor loss = reduce_sum(bn(x, true) * w);
  std::vector<Tensor> g = tape.gradient(loss, bn->trainable_weights());
  ASSERT_EQ(g.size(), 2u);
  ASSERT_TRUE(g[0].defined() && g[1].defined());
  const double one[2] = {1, 1}, zero[2] = {0, 0};
  Tensor xhat = normalized(kMean, kVar, one, zero, 1e-3);
  expect_near(g[0], reduce_sum(xhat * w, {0}), 1e-5);  // d gamma
  expect_near(g[1], reduce_sum(w, {0}), 1e-6);         // d beta
  // Training mode differentiates through the batch statistics: the input gradient sums to 0 per column.
  Tensor gx = tape.gradient(loss, x);
  expect_near(reduce_sum(gx, {0}), zeros({2}), 1e-4);
}

TEST(KerasBatchNormalization, MixedPrecisionKeepsFloat32Statistics) {
  auto ref = bn_with(0.5);
  auto bn = layers::BatchNormalization(BNOptions{.momentum = 0.5});
  bn->set_dtype_policy("mixed_bfloat16");
  bn(batch(), false);
  bn->set_weights(ref->get_weights());
  EXPECT_EQ(bn->moving_mean().dtype(), DType::Float32);
  Tensor y = bn(batch(), true);
  EXPECT_EQ(y.dtype(), DType::BFloat16);
  expect_near(cast(y, DType::Float32), ref(batch(), true), 2e-2);
  expect_near(bn->moving_mean().value(), ref->moving_mean().value(), 1e-6);
  expect_near(bn->moving_variance().value(), ref->moving_variance().value(), 1e-6);
  Tensor z = bn(batch(), false);
  EXPECT_EQ(z.dtype(), DType::BFloat16);
  expect_near(cast(z, DType::Float32), ref(batch(), false), 2e-2);

  // The non-fused path (another axis) too.
  auto a0 = layers::BatchNormalization(BNOptions{.axis = 1});
  a0->set_dtype_policy("mixed_bfloat16");
  Tensor t = transpose(reshape(batch(), {1, 4, 2}), {0, 2, 1});  // [1, 2, 4]
  Tensor u = a0(t, true);
  EXPECT_EQ(u.dtype(), DType::BFloat16);
  expect_near(a0->moving_mean().value(), constant({0.025f, 0.02f}), 1e-6);
}

TEST(KerasBatchNormalization, ConfigAndErrors) {
  auto bn = layers::BatchNormalization(BNOptions{.axis = 1, .momentum = 0.9, .epsilon = 1e-5, .name = "bn"});
  Config c = bn->get_config();
  EXPECT_EQ(c["name"], "bn");
  EXPECT_EQ(c["axis"], 1);
  EXPECT_DOUBLE_EQ(c["momentum"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(c["epsilon"].get<double>(), 1e-5);
  EXPECT_EQ(c["center"], true);
  EXPECT_EQ(c["scale"], true);
  EXPECT_EQ(c["gamma_initializer"]["class_name"], "Ones");
  EXPECT_EQ(c["moving_variance_initializer"]["class_name"], "Ones");
  EXPECT_EQ(c["beta_initializer"]["class_name"], "Zeros");
  EXPECT_TRUE(c["gamma_regularizer"].is_null());
  EXPECT_EQ(bn->class_name(), "BatchNormalization");

  EXPECT_THAT(error_of([] { layers::BatchNormalization(BNOptions{.momentum = 1.5}); }),
              HasSubstr("[BatchNormalization] momentum must be in [0, 1], got 1.5"));
  EXPECT_THAT(error_of([] { layers::BatchNormalization(BNOptions{.epsilon = 0}); }),
              HasSubstr("[BatchNormalization] epsilon must be positive, got 0"));
  EXPECT_THAT(error_of([] { layers::BatchNormalization(BNOptions{.name = "b1"})(ones({3})); }),
              HasSubstr("[b1] expects inputs of rank >= 2 (batch, ..., features), got [3]"));
  EXPECT_THAT(error_of([] { layers::BatchNormalization(BNOptions{.axis = 2, .name = "b2"})(ones({3, 2})); }),
              HasSubstr("[b2] axis 2 is out of range for inputs of rank 2 [3,2]"));
  EXPECT_THAT(error_of([] { layers::BatchNormalization(BNOptions{.name = "b3"})(Input({-1})); }),
              HasSubstr("[b3] needs a known dim on axis -1, got [?,?]"));
  auto b4 = layers::BatchNormalization(BNOptions{.name = "b4"});
  b4(ones({2, 3}));
  EXPECT_THAT(error_of([&] { b4(ones({2, 4})); }),
              HasSubstr("[b4] expects inputs of rank 2 with dim 3 on axis -1, got [2,4]"));
}

// --- LayerNormalization ---

TEST(KerasLayerNormalization, NormalizesEachSample) {
  // Rows [1, 2, 3, 4] (mean 2.5, variance 1.25) and [2, 2, 6, 6] (mean 4, variance 4).
  Tensor x = constant({1, 2, 3, 4, 2, 2, 6, 6}, {2, 4});
  auto ln = layers::LayerNormalization();
  Tensor y = ln(x);
  const double s0 = std::sqrt(1.25 + 1e-3), s1 = std::sqrt(4 + 1e-3);
  expect_near(y,
              constant({float(-1.5 / s0), float(-0.5 / s0), float(0.5 / s0), float(1.5 / s0), float(-2 / s1),
                        float(-2 / s1), float(2 / s1), float(2 / s1)},
                       {2, 4}),
              1e-5);
  EXPECT_EQ(ln->gamma().shape(), Shape({4}));
  EXPECT_EQ(ln->weights().size(), 2u);
  // Training makes no difference.
  expect_near(ln(x, true), y, 0);

  ln->set_weights({constant({1, 2, 3, 4}), constant({0.5, 0, 0, -1})});
  Tensor z = ln(x);
  expect_near(z, y * constant({1, 2, 3, 4}) + constant({0.5, 0, 0, -1}), 1e-5);
  EXPECT_EQ(ln(Input({7, 4})).shape(), Shape({-1, 7, 4}));

  // Inside a traced function with an unknown batch dim.
  FunctionOptions o;
  o.input_signature = Signature{{DType::Float32, Shape{-1, 4}}};
  Function f = function([&](const Tensor& t) { return ln(t); }, o);
  expect_near(f(x)[0], z, 1e-6);
}

TEST(KerasLayerNormalization, SeveralAxesAndGradients) {
  Tensor x = random_normal({2, 3, 4}, 0.0, 1.0, DType::Float32, 3);
  auto ln = layers::LayerNormalization({.axis = {1, 2}});
  ln(x);
  EXPECT_EQ(ln->gamma().shape(), Shape({3, 4}));
  Tensor gamma = random_normal({3, 4}, 1.0, 0.5, DType::Float32, 4);
  ln->set_weights({gamma, zeros({3, 4})});
  auto [m, v] = moments(x, {1, 2}, true);
  expect_near(ln(x), (x - m) / sqrt(v + 1e-3) * gamma, 1e-5);

  // A middle axis: gamma [3] broadcasts as [3, 1].
  auto mid = layers::LayerNormalization(LNOptions{.axis = {-2}, .epsilon = 1e-5});
  mid(x);
  mid->set_weights({constant({1, 2, 3}), constant({0, 1, 0})});
  auto [m1, v1] = moments(x, {1}, true);
  expect_near(mid(x), (x - m1) / sqrt(v1 + 1e-5) * reshape(constant({1, 2, 3}), {3, 1}) +
                          reshape(constant({0, 1, 0}), {3, 1}),
              1e-5);

  GradientTape tape;
  Tensor loss = reduce_sum(square(ln(x) - 1.0)) + reduce_sum(mid(x) * x);
  std::vector<Variable> ws = ln->trainable_weights();
  for (const Variable& w : mid->trainable_weights()) ws.push_back(w);
  std::vector<Tensor> g = tape.gradient(loss, ws);
  ASSERT_EQ(g.size(), 4u);
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_TRUE(g[i].defined()) << i;
    EXPECT_EQ(g[i].shape(), ws[i].shape()) << i;
  }
  expect_near(g[3], reduce_sum(x, {0, 2}), 1e-5);  // d beta of mid
}

TEST(KerasLayerNormalization, MixedPrecisionConfigAndErrors) {
  Tensor x = random_normal({3, 8}, 2.0, 3.0, DType::Float32, 5);
  auto ref = layers::LayerNormalization();
  auto ln = layers::LayerNormalization();
  ln->set_dtype_policy("mixed_bfloat16");
  Tensor y = ln(x);
  EXPECT_EQ(y.dtype(), DType::BFloat16);
  EXPECT_EQ(ln->gamma().dtype(), DType::Float32);
  expect_near(cast(y, DType::Float32), ref(x), 3e-2);

  auto named = layers::LayerNormalization(LNOptions{.axis = {-1}, .epsilon = 1e-6, .center = false, .name = "ln"});
  Config c = named->get_config();
  EXPECT_EQ(c["axis"], Config::array({-1}));
  EXPECT_DOUBLE_EQ(c["epsilon"].get<double>(), 1e-6);
  EXPECT_EQ(c["center"], false);
  EXPECT_EQ(c["scale"], true);
  EXPECT_EQ(c["gamma_initializer"]["class_name"], "Ones");
  named(x);
  EXPECT_EQ(named->weights().size(), 1u);
  EXPECT_FALSE(named->beta().defined());

  EXPECT_THAT(error_of([] { layers::LayerNormalization(LNOptions{.axis = {}}); }),
              HasSubstr("[LayerNormalization] axis needs at least one axis"));
  EXPECT_THAT(error_of([&] { layers::LayerNormalization(LNOptions{.axis = {2}, .name = "l1"})(x); }),
              HasSubstr("[l1] axis 2 is out of range for inputs of rank 2 [3,8]"));
  EXPECT_THAT(error_of([&] { layers::LayerNormalization(LNOptions{.name = "l2"})(Input({-1})); }),
              HasSubstr("[l2] needs known dims on the normalized axes, got [?,?]"));
  EXPECT_THAT(error_of([&] {
                layers::LayerNormalization(LNOptions{.axis = {1, -1}, .name = "l3"})(x);
              }),
              HasSubstr("[l3] axis repeats a dim: [1, -1]"));
  EXPECT_THAT(error_of([&] { named(ones({3, 5})); }),
              HasSubstr("[ln] expects dims [8] on axes [-1], got [3,5]"));
}

}  // namespace
}  // namespace deepflow::keras
