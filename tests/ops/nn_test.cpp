// SPDX-License-Identifier: Apache-2.0
// Neural-network composites: known values (TensorFlow's documented examples),
// numerical stability, dropout statistics and error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "deepflow/deepflow.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-6) {
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(Nn, SoftmaxRowsSumToOne) {
  set_random_seed(1);
  Tensor x = random_normal({5, 7}, 0, 3);
  expect_values(reduce_sum(softmax(x), {-1}), std::vector<double>(5, 1.0));
  expect_values(reduce_sum(softmax(x, 0), {0}), std::vector<double>(7, 1.0));
  expect_values(reduce_sum(exp(log_softmax(x)), {-1}), std::vector<double>(5, 1.0));
}

TEST(Nn, SoftmaxKnownValues) {
  expect_values(softmax(constant({1.f, 2.f, 3.f})), {0.09003057, 0.24472847, 0.66524096});
  expect_values(log_softmax(constant({1.f, 2.f, 3.f})), {-2.40760596, -1.40760596, -0.40760596});
}

TEST(Nn, SoftmaxIsStableForLargeLogits) {
  expect_values(softmax(constant({1000.f, 1000.f})), {0.5, 0.5});
  expect_values(softmax(constant({-1000.f, -1000.f}, {1, 2})), {0.5, 0.5});
  expect_values(log_softmax(constant({1000.f, 0.f})), {0, -1000}, 1e-3);
  Tensor ce = softmax_cross_entropy_with_logits(constant({0.f, 1.f}), constant({1000.f, 0.f}));
  EXPECT_NEAR(ce.item<double>(), 1000.0, 1e-3);
}

TEST(Nn, SoftmaxCrossEntropyKnownValues) {
  // The example of tf.nn.softmax_cross_entropy_with_logits.
  Tensor logits = constant({4.f, 2.f, 1.f, 0.f, 5.f, 1.f}, {2, 3});
  Tensor labels = constant({1.f, 0.f, 0.f, 0.f, 0.8f, 0.2f}, {2, 3});
  Tensor loss = softmax_cross_entropy_with_logits(labels, logits);
  EXPECT_EQ(loss.shape(), Shape({2}));
  expect_values(loss, {0.16984604, 0.82474494});
}

TEST(Nn, SparseSoftmaxCrossEntropyKnownValues) {
  // The example of tf.nn.sparse_softmax_cross_entropy_with_logits.
  Tensor logits = constant({2.f, -5.f, .5f, -.1f, 0.f, 0.f, 1.9f, 1.4f, -100.f, 100.f, -100.f, -100.f}, {3, 4});
  for (DType dt : {DType::Int32, DType::Int64}) {
    Tensor labels = constant({0, 3, 1}, {3}, dt);
    expect_values(sparse_softmax_cross_entropy_with_logits(labels, logits), {0.29750752, 1.1448325, 0.0}, 1e-5);
  }
}

TEST(Nn, SigmoidCrossEntropyKnownValues) {
  // The example of tf.nn.sigmoid_cross_entropy_with_logits.
  Tensor logits = constant({1.f, -1.f, 0.f, 1.f, -1.f, 0.f, 0.f});
  Tensor labels = constant({0.f, 0.f, 0.f, 1.f, 1.f, 1.f, 0.5f});
  expect_values(sigmoid_cross_entropy_with_logits(labels, logits),
                {1.3132617, 0.3132617, 0.6931472, 0.3132617, 1.3132617, 0.6931472, 0.6931472});
  // Stable for large |x|: no overflow in exp.
  expect_values(sigmoid_cross_entropy_with_logits(constant({0.f, 1.f}), constant({100.f, -100.f})), {100, 100},
                1e-4);
}

TEST(Nn, BatchNormalizationKnownValues) {
  Tensor x = constant({1.f, 2.f, 3.f, 5.f, 6.f, 7.f}, {2, 3});
  Tensor y = batch_normalization(x, constant({2.f}), constant({4.f}), constant({1.f}), constant({2.f}), 0);
  expect_values(y, {0, 1, 2, 4, 5, 6});
  Tensor z = batch_normalization(x, constant({2.f}), constant({4.f}), Tensor(), Tensor(), 0);
  expect_values(z, {-0.5, 0, 0.5, 1.5, 2, 2.5});
}

TEST(Nn, LayerNormalizationKnownValues) {
  Tensor x = constant({1.f, 2.f, 3.f, 4.f, 6.f, 8.f}, {2, 3});
  const double k = 1.224744871;  // 1 / sqrt(2/3)
  expect_values(layer_normalization(x, ones({3}), zeros({3}), {-1}, 0), {-k, 0, k, -k, 0, k}, 1e-5);
  expect_values(layer_normalization(x, constant({2.f}), constant({1.f}), {-1}, 0),
                {1 - 2 * k, 1, 1 + 2 * k, 1 - 2 * k, 1, 1 + 2 * k}, 1e-5);
  EXPECT_EQ(layer_normalization(x, Tensor(), Tensor()).shape(), Shape({2, 3}));
}

TEST(Nn, DropoutKeepsExpectedFractionAndScale) {
  set_random_seed(3);
  const double rate = 0.3;
  Tensor y = dropout(ones({100000}), rate, 17);
  int64_t kept = 0;
  for (double v : y.to_vector<double>()) {
    if (v == 0) continue;
    ++kept;
    ASSERT_FLOAT_EQ(float(v), float(1 / (1 - rate)));
  }
  // 5 standard errors of a binomial fraction over 1e5 draws: 0.0073.
  EXPECT_NEAR(double(kept) / 1e5, 1 - rate, 0.0075);
  // The same seeds give the same mask.
  set_random_seed(3);
  EXPECT_EQ(dropout(ones({100000}), rate, 17).to_vector<double>(), y.to_vector<double>());
}

TEST(Nn, DropoutRateZeroReturnsInput) {
  Tensor x = constant({1.f, -2.f, 3.f});
  EXPECT_EQ(dropout(x, 0).to_vector<float>(), x.to_vector<float>());
}

TEST(Nn, DropoutGradientIsTheMask) {
  set_random_seed(4);
  Tensor x = ones({1000});
  GradientTape tape;
  tape.watch(x);
  Tensor y = dropout(x, 0.5);
  Tensor g = tape.gradient(reduce_sum(y), x);
  EXPECT_EQ(g.to_vector<double>(), y.to_vector<double>());
}

TEST(Nn, Errors) {
  EXPECT_THAT([] { softmax_cross_entropy_with_logits(zeros({4, 3}), zeros({4, 5})); },
              ThrowsMessage<Error>(HasSubstr("[softmax_cross_entropy_with_logits] labels [4,3] and logits [4,5] differ")));
  EXPECT_THAT([] { sparse_softmax_cross_entropy_with_logits(constant(std::vector<int64_t>{1, 5}), zeros({2, 5})); },
              ThrowsMessage<Error>(HasSubstr("[sparse_softmax_cross_entropy_with_logits] received a label value of 5 "
                                             "which is outside the valid range of [0, 5)")));
  EXPECT_THAT([] { sparse_softmax_cross_entropy_with_logits(constant(std::vector<int64_t>{-1}), zeros({1, 5})); },
              ThrowsMessage<Error>(HasSubstr("label value of -1")));
  EXPECT_THAT([] { sparse_softmax_cross_entropy_with_logits(zeros({2}), zeros({2, 5})); },
              ThrowsMessage<Error>(HasSubstr("[sparse_softmax_cross_entropy_with_logits] expects int32 or int64 "
                                             "labels, got float32")));
  EXPECT_THAT([] { sparse_softmax_cross_entropy_with_logits(constant(std::vector<int64_t>{1, 2, 3}), zeros({2, 5})); },
              ThrowsMessage<Error>(HasSubstr("labels [3] must have the shape of logits [2,5] without its last dim")));
  EXPECT_THAT([] { sigmoid_cross_entropy_with_logits(zeros({2}), zeros({3})); },
              ThrowsMessage<Error>(HasSubstr("[sigmoid_cross_entropy_with_logits] labels [2] and logits [3] differ")));
  EXPECT_THAT([] { softmax(zeros({2}, DType::Int32)); },
              ThrowsMessage<Error>(HasSubstr("[softmax] expects a floating dtype for logits, got int32")));
  EXPECT_THAT([] { log_softmax(zeros({2, 3}), -3); },
              ThrowsMessage<Error>(HasSubstr("[log_softmax] axis -3 out of range for rank 2")));
  EXPECT_THAT([] { dropout(ones({2}), 1.0); }, ThrowsMessage<Error>(HasSubstr("[dropout] rate must be in [0, 1), got 1")));
  EXPECT_THAT([] { dropout(ones({2}), -0.5); },
              ThrowsMessage<Error>(HasSubstr("[dropout] rate must be in [0, 1), got -0.5")));
}

}  // namespace
}  // namespace deepflow
