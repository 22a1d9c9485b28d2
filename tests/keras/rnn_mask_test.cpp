// SPDX-License-Identifier: Apache-2.0
// Recurrent layers over an unknown number of timesteps (the while_loop path) and Keras's
// masking: Embedding(mask_zero) -> RNN / GlobalAveragePooling1D in functional and
// Sequential models, explicit masks, and the mask a return_sequences RNN passes on.
// The references are the same layers run eagerly on the unpadded sequences: a masked
// step must leave the states and the output as they were.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "deepflow/core/random.h"
#include "deepflow/function/function.h"
#include "deepflow/keras/layers/core.h"
#include "deepflow/keras/layers/embedding.h"
#include "deepflow/keras/layers/keras_ops.h"
#include "deepflow/keras/layers/pooling.h"
#include "deepflow/keras/layers/rnn.h"
#include "deepflow/keras/model.h"
#include "deepflow/ops/ops.h"
#include "test_util.h"

namespace deepflow::keras::layers {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::expect_near;

Tensor ids(const std::vector<int32_t>& values, int64_t batch) {
  return constant(values, Shape{batch, int64_t(values.size()) / batch});
}

void randomize(Layer& layer) {
  TensorList ws;
  for (const Variable& v : layer.weights()) ws.push_back(random_normal(v.shape(), 0, 0.5));
  layer.set_weights(ws);
}

// A traced function whose input has unknown batch and timesteps runs the while_loop;
// it must give what the unrolled eager call gives, for every output.
TEST(KerasRNNUnknownSteps, LoopMatchesUnrolled) {
  set_random_seed(11);
  auto lstm = LSTM(4, {.return_sequences = true, .return_state = true});
  auto gru = GRU(3, {.go_backwards = true});
  auto rnn = SimpleRNN(2, {.return_sequences = true, .go_backwards = true});
  FunctionOptions opts;
  opts.input_signature = Signature{{DType::Float32, Shape{-1, -1, 5}}};
  auto run = [&](const Tensor& x) {
    TensorList out = lstm(TensorList{x});
    out.push_back(gru(out[0]));
    out.push_back(rnn(out[0]));
    return out;
  };
  Function f = function(run, opts);
  for (auto [batch, steps] : {std::pair<int64_t, int64_t>{2, 3}, {3, 7}, {1, 1}}) {
    const Tensor x = random_normal({batch, steps, 5});
    const TensorList traced = f(x), eager = run(x);
    ASSERT_EQ(traced.size(), 5u);
    for (size_t i = 0; i < traced.size(); ++i) {
      ASSERT_EQ(traced[i].shape(), eager[i].shape()) << "output " << i;
      expect_near(traced[i], eager[i], 1e-5);
    }
  }
  EXPECT_EQ(f.trace_count(), 1);
}

// A functional model on Input((None, f)) builds (the loop gives the static shapes) and
// predicts like the layer on known lengths.
TEST(KerasRNNUnknownSteps, FunctionalModelOnAnyLength) {
  Tensor in = Input({-1, 6});
  auto lstm = LSTM(5, {.return_sequences = true});
  Tensor seq = lstm(in);
  EXPECT_EQ(seq.shape(), (Shape{-1, -1, 5}));
  auto gru = GRU(3);
  Tensor out = gru(seq);
  EXPECT_EQ(out.shape(), (Shape{-1, 3}));
  auto model = std::make_shared<Model>(TensorList{in}, TensorList{out});
  for (int64_t steps : {2, 9}) {
    const Tensor x = random_normal({4, steps, 6});
    expect_near(model->predict(x), gru(lstm(x)), 1e-5);
  }
}

// Trailing and leading padding change nothing: each row equals its unpadded tokens.
TEST(KerasMasking, EmbeddingMaskZeroIntoGruAndLstm) {
  set_random_seed(3);
  for (bool sequential : {false, true}) {
    auto emb = Embedding(20, 4, {.mask_zero = true});
    auto gru = GRU(3, {.return_sequences = true});
    auto lstm = LSTM(2);
    ModelPtr model;
    if (sequential) {
      model = std::make_shared<Sequential>(std::vector<LayerPtr>{InputLayer(Shape{-1}, DType::Int32), emb, gru, lstm});
    } else {
      Tensor in = Input({-1}, "tokens", DType::Int32);
      Tensor h = emb(in);
      EXPECT_TRUE(keras_mask(h).defined());
      Tensor s = gru(h);
      EXPECT_TRUE(keras_mask(s).defined()) << "return_sequences passes the mask on";
      Tensor y = lstm(s);
      EXPECT_FALSE(keras_mask(y).defined());
      model = std::make_shared<Model>(TensorList{in}, TensorList{y});
    }
    randomize(*gru);
    randomize(*lstm);
    const Tensor padded = ids({5, 7, 2, 0, 0,  //
                               0, 0, 9, 4, 1,  //
                               3, 3, 3, 3, 3},
                              3);
    const Tensor y = model->predict(padded);
    ASSERT_EQ(y.shape(), (Shape{3, 2}));
    auto alone = [&](std::vector<int32_t> row) { return lstm(gru(emb(ids(row, 1)))); };
    expect_near(slice(y, {0, 0}, {1, -1}), alone({5, 7, 2}), 1e-5);
    expect_near(slice(y, {1, 0}, {1, -1}), alone({9, 4, 1}), 1e-5);
    expect_near(slice(y, {2, 0}, {1, -1}), alone({3, 3, 3, 3, 3}), 1e-5);
  }
}

// A Sequential called inside a functional model hands the mask it gets to its first layer.
TEST(KerasMasking, NestedSequentialTakesTheMask) {
  auto emb = Embedding(20, 4, {.mask_zero = true});
  auto gru = GRU(3);
  auto inner = std::make_shared<Sequential>(std::vector<LayerPtr>{gru});
  Tensor in = Input({-1}, "", DType::Int32);
  auto model = std::make_shared<Model>(TensorList{in}, TensorList{(*inner)(emb(in))});
  const Tensor y = model->predict(ids({6, 2, 0, 0}, 1));
  expect_near(y, gru(emb(ids({6, 2}, 1))), 1e-5);
}

// Keras's masked return_sequences: a masked step repeats the previous output (zeros
// before the first kept step).
TEST(KerasMasking, MaskedStepsRepeatThePreviousOutput) {
  auto rnn = SimpleRNN(3, {.return_sequences = true});
  const Tensor x = random_normal({1, 4, 2});
  const Tensor mask = constant(std::vector<double>{0, 1, 0, 1}, Shape{1, 4}, DType::Bool);
  const Tensor y = rnn(TensorList{x}, TensorList{mask})[0];
  const Tensor step = reshape(rnn(slice(x, {0, 1, 0}, {1, 1, -1})), {1, 3});  // the first kept step alone
  expect_near(slice(y, {0, 0, 0}, {1, 1, -1}), zeros({1, 1, 3}), 0);
  expect_near(reshape(slice(y, {0, 1, 0}, {1, 1, -1}), {1, 3}), step, 1e-5);
  expect_near(slice(y, {0, 2, 0}, {1, 1, -1}), slice(y, {0, 1, 0}, {1, 1, -1}), 0);
}

// The masked loop (unknown length) agrees with the masked unrolled path.
TEST(KerasMasking, LoopHonoursTheMask) {
  auto gru = GRU(3, {.return_sequences = true});
  FunctionOptions opts;
  opts.input_signature = Signature{{DType::Float32, Shape{-1, -1, 2}}, {DType::Bool, Shape{-1, -1}}};
  Function f = function([&](const TensorList& in) { return gru(TensorList{in[0]}, TensorList{in[1]}); }, opts);
  const Tensor x = random_normal({2, 5, 2});
  const Tensor mask = constant(std::vector<double>{1, 1, 0, 1, 0, 0, 1, 1, 1, 0}, Shape{2, 5}, DType::Bool);
  expect_near(f({x, mask})[0], gru(TensorList{x}, TensorList{mask})[0], 1e-5);
}

TEST(KerasMasking, GlobalAveragePooling1DAveragesTheKeptSteps) {
  auto emb = Embedding(10, 3, {.mask_zero = true});
  Tensor in = Input({-1}, "", DType::Int32);
  auto dense = Dense(3);
  Tensor pooled = GlobalAveragePooling1D()(dense(emb(in)));  // Dense passes the mask on
  auto model = std::make_shared<Model>(TensorList{in}, TensorList{pooled});
  const Tensor y = model->predict(ids({4, 2, 0, 0}, 1));
  const Tensor want = reduce_mean(dense(emb(ids({4, 2}, 1))), {1});
  expect_near(y, want, 1e-5);
}

TEST(KerasOp, NotEqualWithAConstant) {
  auto op = KerasOp("NotEqual", Config::parse(R"([{"class_name": "__keras_tensor__"}, 0])"), "ne");
  const Tensor m = op(TensorList{ids({1, 0, 3}, 1)})[0];
  EXPECT_EQ(m.dtype(), DType::Bool);
  expect_near(cast(m, DType::Float32), constant({1.f, 0.f, 1.f}, {1, 3}), 0);
  EXPECT_EQ(op->call_args(Config::parse(R"([{"x": 1}])")).dump(), R"([{"x":1},0])");
  EXPECT_THAT(error_of([] { KerasOp("Einsum", Config::array(), "e"); }),
              HasSubstr("[KerasOp] deepflow does not compute the Keras op Einsum"));
  EXPECT_THAT(error_of([] { GRU(2, {.name = "gm"})(TensorList{random_normal({2, 3, 4})}, TensorList{zeros({2, 4})}); }),
              HasSubstr("expects a mask of shape [batch, timesteps] for inputs [2,3,4], got [2,4]"));
}

}  // namespace
}  // namespace deepflow::keras::layers
