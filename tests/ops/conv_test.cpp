// SPDX-License-Identifier: Apache-2.0
// Known answers and error messages of convolution and pooling (ops/conv.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "deepflow/deepflow.h"
#include "test_util.h"
#include "deepflow/ops/conv.h"

namespace deepflow {
namespace {

using testing::error_of;

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// A [1,h,w,1] image whose pixel (i, j) is i * w + j.
Tensor ramp(int64_t h, int64_t w, DType dt = DType::Float32) {
  return cast(reshape(arange(0, double(h * w), 1, DType::Float32), {1, h, w, 1}), dt);
}

// A 3x3 all-ones filter sums each 3x3 neighbourhood (zeros outside the image for SAME).
TEST(Conv2D, OnesFilterOnRampSame) {
  Tensor y = conv2d(ramp(3, 3), ones({3, 3, 1, 1}), {1, 1}, "SAME");
  ASSERT_EQ(y.shape(), Shape({1, 3, 3, 1}));
  // Image 0 1 2 / 3 4 5 / 6 7 8.
  EXPECT_THAT(y.to_vector<float>(), ElementsAreArray({8.f, 15.f, 12.f, 21.f, 36.f, 27.f, 20.f, 33.f, 24.f}));
}

TEST(Conv2D, OnesFilterOnRampValid) {
  Tensor y = conv2d(ramp(4, 4), ones({3, 3, 1, 1}), {1, 1}, "VALID");
  ASSERT_EQ(y.shape(), Shape({1, 2, 2, 1}));
  // 9 * centre value: centres 5, 6, 9, 10.
  EXPECT_THAT(y.to_vector<float>(), ElementsAreArray({45.f, 54.f, 81.f, 90.f}));
}

TEST(Conv2D, Float64AndStrides) {
  Tensor y = conv2d(ramp(5, 5, DType::Float64), ones({3, 3, 1, 1}, DType::Float64), {2, 2}, "VALID");
  ASSERT_EQ(y.shape(), Shape({1, 2, 2, 1}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAreArray({54.0, 72.0, 144.0, 162.0}));
}

// TensorFlow's SAME: out = ceil(in / stride) for odd and even sizes, any kernel.
TEST(Conv2D, SameOutputSizes) {
  for (int64_t in : {5, 6, 7, 8})
    for (int64_t s : {1, 2, 3}) {
      Tensor y = conv2d(zeros({1, in, in + 1, 1}), zeros({3, 2, 1, 1}), {s, s}, "SAME");
      EXPECT_EQ(y.dim(1), (in + s - 1) / s) << in << " " << s;
      EXPECT_EQ(y.dim(2), (in + s) / s) << in << " " << s;
    }
  EXPECT_EQ(conv2d(zeros({1, 7, 7, 1}), zeros({3, 3, 1, 1}), {1, 1}, "VALID", {2, 2}).dim(1), 3);
}

// SAME pads pad_total / 2 before and the rest after: with a 2x2 filter and stride 1 the
// extra row and column go after (bottom/right), as in TensorFlow.
TEST(Conv2D, SameEvenKernelPadsAfter) {
  Tensor y = conv2d(ramp(2, 2), ones({2, 2, 1, 1}), {1, 1}, "SAME");
  EXPECT_THAT(y.to_vector<float>(), ElementsAreArray({6.f, 4.f, 5.f, 3.f}));
}

// Grouped conv: each half of the input channels feeds its own half of the outputs.
TEST(Conv2D, Groups) {
  Tensor x = constant({1.f, 10.f, 100.f, 1000.f}, {1, 1, 1, 4});
  Tensor w = constant({1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f}, {1, 1, 2, 4});  // [ci][co]
  Tensor y = conv2d(x, w);
  // Outputs 0, 1 see inputs (1, 10); outputs 2, 3 see (100, 1000): 1*1 + 10*5, ...
  EXPECT_THAT(y.to_vector<float>(), ElementsAreArray({51.f, 62.f, 7300.f, 8400.f}));
}

// depthwise_conv2d: output channel c * m + j uses filter[..., c, j] on input channel c.
TEST(DepthwiseConv2D, ChannelOrderMatchesTensorFlow) {
  Tensor x = constant({1.f, 10.f}, {1, 1, 1, 2});
  Tensor w = constant({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {1, 1, 2, 3});
  EXPECT_THAT(depthwise_conv2d(x, w).to_vector<float>(), ElementsAreArray({1.f, 2.f, 3.f, 40.f, 50.f, 60.f}));
}

// conv2d_transpose of a single 1 spreads the filter into the output (stride 2, VALID).
TEST(Conv2DTranspose, ScattersTheFilter) {
  Tensor x = constant({1.f, 0.f, 0.f, 2.f}, {1, 2, 2, 1});
  Tensor y = conv2d_transpose(x, ones({2, 2, 1, 1}), {1, 4, 4, 1}, {2, 2}, "VALID");
  EXPECT_THAT(y.to_vector<float>(),
              ElementsAreArray({1.f, 1.f, 0.f, 0.f, 1.f, 1.f, 0.f, 0.f, 0.f, 0.f, 2.f, 2.f, 0.f, 0.f, 2.f, 2.f}));
}

TEST(Conv2D, BackpropsAreAdjoints) {
  // <conv2d(x, w), dy> == <x, backprop_input(w, dy)> == <w, backprop_filter(x, dy)>.
  Tensor x = random_normal({2, 6, 5, 4}, 0, 1, DType::Float64, 1);
  Tensor w = random_normal({3, 2, 2, 6}, 0, 1, DType::Float64, 2);
  Tensor dy = random_normal({2, 3, 3, 6}, 0, 1, DType::Float64, 3);
  Tensor y = conv2d(x, w, {2, 2}, "SAME", {1, 2});
  ASSERT_EQ(y.shape(), dy.shape());
  double a = reduce_sum(y * dy).item<double>();
  double b = reduce_sum(x * conv2d_backprop_input(w, dy, x.shape(), {2, 2}, "SAME", {1, 2})).item<double>();
  double c = reduce_sum(w * conv2d_backprop_filter(x, dy, w.shape(), {2, 2}, "SAME", {1, 2})).item<double>();
  EXPECT_NEAR(a, b, 1e-9 * std::abs(a) + 1e-9);
  EXPECT_NEAR(a, c, 1e-9 * std::abs(a) + 1e-9);
}

TEST(MaxPool, SamePadsWithMinusInfinity) {
  Tensor x = fill({1, 2, 2, 1}, -5.0);
  Tensor y = max_pool2d(x, {3, 3}, {1, 1}, "SAME");
  EXPECT_THAT(y.to_vector<float>(), ElementsAreArray({-5.f, -5.f, -5.f, -5.f}));
  EXPECT_THAT(max_pool2d(ramp(3, 3), {2, 2}, {2, 2}, "SAME").to_vector<float>(),
              ElementsAreArray({4.f, 5.f, 7.f, 8.f}));
}

// EXPLICIT padding: padded cells never win, so it equals -inf padding then VALID, also on
// an all-negative image (zero padding would win there).
TEST(MaxPool, ExplicitPaddingIsMinusInfinityPadding) {
  Tensor x = ramp(5, 6) - 100.0;
  Tensor y = max_pool2d(x, {3, 3}, {2, 2}, "EXPLICIT", {1, 1, 1, 0});
  ASSERT_EQ(y.shape(), Shape({1, 3, 3, 1}));
  // Rows -1..1, 1..3, 3..5 (clipped to 4); cols -1..1, 1..3, 3..5.
  EXPECT_THAT(y.to_vector<float>(), ElementsAreArray({-93.f, -91.f, -89.f, -81.f, -79.f, -77.f, -75.f, -73.f, -71.f}));
  Tensor xp = pad(x, {{0, 0}, {1, 1}, {1, 0}, {0, 0}}, "CONSTANT", -std::numeric_limits<double>::infinity());
  EXPECT_THAT(y.to_vector<float>(), ElementsAreArray(max_pool2d(xp, {3, 3}, {2, 2}, "VALID").to_vector<float>()));
  // The gradient lands on the window maxima, never outside the image.
  Tensor dx = max_pool_grad(x, y, ones_like(y), {3, 3}, {2, 2}, "EXPLICIT", {1, 1, 1, 0});
  std::vector<float> expect(30, 0.f);
  for (int i : {7, 9, 11, 19, 21, 23, 25, 27, 29}) expect[size_t(i)] = 1.f;
  EXPECT_THAT(dx.to_vector<float>(), ElementsAreArray(expect));
  EXPECT_THAT(error_of([&] { max_pool2d(x, {3, 3}, {2, 2}, "EXPLICIT", {1, 1, 1}); }),
              HasSubstr("[max_pool2d] explicit_paddings must be {top, bottom, left, right} or 8 NHWC ints"));
  EXPECT_THAT(error_of([&] { max_pool2d(ramp(1, 1), {3, 3}, {1, 1}, "EXPLICIT", {0, 1, 1, 1}); }),
              HasSubstr("[max_pool] the window [3,3] does not fit input [1,1,1,1] padded by [0,1,1,1]"));
}

// Ties: the first maximum in row-major window order gets the whole gradient.
TEST(MaxPool, GradTieGoesToFirstMaximum) {
  Tensor x = constant({7.f, 7.f, 7.f, 7.f, 1.f, 7.f}, {1, 2, 3, 1});
  Tensor y = max_pool2d(x, {2, 2}, {1, 1}, "VALID");  // windows at columns 0 and 1
  Tensor dx = max_pool_grad(x, y, constant({1.f, 10.f}, {1, 1, 2, 1}), {2, 2}, {1, 1}, "VALID");
  EXPECT_THAT(dx.to_vector<float>(), ElementsAreArray({1.f, 10.f, 0.f, 0.f, 0.f, 0.f}));
}

// AvgPool SAME divides by the number of valid cells, not by the window size.
TEST(AvgPool, SameEdgeDivisor) {
  Tensor y = avg_pool2d(ones({1, 3, 3, 1}), {3, 3}, {1, 1}, "SAME");
  EXPECT_THAT(y.to_vector<float>(), ElementsAreArray(std::vector<float>(9, 1.f)));
  Tensor z = avg_pool2d(ramp(3, 3), {2, 2}, {2, 2}, "SAME");
  // Windows {0,1,3,4}, {2,5}, {6,7}, {8}.
  EXPECT_THAT(z.to_vector<float>(), ElementsAreArray({2.f, 3.5f, 6.5f, 8.f}));
  Tensor dx = avg_pool_grad(ones({1, 2, 2, 1}), {1, 3, 3, 1}, {2, 2}, {2, 2}, "SAME");
  EXPECT_THAT(dx.to_vector<float>(), ElementsAreArray({.25f, .25f, .5f, .25f, .25f, .5f, .5f, .5f, 1.f}));
}

// Empty batches and VALID windows that exactly miss give empty outputs (and zero gradients).
TEST(Conv2D, EmptyShapes) {
  EXPECT_EQ(conv2d(zeros({0, 5, 5, 2}), zeros({3, 3, 2, 4}), {1, 1}, "SAME").shape(), Shape({0, 5, 5, 4}));
  EXPECT_EQ(conv2d(zeros({1, 2, 5, 2}), zeros({3, 3, 2, 4})).shape(), Shape({1, 0, 3, 4}));
  Tensor dw = conv2d_backprop_filter(ones({0, 5, 5, 2}), ones({0, 5, 5, 4}), {3, 3, 2, 4}, {1, 1}, "SAME");
  EXPECT_THAT(dw.to_vector<float>(), ElementsAreArray(std::vector<float>(72, 0.f)));
  EXPECT_EQ(max_pool2d(zeros({0, 4, 4, 3}), {2, 2}, {2, 2}).shape(), Shape({0, 2, 2, 3}));
}

TEST(ConvErrors, MessagesNameShapes) {
  EXPECT_THAT(error_of([] { conv2d(zeros({1, 5, 5, 3}), zeros({3, 3, 4, 8})); }),
              HasSubstr("[conv2d] input channels 3 do not match filter in-channels 4 (filters [3,3,4,8])"));
  EXPECT_THAT(error_of([] { conv2d(zeros({1, 5, 5, 4}), zeros({3, 3, 2, 3})); }),
              HasSubstr("[conv2d] output channels 3 are not divisible by groups 2 (input [1,5,5,4], filters [3,3,2,3])"));
  EXPECT_THAT(error_of([] { conv2d(zeros({1, 5, 5, 2}), zeros({3, 3, 2}, DType::Float32)); }),
              HasSubstr("[conv2d] expects a rank-4 filters [kh, kw, c_in / groups, c_out], got [3,3,2]"));
  EXPECT_THAT(error_of([] { conv2d(zeros({1, 5, 5, 2}), zeros({3, 3, 2, 2}, DType::Float64)); }),
              HasSubstr("[conv2d] dtypes differ: float32[1,5,5,2] and float64[3,3,2,2]"));
  EXPECT_THAT(error_of([] { conv2d(zeros({1, 5, 5, 2}), zeros({3, 3, 2, 2}), {0, 1}); }),
              HasSubstr("[conv2d] strides must be two positive ints {h, w}, got [0,1]"));
  EXPECT_THAT(error_of([] { conv2d(zeros({1, 5, 5, 2}), zeros({3, 3, 2, 2}), {1, 2, 3}); }),
              HasSubstr("[conv2d] strides must be 1, 2 or 4 ints ({1, h, w, 1} in NHWC), got [1,2,3]"));
  EXPECT_THAT(error_of([] { conv2d(zeros({1, 1, 5, 2}), zeros({3, 3, 2, 2})); }),
              HasSubstr("[conv2d] the window (3 dilated by 1) does not fit input size 1 with VALID padding"));
  EXPECT_THAT(error_of([] { max_pool2d(zeros({1, 4, 4, 1}), {2, 2}, {1, 1}, "same"); }),
              HasSubstr("[max_pool] padding must be \"SAME\", \"VALID\" or \"EXPLICIT\", got \"same\""));
  EXPECT_THAT(error_of([] { avg_pool2d(zeros({4, 4, 1}), {2, 2}, {1, 1}); }),
              HasSubstr("[avg_pool] expects a rank-4 input [n, h, w, c], got [4,4,1]"));
  EXPECT_THAT(error_of([] { avg_pool_grad(zeros({1, 2, 2, 1}), {1, 4, 4}, {2, 2}, {2, 2}); }),
              HasSubstr("[avg_pool_grad] input_sizes must be 4 non-negative ints [n, h, w, c], got [1,4,4]"));
  EXPECT_THAT(error_of([] { conv2d_backprop_filter(zeros({1, 5, 5, 2}), zeros({1, 5, 5, 3}), {3, 3, 2, 4}, {1, 1}, "SAME"); }),
              HasSubstr("[conv2d_backprop_filter] out_backprop [1,5,5,3] does not match the conv2d output shape [1,5,5,4]"));
  EXPECT_THAT(error_of([] { max_pool2d(zeros({1, 4, 4, 1}, DType::Bool), {2, 2}, {1, 1}); }),
              HasSubstr("[max_pool] does not take bool tensors"));
}

}  // namespace
}  // namespace deepflow
