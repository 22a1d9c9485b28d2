// SPDX-License-Identifier: Apache-2.0
// keras::layers merge layers: Add, Subtract, Multiply, Average, Maximum, Minimum and
// Concatenate on eager, traced and Keras tensors, broadcasting of size-1 dims,
// gradients to every input, configs and the shape and dtype errors.
#include "deepflow/keras/layers/merge.h"

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

Tensor a() { return constant({1, -2, 3, 4}, {2, 2}); }
Tensor b() { return constant({5, 6, -7, 8}, {2, 2}); }
Tensor c() { return constant({0, 1, 2, -3}, {2, 2}); }

TEST(KerasMerge, ElementwiseValues) {
  expect_near(layers::Add()({a(), b(), c()})[0], constant({6, 5, -2, 9}, {2, 2}), 0);
  expect_near(layers::Subtract()({a(), b()})[0], constant({-4, -8, 10, -4}, {2, 2}), 0);
  expect_near(layers::Multiply()({a(), b(), c()})[0], constant({0, -12, -42, -96}, {2, 2}), 0);
  expect_near(layers::Average()({a(), b(), c()})[0], constant({2, 5.f / 3, -2.f / 3, 3}, {2, 2}), 1e-6);
  expect_near(layers::Maximum()({a(), b(), c()})[0], constant({5, 6, 3, 8}, {2, 2}), 0);
  expect_near(layers::Minimum()({a(), b(), c()})[0], constant({0, -2, -7, -3}, {2, 2}), 0);
  // Size-1 dims broadcast.
  expect_near(layers::Add()({a(), constant({10, 20}, {1, 2})})[0], constant({11, 18, 13, 24}, {2, 2}), 0);
  // Integer inputs.
  Tensor i = constant(std::vector<int32_t>{1, 2}), j = constant(std::vector<int32_t>{3, 4});
  EXPECT_EQ(layers::Multiply()({i, j})[0].to_vector<int32_t>(), (std::vector<int32_t>{3, 8}));
}

TEST(KerasMerge, ConcatenateAlongAnyAxis) {
  Tensor x = constant({1, 2, 3, 4}, {2, 2}), y = constant({5, 6}, {2, 1});
  expect_near(layers::Concatenate()({x, y})[0], constant({1, 2, 5, 3, 4, 6}, {2, 3}), 0);
  expect_near(layers::Concatenate(0)({x, constant({7, 8}, {1, 2})})[0], constant({1, 2, 3, 4, 7, 8}, {3, 2}), 0);
  Tensor k = layers::Concatenate(1)({Input({3, 4}), Input({5, 4}), Input({1, 4})})[0];
  EXPECT_EQ(k.shape(), Shape({-1, 9, 4}));
  EXPECT_EQ(layers::Concatenate()({Input({3, 4}), Input({3, 2})})[0].shape(), Shape({-1, 3, 6}));
  auto cat = layers::Concatenate(-2, "cat");
  EXPECT_EQ(cat->get_config()["axis"], -2);
  EXPECT_EQ(cat->get_config()["name"], "cat");
  EXPECT_EQ(cat->class_name(), "Concatenate");
}

TEST(KerasMerge, KerasTensorsTracesAndGradients) {
  EXPECT_EQ(layers::Add()({Input({4}), Input({4})})[0].shape(), Shape({-1, 4}));
  EXPECT_EQ(layers::Multiply()({Input({3, 4}), Input({1, 4})})[0].shape(), Shape({-1, 3, 4}));

  auto avg = layers::Average();
  auto cat = layers::Concatenate();
  FunctionOptions o;
  o.input_signature = Signature{{DType::Float32, Shape{-1, 2}}, {DType::Float32, Shape{-1, 2}}};
  Function f = function([&](const TensorList& in) { return TensorList{avg(in)[0], cat(in)[0]}; }, o);
  TensorList out = f({a(), b()});
  expect_near(out[0], constant({3, 2, -2, 6}, {2, 2}), 1e-6);
  expect_near(out[1], constant({1, -2, 5, 6, 3, 4, -7, 8}, {2, 4}), 0);

  Tensor x = a(), y = b(), z = c();
  GradientTape tape(/*persistent=*/true);
  for (const Tensor& t : {x, y, z}) tape.watch(t);
  Tensor loss = reduce_sum(layers::Multiply()({x, y, z})[0]) + reduce_sum(layers::Maximum()({x, y})[0]);
  std::vector<Tensor> g = tape.gradient(loss, std::vector<Tensor>{x, y, z});
  expect_near(g[0], y * z + constant({0, 0, 1, 0}, {2, 2}), 0);  // x wins the max only at [1, 0]
  expect_near(g[1], x * z + constant({1, 1, 0, 1}, {2, 2}), 0);
  expect_near(g[2], x * y, 0);
  Tensor gc = tape.gradient(reduce_sum(layers::Concatenate()({x, y})[0] * arange(0, 8, 1).view({2, 4})), y);
  expect_near(gc, constant({2, 3, 6, 7}, {2, 2}), 0);
}

TEST(KerasMerge, Errors) {
  EXPECT_THAT(error_of([] { layers::Add(std::string("add_one"))(a()); }),
              HasSubstr("[add_one] Add needs a list of at least 2 inputs, got 1: [2,2]"));
  EXPECT_THAT(error_of([] { layers::Add(std::string("add_bad"))({a(), constant({1, 2, 3}, {1, 3})}); }),
              HasSubstr("[add_bad] Add needs inputs of one rank whose dims are equal or 1, got [2,2], [1,3]"));
  EXPECT_THAT(error_of([] { layers::Multiply(std::string("mul_rank"))({Input({4}), Input({2, 4})}); }),
              HasSubstr("[mul_rank] Multiply needs inputs of one rank whose dims are equal or 1, got [?,4], [?,2,4]"));
  EXPECT_THAT(error_of([] { layers::Subtract(std::string("sub3"))({a(), b(), c()}); }),
              HasSubstr("[sub3] Subtract needs exactly 2 inputs, got 3: [2,2], [2,2], [2,2]"));
  EXPECT_THAT(error_of([] { layers::Maximum(std::string("max_dt"))({a(), cast(b(), DType::Int32)}); }),
              HasSubstr("[max_dt] inputs must have the same dtype, got float32[2,2], int32[2,2]"));
  EXPECT_THAT(
      error_of([] { layers::Concatenate(-1, "cat_bad")({Input({3, 4}), Input({2, 4})}); }),
      HasSubstr("[cat_bad] Concatenate needs inputs of one rank with equal dims except on axis -1, got [?,3,4], "
                "[?,2,4]"));
  EXPECT_THAT(error_of([] { layers::Concatenate(2, "cat_axis")({a(), b()}); }),
              HasSubstr("[cat_axis] axis 2 is out of range for inputs of rank 2: [2,2], [2,2]"));
  EXPECT_THAT(error_of([] { layers::Concatenate(0, "cat_one")(TensorList{a()}); }),
              HasSubstr("[cat_one] Concatenate needs a list of at least 2 inputs, got 1: [2,2]"));
  // A later call is checked too.
  auto add = layers::Add(std::string("add_later"));
  add({a(), b()});
  EXPECT_THAT(error_of([&] { add({a(), ones({3, 2})}); }),
              HasSubstr("[add_later] Add needs inputs of one rank whose dims are equal or 1, got [2,2], [3,2]"));
  EXPECT_EQ(add->class_name(), "Add");
  EXPECT_EQ(layers::Average()->class_name(), "Average");
}

}  // namespace
}  // namespace deepflow::keras
