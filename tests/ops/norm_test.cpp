// SPDX-License-Identifier: Apache-2.0
// Fused normalizations: known values, agreement with the composite formulation
// (moments + batch_normalization), the Bessel correction, layer_normalization's
// routing, 16-bit kernels with float32 parameters, and error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "deepflow/deepflow.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-6) {
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}
void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what = "") {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  expect_values(a, b.to_vector<double>(), tol);
}
template <class F>
void expect_error(F&& f, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing: " << text;
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(text));
  }
}

bool supports(const KernelDef& k, OpId op, const TensorList& xs, const Attrs& a) {
  OpCall call{&op_def(op), xs, &a, {}};
  return !k.supports || k.supports(call);
}

TEST(FusedBatchNorm, KnownValuesAndBesselCorrection) {
  // Channel 0 holds {1, 3} (mean 2, biased variance 1), channel 1 {2, 6} (mean 4, variance 4).
  Tensor x = constant({1.f, 2.f, 3.f, 6.f}, {2, 2});
  auto r = fused_batch_norm(x, constant({2.f, 1.f}), constant({0.5f, 0.f}), Tensor(), Tensor(), 0.0);
  expect_values(r.y, {-1.5, -1, 2.5, 1});
  expect_values(r.batch_mean, {2, 4});
  expect_values(r.batch_variance, {2, 8});  // n / (n - 1) = 2
  // One row: the factor is n / max(n - 1, 1) = 1, as TensorFlow, so the variance stays 0.
  auto one = fused_batch_norm(constant({1.f, 2.f}, {1, 2}), ones({2}), zeros({2}), Tensor(), Tensor());
  expect_values(one.batch_variance, {0, 0});
  expect_values(one.y, {0, 0});
}

TEST(FusedBatchNorm, TrainingMatchesMomentsAndBatchNormalization) {
  set_random_seed(3);
  for (DType dt : {DType::Float32, DType::Float64}) {
    Tensor x = random_normal({4, 5, 6, 3}, 1, 2, dt), scale = random_uniform({3}, 0.5, 2, dt);
    Tensor offset = random_normal({3}, 0, 1, dt), w = random_normal({4, 5, 6, 3}, 0, 1, dt);
    const double tol = dt == DType::Float32 ? 1e-4 : 1e-10;
    GradientTape fused_tape(true), comp_tape(true);
    for (GradientTape* t : {&fused_tape, &comp_tape})
      for (const Tensor& s : {x, scale, offset}) t->watch(s);
    auto r = fused_batch_norm(x, scale, offset, Tensor(), Tensor(), 1e-3);
    auto [mean, var] = moments(x, {0, 1, 2});
    Tensor y = batch_normalization(x, mean, var, offset, scale, 1e-3);
    expect_close(r.y, y, tol, "y");
    expect_close(r.batch_mean, mean, tol, "mean");
    expect_close(r.batch_variance, var * (120.0 / 119.0), tol, "variance");
    // Gradients of y alone, then of a loss that also uses the statistics.
    for (bool stats : {false, true}) {
      Tensor lf = reduce_sum(r.y * w), lc = reduce_sum(y * w);
      if (stats) {
        lf = lf + reduce_sum(square(r.batch_mean)) + reduce_sum(r.batch_variance * scale);
        lc = lc + reduce_sum(square(mean)) + reduce_sum(var * (120.0 / 119.0) * scale);
      }
      auto gf = fused_tape.gradient({lf}, {x, scale, offset});
      auto gc = comp_tape.gradient({lc}, {x, scale, offset});
      for (size_t i = 0; i < 3; ++i) expect_close(gf[i], gc[i], tol * 10, "gradient " + std::to_string(i));
    }
  }
}

TEST(FusedBatchNorm, InferenceUsesGivenStatistics) {
  set_random_seed(4);
  Tensor x = random_normal({3, 4, 5}), scale = random_uniform({5}, 0.5, 2), offset = random_normal({5});
  Tensor mean = random_normal({5}), var = random_uniform({5}, 0.5, 2);
  GradientTape tape(true);
  for (const Tensor& s : {mean, var}) tape.watch(s);
  auto r = fused_batch_norm(x, scale, offset, mean, var, 1e-3, /*training=*/false);
  Tensor y = batch_normalization(x, mean, var, offset, scale, 1e-3);
  expect_close(r.y, y, 1e-5);
  expect_close(r.batch_mean, mean, 0);
  expect_close(r.batch_variance, var, 0);
  // Unlike TensorFlow (None), the given statistics get their exact gradients.
  auto gf = tape.gradient({reduce_sum(r.y)}, {mean, var});
  auto gc = tape.gradient({reduce_sum(y)}, {mean, var});
  expect_close(gf[0], gc[0], 1e-4);
  expect_close(gf[1], gc[1], 1e-4);
}

TEST(FusedBatchNorm, EmptyBatchGivesNanStatistics) {
  auto r = fused_batch_norm(zeros({0, 3}), ones({3}), zeros({3}), Tensor(), Tensor());
  EXPECT_EQ(r.y.shape(), Shape({0, 3}));
  for (double v : r.batch_mean.to_vector<double>()) EXPECT_TRUE(std::isnan(v));
  for (double v : r.batch_variance.to_vector<double>()) EXPECT_TRUE(std::isnan(v));
}

// Every kernel of a fused op on 16-bit x with float32 parameters agrees with the float32
// computation (the op table cannot express mixed dtypes).
TEST(FusedBatchNorm, SixteenBitXWithFloat32Parameters) {
  set_random_seed(5);
  Tensor x32 = random_normal({6, 5, 8}), dy32 = random_normal({6, 5, 8});
  Tensor scale = random_uniform({8}, 0.5, 2), offset = random_normal({8}), empty(Shape{0}, DType::Float32);
  for (DType dt : {DType::BFloat16, DType::Float16}) {
    Tensor x = cast(x32, dt), dy = cast(dy32, dt);
    Tensor xr = cast(x, DType::Float32), dyr = cast(dy, DType::Float32);  // the same rounded values
    Attrs a{{"epsilon", 1e-3}, {"is_training", true}};
    TensorList want = dispatch(OpId::FusedBatchNorm, {xr, scale, offset, empty, empty}, a);
    TensorList want_g = dispatch(OpId::FusedBatchNormGrad, {dyr, xr, scale, want[1], want[3]}, a);
    TensorList fwd{x, scale, offset, empty, empty};
    for (const KernelDef& k : kernels_for(OpId::FusedBatchNorm)) {
      if (!supports(k, OpId::FusedBatchNorm, fwd, a)) continue;
      TensorList got = run_kernel(k, OpId::FusedBatchNorm, fwd, a);
      EXPECT_EQ(got[0].dtype(), dt);
      EXPECT_EQ(got[1].dtype(), DType::Float32);
      expect_close(cast(got[0], DType::Float32), want[0], 0.05, k.name);
      for (int o = 1; o < 4; ++o) expect_close(got[size_t(o)], want[size_t(o)], 1e-4, k.name);
    }
    TensorList bwd{dy, x, scale, want[1], want[3]};
    for (const KernelDef& k : kernels_for(OpId::FusedBatchNormGrad)) {
      if (!supports(k, OpId::FusedBatchNormGrad, bwd, a)) continue;
      TensorList got = run_kernel(k, OpId::FusedBatchNormGrad, bwd, a);
      expect_close(cast(got[0], DType::Float32), want_g[0], 0.05, k.name);
      expect_close(got[1], want_g[1], 1e-3, k.name);
      expect_close(got[2], want_g[2], 1e-3, k.name);
    }
  }
}

TEST(FusedBatchNorm, ErrorMessages) {
  Tensor x = zeros({2, 4});
  expect_error([&] { fused_batch_norm(x, ones({3}), zeros({4}), Tensor(), Tensor()); },
               "[fused_batch_norm] scale has shape [3], expected [4] (the channels of x [2,4])");
  expect_error([&] { fused_batch_norm(x, ones({4}), zeros({4, 1}), Tensor(), Tensor()); },
               "[fused_batch_norm] offset has shape [4,1], expected [4] (the channels of x [2,4])");
  expect_error([&] { fused_batch_norm(x, ones({4}, DType::Float64), zeros({4}), Tensor(), Tensor()); },
               "[fused_batch_norm] scale must be float32 for float32 x, got float64");
  expect_error([&] { fused_batch_norm(zeros({2, 4}, DType::BFloat16), ones({4}, DType::BFloat16), zeros({4}),
                                      Tensor(), Tensor()); },
               "[fused_batch_norm] scale must be float32 for bfloat16 x, got bfloat16");
  expect_error([&] { fused_batch_norm(x, ones({4}), zeros({4}), Tensor(), Tensor(), 1e-3, false); },
               "[fused_batch_norm] inference needs mean and variance");
  expect_error([&] { fused_batch_norm(x, ones({4}), zeros({4}), zeros({4}), ones({5}), 1e-3, false); },
               "[fused_batch_norm] variance has shape [5], expected [4] (the channels of x [2,4])");
  expect_error([&] { fused_batch_norm(zeros({4}, DType::Int32), ones({4}), zeros({4}), Tensor(), Tensor()); },
               "[fused_batch_norm] expects a floating dtype for x, got int32");
}

// layer_normalization over the last axis runs the fused primitive and agrees with the composite.
TEST(LayerNorm, RoutingMatchesComposite) {
  set_random_seed(6);
  for (DType dt : {DType::Float32, DType::Float64}) {
    Tensor x = random_normal({3, 4, 10}, 1, 2, dt), gamma = random_normal({10}, 1, 0.5, dt);
    Tensor beta = random_normal({10}, 0, 1, dt), w = random_normal({3, 4, 10}, 0, 1, dt);
    const double tol = dt == DType::Float32 ? 1e-5 : 1e-12;
    GradientTape fused(true), comp(true);
    for (GradientTape* t : {&fused, &comp})
      for (const Tensor& s : {x, gamma, beta}) t->watch(s);
    Tensor yf;
    {
      GradientTape count;
      count.watch(x);
      yf = layer_normalization(x, gamma, beta, {-1}, 1e-5);
      EXPECT_EQ(count.num_recorded(), 1u) << "not routed to the layer_norm primitive";
    }
    auto [mean, var] = moments(x, {2}, true);
    Tensor yc = (x - mean) * rsqrt(var + 1e-5) * gamma + beta;
    expect_close(yf, yc, tol * 10);
    auto gf = fused.gradient({reduce_sum(yf * w)}, {x, gamma, beta});
    auto gc = comp.gradient({reduce_sum(yc * w)}, {x, gamma, beta});
    for (size_t i = 0; i < 3; ++i) expect_close(gf[i], gc[i], tol * 100, "gradient " + std::to_string(i));
  }
}

TEST(LayerNorm, RoutingAcceptsBroadcastOrMissingParameters) {
  set_random_seed(7);
  Tensor x = random_normal({2, 3, 4}), gamma = random_normal({1, 1, 4}), beta = random_normal({4});
  auto [mean, var] = moments(x, {2}, true);
  Tensor norm = (x - mean) * rsqrt(var + 1e-3);
  expect_close(layer_normalization(x, gamma, beta), norm * gamma + beta, 1e-5);
  expect_close(layer_normalization(x, Tensor(), Tensor()), norm, 1e-5);
  // Other axes keep the composite.
  auto [m2, v2] = moments(x, {1, 2}, true);
  expect_close(layer_normalization(x, Tensor(), Tensor(), {1, 2}), (x - m2) * rsqrt(v2 + 1e-3), 1e-5);
}

TEST(LayerNorm, KnownValuesAndSavedStatistics) {
  TensorList o = dispatch(OpId::LayerNorm, {constant({1.f, 3.f, 2.f, 6.f}, {2, 2}), ones({2}), zeros({2})},
                          {{"epsilon", 0.0}});
  expect_values(o[0], {-1, 1, -1, 1});
  expect_values(o[1], {2, 4});
  expect_values(o[2], {1, 0.5});  // inverse standard deviations
}

TEST(LayerNorm, ErrorMessages) {
  Tensor x = zeros({2, 4});
  auto ln = [&](const Tensor& g, const Tensor& b) { return dispatch(OpId::LayerNorm, {x, g, b}); };
  expect_error([&] { ln(ones({3}), zeros({4})); },
               "[layer_norm] gamma has shape [3], expected [4] (the channels of x [2,4])");
  expect_error([&] { ln(ones({4}), zeros({4}, DType::Float64)); },
               "[layer_norm] beta must be float32 for float32 x, got float64");
  expect_error([&] { dispatch(OpId::LayerNormGrad, {x, x, ones({4}), zeros({2}), ones({2}, DType::Float64)}); },
               "[layer_norm_grad] inv_std must be float32, got float64");
}

// Shapes with the same rows and channels but another batch split get their own primitive.
TEST(FusedNorm, SameSizeOtherBatchSplit) {
  set_random_seed(8);
  for (Shape shape : {Shape{2, 6, 3}, Shape{4, 3, 3}, Shape{12, 3}}) {
    Tensor x = random_normal(shape, 0, 1, DType::Float64);
    auto want = fused_batch_norm(x, ones({3}, DType::Float64), zeros({3}, DType::Float64), Tensor(), Tensor());
    auto got = fused_batch_norm(cast(x, DType::Float32), ones({3}), zeros({3}), Tensor(), Tensor());
    expect_close(cast(got.y, DType::Float64), want.y, 1e-5);
  }
}

// float32 calls run on oneDNN (a refused primitive would silently fall back to the reference).
TEST(FusedNorm, Float32RunsOnOneDnn) {
  Tensor x = zeros({4, 3}), c = ones({3}), r = ones({4}), e(Shape{0}, DType::Float32);
  Attrs bn{{"is_training", true}}, bn_inf{{"is_training", false}}, ln;
  auto kernel = [](OpId op, const TensorList& xs, const Attrs& a) {
    OpCall call{&op_def(op), xs, &a, {}};
    return std::string(select_kernel(call).name);
  };
  EXPECT_EQ(kernel(OpId::FusedBatchNorm, {x, c, c, e, e}, bn), "cpu:onednn");
  EXPECT_EQ(kernel(OpId::FusedBatchNorm, {x, c, c, c, c}, bn_inf), "cpu:onednn");
  EXPECT_EQ(kernel(OpId::FusedBatchNormGrad, {x, x, c, c, c}, bn), "cpu:onednn");
  EXPECT_EQ(kernel(OpId::FusedBatchNormGrad, {x, x, c, c, c}, bn_inf), "cpu:onednn");
  EXPECT_EQ(kernel(OpId::LayerNorm, {x, c, c}, ln), "cpu:onednn");
  EXPECT_EQ(kernel(OpId::LayerNormGrad, {x, x, c, r, r}, ln), "cpu:onednn");
}

}  // namespace
}  // namespace deepflow
