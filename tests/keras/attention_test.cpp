// SPDX-License-Identifier: Apache-2.0
// keras::layers::MultiHeadAttention against a head-by-head reference computed here from
// the layer's own weights with plain ops; the causal mask; key != value; Keras tensors,
// traced calls with unknown batch and sequence dims, dropout, gradients, config, errors.
#include "deepflow/keras/layers/attention.h"

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
using Options = layers::MultiHeadAttentionOptions;

// Head h of a kernel [d, heads, e] as [d, e], of a bias [heads, e] as [e].
Tensor head_of_kernel(const Tensor& w, int64_t h) {
  return reshape(slice(w, {0, h, 0}, {-1, 1, -1}), {w.dim(0), w.dim(2)});
}
Tensor head_of_bias(const Tensor& b, int64_t h) { return reshape(slice(b, {h, 0}, {1, -1}), {b.dim(1)}); }

// softmax(Q_h K_h^T / sqrt(k) [+ causal]) V_h Wo_h summed over heads, plus bo: one head at a time,
// with the mask written out element by element.
Tensor reference(const layers::MultiHeadAttention& mha, const Tensor& query, const Tensor& value, const Tensor& key,
                 bool causal) {
  const int64_t t = query.dim(1), s = value.dim(1);
  std::vector<float> mask(size_t(t * s), 0.f);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < s; ++j)
      if (j > i) mask[size_t(i * s + j)] = -1e9f;
  Tensor out;
  for (int64_t h = 0; h < mha->num_heads(); ++h) {
    Tensor q = matmul(query, head_of_kernel(mha->query_kernel(), h)) + head_of_bias(mha->query_bias(), h);
    Tensor k = matmul(key, head_of_kernel(mha->key_kernel(), h)) + head_of_bias(mha->key_bias(), h);
    Tensor v = matmul(value, head_of_kernel(mha->value_kernel(), h)) + head_of_bias(mha->value_bias(), h);
    Tensor scores = matmul(q, transpose(k, {0, 2, 1})) / std::sqrt(double(mha->key_dim()));
    if (causal) scores = scores + constant(mask, {t, s});
    Tensor wo = reshape(slice(mha->output_kernel().value(), {h, 0, 0}, {1, -1, -1}),
                        {mha->value_dim(), mha->output_kernel().shape()[2]});
    Tensor o = matmul(matmul(softmax(scores, -1), v), wo);
    out = out.defined() ? out + o : o;
  }
  return out + mha->output_bias();
}

// Random weights everywhere (biases too, which start at zero).
void randomize(const layers::MultiHeadAttention& mha, int64_t seed) {
  TensorList ws;
  for (const Variable& v : mha->weights()) ws.push_back(random_normal(v.shape(), 0.0, 0.5, DType::Float32, seed++));
  mha->set_weights(ws);
}

TEST(KerasMultiHeadAttention, WeightsFollowKeras) {
  auto mha = layers::MultiHeadAttention(2, 3, Options{.name = "mha"});
  Tensor y = mha({Input({4, 5}), Input({6, 7})})[0];
  EXPECT_EQ(y.shape(), Shape({-1, 4, 5}));
  std::vector<Variable> ws = mha->weights();
  ASSERT_EQ(ws.size(), 8u);
  const char* names[] = {"query/kernel", "query/bias", "key/kernel", "key/bias",
                         "value/kernel", "value/bias", "attention_output/kernel", "attention_output/bias"};
  const Shape shapes[] = {{5, 2, 3}, {2, 3}, {7, 2, 3}, {2, 3}, {7, 2, 3}, {2, 3}, {2, 3, 5}, {5}};
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(ws[i].name(), std::string("mha/") + names[i]);
    EXPECT_EQ(ws[i].shape(), shapes[i]) << names[i];
  }
  expect_near(mha->query_bias().value(), zeros({2, 3}), 0);

  // value_dim, output_shape, a separate key, no biases.
  auto other = layers::MultiHeadAttention(3, 2, Options{.value_dim = 4, .use_bias = false, .output_shape = 6});
  Tensor z = other({Input({4, 5}), Input({6, 7}), Input({6, 8})})[0];
  EXPECT_EQ(z.shape(), Shape({-1, 4, 6}));
  ASSERT_EQ(other->weights().size(), 4u);
  EXPECT_EQ(other->key_kernel().shape(), Shape({8, 3, 2}));
  EXPECT_EQ(other->value_kernel().shape(), Shape({7, 3, 4}));
  EXPECT_EQ(other->output_kernel().shape(), Shape({3, 4, 6}));
  EXPECT_FALSE(other->query_bias().defined());
}

TEST(KerasMultiHeadAttention, MatchesHeadByHeadReference) {
  Tensor query = random_normal({2, 4, 5}, 0.0, 1.0, DType::Float32, 1);
  Tensor value = random_normal({2, 6, 7}, 0.0, 1.0, DType::Float32, 2);
  Tensor key = random_normal({2, 6, 3}, 0.0, 1.0, DType::Float32, 3);
  auto mha = layers::MultiHeadAttention(3, 4, Options{.value_dim = 2});
  mha({query, value, key});
  randomize(mha, 10);
  expect_near(mha({query, value, key})[0], reference(mha, query, value, key, false), 1e-5);

  // Self-attention with key = value, and the causal mask.
  auto self = layers::MultiHeadAttention(2, 3, {.use_causal_mask = true});
  self({query, query});
  randomize(self, 20);
  Tensor y = self({query, query})[0];
  expect_near(y, reference(self, query, query, query, true), 1e-5);
  EXPECT_GT(reduce_max(abs(y - reference(self, query, query, query, false))).item<float>(), 1e-2);
}

TEST(KerasMultiHeadAttention, CausalMaskHidesLaterPositions) {
  Tensor x = random_normal({1, 5, 4}, 0.0, 1.0, DType::Float32, 4);
  // x with its last two positions changed.
  Tensor x2 = concat({slice(x, {0, 0, 0}, {1, 3, 4}), random_normal({1, 2, 4}, 0.0, 1.0, DType::Float32, 5)}, 1);
  auto causal = layers::MultiHeadAttention(2, 4, Options{.use_causal_mask = true});
  auto full = layers::MultiHeadAttention(2, 4);
  causal({x, x});
  randomize(causal, 30);
  full({x, x});
  full->set_weights(causal->get_weights());
  auto first3 = [](const Tensor& t) { return slice(t, {0, 0, 0}, {1, 3, -1}); };
  // Positions 0..2 attend only to positions 0..2, which did not change.
  expect_near(first3(causal({x2, x2})[0]), first3(causal({x, x})[0]), 1e-6);
  EXPECT_GT(reduce_max(abs(first3(full({x2, x2})[0]) - first3(full({x, x})[0]))).item<float>(), 1e-3);
  EXPECT_GT(reduce_max(abs(causal({x2, x2})[0] - causal({x, x})[0])).item<float>(), 1e-3);
  // Position 0 sees itself alone: its value projection through the output dense.
  Tensor v0 = slice(x, {0, 0, 0}, {1, 1, -1});
  Tensor v = matmul(expand_dims(v0, 1), transpose(causal->value_kernel().value(), {1, 0, 2})) +
             expand_dims(causal->value_bias().value(), 1);  // [1, h, 1, v]
  Tensor expected = reduce_sum(matmul(v, causal->output_kernel().value()), {1}) + causal->output_bias().value();
  expect_near(slice(causal({x, x})[0], {0, 0, 0}, {1, 1, -1}), expected, 1e-5);
}

TEST(KerasMultiHeadAttention, TracedWithUnknownBatchAndSequence) {
  auto mha = layers::MultiHeadAttention(2, 3, Options{.use_causal_mask = true});
  Tensor q = random_normal({2, 4, 5}, 0.0, 1.0, DType::Float32, 6);
  Tensor v = random_normal({2, 6, 5}, 0.0, 1.0, DType::Float32, 7);
  mha({q, v});
  randomize(mha, 40);
  FunctionOptions o;
  o.input_signature = Signature{{DType::Float32, Shape{-1, -1, 5}}, {DType::Float32, Shape{-1, -1, 5}}};
  Function f = function([&](const Tensor& a, const Tensor& b) { return mha({a, b})[0]; }, o);
  expect_near(f(q, v)[0], reference(mha, q, v, v, true), 1e-5);
  Tensor q3 = random_normal({3, 2, 5}, 0.0, 1.0, DType::Float32, 8);
  Tensor v3 = random_normal({3, 7, 5}, 0.0, 1.0, DType::Float32, 9);
  expect_near(f(q3, v3)[0], reference(mha, q3, v3, v3, true), 1e-5);
  EXPECT_EQ(f.trace_count(), 1);
}

TEST(KerasMultiHeadAttention, DropoutAndGradients) {
  Tensor q = random_normal({2, 3, 4}, 0.0, 1.0, DType::Float32, 11);
  Tensor v = random_normal({2, 5, 4}, 0.0, 1.0, DType::Float32, 12);
  auto mha = layers::MultiHeadAttention(2, 3, Options{.dropout = 0.5, .seed = 1});
  mha({q, v});
  randomize(mha, 50);
  Tensor inference = mha({q, v}, false)[0];
  expect_near(inference, reference(mha, q, v, v, false), 1e-5);
  EXPECT_GT(reduce_max(abs(mha({q, v}, true)[0] - inference)).item<float>(), 1e-3);

  auto plain = layers::MultiHeadAttention(2, 3);
  plain({q, v});
  plain->set_weights(mha->get_weights());
  expect_near(plain({q, v}, true)[0], inference, 1e-6);

  GradientTape tape;
  tape.watch(q);
  Tensor loss = reduce_sum(square(plain({q, v}, true)[0]));
  std::vector<Variable> ws = plain->trainable_weights();
  ASSERT_EQ(ws.size(), 8u);
  std::vector<Tensor> g = tape.gradient(loss, ws);
  for (size_t i = 0; i < ws.size(); ++i) {
    ASSERT_TRUE(g[i].defined()) << ws[i].name();
    EXPECT_EQ(g[i].shape(), ws[i].shape()) << ws[i].name();
    EXPECT_GT(reduce_max(abs(g[i])).item<float>(), 0.f) << ws[i].name();
  }
  // d loss / d output bias = sum of 2 y over batch and positions.
  expect_near(g[7], reduce_sum(2.0 * plain({q, v})[0], {0, 1}), 1e-4);
}

TEST(KerasMultiHeadAttention, ConfigAndErrors) {
  auto mha = layers::MultiHeadAttention(4, 8, Options{.dropout = 0.1, .output_shape = 16, .name = "att"});
  Config c = mha->get_config();
  EXPECT_EQ(c["name"], "att");
  EXPECT_EQ(c["num_heads"], 4);
  EXPECT_EQ(c["key_dim"], 8);
  EXPECT_EQ(c["value_dim"], 8);
  EXPECT_DOUBLE_EQ(c["dropout"].get<double>(), 0.1);
  EXPECT_EQ(c["use_bias"], true);
  EXPECT_EQ(c["output_shape"], 16);
  EXPECT_EQ(c["use_causal_mask"], false);
  EXPECT_EQ(c["kernel_initializer"]["class_name"], "GlorotUniform");
  EXPECT_EQ(c["bias_initializer"]["class_name"], "Zeros");
  EXPECT_EQ(mha->class_name(), "MultiHeadAttention");

  EXPECT_THAT(error_of([] { layers::MultiHeadAttention(0, 8); }),
              HasSubstr("[MultiHeadAttention] num_heads must be positive, got 0"));
  EXPECT_THAT(error_of([] { layers::MultiHeadAttention(2, -1); }),
              HasSubstr("[MultiHeadAttention] key_dim must be positive, got -1"));
  EXPECT_THAT(error_of([] { layers::MultiHeadAttention(2, 4, Options{.dropout = 1}); }),
              HasSubstr("[MultiHeadAttention] dropout must be in [0, 1), got 1"));
  EXPECT_THAT(error_of([] { layers::MultiHeadAttention(2, 4, Options{.name = "a1"})(ones({2, 3, 4})); }),
              HasSubstr("[a1] expects a list [query, value] or [query, value, key], got 1 inputs: [2,3,4]"));
  EXPECT_THAT(error_of([] { layers::MultiHeadAttention(2, 4, Options{.name = "a2"})({ones({2, 4}), ones({2, 4})}); }),
              HasSubstr("[a2] expects query, value and key of rank 3 (batch, sequence, features) with known "
                        "features, got [2,4], [2,4]"));
  auto a3 = layers::MultiHeadAttention(2, 4, Options{.name = "a3"});
  a3({ones({2, 3, 4}), ones({2, 5, 6})});
  EXPECT_THAT(error_of([&] { a3({ones({2, 3, 4}), ones({2, 5, 7})}); }),
              HasSubstr("[a3] expects query [b, t, 4], value [b, s, 6] and key [b, s, 6], got [2,3,4], [2,5,7]"));
  EXPECT_THAT(error_of([&] { a3({ones({2, 3, 4}), ones({2, 5, 6}), ones({2, 4, 6})}); }),
              HasSubstr("[a3] query, value and key need one batch size and value and key one sequence length, "
                        "got [2,3,4], [2,5,6], [2,4,6]"));
  EXPECT_THAT(error_of([&] { a3({ones({2, 3, 4}), ones({3, 5, 6})}); }),
              HasSubstr("one batch size"));
}

}  // namespace
}  // namespace deepflow::keras
