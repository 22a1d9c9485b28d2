// SPDX-License-Identifier: Apache-2.0
// Run-time shape ops: known answers, error messages, and one graph with an unknown
// batch run at several batch sizes (its gradients take their shapes from the run).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/executor.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(DynamicShape, KnownAnswers) {
  Tensor x = constant({1.f, 2.f, 3.f}, {3});
  EXPECT_EQ(broadcast_like(x, zeros({2, 3})).to_vector<float>(), (std::vector<float>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(reshape_like(constant({1.f, 2.f, 3.f, 4.f}, {4}), zeros({2, 2})).shape(), Shape({2, 2}));
  Tensor g = constant({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  EXPECT_EQ(sum_to_like(g, zeros({1, 3})).to_vector<float>(), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(sum_to_like(g, zeros({2, 1})).to_vector<float>(), (std::vector<float>{6, 15}));
  EXPECT_EQ(sum_to_like(g, zeros({})).item<float>(), 21.f);
  EXPECT_EQ(size(g).item<int64_t>(), 6);
  EXPECT_EQ(size(g, DType::Int32).dtype(), DType::Int32);
  EXPECT_EQ(sum_to(g, zeros({3})).to_vector<float>(), (std::vector<float>{5, 7, 9}));
}

TEST(DynamicShape, Errors) {
  EXPECT_THAT([] { broadcast_like(zeros({2}), zeros({3})); },
              ThrowsMessage<Error>(HasSubstr("[broadcast_like] cannot broadcast [2] to the shape of like [3]")));
  EXPECT_THAT([] { sum_to_like(zeros({2, 3}), zeros({4, 2, 3})); },
              ThrowsMessage<Error>(HasSubstr("[sum_to_like] cannot sum [2,3] down to the shape of like [4,2,3]")));
  EXPECT_THAT([] { reshape_like(zeros({5}), zeros({2, 2})); },
              ThrowsMessage<Error>(HasSubstr("[reshape_like] cannot reshape [5] (5 elements) to the shape of like [2,2]")));
}

// Infer keeps what is known and lets the run decide the rest.
TEST(DynamicShape, SymbolicShapes) {
  auto g = std::make_shared<Graph>();
  GraphScope scope(g);
  Tensor x = placeholder(DType::Float32, {-1, 3}, "x");
  EXPECT_EQ(broadcast_like(zeros({3}), x).shape(), Shape({-1, 3}));
  EXPECT_EQ(broadcast_like(zeros({4, 1}), placeholder(DType::Float32, {-1, -1}, "y")).shape(), Shape({4, -1}));
  EXPECT_EQ(reshape_like(zeros({6}), placeholder(DType::Float32, {-1, 3}, "z")).shape(), Shape({2, 3}));
  EXPECT_EQ(sum_to_like(x, placeholder(DType::Float32, {-1, 1}, "w")).shape(), Shape({-1, 1}));
  EXPECT_EQ(size(x).shape(), Shape({}));
  // Fully known like: the static reduce (no sum_to_like node).
  Tensor s = sum_to(x, zeros({1, 3}));
  EXPECT_EQ(g->node(g->value_of(s).node).op, OpId::ReduceSum);
}

// One graph, built once with unknown batch dims, run at batch sizes 1, 2 and 5: the gradients
// of a broadcasting add (whose b may or may not broadcast at run time), reduce_mean and
// a reshape all take their shapes from the run.
TEST(DynamicShape, OneGraphManyBatchSizes) {
  auto g = std::make_shared<Graph>();
  Tensor a, b, da, db;
  {
    GraphScope scope(g);
    a = placeholder(DType::Float64, {-1, 3}, "a");
    b = placeholder(DType::Float64, {-1, 3}, "b");
    GradientTape tape;
    tape.watch(a);
    tape.watch(b);
    Tensor y = reduce_mean(reshape(square(a + b), {-1}));
    auto d = tape.gradient(y, {a, b});
    da = d[0];
    db = d[1];
  }
  for (int64_t n : {1, 2, 5}) {
    for (int64_t nb : {int64_t(1), n}) {
      Tensor av = random_normal({n, 3}, 0, 1, DType::Float64), bv = random_normal({nb, 3}, 0, 1, DType::Float64);
      TensorList got = execute(*g, {{g->value_of(a), av}, {g->value_of(b), bv}}, {g->value_of(da), g->value_of(db)});
      GradientTape tape;
      tape.watch(av);
      tape.watch(bv);
      Tensor y = reduce_mean(reshape(square(av + bv), {-1}));
      auto want = tape.gradient(y, {av, bv});
      ASSERT_EQ(got[0].shape(), want[0].shape()) << n << " " << nb;
      ASSERT_EQ(got[1].shape(), want[1].shape()) << n << " " << nb;
      for (int i = 0; i < 2; ++i)
        for (int64_t k = 0; k < want[i].size(); ++k) EXPECT_NEAR(got[i].flat(k), want[i].flat(k), 1e-14);
    }
  }
}

// A mean over known dims of a tensor with an unknown batch (a global average pool) divides
// by a constant: no size/cast/maximum chain in the graph, the same values at every batch.
TEST(DynamicShape, MeanOverKnownDimsDividesByAConstant) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {-1, 2, 3}, "x");
    y = reduce_mean(x, {1, 2});
  }
  for (int i = 0; i < g->num_nodes(); ++i) {
    EXPECT_NE(g->node(i).op, OpId::Size) << "node " << i;
    EXPECT_NE(g->node(i).op, OpId::Maximum) << "node " << i;
  }
  for (int64_t n : {1, 3}) {
    Tensor xv = random_normal({n, 2, 3});
    TensorList got = execute(*g, {{g->value_of(x), xv}}, {g->value_of(y)});
    Tensor want = reduce_mean(xv, {1, 2});
    ASSERT_EQ(got[0].shape(), Shape({n}));
    for (int64_t k = 0; k < n; ++k) EXPECT_FLOAT_EQ(got[0].flat(k), want.flat(k));
  }
}

// expand_dims and squeeze with two unknown dims (no reshape can name both), and their gradients.
TEST(DynamicShape, ExpandDimsAndSqueezeWithTwoUnknownDims) {
  auto g = std::make_shared<Graph>();
  Tensor x, e, s, dx;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float64, {-1, -1, 1}, "x");
    GradientTape tape;
    tape.watch(x);
    e = expand_dims(x, 1);
    s = squeeze(e, {1, 3});
    dx = tape.gradient(reduce_sum(square(s)), x);
  }
  EXPECT_EQ(e.shape(), Shape({-1, 1, -1, 1}));
  EXPECT_EQ(s.shape(), Shape({-1, -1}));
  Tensor xv = constant(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3, 1});
  TensorList out = execute(*g, {{g->value_of(x), xv}}, {g->value_of(e), g->value_of(s), g->value_of(dx)});
  EXPECT_EQ(out[0].shape(), Shape({2, 1, 3, 1}));
  EXPECT_EQ(out[1].shape(), Shape({2, 3}));
  EXPECT_EQ(out[1].to_vector<double>(), xv.to_vector<double>());
  EXPECT_EQ(out[2].shape(), Shape({2, 3, 1}));
  EXPECT_EQ(out[2].to_vector<double>(), (std::vector<double>{2, 4, 6, 8, 10, 12}));
}

}  // namespace
}  // namespace deepflow
