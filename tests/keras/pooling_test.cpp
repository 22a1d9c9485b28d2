// SPDX-License-Identifier: Apache-2.0
// keras::layers pooling: output shapes (eager and Keras tensors), hand-computed values,
// input gradients, traced calls with an unknown batch, configs and errors.
#include "deepflow/keras/layers/pooling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "deepflow/autodiff/tape.h"
#include "deepflow/function/function.h"
#include "deepflow/ops/ops.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::expect_near;
namespace L = layers;

// [1, 4, 4, 1] holding 0..15 row-major.
Tensor grid() { return reshape(arange(0, 16, 1), {1, 4, 4, 1}); }

Function traced(const std::function<Tensor(const Tensor&)>& f, const Shape& shape) {
  FunctionOptions o;
  o.input_signature = Signature{{DType::Float32, shape}};
  return function([f](const Tensor& x) { return f(x); }, o);
}

TEST(KerasPooling2D, Values) {
  expect_near(L::MaxPooling2D()(grid()), constant({5.f, 7.f, 13.f, 15.f}, {1, 2, 2, 1}), 1e-6);
  expect_near(L::AveragePooling2D()(grid()), constant({2.5f, 4.5f, 10.5f, 12.5f}, {1, 2, 2, 1}), 1e-6);
  // 3x3 windows, stride 1, same: the corner window holds 0, 1, 4, 5 only (mean over valid cells).
  Tensor avg = L::AveragePooling2D(3, {.strides = 1, .padding = "same"})(grid());
  ASSERT_EQ(avg.shape(), Shape({1, 4, 4, 1}));
  std::vector<float> v = avg.to_vector<float>();
  EXPECT_NEAR(v[0], 2.5, 1e-6);
  EXPECT_NEAR(v[5], 5.0, 1e-6);  // (0+1+2+4+5+6+8+9+10) / 9
  Tensor mx = L::MaxPooling2D({2, 3}, {.strides = {2, 1}})(grid());
  expect_near(mx, constant({6.f, 7.f, 14.f, 15.f}, {1, 2, 2, 1}), 1e-6);
}

TEST(KerasPooling2D, OutputShapes) {
  Tensor x = random_normal({2, 5, 5, 3});
  EXPECT_EQ(L::MaxPooling2D()(x).shape(), Shape({2, 2, 2, 3}));
  EXPECT_EQ(L::MaxPooling2D(2, {.padding = "same"})(x).shape(), Shape({2, 3, 3, 3}));
  EXPECT_EQ(L::AveragePooling2D(3, {.strides = 1})(x).shape(), Shape({2, 3, 3, 3}));
  EXPECT_EQ(L::AveragePooling2D({1, 5})(x).shape(), Shape({2, 5, 1, 3}));
  Tensor in = Input({28, 28, 1});
  Tensor y = L::MaxPooling2D()(in);
  EXPECT_TRUE(is_keras_tensor(y));
  EXPECT_EQ(y.shape(), Shape({-1, 14, 14, 1}));
  EXPECT_EQ(L::AveragePooling2D(3, {.strides = 2, .padding = "SAME"})(y).shape(), Shape({-1, 7, 7, 1}));
}

TEST(KerasPooling2D, GradientsAndTraced) {
  Tensor x = grid();
  {
    GradientTape tape;
    tape.watch(x);
    Tensor g = tape.gradient(reduce_sum(L::MaxPooling2D()(x)), x);
    // Only each window's maximum (bottom-right cell) gets the gradient.
    std::vector<float> want(16, 0.f);
    for (int i : {5, 7, 13, 15}) want[size_t(i)] = 1.f;
    expect_near(g, constant(want, {1, 4, 4, 1}), 1e-6);
  }
  {
    GradientTape tape;
    tape.watch(x);
    Tensor g = tape.gradient(reduce_sum(L::AveragePooling2D()(x)), x);
    expect_near(g, fill({1, 4, 4, 1}, 0.25), 1e-6);
  }
  Tensor b = random_normal({3, 6, 6, 2});
  auto mp = L::MaxPooling2D(3, {.strides = 2, .padding = "same"});
  auto ap = L::AveragePooling2D(2);
  Function f = traced([mp, ap](const Tensor& t) { return ap(mp(t)); }, {-1, 6, 6, 2});
  Tensor eager = ap(mp(b));
  EXPECT_EQ(eager.shape(), Shape({3, 1, 1, 2}));
  expect_near(f(b)[0], eager, 1e-6);
  expect_near(f(slice(b, {0, 0, 0, 0}, {1, -1, -1, -1}))[0], slice(eager, {0, 0, 0, 0}, {1, -1, -1, -1}), 1e-6);
  EXPECT_EQ(f.trace_count(), 1);
}

TEST(KerasPooling1D, ValuesShapesTraced) {
  Tensor x = constant({1.f, 3.f, 2.f, 5.f, 4.f}, {1, 5, 1});
  expect_near(L::MaxPooling1D()(x), constant({3.f, 5.f}, {1, 2, 1}), 1e-6);
  expect_near(L::MaxPooling1D(2, {.padding = "same"})(x), constant({3.f, 5.f, 4.f}, {1, 3, 1}), 1e-6);
  expect_near(L::MaxPooling1D(2, {.strides = 1})(x), constant({3.f, 3.f, 5.f, 5.f}, {1, 4, 1}), 1e-6);
  expect_near(L::AveragePooling1D()(x), constant({2.f, 3.5f}, {1, 2, 1}), 1e-6);
  expect_near(L::AveragePooling1D(3, {.strides = 2, .padding = "same"})(x), constant({2.f, 10.f / 3, 4.5f}, {1, 3, 1}),
              1e-6);
  EXPECT_EQ(L::MaxPooling1D(4)(Input({100, 8})).shape(), Shape({-1, 25, 8}));
  auto p = L::AveragePooling1D(2);
  Tensor b = random_normal({4, 6, 3});
  Function f = traced([p](const Tensor& t) { return p(t); }, {-1, 6, 3});
  expect_near(f(b)[0], p(b), 1e-6);
  GradientTape tape;
  tape.watch(b);
  Tensor g = tape.gradient(reduce_sum(p(b)), b);
  expect_near(g, fill({4, 6, 3}, 0.5), 1e-6);
}

TEST(KerasGlobalPooling, ValuesShapesTraced) {
  // Channel c of sample n holds n * 10 + c + {0, 1, 2, 3} over the 2x2 grid.
  Tensor base = reshape(arange(0, 4, 1), {1, 2, 2, 1});
  Tensor x = base + reshape(constant({0.f, 1.f, 2.f, 10.f, 11.f, 12.f}, {2, 1, 1, 3}), {2, 1, 1, 3});
  expect_near(L::GlobalAveragePooling2D()(x), constant({1.5f, 2.5f, 3.5f, 11.5f, 12.5f, 13.5f}, {2, 3}), 1e-6);
  expect_near(L::GlobalMaxPooling2D()(x), constant({3.f, 4.f, 5.f, 13.f, 14.f, 15.f}, {2, 3}), 1e-6);
  EXPECT_EQ(L::GlobalAveragePooling2D({.keepdims = true})(x).shape(), Shape({2, 1, 1, 3}));
  EXPECT_EQ(L::GlobalMaxPooling2D({.keepdims = true})(x).shape(), Shape({2, 1, 1, 3}));
  Tensor s = constant({1.f, 4.f, 2.f, 8.f, 3.f, 0.f}, {1, 3, 2});
  expect_near(L::GlobalAveragePooling1D()(s), constant({2.f, 4.f}, {1, 2}), 1e-6);
  expect_near(L::GlobalMaxPooling1D()(s), constant({3.f, 8.f}, {1, 2}), 1e-6);
  EXPECT_EQ(L::GlobalAveragePooling1D({.keepdims = true})(s).shape(), Shape({1, 1, 2}));
  EXPECT_EQ(L::GlobalAveragePooling2D()(Input({7, 7, 64})).shape(), Shape({-1, 64}));
  EXPECT_EQ(L::GlobalMaxPooling1D()(Input({10, 5})).shape(), Shape({-1, 5}));
  auto gap = L::GlobalAveragePooling2D();
  Function f = traced([gap](const Tensor& t) { return gap(t); }, {-1, 2, 2, 3});
  expect_near(f(x)[0], gap(x), 1e-6);
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(reduce_sum(gap(x)), x);
  expect_near(g, fill({2, 2, 2, 3}, 0.25), 1e-6);
}

TEST(KerasPooling, Configs) {
  Config m = L::MaxPooling2D()->get_config();
  EXPECT_EQ(m["pool_size"], Config({2, 2}));
  EXPECT_EQ(m["strides"], Config({2, 2}));  // strides default to pool_size
  EXPECT_EQ(m["padding"], "valid");
  EXPECT_EQ(m["data_format"], "channels_last");
  EXPECT_EQ(m["trainable"], true);
  Config a = L::AveragePooling2D({3, 2}, {.strides = 1, .padding = "Same", .name = "avg"})->get_config();
  EXPECT_EQ(a["name"], "avg");
  EXPECT_EQ(a["pool_size"], Config({3, 2}));
  EXPECT_EQ(a["strides"], Config({1, 1}));
  EXPECT_EQ(a["padding"], "same");
  Config p1 = L::MaxPooling1D(3)->get_config();
  EXPECT_EQ(p1["pool_size"], Config({3}));
  EXPECT_EQ(p1["strides"], Config({3}));
  Config g = L::GlobalAveragePooling2D({.keepdims = true})->get_config();
  EXPECT_EQ(g["keepdims"], true);
  EXPECT_EQ(g["data_format"], "channels_last");
  EXPECT_EQ(L::GlobalMaxPooling1D()->get_config()["keepdims"], false);
  EXPECT_EQ(L::MaxPooling2D()->class_name(), "MaxPooling2D");
  EXPECT_EQ(L::AveragePooling1D()->class_name(), "AveragePooling1D");
  EXPECT_EQ(L::GlobalAveragePooling2D()->class_name(), "GlobalAveragePooling2D");
  EXPECT_EQ(L::GlobalMaxPooling2D()->class_name(), "GlobalMaxPooling2D");
  auto mp = L::MaxPooling2D();
  mp(random_normal({1, 4, 4, 1}));
  EXPECT_EQ(mp->weights().size(), 0u);
}

TEST(KerasPooling, Errors) {
  EXPECT_THAT(error_of([] { L::MaxPooling2D({2, 2, 2}); }),
              HasSubstr("[MaxPooling2D] pool_size must be 1 or 2 positive ints, got [2,2,2]"));
  EXPECT_THAT(error_of([] { L::AveragePooling2D(0); }),
              HasSubstr("[AveragePooling2D] pool_size must be 1 or 2 positive ints, got [0]"));
  EXPECT_THAT(error_of([] { L::MaxPooling1D(2, {.strides = -1}); }),
              HasSubstr("[MaxPooling1D] strides must be 1 or 1 positive ints, got [-1]"));
  EXPECT_THAT(error_of([] { L::MaxPooling2D(2, {.padding = "causal"}); }),
              HasSubstr("[MaxPooling2D] padding must be \"valid\" or \"same\", got \"causal\""));
  EXPECT_THAT(error_of([] { L::MaxPooling2D(2, {.name = "mp"})(Input({28, 28})); }),
              HasSubstr("[mp] expects inputs of rank 4 (batch, height, width, channels), got [?,28,28]"));
  EXPECT_THAT(error_of([] { L::AveragePooling1D(2, {.name = "ap"})(Input({4, 4, 1})); }),
              HasSubstr("[ap] expects inputs of rank 3 (batch, steps, channels), got [?,4,4,1]"));
  EXPECT_THAT(error_of([] { L::GlobalAveragePooling2D({.name = "gap"})(random_normal({2, 3})); }),
              HasSubstr("[gap] expects inputs of rank 4 (batch, height, width, channels), got [2,3]"));
  EXPECT_THAT(error_of([] { L::MaxPooling2D(6, {.strides = 1})(random_normal({1, 4, 4, 1})); }),
              HasSubstr("does not fit input size 4"));
}

}  // namespace
}  // namespace deepflow::keras
