// SPDX-License-Identifier: Apache-2.0
// keras::layers SimpleRNN, LSTM, GRU, Bidirectional: shapes (eager and on Keras tensors),
// one step by hand, full recurrences against plain-op references with the layers' own
// weights, gradients (connected and numerically right), traced == eager (also with an
// unknown batch and a traced gradient), a small learning task, configs and errors.
#include "deepflow/keras/layers/rnn.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "deepflow/autodiff/tape.h"
#include "deepflow/core/random.h"
#include "deepflow/function/function.h"
#include "deepflow/keras/layers/core.h"
#include "deepflow/ops/ops.h"
#include "deepflow/ops/variable.h"
#include "test_util.h"

namespace deepflow::keras::layers {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::expect_near;

// Gate k of a [b, gates * u] tensor.
Tensor gate(const Tensor& z, int64_t k, int64_t u) { return slice(z, {0, k * u}, {-1, u}); }
// x[:, t, :] of a concrete [b, t, f] tensor.
Tensor at(const Tensor& x, int64_t t) {
  return reshape(slice(x, {0, t, 0}, {-1, 1, -1}), {x.shape()[0], x.shape()[2]});
}

// The layer's weights replaced by random ones (biases too, so they matter).
void randomize(Layer& layer) {
  TensorList ws;
  for (const Variable& v : layer.weights()) ws.push_back(random_normal(v.shape(), 0, 0.5));
  layer.set_weights(ws);
}

// Reference recurrences with plain ops: {sequence [b, t, u], final states...}.
TensorList ref_simple_rnn(const Tensor& x, const Tensor& k, const Tensor& r, const Tensor& b) {
  Tensor h = zeros({x.shape()[0], r.shape()[0]});
  std::vector<Tensor> seq;
  for (int64_t t = 0; t < x.shape()[1]; ++t) seq.push_back(h = tanh(matmul(at(x, t), k) + matmul(h, r) + b));
  return {stack(seq, 1), h};
}

TensorList ref_lstm(const Tensor& x, const Tensor& k, const Tensor& r, const Tensor& b) {
  const int64_t u = r.shape()[0];
  Tensor h = zeros({x.shape()[0], u}), c = h;
  std::vector<Tensor> seq;
  for (int64_t t = 0; t < x.shape()[1]; ++t) {
    Tensor z = matmul(at(x, t), k) + matmul(h, r) + b;
    c = sigmoid(gate(z, 1, u)) * c + sigmoid(gate(z, 0, u)) * tanh(gate(z, 2, u));
    seq.push_back(h = sigmoid(gate(z, 3, u)) * tanh(c));
  }
  return {stack(seq, 1), h, c};
}

// reset_after: b is [2, 3u].
TensorList ref_gru(const Tensor& x, const Tensor& k, const Tensor& r, const Tensor& b) {
  const int64_t u = r.shape()[0];
  const Tensor bi = reshape(slice(b, {0, 0}, {1, -1}), {3 * u}), br = reshape(slice(b, {1, 0}, {1, -1}), {3 * u});
  Tensor h = zeros({x.shape()[0], u});
  std::vector<Tensor> seq;
  for (int64_t t = 0; t < x.shape()[1]; ++t) {
    Tensor xz = matmul(at(x, t), k) + bi, hz = matmul(h, r) + br;
    Tensor z = sigmoid(gate(xz, 0, u) + gate(hz, 0, u));
    Tensor rr = sigmoid(gate(xz, 1, u) + gate(hz, 1, u));
    Tensor hh = tanh(gate(xz, 2, u) + rr * gate(hz, 2, u));
    seq.push_back(h = z * h + (1.0 - z) * hh);
  }
  return {stack(seq, 1), h};
}

// reset_after false: b is [3u], the reset gate scales h before its matmul.
TensorList ref_gru_v1(const Tensor& x, const Tensor& k, const Tensor& r, const Tensor& b) {
  const int64_t u = r.shape()[0];
  Tensor h = zeros({x.shape()[0], u});
  std::vector<Tensor> seq;
  for (int64_t t = 0; t < x.shape()[1]; ++t) {
    Tensor xz = matmul(at(x, t), k) + b;
    Tensor z = sigmoid(gate(xz, 0, u) + matmul(h, slice(r, {0, 0}, {u, u})));
    Tensor rr = sigmoid(gate(xz, 1, u) + matmul(h, slice(r, {0, u}, {u, u})));
    Tensor hh = tanh(gate(xz, 2, u) + matmul(rr * h, slice(r, {0, 2 * u}, {u, u})));
    seq.push_back(h = z * h + (1.0 - z) * hh);
  }
  return {stack(seq, 1), h};
}

double sig(double v) { return 1 / (1 + std::exp(-v)); }

TEST(KerasRNN, OutputAndWeightShapes) {
  Tensor x = random_normal({2, 5, 3});
  auto rnn = SimpleRNN(4);
  EXPECT_EQ(rnn(x).shape(), Shape({2, 4}));
  EXPECT_EQ(rnn->kernel().shape(), Shape({3, 4}));
  EXPECT_EQ(rnn->recurrent_kernel().shape(), Shape({4, 4}));
  EXPECT_EQ(rnn->bias().shape(), Shape({4}));
  EXPECT_EQ(rnn->kernel().name(), rnn->name() + "/kernel");
  EXPECT_EQ(rnn->recurrent_kernel().name(), rnn->name() + "/recurrent_kernel");

  auto lstm = LSTM(6, {.return_sequences = true});
  EXPECT_EQ(lstm(x).shape(), Shape({2, 5, 6}));
  EXPECT_EQ(lstm->kernel().shape(), Shape({3, 24}));
  EXPECT_EQ(lstm->recurrent_kernel().shape(), Shape({6, 24}));
  EXPECT_EQ(lstm->bias().shape(), Shape({24}));
  EXPECT_EQ(lstm->count_params(), 3 * 24 + 6 * 24 + 24);

  auto gru = GRU(2, {.return_state = true});
  TensorList out = gru(TensorList{x});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), Shape({2, 2}));
  EXPECT_EQ(out[1].shape(), Shape({2, 2}));
  expect_near(out[0], out[1], 0);  // the last output is the state
  EXPECT_EQ(gru->kernel().shape(), Shape({3, 6}));
  EXPECT_EQ(gru->bias().shape(), Shape({2, 6}));  // reset_after: input and recurrent biases
  auto gru1 = GRU(2, {.reset_after = false});
  gru1(x);
  EXPECT_EQ(gru1->bias().shape(), Shape({6}));

  auto nobias = LSTM(3, {.use_bias = false});
  nobias(x);
  EXPECT_EQ(nobias->weights().size(), 2u);
  EXPECT_FALSE(nobias->bias().defined());

  auto states = LSTM(5, {.return_sequences = true, .return_state = true});
  out = states(TensorList{x});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].shape(), Shape({2, 5, 5}));
  EXPECT_EQ(out[1].shape(), Shape({2, 5}));
  EXPECT_EQ(out[2].shape(), Shape({2, 5}));
  expect_near(at(out[0], 4), out[1], 0);
  // The single-tensor call gives the first output.
  expect_near(states->call(x, false), out[0], 0);
}

TEST(KerasRNN, ShapesOnKerasTensors) {
  Tensor in = Input({7, 3});
  Tensor y = LSTM(4)(in);
  EXPECT_TRUE(is_keras_tensor(y));
  EXPECT_EQ(y.shape(), Shape({-1, 4}));
  EXPECT_EQ(SimpleRNN(2, {.return_sequences = true})(in).shape(), Shape({-1, 7, 2}));
  TensorList out = GRU(5, {.return_sequences = true, .return_state = true})(TensorList{in});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), Shape({-1, 7, 5}));
  EXPECT_EQ(out[1].shape(), Shape({-1, 5}));
  auto lstm = LSTM(3, {.return_state = true});
  out = lstm(TensorList{in});
  ASSERT_EQ(out.size(), 3u);
  for (const Tensor& t : out) EXPECT_EQ(t.shape(), Shape({-1, 3}));
  EXPECT_EQ(lstm->output_shapes().size(), 3u);
}

TEST(KerasRNN, Initializers) {
  auto lstm = LSTM(4);
  lstm(random_normal({1, 2, 3}));
  // unit_forget_bias: [0 x 4, 1 x 4, 0 x 8] for i, f, c, o.
  std::vector<float> want(16, 0.f);
  for (int i = 4; i < 8; ++i) want[size_t(i)] = 1.f;
  EXPECT_EQ(lstm->bias().value().to_vector<float>(), want);
  // Orthogonal recurrent kernel [4, 16]: orthonormal rows.
  Tensor r = lstm->recurrent_kernel().value();
  expect_near(matmul(r, r, false, true), constant(std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1},
                                                    {4, 4}),
              1e-5);
  auto plain = LSTM(4, {.unit_forget_bias = false});
  plain(random_normal({1, 2, 3}));
  EXPECT_EQ(plain->bias().value().to_vector<float>(), std::vector<float>(16, 0.f));
  auto custom = LSTM(2, {.bias_initializer = initializers::Constant(0.5)});
  custom(random_normal({1, 2, 3}));
  EXPECT_EQ(custom->bias().value().to_vector<float>(), (std::vector<float>{.5f, .5f, 1, 1, .5f, .5f, .5f, .5f}));
}

// units = features = 1 and known weights: each step computed with std:: math.
TEST(KerasRNN, OneStepByHand) {
  Tensor x = constant({2.f, -1.f}, {1, 2, 1});
  auto rnn = SimpleRNN(1, {.return_sequences = true});
  rnn(x);
  rnn->set_weights({constant({0.5f}, {1, 1}), constant({0.3f}, {1, 1}), constant({0.1f}, {1})});
  const double h1 = std::tanh(0.5 * 2 + 0.1), h2 = std::tanh(0.5 * -1 + 0.3 * h1 + 0.1);
  expect_near(rnn(x), constant({float(h1), float(h2)}, {1, 2, 1}), 1e-6);

  // LSTM, gates i, f, c, o: kernel [1, 4], recurrent [1, 4], bias [4].
  auto lstm = LSTM(1, {.return_state = true});
  lstm(TensorList{x});
  const double k[4] = {0.5, -0.4, 0.3, 0.2}, r[4] = {0.1, 0.2, -0.3, 0.4}, b[4] = {0.0, 1.0, 0.1, -0.1};
  lstm->set_weights({constant({.5f, -.4f, .3f, .2f}, {1, 4}), constant({.1f, .2f, -.3f, .4f}, {1, 4}),
                     constant({0.f, 1.f, .1f, -.1f}, {4})});
  double h = 0, c = 0;
  for (double xt : {2.0, -1.0}) {
    double z[4];
    for (int g = 0; g < 4; ++g) z[g] = xt * k[g] + h * r[g] + b[g];
    c = sig(z[1]) * c + sig(z[0]) * std::tanh(z[2]);
    h = sig(z[3]) * std::tanh(c);
  }
  TensorList out = lstm(TensorList{x});
  EXPECT_NEAR(out[0].item<float>(), h, 1e-6);
  EXPECT_NEAR(out[1].item<float>(), h, 1e-6);
  EXPECT_NEAR(out[2].item<float>(), c, 1e-6);

  // GRU (reset_after), gates z, r, h: bias [2, 3] = input row, recurrent row.
  auto gru = GRU(1);
  gru(x);
  const double gk[3] = {0.6, -0.2, 0.9}, gr[3] = {0.3, 0.5, -0.7}, bi[3] = {0.1, 0.2, 0.3}, br[3] = {-0.1, 0.4, 0.2};
  gru->set_weights({constant({.6f, -.2f, .9f}, {1, 3}), constant({.3f, .5f, -.7f}, {1, 3}),
                    constant({.1f, .2f, .3f, -.1f, .4f, .2f}, {2, 3})});
  h = 0;
  for (double xt : {2.0, -1.0}) {
    const double z = sig(xt * gk[0] + bi[0] + h * gr[0] + br[0]);
    const double rr = sig(xt * gk[1] + bi[1] + h * gr[1] + br[1]);
    const double hh = std::tanh(xt * gk[2] + bi[2] + rr * (h * gr[2] + br[2]));
    h = z * h + (1 - z) * hh;
  }
  EXPECT_NEAR(gru(x).item<float>(), h, 1e-6);
}

TEST(KerasRNN, MatchesReferenceRecurrences) {
  set_random_seed(7);
  Tensor x = random_normal({3, 6, 4});
  auto w = [](const Layer& l, size_t i) { return l.weights()[i].value(); };

  auto rnn = SimpleRNN(5, {.return_sequences = true, .return_state = true});
  rnn(TensorList{x});
  randomize(*rnn);
  TensorList got = rnn(TensorList{x}), want = ref_simple_rnn(x, w(*rnn, 0), w(*rnn, 1), w(*rnn, 2));
  expect_near(got[0], want[0], 1e-5);
  expect_near(got[1], want[1], 1e-5);

  auto lstm = LSTM(5, {.return_sequences = true, .return_state = true});
  lstm(TensorList{x});
  randomize(*lstm);
  got = lstm(TensorList{x});
  want = ref_lstm(x, w(*lstm, 0), w(*lstm, 1), w(*lstm, 2));
  for (size_t i = 0; i < 3; ++i) expect_near(got[i], want[i], 1e-5);

  auto gru = GRU(5, {.return_sequences = true});
  gru(x);
  randomize(*gru);
  expect_near(gru(x), ref_gru(x, w(*gru, 0), w(*gru, 1), w(*gru, 2))[0], 1e-5);

  auto gru1 = GRU(5, {.reset_after = false});
  gru1(x);
  randomize(*gru1);
  expect_near(gru1(x), ref_gru_v1(x, w(*gru1, 0), w(*gru1, 1), w(*gru1, 2))[1], 1e-5);

  // Other activations are used where Keras uses them.
  auto relu_rnn = SimpleRNN(5, {.activation = "relu", .use_bias = false});
  relu_rnn(x);
  Tensor h = zeros({3, 5});
  for (int64_t t = 0; t < 6; ++t) h = relu(matmul(at(x, t), w(*relu_rnn, 0)) + matmul(h, w(*relu_rnn, 1)));
  expect_near(relu_rnn(x), h, 1e-5);
}

TEST(KerasRNN, GoBackwardsAndInitialStates) {
  set_random_seed(3);
  Tensor x = random_normal({2, 5, 3});
  auto back = LSTM(4, {.return_sequences = true, .go_backwards = true});
  back(x);
  randomize(*back);
  std::shared_ptr<RecurrentLayer> fwd = back->clone_with(false, "lstm_forward_copy");
  EXPECT_EQ(fwd->name(), "lstm_forward_copy");
  EXPECT_FALSE(fwd->built());
  (*fwd)(x);
  fwd->set_weights(back->get_weights());
  // go_backwards reads the sequence reversed and returns outputs in that order.
  expect_near(back(x), (*fwd)(reverse(x, {1})), 1e-6);

  // Initial states as extra inputs: h0, c0.
  auto lstm = LSTM(4, {.return_state = true});
  lstm(TensorList{x});
  randomize(*lstm);
  Tensor h0 = random_normal({2, 4}), c0 = random_normal({2, 4});
  TensorList got = lstm(TensorList{x, h0, c0});
  Tensor k = lstm->kernel().value(), r = lstm->recurrent_kernel().value(), b = lstm->bias().value();
  Tensor h = h0, c = c0;
  for (int64_t t = 0; t < 5; ++t) {
    Tensor z = matmul(at(x, t), k) + matmul(h, r) + b;
    c = sigmoid(gate(z, 1, 4)) * c + sigmoid(gate(z, 0, 4)) * tanh(gate(z, 2, 4));
    h = sigmoid(gate(z, 3, 4)) * tanh(c);
  }
  expect_near(got[1], h, 1e-5);
  expect_near(got[2], c, 1e-5);
  // Zero initial states equal the default.
  Tensor z = zeros({2, 4});
  expect_near(lstm(TensorList{x, z, z})[0], lstm(TensorList{x})[0], 1e-6);
}

TEST(KerasRNN, GradientsReachEveryWeight) {
  Tensor x = random_normal({2, 4, 3});
  std::vector<LayerPtr> layers{SimpleRNN(3), LSTM(3, {.return_sequences = true}), GRU(3),
                               GRU(3, {.reset_after = false}), Bidirectional(LSTM(2))};
  for (const LayerPtr& l : layers) {
    GradientTape tape;
    Tensor y = reduce_sum(square((*l)(x)));
    std::vector<Variable> ws = l->trainable_weights();
    ASSERT_GE(ws.size(), 3u) << l->name();
    std::vector<Tensor> gs = tape.gradient(y, ws);
    ASSERT_EQ(gs.size(), ws.size());
    for (size_t i = 0; i < ws.size(); ++i) {
      ASSERT_TRUE(gs[i].defined()) << ws[i].name();
      EXPECT_EQ(gs[i].shape(), ws[i].shape()) << ws[i].name();
      EXPECT_GT(reduce_sum(abs(gs[i])).item<float>(), 0) << ws[i].name();
    }
  }
}

// Tape gradients against central differences, in float64.
TEST(KerasRNN, GradientsMatchFiniteDifferences) {
  set_random_seed(11);
  Tensor x = random_normal({2, 3, 2}, 0, 1, DType::Float64);
  std::vector<std::shared_ptr<RecurrentLayer>> layers{
      std::make_shared<LSTMImpl>(3, LSTMOptions{.return_sequences = true}), std::make_shared<GRUImpl>(3),
      std::make_shared<GRUImpl>(2, GRUOptions{.reset_after = false}), std::make_shared<SimpleRNNImpl>(2)};
  for (const auto& l : layers) {
    l->set_dtype_policy("float64");
    (*l)(x);
    TensorList rnd;
    for (const Variable& v : l->weights()) rnd.push_back(random_normal(v.shape(), 0, 0.5, DType::Float64));
    l->set_weights(rnd);
    auto loss = [&] { return reduce_sum(square((*l)(x))); };
    std::vector<Variable> ws = l->weights();
    GradientTape tape;
    std::vector<Tensor> gs = tape.gradient(loss(), ws);
    for (size_t i = 0; i < ws.size(); ++i) {
      std::vector<double> base = ws[i].value().to_vector<double>(), g = gs[i].to_vector<double>();
      for (size_t j = 0; j < base.size(); j += 3) {
        const double eps = 1e-6;
        std::vector<double> p = base;
        p[j] = base[j] + eps;
        ws[i].assign(constant(p, ws[i].shape(), DType::Float64));
        const double up = loss().item<double>();
        p[j] = base[j] - eps;
        ws[i].assign(constant(p, ws[i].shape(), DType::Float64));
        const double down = loss().item<double>();
        ws[i].assign(constant(base, ws[i].shape(), DType::Float64));
        EXPECT_NEAR(g[j], (up - down) / (2 * eps), 1e-6 * (1 + std::abs(g[j]))) << l->name() << " " << ws[i].name()
                                                                                << "[" << j << "]";
      }
    }
  }
}

TEST(KerasRNN, TracedMatchesEager) {
  set_random_seed(5);
  auto lstm = LSTM(4, {.return_sequences = true, .return_state = true});
  auto gru = GRU(3, {.go_backwards = true});
  FunctionOptions opts;
  opts.input_signature = Signature{{DType::Float32, Shape{-1, 5, 2}}};  // unknown batch
  Function f = function(
      [&](const Tensor& x) {
        TensorList out = lstm(TensorList{x});
        out.push_back(gru(out[0]));
        return out;
      },
      opts);
  for (int64_t batch : {3, 7}) {
    Tensor x = random_normal({batch, 5, 2});
    TensorList traced = f(x);
    TensorList eager = lstm(TensorList{x});
    eager.push_back(gru(eager[0]));
    ASSERT_EQ(traced.size(), 4u);
    for (size_t i = 0; i < 4; ++i) expect_near(traced[i], eager[i], 1e-5);
  }
  EXPECT_EQ(f.trace_count(), 1);
}

// A training step's gradients traced with an unknown batch equal the eager ones.
TEST(KerasRNN, TracedGradientsMatchEager) {
  auto lstm = LSTM(3, {.return_sequences = true});
  auto gru = GRU(2);
  auto loss = [&](const Tensor& x) { return reduce_mean(square(gru(lstm(x)))); };
  lstm(random_normal({1, 4, 2}));
  gru(random_normal({1, 4, 3}));
  std::vector<Variable> ws = lstm->trainable_weights();
  for (const Variable& v : gru->trainable_weights()) ws.push_back(v);
  FunctionOptions opts;
  opts.input_signature = Signature{{DType::Float32, Shape{-1, 4, 2}}};
  Function f = function(
      [&](const Tensor& x) {
        GradientTape tape;
        return TensorList(tape.gradient(loss(x), ws));
      },
      opts);
  Tensor x = random_normal({5, 4, 2});
  TensorList traced = f(x);
  GradientTape tape;
  std::vector<Tensor> eager = tape.gradient(loss(x), ws);
  ASSERT_EQ(traced.size(), ws.size());
  for (size_t i = 0; i < ws.size(); ++i) expect_near(traced[i], eager[i], 1e-4);
}

// LSTM + Dense learns the sign of a sequence's sum with plain SGD.
TEST(KerasRNN, LstmLearnsTheSignOfASum) {
  set_random_seed(1);
  auto data = [](int64_t n) {
    Tensor x = random_normal({n, 5, 1});
    return std::pair{x, cast(greater(reduce_sum(x, {1}), zeros({n, 1})), DType::Float32)};
  };
  auto [x, y] = data(128);
  auto [xt, yt] = data(256);
  auto lstm = LSTM(8);
  auto dense = Dense(1);
  auto logits = [&](const Tensor& in) { return dense(lstm(in)); };
  logits(x);
  std::vector<Variable> ws = lstm->trainable_weights();
  for (const Variable& v : dense->trainable_weights()) ws.push_back(v);
  auto loss_of = [&](const Tensor& in, const Tensor& labels) {
    return reduce_mean(sigmoid_cross_entropy_with_logits(labels, logits(in)));
  };
  const double first = loss_of(x, y).item<float>();
  // The SGD step traced once (assign_sub nodes run on every call).
  Function train = function([&](const Tensor& in, const Tensor& labels) {
    GradientTape tape;
    Tensor loss = loss_of(in, labels);
    std::vector<Tensor> gs = tape.gradient(loss, ws);
    for (size_t i = 0; i < ws.size(); ++i) ws[i].assign_sub(gs[i] * 1.0);
    return loss;
  });
  for (int step = 0; step < 300; ++step) train(x, y);
  EXPECT_EQ(train.trace_count(), 1);
  EXPECT_LT(loss_of(x, y).item<float>(), first / 3);
  Tensor right = equal(cast(greater(logits(xt), zeros({256, 1})), DType::Float32), yt);
  EXPECT_GT(reduce_mean(cast(right, DType::Float32)).item<float>(), 0.9);
}

TEST(KerasRNN, MixedPrecision) {
  auto lstm = LSTM(3, {.return_sequences = true});
  lstm->set_dtype_policy("mixed_bfloat16");
  Tensor y = lstm(random_normal({2, 4, 2}));
  EXPECT_EQ(y.dtype(), DType::BFloat16);
  EXPECT_EQ(y.shape(), Shape({2, 4, 3}));
  EXPECT_EQ(lstm->kernel().dtype(), DType::Float32);
}

TEST(KerasRNN, Configs) {
  auto lstm = LSTM(7, {.return_sequences = true, .name = "enc"});
  Config c = lstm->get_config();
  EXPECT_EQ(c["name"], "enc");
  EXPECT_EQ(c["units"], 7);
  EXPECT_EQ(c["activation"], "tanh");
  EXPECT_EQ(c["recurrent_activation"], "sigmoid");
  EXPECT_EQ(c["use_bias"], true);
  EXPECT_EQ(c["unit_forget_bias"], true);
  EXPECT_EQ(c["return_sequences"], true);
  EXPECT_EQ(c["return_state"], false);
  EXPECT_EQ(c["go_backwards"], false);
  EXPECT_EQ(c["dropout"], 0.0);
  EXPECT_EQ(c["kernel_initializer"]["class_name"], "GlorotUniform");
  EXPECT_EQ(c["recurrent_initializer"]["class_name"], "Orthogonal");
  EXPECT_EQ(c["bias_initializer"]["class_name"], "Zeros");
  EXPECT_TRUE(c["kernel_regularizer"].is_null());
  EXPECT_EQ(lstm->class_name(), "LSTM");

  Config g = GRU(2, {.reset_after = false, .name = "g"})->get_config();
  EXPECT_EQ(g["reset_after"], false);
  EXPECT_EQ(g["units"], 2);
  auto rnn = SimpleRNN(3, {.activation = "", .recurrent_regularizer = regularizers::L2(0.1)});
  Config s = rnn->get_config();
  EXPECT_EQ(s["activation"], "linear");
  EXPECT_EQ(s["recurrent_regularizer"]["class_name"], "L2");
  EXPECT_EQ(rnn->class_name(), "SimpleRNN");
  // The recurrent regularizer adds its penalty.
  rnn(random_normal({1, 2, 2}));
  TensorList losses = rnn->losses();
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_NEAR(losses[0].item<float>(), 0.1 * reduce_sum(square(rnn->recurrent_kernel().value())).item<float>(), 1e-5);

  auto bi = Bidirectional(LSTM(4, {.name = "enc2"}), {.merge_mode = "sum"});
  Config b = bi->get_config();
  EXPECT_EQ(bi->class_name(), "Bidirectional");
  EXPECT_EQ(b["merge_mode"], "sum");
  EXPECT_EQ(b["layer"]["class_name"], "LSTM");
  EXPECT_EQ(b["layer"]["config"]["name"], "forward_enc2");
  EXPECT_EQ(b["backward_layer"]["config"]["name"], "backward_enc2");
  EXPECT_EQ(b["backward_layer"]["config"]["go_backwards"], true);
  EXPECT_TRUE(Bidirectional(GRU(2), {.merge_mode = ""})->get_config()["merge_mode"].is_null());
}

// --- Bidirectional ---

TEST(KerasBidirectional, ShapesAndMergeModes) {
  Tensor x = random_normal({2, 5, 3});
  EXPECT_EQ(Bidirectional(LSTM(4))(x).shape(), Shape({2, 8}));
  EXPECT_EQ(Bidirectional(GRU(4, {.return_sequences = true}))(x).shape(), Shape({2, 5, 8}));
  for (const char* mode : {"sum", "mul", "ave"})
    EXPECT_EQ(Bidirectional(SimpleRNN(4, {.return_sequences = true}), {.merge_mode = mode})(x).shape(),
              Shape({2, 5, 4}))
        << mode;
  TensorList both = Bidirectional(LSTM(4), {.merge_mode = ""})(TensorList{x});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[1].shape(), Shape({2, 4}));

  TensorList st = Bidirectional(LSTM(4, {.return_state = true}))(TensorList{x});
  ASSERT_EQ(st.size(), 5u);  // output, forward h, c, backward h, c
  EXPECT_EQ(st[0].shape(), Shape({2, 8}));
  for (size_t i = 1; i < 5; ++i) EXPECT_EQ(st[i].shape(), Shape({2, 4}));
  expect_near(st[0], concat({st[1], st[3]}, -1), 0);

  Tensor in = Input({5, 3});
  EXPECT_EQ(Bidirectional(LSTM(4, {.return_sequences = true}))(in).shape(), Shape({-1, 5, 8}));
  EXPECT_EQ(Bidirectional(GRU(4), {.merge_mode = "ave"})(in).shape(), Shape({-1, 4}));
}

TEST(KerasBidirectional, SeparateWeightsAndValues) {
  set_random_seed(9);
  Tensor x = random_normal({2, 5, 3});
  auto lstm = LSTM(4, {.return_sequences = true, .name = "seq"});
  auto bi = Bidirectional(lstm);
  bi(x);
  std::vector<Variable> ws = bi->weights();
  ASSERT_EQ(ws.size(), 6u);
  EXPECT_EQ(ws[0].name(), "forward_seq/kernel");
  EXPECT_EQ(ws[3].name(), "backward_seq/kernel");
  EXPECT_NE(ws[0].id(), ws[3].id());
  EXPECT_FALSE(lstm->built());  // the wrapped layer is only a template
  EXPECT_FALSE(bi->forward_layer()->go_backwards());
  EXPECT_TRUE(bi->backward_layer()->go_backwards());

  auto& fwd = *bi->forward_layer();
  auto& bwd = *bi->backward_layer();
  Tensor f = fwd(x), b = reverse(bwd(x), {1});
  expect_near(bi(x), concat({f, b}, -1), 1e-6);
  // The backward half, reversed back, is a forward pass over the reversed sequence.
  std::shared_ptr<RecurrentLayer> plain = bwd.clone_with(false, "plain");
  (*plain)(x);
  plain->set_weights(bwd.get_weights());
  expect_near(b, reverse((*plain)(reverse(x, {1})), {1}), 1e-6);

  for (const char* mode : {"sum", "mul", "ave"}) {
    auto m = Bidirectional(GRU(3, {.return_sequences = true}), {.merge_mode = mode});
    m(x);
    Tensor mf = (*m->forward_layer())(x), mb = reverse((*m->backward_layer())(x), {1});
    Tensor want = std::string(mode) == "sum" ? mf + mb : std::string(mode) == "mul" ? mf * mb : (mf + mb) * 0.5;
    expect_near(m(x), want, 1e-6);
  }
  // Last-output mode: the backward half is its final state (the first timestep's).
  auto last = Bidirectional(SimpleRNN(3));
  last(x);
  expect_near(last(x), concat({(*last->forward_layer())(x), (*last->backward_layer())(x)}, -1), 1e-6);

  // A given backward layer is used as is.
  auto back = GRU(3, {.go_backwards = true, .name = "mine"});
  auto custom = Bidirectional(GRU(3), {.backward_layer = back});
  custom(x);
  EXPECT_EQ(custom->backward_layer().get(), back.ptr().get());
  EXPECT_TRUE(back->built());
}

TEST(KerasBidirectional, TracedMatchesEager) {
  auto bi = Bidirectional(LSTM(3, {.return_sequences = true}), {.merge_mode = "ave"});
  FunctionOptions opts;
  opts.input_signature = Signature{{DType::Float32, Shape{-1, 4, 2}}};
  Function f = function([&](const Tensor& x) { return bi(x); }, opts);
  for (int64_t batch : {2, 5}) {
    Tensor x = random_normal({batch, 4, 2});
    expect_near(f(x)[0], bi(x), 1e-5);
  }
  EXPECT_EQ(f.trace_count(), 1);
}

// --- errors ---

TEST(KerasRNN, Errors) {
  EXPECT_THAT(error_of([] { LSTM(0); }), HasSubstr("[LSTM] units must be positive, got 0"));
  EXPECT_THAT(error_of([] { SimpleRNN(-2); }), HasSubstr("[SimpleRNN] units must be positive, got -2"));
  EXPECT_THAT(error_of([] { GRU(2, {.recurrent_activation = "nope"}); }), HasSubstr("unknown activation 'nope'"));

  EXPECT_THAT(error_of([] { GRU(4, {.name = "g2"})(random_normal({2, 3})); }),
              HasSubstr("[g2] expects inputs of rank 3 (batch, timesteps, features), got [2,3]"));
  EXPECT_THAT(error_of([] { GRU(4, {.name = "g3"})(Input({5, -1})); }),
              HasSubstr("[g3] needs inputs with a known features dim, got [?,5,?]"));
  EXPECT_THAT(error_of([] { SimpleRNN(4, {.name = "s0"})(random_normal({2, 0, 3})); }),
              HasSubstr("[s0] needs at least one timestep, got [2,0,3]"));

  auto lstm = LSTM(4, {.return_state = true, .name = "l1"});
  lstm(TensorList{random_normal({2, 3, 5})});
  EXPECT_THAT(error_of([&] { lstm(TensorList{random_normal({2, 3, 6})}); }),
              HasSubstr("[l1] expects inputs with 5 features, got [2,3,6]"));
  EXPECT_THAT(error_of([&] { lstm(TensorList{random_normal({2, 3, 5}), zeros({2, 4})}); }),
              HasSubstr("[l1] takes the inputs and 2 initial state(s), got 2 tensors"));
  EXPECT_THAT(error_of([&] { lstm(TensorList{random_normal({2, 3, 5}), zeros({2, 4}), zeros({2, 3})}); }),
              HasSubstr("[l1] initial state 1 must have shape [batch, 4], got [2,3]"));
  // Several outputs through the single-tensor operator(): use the TensorList call.
  EXPECT_THAT(error_of([&] { lstm(random_normal({2, 3, 5})); }), HasSubstr("returned 3 outputs"));
}

TEST(KerasBidirectional, Errors) {
  EXPECT_THAT(error_of([] { Bidirectional(Dense(3, DenseOptions{.name = "d"})); }),
              HasSubstr("[Bidirectional] the layer must be a recurrent layer (SimpleRNN, LSTM or GRU), got Dense 'd'"));
  EXPECT_THAT(error_of([] { Bidirectional(LSTM(3), {.merge_mode = "max"}); }),
              HasSubstr("[Bidirectional] merge_mode must be one of concat, sum, mul, ave or \"\" (None), got 'max'"));
  EXPECT_THAT(error_of([] { Bidirectional(LSTM(3), {.backward_layer = LSTM(3, {.name = "b"})}); }),
              HasSubstr("[Bidirectional] backward_layer 'b' must have go_backwards true"));
  EXPECT_THAT(error_of([] {
                Bidirectional(LSTM(3), {.backward_layer = LSTM(3, {.return_sequences = true, .go_backwards = true,
                                                                   .name = "b2"})});
              }),
              HasSubstr("[Bidirectional] backward_layer 'b2' must match the layer's return_sequences and "
                        "return_state"));
  EXPECT_THAT(error_of([] { Bidirectional(LayerPtr(nullptr)); }), HasSubstr("[Bidirectional] the layer is null"));
  auto bi = Bidirectional(LSTM(2), {.name = "bi"});
  EXPECT_THAT(error_of([&] { bi(TensorList{random_normal({1, 2, 3}), zeros({1, 2})}); }),
              HasSubstr("[bi] takes the inputs and 4 initial states (forward then backward), got 2 tensors"));
}

}  // namespace
}  // namespace deepflow::keras::layers
