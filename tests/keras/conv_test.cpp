// SPDX-License-Identifier: Apache-2.0
// keras::layers convolutions: output shapes (eager and Keras tensors), values against
// hand-computed answers and the ops, gradients, traced calls with an unknown batch,
// configs and errors.
#include "deepflow/keras/layers/conv.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "deepflow/autodiff/tape.h"
#include "deepflow/function/function.h"
#include "deepflow/ops/ops.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::expect_near;
namespace L = layers;
namespace init = initializers;

Tensor seq(const Shape& shape) {
  return reshape(arange(0, double(shape.num_elements()), 1), shape) * 0.1;
}

// A traced function with the batch dim unknown.
Function traced(const std::function<Tensor(const Tensor&)>& f, const Shape& shape) {
  FunctionOptions o;
  o.input_signature = Signature{{DType::Float32, shape}};
  return function([f](const Tensor& x) { return f(x); }, o);
}

TEST(KerasConv2D, OutputShapes) {
  Tensor x = random_normal({2, 5, 5, 3});
  EXPECT_EQ(L::Conv2D(4, 3)(x).shape(), Shape({2, 3, 3, 4}));
  EXPECT_EQ(L::Conv2D(4, {3, 3}, {.padding = "same"})(x).shape(), Shape({2, 5, 5, 4}));
  EXPECT_EQ(L::Conv2D(4, {3, 1}, {.padding = "SAME"})(x).shape(), Shape({2, 5, 5, 4}));
  EXPECT_EQ(L::Conv2D(4, 3, {.strides = 2, .padding = "same"})(x).shape(), Shape({2, 3, 3, 4}));
  EXPECT_EQ(L::Conv2D(4, 2, {.strides = {2, 1}})(x).shape(), Shape({2, 2, 4, 4}));
  EXPECT_EQ(L::Conv2D(4, 3, {.dilation_rate = 2})(x).shape(), Shape({2, 1, 1, 4}));
  Tensor in = Input({28, 28, 1});
  Tensor y = L::Conv2D(32, 3, {.activation = "relu"})(in);
  EXPECT_TRUE(is_keras_tensor(y));
  EXPECT_EQ(y.shape(), Shape({-1, 26, 26, 32}));
  EXPECT_EQ(L::Conv2D(8, 5, {.strides = 2, .padding = "same"})(y).shape(), Shape({-1, 13, 13, 8}));
}

TEST(KerasConv2D, ValuesMatchHandAndOps) {
  // Ones everywhere: each 2x2 window sums to 4, plus the bias 0.5.
  auto ones_conv = L::Conv2D(1, 2, {.kernel_initializer = init::Ones(), .bias_initializer = init::Constant(0.5)});
  expect_near(ones_conv(ones({1, 3, 3, 1})), fill({1, 2, 2, 1}, 4.5), 1e-6);

  Tensor x = random_normal({2, 6, 6, 3});
  auto conv = L::Conv2D(4, 3, {.strides = 2, .padding = "same", .activation = "relu",
                               .bias_initializer = init::RandomNormal(0, 1)});
  Tensor y = conv(x);
  ASSERT_EQ(conv->kernel().shape(), Shape({3, 3, 3, 4}));
  ASSERT_EQ(conv->bias().shape(), Shape({4}));
  expect_near(y, relu(conv2d(x, conv->kernel(), {2, 2}, "SAME") + conv->bias().value()), 1e-5);
  EXPECT_EQ(conv->weights().size(), 2u);
  EXPECT_EQ(conv->count_params(), 3 * 3 * 3 * 4 + 4);

  auto no_bias = L::Conv2D(2, 1, {.use_bias = false});
  no_bias(x);
  EXPECT_EQ(no_bias->weights().size(), 1u);
  EXPECT_FALSE(no_bias->bias().defined());
}

TEST(KerasConv2D, Groups) {
  Tensor x = random_normal({2, 3, 3, 4});
  auto conv = L::Conv2D(6, 1, {.groups = 2, .use_bias = false});
  Tensor y = conv(x);
  ASSERT_EQ(conv->kernel().shape(), Shape({1, 1, 2, 6}));
  // Group g: input channels [2g, 2g + 2) to output channels [3g, 3g + 3).
  Tensor k = reshape(conv->kernel().value(), {2, 6});
  Tensor x2 = reshape(x, {18, 4});
  Tensor y0 = matmul(slice(x2, {0, 0}, {18, 2}), slice(k, {0, 0}, {2, 3}));
  Tensor y1 = matmul(slice(x2, {0, 2}, {18, 2}), slice(k, {0, 3}, {2, 3}));
  expect_near(reshape(y, {18, 6}), concat({y0, y1}, 1), 1e-5);
}

TEST(KerasConv2D, GradientsAndTraining) {
  Tensor x = random_normal({2, 5, 5, 3});
  auto conv = L::Conv2D(4, 3);
  conv(x);
  {
    GradientTape tape;
    Tensor loss = reduce_sum(conv(x));
    std::vector<Tensor> g = tape.gradient(loss, conv->trainable_weights());
    ASSERT_EQ(g.size(), 2u);
    ASSERT_TRUE(g[0].defined());
    EXPECT_EQ(g[0].shape(), Shape({3, 3, 3, 4}));
    // d sum / d bias = the number of output positions, 2 * 3 * 3.
    expect_near(g[1], fill({4}, 18), 1e-5);
  }
  // Gradient descent fits a target conv.
  Tensor target = conv2d(x, random_normal({3, 3, 3, 4}) * 0.3) + 0.2;
  auto learner = L::Conv2D(4, 3);
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    GradientTape tape;
    Tensor loss = reduce_mean(square(learner(x) - target));
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    std::vector<Variable> ws = learner->trainable_weights();
    std::vector<Tensor> g = tape.gradient(loss, ws);
    for (size_t i = 0; i < ws.size(); ++i) ws[i].assign_sub(g[i] * 0.05);
  }
  EXPECT_LT(last, first * 0.2);
}

TEST(KerasConv2D, TracedWithUnknownBatch) {
  auto conv = L::Conv2D(4, 3, {.padding = "same", .activation = "tanh"});
  Tensor x = random_normal({3, 6, 6, 2});
  Tensor eager = conv(x);
  Function f = traced([conv](const Tensor& t) { return conv(t); }, {-1, 6, 6, 2});
  expect_near(f(x)[0], eager, 1e-5);
  expect_near(f(slice(x, {0, 0, 0, 0}, {1, -1, -1, -1}))[0], slice(eager, {0, 0, 0, 0}, {1, -1, -1, -1}), 1e-5);
  EXPECT_EQ(f.trace_count(), 1);
  // A traced training step: the gradients match the eager ones.
  auto grads = [conv](const Tensor& t) {
    GradientTape tape;
    Tensor loss = reduce_sum(square(conv(t)));
    std::vector<Tensor> g = tape.gradient(loss, conv->trainable_weights());
    return TensorList{g[0], g[1]};
  };
  FunctionOptions o;
  o.input_signature = Signature{{DType::Float32, Shape{-1, 6, 6, 2}}};
  Function step = function(grads, o);
  TensorList want = grads(x), got = step(x);
  expect_near(got[0], want[0], 1e-4);
  expect_near(got[1], want[1], 1e-4);
}

TEST(KerasConv2D, RegularizersAndMixedPrecision) {
  auto conv = L::Conv2D(2, 1, {.kernel_initializer = init::Constant(0.5), .bias_initializer = init::Constant(-1),
                               .kernel_regularizer = regularizers::L2(0.1), .bias_regularizer = regularizers::L1(1.0)});
  conv(ones({1, 2, 2, 3}));
  TensorList losses = conv->losses();
  ASSERT_EQ(losses.size(), 2u);
  double total = losses[0].item<double>() + losses[1].item<double>();
  EXPECT_NEAR(total, 0.1 * 6 * 0.25 + 2.0, 1e-6);

  auto mixed = L::Conv2D(3, 3, {.padding = "same"});
  mixed->set_dtype_policy("mixed_bfloat16");
  Tensor y = mixed(random_normal({1, 4, 4, 2}));
  EXPECT_EQ(y.dtype(), DType::BFloat16);
  EXPECT_EQ(mixed->kernel().dtype(), DType::Float32);
}

TEST(KerasConv1D, ShapesValuesCausal) {
  Tensor x = random_normal({2, 10, 3});
  EXPECT_EQ(L::Conv1D(4, 3)(x).shape(), Shape({2, 8, 4}));
  EXPECT_EQ(L::Conv1D(4, 3, {.padding = "same"})(x).shape(), Shape({2, 10, 4}));
  EXPECT_EQ(L::Conv1D(4, 3, {.strides = 3})(x).shape(), Shape({2, 3, 4}));
  EXPECT_EQ(L::Conv1D(4, 3, {.padding = "causal", .dilation_rate = 2})(x).shape(), Shape({2, 10, 4}));
  EXPECT_EQ(L::Conv1D(4, 3)(Input({10, 3})).shape(), Shape({-1, 8, 4}));

  Tensor s = constant({1.f, 2.f, 3.f, 4.f}, {1, 4, 1});
  auto ones_k = [](std::string padding, int64_t d) {
    return L::Conv1D(1, 2, {.padding = padding, .dilation_rate = d, .kernel_initializer = init::Ones()});
  };
  expect_near(ones_k("valid", 1)(s), constant({3.f, 5.f, 7.f}, {1, 3, 1}), 1e-6);
  expect_near(ones_k("causal", 1)(s), constant({1.f, 3.f, 5.f, 7.f}, {1, 4, 1}), 1e-6);  // y_t = x_{t-1} + x_t
  expect_near(ones_k("causal", 2)(s), constant({1.f, 2.f, 4.f, 6.f}, {1, 4, 1}), 1e-6);  // y_t = x_{t-2} + x_t

  // Equals a Conv2D over [b, 1, steps, c] with the same kernel, groups included.
  auto c1 = L::Conv1D(4, 3, {.strides = 2, .padding = "same", .groups = 2});
  Tensor y = c1(seq({2, 9, 6}));
  ASSERT_EQ(c1->kernel().shape(), Shape({3, 3, 4}));
  Tensor ref = conv2d(expand_dims(seq({2, 9, 6}), 1), expand_dims(c1->kernel().value(), 0), {1, 2}, "SAME");
  expect_near(y, squeeze(ref, {1}) + c1->bias().value(), 1e-5);
}

TEST(KerasConv1D, TracedAndGradients) {
  auto c1 = L::Conv1D(3, 2, {.padding = "causal", .activation = "relu"});
  Tensor x = random_normal({4, 7, 2});
  Tensor eager = c1(x);
  Function f = traced([c1](const Tensor& t) { return c1(t); }, {-1, 7, 2});
  expect_near(f(x)[0], eager, 1e-5);
  GradientTape tape;
  Tensor loss = reduce_sum(square(c1(x)));
  std::vector<Tensor> g = tape.gradient(loss, c1->trainable_weights());
  ASSERT_EQ(g.size(), 2u);
  ASSERT_TRUE(g[0].defined() && g[1].defined());
  EXPECT_EQ(g[0].shape(), Shape({2, 2, 3}));
  EXPECT_EQ(g[1].shape(), Shape({3}));
}

TEST(KerasConv2DTranspose, OutputShapes) {
  Tensor x = random_normal({2, 4, 4, 3});
  EXPECT_EQ(L::Conv2DTranspose(5, 3, {.strides = 2, .padding = "same"})(x).shape(), Shape({2, 8, 8, 5}));
  EXPECT_EQ(L::Conv2DTranspose(5, 3, {.strides = 2})(x).shape(), Shape({2, 9, 9, 5}));  // 4*2 + (3-2)
  EXPECT_EQ(L::Conv2DTranspose(5, 1, {.strides = 2})(x).shape(), Shape({2, 8, 8, 5}));  // kernel < stride
  EXPECT_EQ(L::Conv2DTranspose(5, 3)(x).shape(), Shape({2, 6, 6, 5}));
  EXPECT_EQ(L::Conv2DTranspose(5, 3, {.dilation_rate = 2})(x).shape(), Shape({2, 8, 8, 5}));
  // output_padding: (n - 1) * s + k - 2 * pad + output_padding.
  EXPECT_EQ(L::Conv2DTranspose(5, 3, {.strides = 2, .padding = "same", .output_padding = 1})(x).shape(),
            Shape({2, 8, 8, 5}));
  EXPECT_EQ(L::Conv2DTranspose(5, 3, {.strides = 2, .output_padding = {1, 0}})(x).shape(), Shape({2, 10, 9, 5}));
  Tensor y = L::Conv2DTranspose(8, 3, {.strides = 2, .padding = "same"})(Input({7, 7, 16}));
  EXPECT_EQ(y.shape(), Shape({-1, 14, 14, 8}));
}

TEST(KerasConv2DTranspose, Values) {
  // Ones kernel 2x2, stride 1: each input 1 spreads to a 2x2 block; the blocks overlap.
  auto t = L::Conv2DTranspose(1, 2, {.kernel_initializer = init::Ones()});
  expect_near(t(ones({1, 2, 2, 1})), constant({1.f, 2.f, 1.f, 2.f, 4.f, 2.f, 1.f, 2.f, 1.f}, {1, 3, 3, 1}), 1e-6);
  // Stride 2: the blocks tile without overlap.
  auto t2 = L::Conv2DTranspose(1, 2, {.strides = 2, .kernel_initializer = init::Ones()});
  expect_near(t2(ones({1, 2, 2, 1})), ones({1, 4, 4, 1}), 1e-6);
  // Against the op with the layer's own weights.
  Tensor x = random_normal({2, 3, 3, 4});
  auto t3 = L::Conv2DTranspose(2, 3, {.strides = 2, .padding = "same", .bias_initializer = init::Constant(0.25)});
  Tensor y = t3(x);
  ASSERT_EQ(t3->kernel().shape(), Shape({3, 3, 2, 4}));
  expect_near(y, conv2d_transpose(x, t3->kernel(), {2, 6, 6, 2}, {2, 2}, "SAME") + 0.25, 1e-5);
}

TEST(KerasConv2DTranspose, TracedWithUnknownBatchAndGradients) {
  auto t = L::Conv2DTranspose(3, 3, {.strides = 2, .padding = "same", .activation = "relu"});
  Tensor x = random_normal({2, 4, 4, 2});
  Tensor eager = t(x);
  Function f = traced([t](const Tensor& v) { return t(v); }, {-1, 4, 4, 2});
  expect_near(f(x)[0], eager, 1e-5);
  expect_near(f(slice(x, {1, 0, 0, 0}, {1, -1, -1, -1}))[0], slice(eager, {1, 0, 0, 0}, {1, -1, -1, -1}), 1e-5);
  auto grads = [t](const Tensor& v) {
    GradientTape tape;
    Tensor loss = reduce_sum(square(t(v)));
    std::vector<Tensor> g = tape.gradient(loss, t->trainable_weights());
    return TensorList{g[0], g[1]};
  };
  TensorList want = grads(x);
  ASSERT_TRUE(want[0].defined() && want[1].defined());
  EXPECT_EQ(want[0].shape(), Shape({3, 3, 3, 2}));
  FunctionOptions o;
  o.input_signature = Signature{{DType::Float32, Shape{-1, 4, 4, 2}}};
  TensorList got = function(grads, o)(x);
  expect_near(got[0], want[0], 1e-4);
  expect_near(got[1], want[1], 1e-4);
}

TEST(KerasDepthwiseConv2D, ShapesValuesGradients) {
  Tensor x = random_normal({2, 5, 5, 3});
  auto d = L::DepthwiseConv2D(3, {.depth_multiplier = 2});
  EXPECT_EQ(d(x).shape(), Shape({2, 3, 3, 6}));
  EXPECT_EQ(d->kernel().shape(), Shape({3, 3, 3, 2}));
  EXPECT_EQ(d->bias().shape(), Shape({6}));
  EXPECT_EQ(L::DepthwiseConv2D({3, 3}, {.strides = 2, .padding = "same"})(Input({8, 8, 4})).shape(),
            Shape({-1, 4, 4, 4}));
  // Channel c holds c + 1; a ones 1x1 kernel gives output channel c * m + j = c + 1.
  Tensor chan = broadcast_to(constant({1.f, 2.f, 3.f}, {1, 1, 1, 3}), {1, 2, 2, 3});
  Tensor y = L::DepthwiseConv2D(1, {.depth_multiplier = 2, .depthwise_initializer = init::Ones()})(chan);
  expect_near(y, broadcast_to(constant({1.f, 1.f, 2.f, 2.f, 3.f, 3.f}, {1, 1, 1, 6}), {1, 2, 2, 6}), 1e-6);
  auto r = L::DepthwiseConv2D(3, {.padding = "same", .bias_initializer = init::Constant(1)});
  Tensor ry = r(x);  // builds r before its kernel is read
  expect_near(ry, depthwise_conv2d(x, r->kernel(), {1, 1}, "SAME") + 1.0, 1e-5);
  GradientTape tape;
  std::vector<Tensor> g = tape.gradient(reduce_sum(square(d(x))), d->trainable_weights());
  ASSERT_EQ(g.size(), 2u);
  ASSERT_TRUE(g[0].defined() && g[1].defined());
  EXPECT_EQ(g[0].shape(), Shape({3, 3, 3, 2}));
  Function f = traced([r](const Tensor& t) { return r(t); }, {-1, 5, 5, 3});
  expect_near(f(x)[0], ry, 1e-5);
}

TEST(KerasSeparableConv2D, ShapesValuesGradients) {
  Tensor x = random_normal({2, 6, 6, 3});
  auto s = L::SeparableConv2D(4, 3, {.strides = 2, .padding = "same", .depth_multiplier = 2, .activation = "relu",
                                     .bias_initializer = init::Constant(0.1)});
  Tensor y = s(x);
  EXPECT_EQ(y.shape(), Shape({2, 3, 3, 4}));
  EXPECT_EQ(s->depthwise_kernel().shape(), Shape({3, 3, 3, 2}));
  EXPECT_EQ(s->pointwise_kernel().shape(), Shape({1, 1, 6, 4}));
  EXPECT_EQ(s->bias().shape(), Shape({4}));
  Tensor ref = conv2d(depthwise_conv2d(x, s->depthwise_kernel(), {2, 2}, "SAME"), s->pointwise_kernel()) + 0.1;
  expect_near(y, relu(ref), 1e-5);
  // Ones everywhere, 2x2 valid on ones: each depthwise output is 4, each pointwise sums 3 of them.
  auto ones_s =
      L::SeparableConv2D(1, 2, {.depthwise_initializer = init::Ones(), .pointwise_initializer = init::Ones()});
  expect_near(ones_s(ones({1, 3, 3, 3})), fill({1, 2, 2, 1}, 12), 1e-6);
  EXPECT_EQ(L::SeparableConv2D(8, 3)(Input({10, 10, 3})).shape(), Shape({-1, 8, 8, 8}));
  GradientTape tape;
  std::vector<Tensor> g = tape.gradient(reduce_sum(square(s(x))), s->trainable_weights());
  ASSERT_EQ(g.size(), 3u);
  for (const Tensor& gi : g) ASSERT_TRUE(gi.defined());
  EXPECT_EQ(g[1].shape(), Shape({1, 1, 6, 4}));
  Function f = traced([s](const Tensor& t) { return s(t); }, {-1, 6, 6, 3});
  expect_near(f(x)[0], y, 1e-5);
}

TEST(KerasConvLayers, Configs) {
  auto c = L::Conv2D(16, {3, 5}, {.strides = 2, .padding = "Same", .activation = "relu", .use_bias = false,
                                  .kernel_initializer = init::HeNormal(), .kernel_regularizer = regularizers::L2(0.5),
                                  .name = "my_conv"});
  Config cfg = c->get_config();
  EXPECT_EQ(cfg["name"], "my_conv");
  EXPECT_EQ(cfg["filters"], 16);
  EXPECT_EQ(cfg["kernel_size"], Config({3, 5}));
  EXPECT_EQ(cfg["strides"], Config({2, 2}));
  EXPECT_EQ(cfg["padding"], "same");
  EXPECT_EQ(cfg["dilation_rate"], Config({1, 1}));
  EXPECT_EQ(cfg["groups"], 1);
  EXPECT_EQ(cfg["data_format"], "channels_last");
  EXPECT_EQ(cfg["activation"], "relu");
  EXPECT_EQ(cfg["use_bias"], false);
  EXPECT_EQ(cfg["kernel_initializer"]["class_name"], "HeNormal");
  EXPECT_EQ(cfg["bias_initializer"]["class_name"], "Zeros");
  EXPECT_EQ(cfg["kernel_regularizer"]["config"]["l2"], 0.5);
  EXPECT_TRUE(cfg["bias_regularizer"].is_null());
  EXPECT_EQ(c->class_name(), "Conv2D");

  Config c1 = L::Conv1D(4, 3, {.padding = "causal"})->get_config();
  EXPECT_EQ(c1["kernel_size"], Config({3}));
  EXPECT_EQ(c1["padding"], "causal");
  EXPECT_EQ(c1["activation"], "linear");
  Config t = L::Conv2DTranspose(4, 3, {.strides = 2, .output_padding = 1})->get_config();
  EXPECT_EQ(t["output_padding"], Config({1, 1}));
  EXPECT_TRUE(L::Conv2DTranspose(4, 3)->get_config()["output_padding"].is_null());
  Config d = L::DepthwiseConv2D(3, {.depth_multiplier = 3})->get_config();
  EXPECT_EQ(d["depth_multiplier"], 3);
  EXPECT_EQ(d["depthwise_initializer"]["class_name"], "GlorotUniform");
  EXPECT_FALSE(d.contains("filters"));
  Config s = L::SeparableConv2D(8, 3, {.pointwise_regularizer = regularizers::L1(0.1)})->get_config();
  EXPECT_EQ(s["filters"], 8);
  EXPECT_EQ(s["depth_multiplier"], 1);
  EXPECT_EQ(s["pointwise_regularizer"]["class_name"], "L1");
  EXPECT_EQ(s["pointwise_initializer"]["class_name"], "GlorotUniform");
  EXPECT_EQ(L::SeparableConv2D(8, 3)->class_name(), "SeparableConv2D");
}

TEST(KerasConvLayers, ArgumentErrors) {
  EXPECT_THAT(error_of([] { L::Conv2D(0, 3); }), HasSubstr("[Conv2D] filters must be positive, got 0"));
  EXPECT_THAT(error_of([] { L::Conv2D(4, {3, 3, 3}); }),
              HasSubstr("[Conv2D] kernel_size must be 1 or 2 positive ints, got [3,3,3]"));
  EXPECT_THAT(error_of([] { L::Conv2D(4, {3, 0}); }), HasSubstr("[Conv2D] kernel_size must be 1 or 2 positive ints"));
  EXPECT_THAT(error_of([] { L::Conv1D(4, 3, {.strides = {1, 2}}); }),
              HasSubstr("[Conv1D] strides must be 1 or 1 positive ints, got [1,2]"));
  EXPECT_THAT(error_of([] { L::Conv2D(4, 3, {.padding = "full"}); }),
              HasSubstr("[Conv2D] padding must be \"valid\" or \"same\", got \"full\""));
  EXPECT_THAT(error_of([] { L::Conv2D(4, 3, {.padding = "causal"}); }), HasSubstr("got \"causal\""));
  EXPECT_THAT(error_of([] { L::Conv1D(4, 3, {.padding = "full"}); }),
              HasSubstr("[Conv1D] padding must be \"valid\", \"same\" or \"causal\", got \"full\""));
  EXPECT_THAT(error_of([] { L::Conv2D(6, 3, {.groups = 4}); }),
              HasSubstr("[Conv2D] filters 6 are not divisible by groups 4"));
  EXPECT_THAT(error_of([] { L::Conv2D(6, 3, {.groups = 0}); }), HasSubstr("[Conv2D] groups must be positive, got 0"));
  EXPECT_THAT(error_of([] { L::Conv2D(4, 3, {.strides = 2, .dilation_rate = 2}); }),
              HasSubstr("[Conv2D] strides > 1 are not supported together with dilation_rate > 1, got strides [2,2] "
                        "and dilation_rate [2,2]"));
  EXPECT_THAT(error_of([] { L::Conv2D(4, 3, {.activation = "relux"}); }),
              HasSubstr("[activations] unknown activation 'relux'"));
  EXPECT_THAT(error_of([] { L::Conv2DTranspose(4, 3, {.strides = 2, .output_padding = 2}); }),
              HasSubstr("[Conv2DTranspose] output_padding must be smaller than strides, got output_padding [2,2] and "
                        "strides [2,2]"));
  EXPECT_THAT(error_of([] { L::Conv2DTranspose(-1, 3); }), HasSubstr("[Conv2DTranspose] filters must be positive"));
  EXPECT_THAT(error_of([] { L::DepthwiseConv2D(3, {.depth_multiplier = 0}); }),
              HasSubstr("[DepthwiseConv2D] depth_multiplier must be positive, got 0"));
  EXPECT_THAT(error_of([] { L::SeparableConv2D(4, 3, {.depth_multiplier = -2}); }),
              HasSubstr("[SeparableConv2D] depth_multiplier must be positive, got -2"));
}

TEST(KerasConvLayers, InputErrors) {
  auto c = L::Conv2D(4, 3, {.name = "c2"});
  EXPECT_THAT(error_of([&] { c(Input({28, 28})); }),
              HasSubstr("[c2] expects inputs of rank 4 (batch, height, width, channels), got [?,28,28]"));
  c(random_normal({1, 5, 5, 2}));
  EXPECT_THAT(error_of([&] { c(random_normal({1, 5, 5, 3})); }),
              HasSubstr("[c2] expects inputs with 2 channels, got [1,5,5,3]"));
  EXPECT_THAT(error_of([] { L::Conv2D(4, 3, {.groups = 2, .name = "g"})(random_normal({1, 5, 5, 3})); }),
              HasSubstr("[g] input channels 3 are not divisible by groups 2 (input [1,5,5,3])"));
  EXPECT_THAT(error_of([] { L::Conv1D(4, 3, {.name = "c1"})(random_normal({1, 5, 5, 3})); }),
              HasSubstr("[c1] expects inputs of rank 3 (batch, steps, channels), got [1,5,5,3]"));
  EXPECT_THAT(error_of([] { L::Conv2D(4, 7)(random_normal({1, 5, 5, 3})); }), HasSubstr("does not fit input size 5"));
  EXPECT_THAT(error_of([] { L::Conv2DTranspose(4, 3, {.name = "t"})(Input({-1, -1, 3})); }),
              HasSubstr("[t] needs inputs with a known height and width, got [?,?,?,3]"));
  EXPECT_THAT(error_of([] { L::DepthwiseConv2D(3, {.name = "dw"})(Input({5, 5, -1})); }),
              HasSubstr("[dw] needs inputs with a known channel dim, got [?,5,5,?]"));
}

}  // namespace
}  // namespace deepflow::keras
