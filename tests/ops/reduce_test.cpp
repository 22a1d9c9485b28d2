// SPDX-License-Identifier: Apache-2.0
// Known answers and error messages of the reduction family and matmul.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <omp.h>

#include "deepflow/deepflow.h"
#include "deepflow/graph/passes.h"
#include "deepflow/ops/kernel.h"
#include "test_util.h"

namespace deepflow {
namespace {

using testing::error_of;
using testing::expect_near;

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const float kInf = std::numeric_limits<float>::infinity();

TEST(Reduce, SumMaxMinProdKnownValues) {
  Tensor x = constant({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  EXPECT_EQ(reduce_sum(x).item<float>(), 21.f);
  EXPECT_THAT(reduce_sum(x, {0}).to_vector<float>(), ElementsAre(5, 7, 9));
  EXPECT_THAT(reduce_sum(x, {-1}).to_vector<float>(), ElementsAre(6, 15));
  EXPECT_EQ(reduce_sum(x, {1}, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(reduce_sum(x, {0, 1}, true).shape(), (Shape{1, 1}));
  EXPECT_THAT(reduce_max(x, {1}).to_vector<float>(), ElementsAre(3, 6));
  EXPECT_THAT(reduce_min(x, {0}).to_vector<float>(), ElementsAre(1, 2, 3));
  EXPECT_THAT(reduce_prod(x, {1}).to_vector<float>(), ElementsAre(6, 120));
  EXPECT_THAT(reduce_mean(x, {0}).to_vector<float>(), ElementsAre(2.5, 3.5, 4.5));
}

TEST(Reduce, DuplicateAxesReduceOnce) {
  Tensor x = constant({1.f, 2.f, 3.f, 4.f}, {2, 2});
  EXPECT_THAT(reduce_sum(x, {1, -1}).to_vector<float>(), ElementsAre(3, 7));
}

TEST(Reduce, IntegersStayIntegers) {
  Tensor x = constant(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor s = reduce_sum(x, {1});
  EXPECT_EQ(s.dtype(), DType::Int32);
  EXPECT_THAT(s.to_vector<int32_t>(), ElementsAre(6, 15));
  EXPECT_THAT(reduce_mean(x, {1}).to_vector<int32_t>(), ElementsAre(2, 5));  // truncating, like TF
  Tensor big = constant(std::vector<int8_t>{100, 100}, {2});
  EXPECT_EQ(reduce_sum(big).item<int>(), -56);  // wraps in int8
}

TEST(Reduce, EmptyReductions) {
  Tensor e = zeros({0, 2});
  EXPECT_THAT(reduce_sum(e, {0}).to_vector<float>(), ElementsAre(0, 0));
  EXPECT_THAT(reduce_prod(e, {0}).to_vector<float>(), ElementsAre(1, 1));
  EXPECT_THAT(reduce_max(e, {0}).to_vector<float>(), ElementsAre(-kInf, -kInf));
}

TEST(Reduce, MaxPropagatesNan) {
  Tensor x = constant({1.f, std::nanf(""), 3.f});
  EXPECT_TRUE(std::isnan(reduce_max(x).item<float>()));
  EXPECT_TRUE(std::isnan(reduce_min(x).item<float>()));
}

// Row i of 77 has its NaN at column i: in the 32-wide part, the 8-wide steps and the masked
// last load of the vector row fold; the last row has none.
TEST(Reduce, MaxMinPropagateNanAtEveryPositionOfARow) {
  constexpr int64_t kCols = 77;
  std::vector<float> v(size_t((kCols + 1) * kCols));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(int(i * 37 % 101) - 50);
  for (int64_t r = 0; r < kCols; ++r) v[size_t(r * kCols + r)] = std::nanf("");
  Tensor x = constant(v, {kCols + 1, kCols});
  const float* last = v.data() + kCols * kCols;
  for (bool is_max : {true, false}) {
    std::vector<float> got = (is_max ? reduce_max(x, {1}) : reduce_min(x, {1})).to_vector<float>();
    for (int64_t r = 0; r < kCols; ++r) EXPECT_TRUE(std::isnan(got[size_t(r)])) << "row " << r << " max " << is_max;
    EXPECT_EQ(got[kCols], is_max ? *std::max_element(last, last + kCols) : *std::min_element(last, last + kCols));
  }
}

TEST(Reduce, LargeSumIsIndependentOfThreads) {
  Tensor x = random_uniform({1 << 20}, -1, 1, DType::Float32, 7);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  float one = reduce_sum(x).item<float>();
  Tensor c1 = reduce_sum(reshape(x, {1024, 1024}), {0});
  omp_set_num_threads(std::max(2, saved));
  float many = reduce_sum(x).item<float>();
  Tensor c2 = reduce_sum(reshape(x, {1024, 1024}), {0});
  omp_set_num_threads(saved);
  EXPECT_EQ(one, many);
  EXPECT_EQ(c1.to_vector<float>(), c2.to_vector<float>());
}

TEST(Reduce, LogSumExp) {
  Tensor x = constant({0.f, 0.f, 0.f, 0.f}, {2, 2});
  EXPECT_NEAR(reduce_logsumexp(x).item<float>(), std::log(4.f), 1e-6);
  Tensor big = constant({1000.f, 1000.f});
  EXPECT_NEAR(reduce_logsumexp(big).item<float>(), 1000.f + std::log(2.f), 1e-3);
  Tensor ninf = constant({-kInf, -kInf});
  EXPECT_EQ(reduce_logsumexp(ninf).item<float>(), -kInf);
  Tensor pinf = constant({kInf, 1.f});
  EXPECT_EQ(reduce_logsumexp(pinf).item<float>(), kInf);
  EXPECT_EQ(reduce_logsumexp(constant({1.f, 2.f}, {1, 2}), {1}, true).shape(), (Shape{1, 1}));
}

TEST(Reduce, Moments) {
  Tensor x = constant({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  auto [m, v] = moments(x, {1});
  EXPECT_THAT(m.to_vector<float>(), ElementsAre(2, 5));
  EXPECT_THAT(v.to_vector<float>(), ElementsAre(::testing::FloatNear(2.f / 3, 1e-6), ::testing::FloatNear(2.f / 3, 1e-6)));
  auto [mk, vk] = moments(x, {0}, true);
  EXPECT_EQ(mk.shape(), (Shape{1, 3}));
  EXPECT_EQ(vk.shape(), (Shape{1, 3}));
  EXPECT_THAT(vk.to_vector<float>(), ElementsAre(2.25, 2.25, 2.25));
}

TEST(ArgMax, FirstIndexOnTies) {
  Tensor x = constant({1.f, 3.f, 3.f, 0.f, 0.f, -1.f}, {2, 3});
  Tensor i = argmax(x, 1);
  EXPECT_EQ(i.dtype(), DType::Int64);
  EXPECT_THAT(i.to_vector<int64_t>(), ElementsAre(1, 0));
  EXPECT_THAT(argmin(x, 1).to_vector<int64_t>(), ElementsAre(0, 2));
  EXPECT_THAT(argmax(x, 0, DType::Int32).to_vector<int32_t>(), ElementsAre(0, 0, 0));
  EXPECT_EQ(argmax(x, 0, DType::Int32).dtype(), DType::Int32);
  EXPECT_THAT(argmin(x, -2).to_vector<int64_t>(), ElementsAre(1, 1, 1));
}

TEST(Cumsum, ExclusiveAndReverse) {
  Tensor x = constant({1.f, 2.f, 3.f});
  EXPECT_THAT(cumsum(x).to_vector<float>(), ElementsAre(1, 3, 6));
  EXPECT_THAT(cumsum(x, 0, true).to_vector<float>(), ElementsAre(0, 1, 3));
  EXPECT_THAT(cumsum(x, 0, false, true).to_vector<float>(), ElementsAre(6, 5, 3));
  EXPECT_THAT(cumsum(x, 0, true, true).to_vector<float>(), ElementsAre(5, 3, 0));
  Tensor m = constant({1.f, 2.f, 3.f, 4.f}, {2, 2});
  EXPECT_THAT(cumsum(m, 1).to_vector<float>(), ElementsAre(1, 3, 3, 7));
  EXPECT_THAT(cumsum(m, 0).to_vector<float>(), ElementsAre(1, 2, 4, 6));
}

TEST(TopK, OrderingAndIndices) {
  Tensor x = constant({1.f, 5.f, 3.f, 5.f, 2.f, 4.f, 0.f, 9.f}, {2, 4});
  auto [v, i] = top_k(x, 2);
  EXPECT_EQ(i.dtype(), DType::Int32);
  EXPECT_EQ(v.shape(), (Shape{2, 2}));
  EXPECT_THAT(v.to_vector<float>(), ElementsAre(5, 5, 9, 4));
  EXPECT_THAT(i.to_vector<int32_t>(), ElementsAre(1, 3, 3, 1));  // equal values: the lower index first
  auto [v0, i0] = top_k(x, 0);
  EXPECT_EQ(v0.shape(), (Shape{2, 0}));
}

TEST(TopK, GradientGoesToChosenPositions) {
  Tensor x = constant({1.f, 5.f, 3.f, 2.f, 4.f, 0.f}, {2, 3});
  GradientTape tape;
  tape.watch(x);
  Tensor v = top_k(x, 2).first;
  Tensor y = reduce_sum(mul(v, constant({10.f, 1.f, 10.f, 1.f}, {2, 2})));
  EXPECT_THAT(tape.gradient(y, x).to_vector<float>(), ElementsAre(0, 10, 1, 1, 10, 0));
}

TEST(MatMul, KnownValuesAndTransposes) {
  Tensor a = constant({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  Tensor b = constant({1.f, 0.f, 0.f, 1.f, 1.f, 1.f}, {3, 2});
  EXPECT_THAT(matmul(a, b).to_vector<float>(), ElementsAre(4, 5, 10, 11));
  EXPECT_THAT(matmul(a, a, false, true).to_vector<float>(), ElementsAre(14, 32, 32, 77));
  EXPECT_THAT(matmul(a, a, true, false).to_vector<float>(), ElementsAre(17, 22, 27, 22, 29, 36, 27, 36, 45));
  Tensor batch = reshape(concat({a, a}, 0), {2, 2, 3});
  EXPECT_EQ(matmul(batch, b).shape(), (Shape{2, 2, 2}));
  Tensor k0 = matmul(zeros({2, 0}), zeros({0, 3}));
  EXPECT_THAT(k0.to_vector<float>(), ElementsAre(0, 0, 0, 0, 0, 0));
}

// Small 2D float32 products run through sgemm, bigger ones through cached primitives
// (kernels/cpu/onednn_util.h): both sides of the cut-off, every transpose, and the fused
// matmul's bias + relu, against the reference kernels.
TEST(MatMul, SgemmAndPrimitivePathsMatchReference) {
  const auto& ref = kernels_for(OpId::MatMul).back();
  const auto& fused_ref = kernels_for(OpId::FusedMatMul).back();
  for (int64_t m : {3, 32, 300}) {
    const int64_t k = m == 300 ? 200 : 17, n = m == 300 ? 129 : 10;  // 300*200*129 > 4M MACs
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Tensor a = random_uniform(ta ? Shape{k, m} : Shape{m, k}, -1, 1, DType::Float32, 1);
        Tensor b = random_uniform(tb ? Shape{n, k} : Shape{k, n}, -1, 1, DType::Float32, 2);
        Tensor bias = random_uniform({n}, -1, 1, DType::Float32, 3);
        Attrs attrs{{"transpose_a", ta}, {"transpose_b", tb}};
        TensorList want{zeros({m, n})};
        ref.run(OpCall{&op_def(OpId::MatMul), TensorList{a, b}, &attrs, {}}, want);
        SCOPED_TRACE(::testing::Message() << "m=" << m << " ta=" << ta << " tb=" << tb);
        expect_near(matmul(a, b, ta, tb), want[0], 1e-4);
        Attrs fattrs{{"transpose_a", ta}, {"transpose_b", tb}, {"activation", std::string("relu")}, {"has_bias", true}};
        TensorList fwant{zeros({m, n})};
        fused_ref.run(OpCall{&op_def(OpId::FusedMatMul), TensorList{a, b, bias}, &fattrs, {}}, fwant);
        expect_near(fused_matmul(a, b, bias, ta, tb, "relu"), fwant[0], 1e-4);
      }
  }
}

// A rank-3 a folds its batch into rows (Dense on [batch, time, features]).
TEST(MatMul, FusedMatmulFoldsBatchDimsIntoRows) {
  Tensor a = random_uniform({2, 3, 4}, -1, 1, DType::Float32, 1), b = random_uniform({4, 5}, -1, 1, DType::Float32, 2);
  Tensor bias = random_uniform({5}, -1, 1, DType::Float32, 3);
  for (bool tb : {false, true}) {
    Tensor bb = tb ? transpose(b, {1, 0}) : b;
    expect_near(fused_matmul(a, bb, bias, false, tb, "relu"), relu(matmul(a, b) + bias), 1e-5);
  }
}

TEST(MatMul, LowPrecisionMatchesFloat) {
  Tensor a = random_uniform({17, 33}, -1, 1, DType::Float32, 1), b = random_uniform({33, 9}, -1, 1, DType::Float32, 2);
  Tensor want = matmul(a, b);
  for (DType t : {DType::BFloat16, DType::Float16}) {
    Tensor got = matmul(cast(a, t), cast(b, t));
    ASSERT_EQ(got.dtype(), t);
    for (int64_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.flat(i), want.flat(i), 0.1) << dtype_name(t);
  }
}

TEST(Errors, MessagesNameTheOpAndShapes) {
  Tensor x = zeros({2, 3});
  EXPECT_THAT(error_of([&] { reduce_sum(x, {3}); }), HasSubstr("[reduce_sum] axis 3 out of range for rank 2"));
  EXPECT_THAT(error_of([&] { reduce_max(x, {-3}); }), HasSubstr("[reduce_max] axis -3 out of range for rank 2"));
  EXPECT_THAT(error_of([&] { argmax(x, 2); }), HasSubstr("[argmax] axis 2 out of range for rank 2"));
  EXPECT_THAT(error_of([&] { top_k(x, 4); }), HasSubstr("[top_k] k 4 is larger than the last dimension 3"));
  EXPECT_THAT(error_of([&] { cumsum(x, 5); }), HasSubstr("[cumsum] axis 5 out of range for rank 2"));
  EXPECT_THAT(error_of([&] { matmul(zeros({2, 3}), zeros({4, 5})); }),
              HasSubstr("[matmul] inner dimensions differ: a is [2,3], b is [4,5]"));
  EXPECT_THAT(error_of([&] { matmul(zeros({2, 3}), zeros({2, 3}), false, false); }),
              HasSubstr("[matmul] inner dimensions differ"));
  EXPECT_THAT(error_of([&] { matmul(zeros({3}), zeros({3, 2})); }), HasSubstr("[matmul] expects inputs of rank >= 2"));
  EXPECT_THAT(error_of([&] { matmul(zeros({2, 2}), zeros({2, 2}, DType::Float64)); }),
              HasSubstr("[matmul] dtypes differ: float32[2,2] and float64[2,2]"));
}

}  // namespace
}  // namespace deepflow
