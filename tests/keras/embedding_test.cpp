// SPDX-License-Identifier: Apache-2.0
// keras::layers::Embedding: lookups of ids of any rank against the layer's own table,
// the Keras default initializer, gradients (only looked-up rows), traced and Keras
// tensors, mixed precision, config and errors.
#include "deepflow/keras/layers/embedding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

// A 4 x 3 table whose row i is [10 i, 10 i + 1, 10 i + 2].
Tensor table() { return constant({0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}, {4, 3}); }

TEST(KerasEmbedding, LooksUpRowsForIdsOfAnyRank) {
  auto emb = layers::Embedding(4, 3);
  Tensor ids = constant(std::vector<int32_t>{3, 0, 2, 2, 1, 3}, {2, 3});
  Tensor y = emb(ids);
  ASSERT_EQ(y.shape(), Shape({2, 3, 3}));
  EXPECT_EQ(emb->embeddings().shape(), Shape({4, 3}));
  EXPECT_EQ(emb->embeddings().name(), emb->name() + "/embeddings");
  emb->set_weights({table()});
  expect_near(emb(ids), constant({30, 31, 32, 0, 1, 2, 20, 21, 22, 20, 21, 22, 10, 11, 12, 30, 31, 32}, {2, 3, 3}), 0);
  // int64 ids, a scalar id, rank-3 ids.
  expect_near(emb(constant(std::vector<int64_t>{1, 2})), constant({10, 11, 12, 20, 21, 22}, {2, 3}), 0);
  expect_near(emb(scalar(3, DType::Int32)), constant({30, 31, 32}), 0);
  EXPECT_EQ(emb(zeros({2, 2, 2}, DType::Int32)).shape(), Shape({2, 2, 2, 3}));
  // Float ids are truncated to int32, as Keras casts them.
  expect_near(emb(constant({2.f, 1.f})), constant({20, 21, 22, 10, 11, 12}, {2, 3}), 0);
}

TEST(KerasEmbedding, DefaultInitializerIsUniform005) {
  auto emb = layers::Embedding(200, 50);
  emb(constant(std::vector<int32_t>{0}));
  std::vector<float> w = emb->embeddings().value().to_vector<float>();
  float lo = 1, hi = -1;
  double mean = 0;
  for (float v : w) lo = std::min(lo, v), hi = std::max(hi, v), mean += v;
  mean /= double(w.size());
  EXPECT_GE(lo, -0.05f);
  EXPECT_LT(hi, 0.05f);
  EXPECT_LT(lo, -0.049f);  // 10k draws span the range
  EXPECT_GT(hi, 0.049f);
  EXPECT_NEAR(mean, 0, 0.003);
}

TEST(KerasEmbedding, GradientsOnlyReachLookedUpRows) {
  auto emb = layers::Embedding(4, 3);
  emb(constant(std::vector<int32_t>{0}));
  emb->set_weights({table()});
  GradientTape tape;
  // Row 2 twice, row 0 once, rows 1 and 3 never.
  Tensor y = emb(constant(std::vector<int32_t>{2, 0, 2}));
  Tensor loss = reduce_sum(y * constant({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}));
  std::vector<Tensor> g = tape.gradient(loss, emb->trainable_weights());
  ASSERT_EQ(g.size(), 1u);
  ASSERT_TRUE(g[0].defined());
  expect_near(g[0], constant({4, 5, 6, 0, 0, 0, 8, 10, 12, 0, 0, 0}, {4, 3}), 0);
}

TEST(KerasEmbedding, KerasTensorsTracesAndMixedPrecision) {
  auto emb = layers::Embedding(4, 3);
  Tensor y = emb(Input({5}, "", DType::Int32));
  EXPECT_EQ(y.shape(), Shape({-1, 5, 3}));
  emb->set_weights({table()});

  FunctionOptions o;
  o.input_signature = Signature{{DType::Int32, Shape{-1, 2}}};
  Function f = function([&](const Tensor& ids) { return emb(ids); }, o);
  Tensor ids = constant(std::vector<int32_t>{1, 3, 0, 0}, {2, 2});
  expect_near(f(ids)[0], emb(ids), 0);
  // An out-of-range id is an error of gather, eagerly and when the traced lookup runs.
  Tensor bad = constant(std::vector<int32_t>{1, 4, 0, 0}, {2, 2});
  EXPECT_THAT(error_of([&] { emb(bad); }), HasSubstr("[gather] indices[0,1] = 4 is not in [0, 4)"));
  EXPECT_THAT(error_of([&] { f(bad); }), HasSubstr("[gather] indices[0,1] = 4 is not in [0, 4)"));
  EXPECT_THAT(error_of([&] { emb(constant(std::vector<int32_t>{-1})); }),
              HasSubstr("[gather] indices[0] = -1 is not in [0, 4)"));

  auto mixed = layers::Embedding(4, 3);
  mixed->set_dtype_policy("mixed_bfloat16");
  Tensor z = mixed(ids);
  EXPECT_EQ(z.dtype(), DType::BFloat16);
  EXPECT_EQ(mixed->embeddings().dtype(), DType::Float32);
}

TEST(KerasEmbedding, ConfigAndErrors) {
  auto emb = layers::Embedding(1000, 64, {.name = "emb"});
  Config c = emb->get_config();
  EXPECT_EQ(c["name"], "emb");
  EXPECT_EQ(c["input_dim"], 1000);
  EXPECT_EQ(c["output_dim"], 64);
  EXPECT_EQ(c["embeddings_initializer"]["class_name"], "RandomUniform");
  EXPECT_DOUBLE_EQ(c["embeddings_initializer"]["config"]["minval"].get<double>(), -0.05);
  EXPECT_DOUBLE_EQ(c["embeddings_initializer"]["config"]["maxval"].get<double>(), 0.05);
  EXPECT_TRUE(c["embeddings_regularizer"].is_null());
  EXPECT_EQ(emb->class_name(), "Embedding");

  auto ones_init = layers::Embedding(3, 2, layers::EmbeddingOptions{.embeddings_initializer = initializers::Ones()});
  expect_near(ones_init(constant(std::vector<int32_t>{2})), ones({1, 2}), 0);
  EXPECT_EQ(ones_init->get_config()["embeddings_initializer"]["class_name"], "Ones");

  EXPECT_THAT(error_of([] { layers::Embedding(0, 3); }), HasSubstr("[Embedding] input_dim must be positive, got 0"));
  EXPECT_THAT(error_of([] { layers::Embedding(3, -2); }),
              HasSubstr("[Embedding] output_dim must be positive, got -2"));
  EXPECT_THAT(error_of([&] { emb(cast(constant({1.f}), DType::Bool)); }),
              HasSubstr("[emb] expects integer ids, got bool[1]"));
}

}  // namespace
}  // namespace deepflow::keras
