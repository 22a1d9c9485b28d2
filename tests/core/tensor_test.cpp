// SPDX-License-Identifier: Apache-2.0
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "deepflow/deepflow.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;

TEST(DType, NamesAndSizes) {
  EXPECT_STREQ(dtype_name(DType::BFloat16), "bfloat16");
  EXPECT_EQ(dtype_size(DType::Float16), 2u);
  EXPECT_EQ(dtype_size(DType::Int64), 8u);
  EXPECT_EQ(dtype_from_name("f32"), DType::Float32);
  EXPECT_EQ(dtype_from_name("int8"), DType::Int8);
  EXPECT_THROW(dtype_from_name("float128"), Error);
  EXPECT_TRUE(is_floating(DType::BFloat16));
  EXPECT_FALSE(is_floating(DType::Int32));
  EXPECT_TRUE(is_integer(DType::UInt8));
  EXPECT_FALSE(is_integer(DType::Bool));
}

TEST(Half, RoundTripsAndRounds) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.96e-08f})
    EXPECT_EQ(float(Half(f)), f == 5.96e-08f ? 5.9604644775390625e-08f : f) << f;
  EXPECT_TRUE(std::isinf(float(Half(70000.0f))));
  EXPECT_TRUE(std::isnan(float(Half(NAN))));
  EXPECT_EQ(float(Half(1.0f + 1.0f / 4096)), 1.0f);  // rounds to even
  EXPECT_EQ(Half(-0.0f).bits, 0x8000);
}

TEST(BFloat16, RoundTripsAndRounds) {
  EXPECT_EQ(float(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(float(BFloat16(3.140625f)), 3.140625f);
  EXPECT_EQ(float(BFloat16(1.00390625f)), 1.0f);  // halfway, rounds to even
  EXPECT_EQ(float(BFloat16(1.01171875f)), 1.015625f);
  EXPECT_TRUE(std::isnan(float(BFloat16(NAN))));
}

TEST(Shape, Basics) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.num_elements(), 24);
  EXPECT_EQ(s.dim(-1), 4);
  EXPECT_EQ(s.to_string(), "[2,3,4]");
  EXPECT_EQ(Shape({2, -1}).to_string(), "[2,?]");
  EXPECT_EQ(Shape({2, -1}).num_elements(), -1);
  EXPECT_TRUE(Shape({2, -1}).compatible_with({2, 5}));
  EXPECT_FALSE(Shape({2, -1}).compatible_with({3, 5}));
  EXPECT_EQ(Shape{}.num_elements(), 1);
  EXPECT_THAT([] { Shape{2}.dim(3); }, ::testing::Throws<Error>());
}

// Found by the IDX fuzz target: huge dims next to a 0 must count 0 elements, not overflow.
TEST(Shape, ZeroDimWinsOverHugeDims) {
  EXPECT_EQ((Shape{16779521, 12320768, 66048, 0, 7}).num_elements(), 0);
  EXPECT_EQ((Shape{16779521, -1, 0}).num_elements(), -1);
}

TEST(Shape, Broadcast) {
  EXPECT_EQ(broadcast_shapes("add", {2, 1, 3}, {4, 1}), Shape({2, 4, 3}));
  EXPECT_EQ(broadcast_shapes("add", {}, {5}), Shape({5}));
  EXPECT_EQ(broadcast_shapes("add", {-1, 3}, {1, 3}), Shape({-1, 3}));
  EXPECT_EQ(broadcast_shapes("add", {-1, 3}, {4, 3}), Shape({4, 3}));
  try {
    broadcast_shapes("mul", {2, 3}, {4});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[mul] shapes [2,3] and [4] are not broadcastable");
  }
}

TEST(Tensor, StorageIsAligned) {
  for (int n : {1, 3, 17, 1000, 100000}) {
    Tensor t = zeros({n});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kAlignment, 0u);
  }
}

TEST(Tensor, Creation) {
  EXPECT_EQ(zeros({2, 3}).to_vector<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(ones({2}, DType::Int32).to_vector<int32_t>(), (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(fill({3}, 2.5).to_vector<double>(), (std::vector<double>{2.5, 2.5, 2.5}));
  EXPECT_EQ(arange(0, 5, 2).to_vector<float>(), (std::vector<float>{0, 2, 4}));
  EXPECT_EQ(arange(5, 0, -2, DType::Int64).to_vector<int64_t>(), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(linspace(0, 1, 5).to_vector<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1}));
  EXPECT_EQ(eye(2, 3).to_vector<float>(), (std::vector<float>{1, 0, 0, 0, 1, 0}));
  Tensor c = constant({1.f, 2.f, 3.f, 4.f}, {2, 2});
  EXPECT_EQ(c.shape(), Shape({2, 2}));
  EXPECT_EQ(c.dtype(), DType::Float32);
  EXPECT_EQ(scalar(7, DType::Int64).item<int64_t>(), 7);
  EXPECT_EQ(constant(std::vector<bool>{true, false}).dtype(), DType::Bool);
}

TEST(Tensor, CreationErrors) {
  EXPECT_THAT([] { constant({1.f, 2.f, 3.f}, {2, 2}); },
              ::testing::ThrowsMessage<Error>(HasSubstr("[constant] 3 values do not fill shape [2,2]")));
  EXPECT_THAT([] { arange(0, 5, 0); }, ::testing::ThrowsMessage<Error>(HasSubstr("[range] delta must not be 0")));
  EXPECT_THAT([] { linspace(0, 1, 0); }, ::testing::ThrowsMessage<Error>(HasSubstr("[linspace]")));
  Tensor t = zeros({2});
  EXPECT_THAT([&] { t.data<int32_t>(); },
              ::testing::ThrowsMessage<Error>(HasSubstr("data<int32> on a tensor of dtype float32")));
  EXPECT_THAT([&] { t.item<float>(); }, ::testing::ThrowsMessage<Error>(HasSubstr("[item] tensor of shape [2]")));
}

TEST(Tensor, ViewsShareStorage) {
  Tensor t = arange(0, 12);
  Tensor v = t.view({3, 4});
  EXPECT_EQ(v.raw_data(), t.raw_data());
  EXPECT_NE(v.id(), t.id());
  Tensor rows = v.slice0(1, 3);
  EXPECT_EQ(rows.shape(), Shape({2, 4}));
  EXPECT_EQ(rows.to_vector<float>()[0], 4.f);
  EXPECT_EQ(static_cast<char*>(rows.raw_data()) - static_cast<char*>(t.raw_data()), 16);
  EXPECT_THROW(t.view({5}), Error);
  Tensor c = t.clone();
  EXPECT_NE(c.raw_data(), t.raw_data());
  EXPECT_EQ(c.to_vector<float>(), t.to_vector<float>());
}

TEST(Tensor, PrintsLikeNumpy) {
  EXPECT_EQ(constant({1.f, 2.f, 3.f, 4.f}, {2, 2}).to_string(),
            "tf.Tensor(\n[[1. 2.]\n [3. 4.]], shape=(2, 2), dtype=float32)");
  EXPECT_EQ(constant({0.5f, -1.25f}).to_string(), "tf.Tensor([ 0.5  -1.25], shape=(2,), dtype=float32)");
  EXPECT_EQ(constant({-0.23840584f, 0.f, 1.7615942f}).to_string(),
            "tf.Tensor([-0.23840584  0.          1.7615942 ], shape=(3,), dtype=float32)");
  EXPECT_EQ(constant({1e-5f, 1.f}).to_string(), "tf.Tensor([1.e-05 1.e+00], shape=(2,), dtype=float32)");
  EXPECT_EQ(constant({0.1, 0.25}, {2}, DType::Float64).to_string(), "tf.Tensor([0.1  0.25], shape=(2,), dtype=float64)");
  EXPECT_EQ(scalar(3, DType::Int32).to_string(), "tf.Tensor(3, shape=(), dtype=int32)");
  EXPECT_EQ(constant(std::vector<bool>{true, false}).to_string(),
            "tf.Tensor([ True False], shape=(2,), dtype=bool)");
  std::string big = array_string(arange(0, 2000));
  EXPECT_THAT(big, HasSubstr("..."));
  EXPECT_LT(big.size(), 100u);
}

TEST(Allocator, ReusesFreedBlocks) {
  { Tensor warm = zeros({1 << 16}); }
  AllocatorStats before = cpu_allocator_stats();
  for (int i = 0; i < 100; ++i) Tensor t = zeros({1 << 16});
  AllocatorStats after = cpu_allocator_stats();
  EXPECT_EQ(after.num_os_allocs, before.num_os_allocs);
  EXPECT_GE(after.num_allocs, before.num_allocs + 100);
}

TEST(Variable, AssignKeepsOldReads) {
  Variable v(constant({1.f, 2.f}), "v");
  Tensor before = v.value();
  v.assign(constant({5.f, 6.f}));
  EXPECT_EQ(before.to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{5, 6}));
  EXPECT_EQ(v.value().id(), v.id());
  EXPECT_EQ(v.name(), "v");
  EXPECT_TRUE(v.trainable());
  v.assign_add(constant({1.f, 1.f}));
  v.assign_sub(constant({0.5f, 0.5f}));
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{5.5f, 6.5f}));
  EXPECT_THAT([&] { v.assign(zeros({3})); },
              ::testing::ThrowsMessage<Error>(HasSubstr("[Variable.assign] 'v' is float32[2], value is float32[3]")));
}

}  // namespace
}  // namespace deepflow
