// SPDX-License-Identifier: Apache-2.0
// Known values and error messages of the unary family, cast and the activations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "deepflow/deepflow.h"
#include "test_util.h"

namespace deepflow {
namespace {

using testing::error_of;

using ::testing::HasSubstr;

std::vector<float> vec(const Tensor& t) { return t.to_vector<float>(); }

TEST(Unary, RoundIsHalfToEven) {
  Tensor x = constant({2.5f, -0.5f, 0.5f, 1.5f, -1.5f, -2.5f, 3.5f, 2.4f, -2.6f});
  std::vector<float> y = vec(round(x));
  EXPECT_EQ(y, (std::vector<float>{2, -0.f, 0, 2, -2, -2, 4, 2, -3}));
  EXPECT_TRUE(std::signbit(y[1])) << "round(-0.5) is -0";
  // The same in float64 (reference kernel) and bfloat16 (optimized kernel).
  EXPECT_EQ(cast(round(cast(x, DType::Float64)), DType::Float32).to_vector<float>(), y);
  EXPECT_EQ(cast(round(cast(x, DType::BFloat16)), DType::Float32).to_vector<float>(), y);
}

TEST(Unary, FloorCeilSign) {
  Tensor x = constant({-1.5f, -0.f, 0.f, 2.f, 2.7f});
  EXPECT_EQ(vec(floor(x)), (std::vector<float>{-2, 0, 0, 2, 2}));
  EXPECT_EQ(vec(ceil(x)), (std::vector<float>{-1, 0, 0, 2, 3}));
  EXPECT_EQ(vec(sign(x)), (std::vector<float>{-1, 0, 0, 1, 1}));
  EXPECT_EQ(sign(constant(std::vector<int32_t>{-7, 0, 3})).to_vector<int32_t>(), (std::vector<int32_t>{-1, 0, 1}));
  EXPECT_TRUE(std::isnan(sign(constant({NAN})).item<float>()));
}

TEST(Unary, IntegerOps) {
  Tensor x = constant(std::vector<int32_t>{-3, 0, 5, std::numeric_limits<int32_t>::min()});
  EXPECT_EQ(neg(x).to_vector<int32_t>(), (std::vector<int32_t>{3, 0, -5, std::numeric_limits<int32_t>::min()}));
  EXPECT_EQ(abs(x).to_vector<int32_t>(), (std::vector<int32_t>{3, 0, 5, std::numeric_limits<int32_t>::min()}));
  EXPECT_EQ(square(constant(std::vector<int64_t>{-3, 4})).to_vector<int64_t>(), (std::vector<int64_t>{9, 16}));
  EXPECT_EQ(relu(constant(std::vector<int8_t>{-3, 4})).to_vector<int>(), (std::vector<int>{0, 4}));
  EXPECT_EQ(round(constant(std::vector<int64_t>{-3, 4})).to_vector<int64_t>(), (std::vector<int64_t>{-3, 4}));
  EXPECT_EQ(neg(x).dtype(), DType::Int32);
}

TEST(Unary, Transcendental) {
  Tensor x = constant({0.f, 1.f, -2.f});
  std::vector<float> e = vec(exp(x));
  EXPECT_FLOAT_EQ(e[1], 2.7182817f);
  EXPECT_FLOAT_EQ(vec(log(constant({1.f, 2.7182817f})))[1], 1.f);
  EXPECT_FLOAT_EQ(vec(log1p(constant({1e-10f})))[0], 1e-10f);
  EXPECT_FLOAT_EQ(vec(expm1(constant({1e-10f})))[0], 1e-10f);
  EXPECT_FLOAT_EQ(vec(rsqrt(constant({4.f})))[0], 0.5f);
  EXPECT_FLOAT_EQ(vec(erf(constant({1.f})))[0], 0.8427008f);
  EXPECT_FLOAT_EQ(vec(tanh(constant({0.5f})))[0], 0.46211716f);
  EXPECT_EQ(vec(tanh(constant({-100.f, 100.f}))), (std::vector<float>{-1, 1}));
  // sigmoid saturates without NaN at both ends.
  EXPECT_EQ(vec(sigmoid(constant({-1000.f, 0.f, 1000.f}))), (std::vector<float>{0, 0.5f, 1}));
  EXPECT_TRUE(std::isnan(vec(log(constant({-1.f})))[0]));
  EXPECT_EQ(vec(log(constant({0.f})))[0], -INFINITY);
}

TEST(Unary, ExpAndSigmoidAtTheEdges) {
  // One block mixing ordinary values with ones far outside expf's fast range
  // (masked logits), in float32 (optimized kernel) and float64 (reference).
  const float inf = INFINITY;
  Tensor x = constant({1.f, -1e9f, -inf, inf, 89.f, -90.f, -104.5f, NAN, 0.f, -3.f});
  for (DType dt : {DType::Float32, DType::Float64}) {
    std::vector<double> e = cast(exp(cast(x, dt)), DType::Float64).to_vector<double>();
    EXPECT_NEAR(e[0], std::exp(1.0), 1e-6);
    EXPECT_EQ(e[1], 0);
    EXPECT_EQ(e[2], 0);
    EXPECT_EQ(e[3], inf);
    if (dt == DType::Float32) {
      EXPECT_EQ(e[4], inf);
      EXPECT_EQ(e[6], 0);
    }
    EXPECT_NEAR(e[5], std::exp(-90.0), std::exp(-90.0) * 1e-2);  // float32: subnormal
    EXPECT_TRUE(std::isnan(e[7]));
    EXPECT_EQ(e[8], 1);
    EXPECT_NEAR(e[9], std::exp(-3.0), 1e-6 * std::exp(-3.0));
    std::vector<double> s = cast(sigmoid(cast(x, dt)), DType::Float64).to_vector<double>();
    EXPECT_NEAR(s[0], 1 / (1 + std::exp(-1.0)), 1e-7);
    EXPECT_EQ(s[1], 0);
    EXPECT_EQ(s[2], 0);
    EXPECT_EQ(s[3], 1);
    EXPECT_EQ(s[4], 1);
    EXPECT_NEAR(s[5], std::exp(-90.0), std::exp(-90.0) * 1e-2);
    EXPECT_TRUE(std::isnan(s[7]));
    EXPECT_EQ(s[8], 0.5);
    EXPECT_NEAR(s[9], 1 / (1 + std::exp(3.0)), 1e-6 / (1 + std::exp(3.0)));
  }
}

TEST(Unary, SecondOrderGradients) {
  Tensor x = constant(std::vector<double>{-1.5, 0.3, 2}, {3}, DType::Float64);
  auto second = [&](Tensor (*f)(const Tensor&)) {
    GradientTape outer;
    outer.watch(x);
    Tensor g;
    {
      GradientTape inner;
      inner.watch(x);
      g = inner.gradient(reduce_sum(f(x)), x);
    }
    return outer.gradient(reduce_sum(g), x).to_vector<double>();
  };
  std::vector<double> xs = x.to_vector<double>(), t = second(tanh), s = second(sigmoid), e = second(exp);
  for (size_t i = 0; i < xs.size(); ++i) {
    double th = std::tanh(xs[i]), sg = 1 / (1 + std::exp(-xs[i]));
    EXPECT_NEAR(t[i], -2 * th * (1 - th * th), 1e-12);
    EXPECT_NEAR(s[i], sg * (1 - sg) * (1 - 2 * sg), 1e-12);
    EXPECT_NEAR(e[i], std::exp(xs[i]), 1e-12);
  }
}

TEST(Unary, ReluPropagatesNaN) {
  std::vector<float> y = vec(relu(constant({NAN, -1.f, 2.f})));
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 0.f);
  EXPECT_EQ(y[2], 2.f);
}

TEST(Unary, LogicalNot) {
  Tensor x = constant(std::vector<double>{1, 0, 1}, {3}, DType::Bool);
  EXPECT_EQ(logical_not(x).to_vector<int>(), (std::vector<int>{0, 1, 0}));
}

TEST(Unary, DtypeErrors) {
  Tensor i = constant(std::vector<int32_t>{1, 2});
  std::string msg = error_of([&] { log(i); });
  EXPECT_THAT(msg, HasSubstr("[log]"));
  EXPECT_THAT(msg, HasSubstr("int32"));
  EXPECT_THAT(error_of([&] { exp(i); }), HasSubstr("[exp] expects a floating dtype for x, got int32"));
  EXPECT_THAT(error_of([&] { floor(i); }), HasSubstr("[floor]"));
  EXPECT_THAT(error_of([&] { logical_not(i); }), HasSubstr("[logical_not] expects bool for x, got int32"));
  EXPECT_THAT(error_of([&] { neg(constant(std::vector<uint8_t>{1})); }), HasSubstr("[neg]"));
}

TEST(Activation, KnownValues) {
  EXPECT_NEAR(vec(gelu(constant({1.f})))[0], 0.8413447f, 1e-6);
  EXPECT_NEAR(vec(gelu(constant({1.f}), true))[0], 0.8411920f, 1e-6);
  EXPECT_NEAR(vec(gelu(constant({-3.f})))[0], -0.0040496f, 1e-6);
  EXPECT_EQ(vec(relu6(constant({-1.f, 0.f, 3.f, 6.f, 7.f}))), (std::vector<float>{0, 0, 3, 6, 6}));
  EXPECT_EQ(vec(leaky_relu(constant({-1.f, 2.f}))), (std::vector<float>{-0.2f, 2.f}));
  EXPECT_EQ(vec(leaky_relu(constant({-1.f}), 0.5))[0], -0.5f);
  EXPECT_NEAR(vec(elu(constant({-1.f})))[0], std::expm1(-1.0), 1e-6);
  EXPECT_EQ(vec(elu(constant({2.f})))[0], 2.f);
}

TEST(Activation, SeluConstants) {
  const double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  Tensor x = constant(std::vector<double>{-1, 0, 1, -1000}, {4}, DType::Float64);
  std::vector<double> y = selu(x).to_vector<double>();
  EXPECT_DOUBLE_EQ(y[0], scale * alpha * std::expm1(-1.0));
  EXPECT_DOUBLE_EQ(y[1], 0);
  EXPECT_DOUBLE_EQ(y[2], scale);
  EXPECT_DOUBLE_EQ(y[3], -scale * alpha);
}

TEST(Activation, SoftplusIsStable) {
  Tensor x = constant(std::vector<double>{-1000, -30, 0, 30, 1000}, {5}, DType::Float64);
  std::vector<double> y = softplus(x).to_vector<double>();
  EXPECT_EQ(y[0], 0);
  EXPECT_DOUBLE_EQ(y[1], std::log1p(std::exp(-30.0)));  // no cancellation to 0
  EXPECT_DOUBLE_EQ(y[2], std::log(2.0));
  EXPECT_DOUBLE_EQ(y[3], 30 + std::log1p(std::exp(-30.0)));
  EXPECT_EQ(y[4], 1000);
}

TEST(Cast, FloatToIntTruncates) {
  Tensor x = constant({2.7f, -2.7f, 0.5f, -0.5f, 1e10f, -1e10f, NAN});
  EXPECT_EQ(cast(x, DType::Int32).to_vector<int32_t>(),
            (std::vector<int32_t>{2, -2, 0, 0, std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min(), 0}));
  EXPECT_EQ(cast(constant({300.f, -1.f, 255.9f}), DType::UInt8).to_vector<int>(), (std::vector<int>{255, 0, 255}));
  EXPECT_EQ(cast(constant({-3.9f}), DType::Int64).item<int64_t>(), -3);
}

TEST(Cast, SixteenBitRounding) {
  // 1 + 2^-8 is halfway between two bfloat16 values: ties go to the even one (1).
  // 1 + 3 * 2^-8 ties up to 1 + 2^-6... as float32 bits: nearest even.
  Tensor x = constant({1.00390625f, 1.01171875f, 1.0f + 1.0f / 1024, 65520.f, 1e-8f, 3.14159265f});
  std::vector<float> bf = cast(cast(x, DType::BFloat16), DType::Float32).to_vector<float>();
  EXPECT_EQ(bf[0], 1.0f);
  EXPECT_EQ(bf[1], 1.015625f);
  EXPECT_EQ(bf[5], 3.140625f);
  std::vector<float> h = cast(cast(x, DType::Float16), DType::Float32).to_vector<float>();
  EXPECT_EQ(h[0], 1.00390625f);  // exact in float16 (10 bits of mantissa)
  EXPECT_EQ(h[2], 1.0f + 1.0f / 1024);
  EXPECT_EQ(h[3], INFINITY);      // 65520 rounds past the largest half (65504)
  EXPECT_EQ(h[4], 0.f);           // below half the smallest subnormal
  EXPECT_EQ(h[5], 3.140625f);
  // int -> 16-bit float, and bool both ways.
  EXPECT_EQ(cast(constant(std::vector<int32_t>{257}), DType::BFloat16).to_vector<float>()[0], 256.f);
  Tensor b = cast(constant({0.f, -0.f, 0.1f, NAN}), DType::Bool);
  EXPECT_EQ(b.to_vector<int>(), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(cast(b, DType::Float16).to_vector<float>(), (std::vector<float>{0, 0, 1, 1}));
}

TEST(Cast, AllPairsRoundTrip) {
  const DType all[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int8,
                       DType::UInt8,   DType::Int32,   DType::Int64};
  Tensor x = constant({0.f, 1.f, 7.f, 100.f});
  for (DType a : all)
    for (DType b : all) {
      Tensor y = cast(cast(cast(x, a), b), DType::Float32);
      EXPECT_EQ(y.to_vector<float>(), vec(x)) << dtype_name(a) << " -> " << dtype_name(b);
    }
}

TEST(Cast, Gradient) {
  Tensor x = constant(std::vector<double>{1, 2}, {2}, DType::Float64);
  GradientTape tape;
  tape.watch(x);
  Tensor y = reduce_sum(cast(cast(x, DType::Float32), DType::Float64) * 3.0);
  Tensor g = tape.gradient(y, x);
  EXPECT_EQ(g.dtype(), DType::Float64);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{3, 3}));
}

TEST(Cast, NoGradientThroughInt) {
  Tensor x = constant(std::vector<double>{1.5, 2.5}, {2}, DType::Float64);
  GradientTape tape;
  tape.watch(x);
  Tensor y = reduce_sum(cast(cast(x, DType::Int32), DType::Float64));
  Tensor g = tape.gradient(y, x, UnconnectedGradients::Zero);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{0, 0}));
}

TEST(Identity, CopiesAndPassesGradient) {
  Tensor x = constant({1.f, 2.f});
  Tensor y = identity(x);
  EXPECT_EQ(vec(y), vec(x));
  EXPECT_NE(y.id(), x.id());
  GradientTape tape;
  tape.watch(x);
  Tensor z = reduce_sum(identity(x) * 2.0 + stop_gradient(x) * 5.0);
  EXPECT_EQ(vec(tape.gradient(z, x)), (std::vector<float>{2, 2}));
}

}  // namespace
}  // namespace deepflow
