// SPDX-License-Identifier: Apache-2.0
// The Layer base (build on first call, weights, sublayers, losses, Keras tensors,
// mixed precision, error context) and the core layers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "deepflow/deepflow.h"
#include "deepflow/keras/layers/core.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::expect_near;

// The custom layer of layer.h's comment: y = x * w, w per feature, plus a counter of
// non-trainable state and an activity loss.
class Scale : public Layer {
 public:
  Scale() : Layer("") {}
  void build(const Shape& in) override {
    w_ = add_weight("w", {in.dim(-1)}, initializers::Ones());
    calls_ = add_weight("calls", {}, initializers::Zeros(), /*trainable=*/false);
    ++builds;
  }
  Tensor call(const Tensor& x, bool training) override {
    if (training) calls_.assign_add(scalar(1.0));
    add_loss(reduce_sum(square(x)) * 0.0 + 1.0);
    return x * read(w_);
  }
  std::string class_name() const override { return "Scale"; }
  int builds = 0;
  Variable w_, calls_;
};

TEST(Layer, BuildsOnceOnFirstCallFromTheInputShape) {
  auto s = make_layer<Scale>();
  EXPECT_FALSE(s->built());
  Tensor y = s(constant({1, 2, 3, 4, 5, 6}, {2, 3}));
  EXPECT_TRUE(s->built());
  s(constant({1, 2, 3}, {1, 3}));
  EXPECT_EQ(s->builds, 1);
  EXPECT_EQ(s->w_.shape(), (Shape{3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(s->name().substr(0, 5), "scale");
}

TEST(Layer, WeightsTrainableAndFrozen) {
  auto s = make_layer<Scale>();
  s(ones({1, 4}));
  EXPECT_EQ(s->trainable_weights().size(), 1u);
  EXPECT_EQ(s->non_trainable_weights().size(), 1u);
  EXPECT_EQ(s->weights().size(), 2u);
  EXPECT_EQ(s->count_params(), 5);
  s->set_trainable(false);
  EXPECT_TRUE(s->trainable_weights().empty());
  EXPECT_EQ(s->non_trainable_weights().size(), 2u);
  TensorList w = s->get_weights();
  w[0] = constant({2, 2, 2, 2});
  s->set_weights(w);
  EXPECT_EQ(s(ones({1, 4})).to_vector<float>(), (std::vector<float>{2, 2, 2, 2}));
  EXPECT_THAT(error_of([&] { s->set_weights({ones({3})}); }), HasSubstr("has 2 weights, got 1 values"));
  w[0] = ones({5});
  EXPECT_THAT(error_of([&] { s->set_weights(w); }), HasSubstr("is float32[4], got float32[5]"));
}

TEST(Layer, TrainingFlagFromArgumentOrLearningPhase) {
  auto s = make_layer<Scale>();
  s(ones({1, 2}));
  EXPECT_EQ(s->calls_.value().item<float>(), 0);
  s(ones({1, 2}), true);
  {
    LearningPhaseScope phase(true);
    s(ones({1, 2}));
    s(ones({1, 2}), false);
  }
  EXPECT_EQ(s->calls_.value().item<float>(), 2);
}

TEST(Layer, SublayersAndLosses) {
  struct Block : Layer {
    Block() {
      a = track(layers::Dense(3, {.kernel_regularizer = regularizers::L2(0.5)}));
      b = track(make_layer<Scale>());
    }
    Tensor call(const Tensor& x, bool training) override { return b(a(x, training), training); }
    std::string class_name() const override { return "Block"; }
    layers::Dense a{nullptr};
    LayerHolder<Scale> b{nullptr};
  };
  auto block = std::make_shared<Block>();
  Tensor y = (*block)(ones({2, 4}));
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(block->weights().size(), 4u);  // kernel, bias, w; calls
  EXPECT_EQ(block->trainable_weights().size(), 3u);
  TensorList losses = block->losses();
  ASSERT_EQ(losses.size(), 2u);  // the kernel's L2, Scale's activity loss
  Tensor k = block->a->kernel().value();
  EXPECT_NEAR(losses[0].item<double>(), 0.5 * reduce_sum(square(k)).item<double>(), 1e-5);
  EXPECT_NEAR(losses[1].item<double>(), 1.0, 1e-6);
}

TEST(Layer, GradientsReachEveryTrainableWeight) {
  auto dense = layers::Dense(4, "tanh");
  Tensor x = random_normal({5, 3}, 0, 1, DType::Float32, 1);
  GradientTape tape;
  Tensor loss = reduce_sum(dense(x));
  std::vector<Tensor> g = tape.gradient(loss, dense->trainable_weights());
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].shape(), (Shape{3, 4}));
  EXPECT_EQ(g[1].shape(), (Shape{4}));
}

TEST(Layer, KerasTensorsRecordCallsWithStaticShapes) {
  Tensor in = Input({28, 28, 1});
  EXPECT_TRUE(is_keras_tensor(in));
  EXPECT_EQ(in.shape(), (Shape{-1, 28, 28, 1}));
  EXPECT_EQ(keras_history(in), nullptr);
  auto flatten = layers::Flatten();
  auto dense = layers::Dense(10);
  Tensor h = flatten(in);
  Tensor out = dense(h);
  EXPECT_EQ(h.shape(), (Shape{-1, 784}));
  EXPECT_EQ(out.shape(), (Shape{-1, 10}));
  auto node = keras_history(out);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->layer.get(), dense.ptr().get());
  EXPECT_EQ(node->inputs[0].id(), h.id());
  EXPECT_FALSE(is_keras_tensor(ones({2})));
  EXPECT_EQ(dense->output_shapes(), (std::vector<Shape>{Shape{-1, 10}}));
}

TEST(Layer, ErrorsNameTheLayerAndTheInputs) {
  auto dense = layers::Dense(3, {.name = "head"});
  dense(ones({2, 4}));
  std::string e = error_of([&] { dense(ones({2, 5})); });
  EXPECT_THAT(e, HasSubstr("[head (Dense)]"));
  EXPECT_THAT(e, HasSubstr("expects inputs with last dim 4, got [2,5]"));
  EXPECT_THAT(e, HasSubstr("called on float32[2,5]"));
  EXPECT_THAT(error_of([] { layers::Dense(0); }), HasSubstr("[Dense] units must be positive, got 0"));
  EXPECT_THAT(error_of([] { layers::Dense(2, "relux"); }), HasSubstr("[activations] unknown activation 'relux'"));
  EXPECT_THAT(error_of([] { layers::Dropout(1.0); }), HasSubstr("[Dropout] rate must be in [0, 1), got 1"));
}

TEST(Layer, MixedPrecisionComputesInBfloat16WithFloat32Variables) {
  set_global_policy("mixed_bfloat16");
  auto dense = layers::Dense(4);
  set_global_policy("float32");
  Tensor y = dense(random_normal({2, 8}, 0, 1, DType::Float32, 2));
  EXPECT_EQ(y.dtype(), DType::BFloat16);
  EXPECT_EQ(dense->kernel().dtype(), DType::Float32);
  EXPECT_EQ(dense->dtype_policy().name, "mixed_bfloat16");
  EXPECT_THAT(error_of([] { set_global_policy("mixed_float8"); }), HasSubstr("[Policy] unknown dtype policy"));
}

TEST(CoreLayers, DenseMatchesItsFormula) {
  auto dense = layers::Dense(3, {.activation = "relu"});
  Tensor x = random_normal({4, 5}, 0, 1, DType::Float32, 3);
  Tensor y = dense(x);
  expect_near(y, relu(matmul(x, dense->kernel().value()) + dense->bias().value()), 1e-6);
  // Rank 3 inputs: the kernel applies to the last axis.
  EXPECT_EQ(dense(ones({2, 7, 5})).shape(), (Shape{2, 7, 3}));
  nlohmann::json c = dense->get_config();
  EXPECT_EQ(c["units"], 3);
  EXPECT_EQ(c["activation"], "relu");
}

TEST(CoreLayers, FlattenReshapeActivationDropout) {
  EXPECT_EQ(layers::Flatten()(ones({2, 3, 4})).shape(), (Shape{2, 12}));
  EXPECT_EQ(layers::Reshape(Shape{4, -1})(ones({2, 3, 4})).shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(layers::Reshape(Shape{4, -1})(Input({3, 4})).shape(), (Shape{-1, 4, 3}));
  EXPECT_EQ(layers::Activation("sigmoid")(scalar(0.0)).item<float>(), 0.5f);
  auto drop = layers::Dropout(0.5, 7);
  Tensor x = ones({1000});
  EXPECT_EQ(drop(x).to_vector<float>(), x.to_vector<float>());  // inference: identity
  Tensor d = drop(x, true);
  double kept = reduce_sum(d).item<double>() / 2.0;
  EXPECT_GT(kept, 400);
  EXPECT_LT(kept, 600);
}

TEST(CoreLayers, InsideATracedFunctionSameAsEager) {
  auto dense = layers::Dense(6, "tanh");
  Tensor x = random_normal({3, 4}, 0, 1, DType::Float32, 4);
  Tensor eager = dense(x);
  Function f = function([&](const Tensor& t) { return dense(t); }, {.name = "dense_fn"});
  expect_near(f(x)[0], eager, 1e-6);
}

}  // namespace
}  // namespace deepflow::keras
