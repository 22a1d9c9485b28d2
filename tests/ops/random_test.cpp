// SPDX-License-Identifier: Apache-2.0
// Random ops: seeds (TensorFlow's rules), statistics, and thread independence.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "deepflow/deepflow.h"

namespace deepflow {
namespace {

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}
double variance_of(const std::vector<double>& v) {
  double m = mean_of(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(v.size() - 1);
}

TEST(Random, SameGlobalSeedGivesSameSequence) {
  set_random_seed(42);
  Tensor a1 = random_uniform({100});
  Tensor a2 = random_normal({50}, 0, 1, DType::Float64);
  Tensor a3 = random_uniform({100}, 0, 1, DType::Float32, 9);
  Tensor a4 = random_uniform({100}, 0, 1, DType::Float32, 9);
  set_random_seed(42);
  Tensor b1 = random_uniform({100});
  Tensor b2 = random_normal({50}, 0, 1, DType::Float64);
  Tensor b3 = random_uniform({100}, 0, 1, DType::Float32, 9);
  Tensor b4 = random_uniform({100}, 0, 1, DType::Float32, 9);
  EXPECT_EQ(values(a1), values(b1));
  EXPECT_EQ(values(a2), values(b2));
  EXPECT_EQ(values(a3), values(b3));
  EXPECT_EQ(values(a4), values(b4));
  // Repeated calls with one op seed continue the sequence instead of repeating it.
  EXPECT_NE(values(a3), values(a4));
  set_random_seed(43);
  EXPECT_NE(values(a1), values(random_uniform({100})));
}

TEST(Random, ValuesDependOnPositionNotShape) {
  set_random_seed(5);
  Tensor a = random_normal({12}, 0, 1, DType::Float32, 1);
  set_random_seed(5);
  Tensor b = random_normal({3, 4}, 0, 1, DType::Float32, 1);
  EXPECT_EQ(values(a), values(b));
}

TEST(Random, OpSeedWithoutGlobalSeedIsReproducible) {
  set_random_seed(std::nullopt);
  std::vector<double> first = values(random_uniform({4}, 0, 1, DType::Float64, 1234));
  std::vector<double> next = values(random_uniform({4}, 0, 1, DType::Float64, 1234));
  set_random_seed(std::nullopt);  // a fresh program: the op seed alone fixes the sequence
  EXPECT_EQ(values(random_uniform({4}, 0, 1, DType::Float64, 1234)), first);
  EXPECT_EQ(values(random_uniform({4}, 0, 1, DType::Float64, 1234)), next);
  EXPECT_NE(first, next);
}

TEST(Random, UniformStatistics) {
  set_random_seed(7);
  for (DType dt : {DType::Float32, DType::Float64}) {
    std::vector<double> v = values(random_uniform({100000}, -1, 3, dt));
    for (double x : v) ASSERT_TRUE(x >= -1 && x < 3) << x;
    // 5 standard errors: mean sd 0.0037, variance sd 0.0038.
    EXPECT_NEAR(mean_of(v), 1.0, 0.02) << dtype_name(dt);
    EXPECT_NEAR(variance_of(v), 16.0 / 12.0, 0.025) << dtype_name(dt);
  }
}

TEST(Random, SixteenBitUniformStaysBelowMaxval) {
  set_random_seed(8);
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    std::vector<double> v = values(random_uniform({100000}, 0, 1, dt));
    for (double x : v) ASSERT_TRUE(x >= 0 && x < 1) << dtype_name(dt) << " " << x;
    EXPECT_NEAR(mean_of(v), 0.5, 0.01) << dtype_name(dt);
  }
}

TEST(Random, NormalStatistics) {
  set_random_seed(9);
  for (DType dt : {DType::Float32, DType::Float64}) {
    std::vector<double> v = values(random_normal({100000}, 0.5, 2, dt));
    // 5 standard errors: mean sd 0.0063, std sd 0.0045.
    EXPECT_NEAR(mean_of(v), 0.5, 0.032) << dtype_name(dt);
    EXPECT_NEAR(std::sqrt(variance_of(v)), 2.0, 0.025) << dtype_name(dt);
    int64_t within = 0;
    for (double x : v) within += std::fabs(x - 0.5) < 2;
    EXPECT_NEAR(double(within) / 1e5, 0.682689, 0.0075) << dtype_name(dt);
  }
}

TEST(Random, TruncatedNormalNeverBeyondTwoStddev) {
  set_random_seed(10);
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    std::vector<double> v = values(truncated_normal({100000}, 1, 0.5, dt));
    for (double x : v) ASSERT_LE(std::fabs(x - 1), 1.0) << dtype_name(dt);
    if (dt == DType::Float32 || dt == DType::Float64) {
      // A standard normal truncated to [-2, 2] has std 0.87962.
      EXPECT_NEAR(mean_of(v), 1.0, 0.01) << dtype_name(dt);
      EXPECT_NEAR(std::sqrt(variance_of(v)), 0.5 * 0.87962, 0.006) << dtype_name(dt);
    }
  }
}

TEST(Random, ValuesDoNotDependOnThreadCount) {
  const int saved = omp_get_max_threads();
  auto sample = [](int threads, int which) {
    omp_set_num_threads(threads);
    set_random_seed(11);
    Tensor t = which == 0   ? random_uniform({1000000})
               : which == 1 ? random_normal({1000000}, 0, 1, DType::Float64)
                            : truncated_normal({1000000});
    return values(t);
  };
  for (int which = 0; which < 3; ++which) EXPECT_EQ(sample(1, which), sample(2, which)) << "op " << which;
  omp_set_num_threads(saved);
}

TEST(Random, Errors) {
  EXPECT_THAT([] { random_uniform({2}, 0, 1, DType::Int32); },
              ::testing::ThrowsMessage<Error>(
                  ::testing::HasSubstr("[random_uniform] expects a floating dtype, got int32")));
  EXPECT_THAT([] { truncated_normal({2}, 0, 1, DType::Bool); },
              ::testing::ThrowsMessage<Error>(
                  ::testing::HasSubstr("[truncated_normal] expects a floating dtype, got bool")));
}

}  // namespace
}  // namespace deepflow
