// SPDX-License-Identifier: Apache-2.0
// keras::initializers: the Keras formulas (fans of dense and conv kernels, each fan
// mode, uniform limits, truncated-normal stddevs), orthogonality, seeds, configs.
#include "deepflow/keras/initializers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <vector>

#include "deepflow/core/random.h"
#include "deepflow/ops/ops.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
namespace init = initializers;

struct Stats {
  double mean = 0, var = 0, max_abs = 0;
};

Stats stats_of(const Tensor& t) {
  std::vector<double> v = cast(t, DType::Float64).to_vector<double>();
  Stats s;
  for (double x : v) s.mean += x;
  s.mean /= double(v.size());
  for (double x : v) {
    s.var += (x - s.mean) * (x - s.mean);
    s.max_abs = std::max(s.max_abs, std::abs(x));
  }
  s.var /= double(v.size());
  return s;
}

// A [200, 300] dense kernel: fan_in 200, fan_out 300. A [5, 5, 64, 32] conv kernel:
// receptive field 25, fan_in 1600, fan_out 800.
const Shape kDense{200, 300};
const Shape kConv{5, 5, 64, 32};

// Uniform(-l, l): variance l^2 / 3, and with ~50k draws the largest |x| is within 0.1%
// of l, which pins the fans down exactly.
void expect_uniform(const InitializerPtr& init, const Shape& shape, double limit) {
  Tensor t = (*init)(shape, DType::Float32);
  ASSERT_EQ(t.shape(), shape);
  ASSERT_EQ(t.dtype(), DType::Float32);
  Stats s = stats_of(t);
  EXPECT_NEAR(s.mean, 0, 0.02 * limit) << init->class_name() << " " << shape;
  EXPECT_NEAR(s.var, limit * limit / 3, 0.03 * limit * limit / 3) << init->class_name() << " " << shape;
  EXPECT_LE(s.max_abs, limit * (1 + 1e-6)) << init->class_name() << " " << shape;
  EXPECT_GT(s.max_abs, limit * 0.999) << init->class_name() << " " << shape;
}

// Keras's truncated normal with stddev sqrt(scale) / .8796...: variance `variance`
// (the truncation at 2 stddevs undoes the correction) and nothing beyond 2 stddevs.
void expect_truncated(const InitializerPtr& init, const Shape& shape, double variance) {
  Tensor t = (*init)(shape, DType::Float32);
  ASSERT_EQ(t.shape(), shape);
  Stats s = stats_of(t);
  const double stddev = std::sqrt(variance) / .87962566103423978;
  EXPECT_NEAR(s.mean, 0, 0.02 * stddev) << init->class_name() << " " << shape;
  EXPECT_NEAR(s.var, variance, 0.03 * variance) << init->class_name() << " " << shape;
  EXPECT_LE(s.max_abs, 2 * stddev * (1 + 1e-6)) << init->class_name() << " " << shape;
  EXPECT_GT(s.max_abs, 1.99 * stddev) << init->class_name() << " " << shape;
}

TEST(KerasInitializers, GlorotUsesTheAverageFan) {
  expect_uniform(init::GlorotUniform(), kDense, std::sqrt(6.0 / (200 + 300)));
  expect_uniform(init::GlorotUniform(), kConv, std::sqrt(6.0 / (1600 + 800)));
  expect_truncated(init::GlorotNormal(), kDense, 2.0 / (200 + 300));
  expect_truncated(init::GlorotNormal(), kConv, 2.0 / (1600 + 800));
}

TEST(KerasInitializers, HeUsesFanInWithScaleTwo) {
  expect_uniform(init::HeUniform(), kDense, std::sqrt(6.0 / 200));
  expect_uniform(init::HeUniform(), kConv, std::sqrt(6.0 / 1600));
  expect_truncated(init::HeNormal(), kDense, 2.0 / 200);
  expect_truncated(init::HeNormal(), kConv, 2.0 / 1600);
}

TEST(KerasInitializers, LecunUsesFanInWithScaleOne) {
  expect_uniform(init::LecunUniform(), kDense, std::sqrt(3.0 / 200));
  expect_uniform(init::LecunUniform(), kConv, std::sqrt(3.0 / 1600));
  expect_truncated(init::LecunNormal(), kDense, 1.0 / 200);
  expect_truncated(init::LecunNormal(), kConv, 1.0 / 1600);
}

TEST(KerasInitializers, VectorFansAreItsSize) {
  // A bias-like vector of 50000: fan_in = fan_out = 50000.
  expect_uniform(init::GlorotUniform(), Shape{50000}, std::sqrt(6.0 / 100000));
  expect_uniform(init::HeUniform(), Shape{50000}, std::sqrt(6.0 / 50000));
}

TEST(KerasInitializers, PlainDistributions) {
  Stats n = stats_of((*init::RandomNormal(1.5, 0.5))({300, 200}, DType::Float32));
  EXPECT_NEAR(n.mean, 1.5, 0.01);
  EXPECT_NEAR(n.var, 0.25, 0.0075);
  Stats u = stats_of((*init::RandomUniform(2, 4))({300, 200}, DType::Float64));
  EXPECT_NEAR(u.mean, 3, 0.01);
  EXPECT_NEAR(u.var, 4.0 / 12, 0.01);
  Tensor tn = (*init::TruncatedNormal(0, 0.05))({300, 200}, DType::Float32);
  EXPECT_LE(stats_of(tn).max_abs, 0.1 + 1e-6);
  // Seeded draws come from the host stream: the same formulas hold.
  Stats sn = stats_of((*init::RandomNormal(-1, 2, 5))({300, 200}, DType::Float32));
  EXPECT_NEAR(sn.mean, -1, 0.04);
  EXPECT_NEAR(sn.var, 4, 0.12);
  expect_uniform(init::GlorotUniform(11), kConv, std::sqrt(6.0 / (1600 + 800)));
  expect_truncated(init::HeNormal(11), kDense, 2.0 / 200);
}

TEST(KerasInitializers, ConstantsAndDtypes) {
  testing::expect_near((*init::Zeros())({2, 3}, DType::Float32), zeros({2, 3}), 0);
  testing::expect_near((*init::Ones())({4}, DType::Float64), ones({4}, DType::Float64), 0);
  testing::expect_near((*init::Constant(0.25))({2, 2}, DType::Float32), fill({2, 2}, 0.25), 0);
  EXPECT_EQ((*init::Zeros())({3}, DType::Int64).dtype(), DType::Int64);
  EXPECT_EQ((*init::GlorotUniform())({8, 8}, DType::BFloat16).dtype(), DType::BFloat16);
  EXPECT_EQ((*init::Orthogonal(1, 3))({8, 8}, DType::Float16).dtype(), DType::Float16);
  EXPECT_THAT(error_of([] { (*init::HeNormal())({3, 3}, DType::Int32); }),
              HasSubstr("[HeNormal] expects a floating dtype, got int32"));
  EXPECT_THAT(error_of([] { (*init::GlorotUniform())({-1, 3}, DType::Float32); }),
              HasSubstr("[GlorotUniform] needs a fully defined shape, got [?,3]"));
}

// W^T W (or W W^T for wide matrices) is gain^2 I.
void expect_orthogonal(const Tensor& w2d, double gain) {
  const bool tall = w2d.dim(0) >= w2d.dim(1);
  Tensor w = cast(w2d, DType::Float64);
  Tensor g = tall ? matmul(w, w, true, false) : matmul(w, w, false, true);
  const int64_t n = g.dim(0);
  testing::expect_near(g, eye(n, n, DType::Float64) * (gain * gain), 1e-5);
}

TEST(KerasInitializers, OrthogonalColumnsOrRows) {
  expect_orthogonal((*init::Orthogonal())({64, 64}, DType::Float32), 1);
  expect_orthogonal((*init::Orthogonal(2.0))({100, 30}, DType::Float64), 2);
  expect_orthogonal((*init::Orthogonal(1.0, 4))({30, 100}, DType::Float64), 1);
  // Rank 4: orthogonal as [3*3*8, 16].
  Tensor k = (*init::Orthogonal(0.5, 9))({3, 3, 8, 16}, DType::Float64);
  ASSERT_EQ(k.shape(), Shape({3, 3, 8, 16}));
  expect_orthogonal(reshape(k, {72, 16}), 0.5);
  EXPECT_THAT(error_of([] { (*init::Orthogonal())({5}, DType::Float32); }),
              HasSubstr("[Orthogonal] the tensor to initialize must be at least two-dimensional, got shape [5]"));
}

TEST(KerasInitializers, OrthogonalIsTheSignFixedQOfANormalMatrix) {
  // With the same seed, Orthogonal sees the normal matrix RandomNormal(0, 1, seed)
  // draws; its Q with diag(R) > 0 is Gram-Schmidt on the columns.
  const int64_t m = 7;
  std::vector<double> a = (*init::RandomNormal(0, 1, 21))({m, 2}, DType::Float64).to_vector<double>();
  std::vector<double> q(size_t(2 * m));
  double n1 = 0;
  for (int64_t i = 0; i < m; ++i) n1 += a[i * 2] * a[i * 2];
  n1 = std::sqrt(n1);
  double dot = 0;
  for (int64_t i = 0; i < m; ++i) dot += a[i * 2] / n1 * a[i * 2 + 1];
  double n2 = 0;
  for (int64_t i = 0; i < m; ++i) n2 += std::pow(a[i * 2 + 1] - dot * a[i * 2] / n1, 2);
  n2 = std::sqrt(n2);
  for (int64_t i = 0; i < m; ++i) {
    q[i * 2] = a[i * 2] / n1;
    q[i * 2 + 1] = (a[i * 2 + 1] - dot * a[i * 2] / n1) / n2;
  }
  Tensor want = constant(q, Shape{m, 2}, DType::Float64);
  testing::expect_near((*init::Orthogonal(3.0, 21))({m, 2}, DType::Float64), want * 3.0, 1e-12);
  // A wide kernel is the transpose of the tall one.
  testing::expect_near((*init::Orthogonal(1.0, 21))({2, m}, DType::Float64), transpose(want), 1e-12);
  // A random rotation spreads its entries: no entry near 1 as in a permutation.
  EXPECT_LT(stats_of((*init::Orthogonal(1.0, 2))({200, 200}, DType::Float64)).max_abs, 0.5);
}

TEST(KerasInitializers, SeededGivesTheSameValuesEachCall) {
  for (const InitializerPtr& i : {init::GlorotUniform(7), init::HeNormal(7), init::RandomNormal(0, 1, 7),
                                  init::RandomUniform(-1, 1, 7), init::TruncatedNormal(0, 1, 7),
                                  init::Orthogonal(1, 7)}) {
    Tensor a = (*i)({6, 5}, DType::Float32), b = (*i)({6, 5}, DType::Float32);
    testing::expect_near(a, b, 0);
    // Another object with the same seed agrees too (the global seed does not matter).
    set_random_seed(123);
    testing::expect_near((*init::deserialize(init::serialize(*i)))({6, 5}, DType::Float32), a, 0);
    set_random_seed(std::nullopt);
  }
  Tensor a = (*init::GlorotUniform(7))({6, 5}, DType::Float32);
  Tensor b = (*init::GlorotUniform(8))({6, 5}, DType::Float32);
  EXPECT_GT(stats_of(a - b).max_abs, 0.01);
}

TEST(KerasInitializers, UnseededFollowsTheGlobalGenerator) {
  InitializerPtr i = init::HeUniform();
  Tensor a = (*i)({6, 5}, DType::Float32), b = (*i)({6, 5}, DType::Float32);
  EXPECT_GT(stats_of(a - b).max_abs, 0.01);  // new values each call
  set_random_seed(42);
  Tensor c1 = (*i)({6, 5}, DType::Float32), c2 = (*init::Orthogonal())({6, 5}, DType::Float32);
  set_random_seed(42);
  Tensor d1 = (*i)({6, 5}, DType::Float32), d2 = (*init::Orthogonal())({6, 5}, DType::Float32);
  set_random_seed(std::nullopt);
  testing::expect_near(c1, d1, 0);
  testing::expect_near(c2, d2, 0);
}

TEST(KerasInitializers, ConfigRoundTrip) {
  EXPECT_EQ(init::serialize(*init::RandomNormal(0.5, 2, 3)).dump(),
            R"({"class_name":"RandomNormal","config":{"mean":0.5,"seed":3,"stddev":2.0}})");
  EXPECT_EQ(init::serialize(*init::GlorotUniform()).dump(), R"({"class_name":"GlorotUniform","config":{"seed":null}})");
  EXPECT_EQ(init::Constant(0.25)->get_config().dump(), R"({"value":0.25})");
  EXPECT_EQ(init::Zeros()->get_config().dump(), "{}");
  EXPECT_EQ(init::Orthogonal(2, 1)->get_config().dump(), R"({"gain":2.0,"seed":1})");
  EXPECT_EQ(init::RandomUniform()->get_config().dump(), R"({"maxval":0.05,"minval":-0.05,"seed":null})");
  for (const InitializerPtr& i :
       {init::Zeros(), init::Ones(), init::Constant(3), init::RandomNormal(1, 2, 3), init::RandomUniform(-2, 2),
        init::TruncatedNormal(0, 0.1, 4), init::GlorotUniform(1), init::GlorotNormal(), init::HeUniform(),
        init::HeNormal(2), init::LecunUniform(), init::LecunNormal(5), init::Orthogonal(1.5, 6)}) {
    Config c = init::serialize(*i);
    InitializerPtr back = init::deserialize(c);
    EXPECT_EQ(back->class_name(), i->class_name());
    EXPECT_EQ(init::serialize(*back), c);
  }
}

TEST(KerasInitializers, GetByNameOrClassName) {
  EXPECT_EQ(init::get("glorot_uniform")->class_name(), "GlorotUniform");
  EXPECT_EQ(init::get("GlorotUniform")->class_name(), "GlorotUniform");
  EXPECT_EQ(init::get("he_normal")->class_name(), "HeNormal");
  EXPECT_EQ(init::get("lecun_uniform")->class_name(), "LecunUniform");
  EXPECT_EQ(init::get("zeros")->class_name(), "Zeros");
  EXPECT_EQ(init::get("orthogonal")->class_name(), "Orthogonal");
  EXPECT_EQ(init::get("truncated_normal")->get_config().dump(), R"({"mean":0.0,"seed":null,"stddev":0.05})");
  EXPECT_EQ(init::deserialize(nlohmann::json("ones"))->class_name(), "Ones");
  EXPECT_THAT(error_of([] { init::get("glorot_unifrom"); }),
              HasSubstr("[initializers] unknown initializer 'glorot_unifrom'; known: glorot_uniform, glorot_normal"));
  EXPECT_THAT(error_of([] { init::deserialize(nlohmann::json{{"class_name", "Nope"}, {"config", {}}}); }),
              HasSubstr("unknown initializer 'Nope'"));
  EXPECT_THAT(error_of([] { init::deserialize(nlohmann::json{{"config", {}}}); }),
              HasSubstr("[initializers.deserialize] expects {\"class_name\""));
  EXPECT_THAT(error_of([] {
                init::deserialize(nlohmann::json{{"class_name", "RandomNormal"}, {"config", {{"mean", "x"}}}});
              }),
              HasSubstr("[initializers.deserialize] bad config"));
}

}  // namespace
}  // namespace deepflow::keras
