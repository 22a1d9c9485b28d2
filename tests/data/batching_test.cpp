// SPDX-License-Identifier: Apache-2.0
// batch, padded_batch, unbatch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "data/data_test_util.h"

namespace deepflow::data {
namespace {

using ::testing::HasSubstr;
using deepflow::testing::error_of;

TEST(BatchingBatch, StacksAndKeepsTheRemainder) {
  Tensor x = arange(0, 14, 1).view({7, 2});
  Dataset ds = Dataset::from_tensor_slices({x, arange(0, 7, 1, DType::Int64)}).batch(3);
  EXPECT_EQ(ds.element_spec().to_string(), "(float32[-1,2], int64[-1])");
  auto all = collect(ds);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0][0].shape(), Shape({3, 2}));
  EXPECT_EQ(all[1][0].to_vector<float>(), (std::vector<float>{6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(all[1][1].to_vector<int64_t>(), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(all[2][0].shape(), Shape({1, 2}));
  Dataset dropped = Dataset::from_tensor_slices({x}).batch(3, {.drop_remainder = true});
  EXPECT_EQ(dropped.element_spec().to_string(), "(float32[3,2])");
  EXPECT_EQ(collect(dropped).size(), 2u);
  EXPECT_THAT(error_of([] { Dataset::range(3).batch(0); }), HasSubstr("batch_size must be positive"));
}

TEST(BatchingBatch, BatchesOfSlicesAreViewsOfTheSource) {
  // batch right after from_tensor_slices hands out the source's rows: no copy.
  Tensor x = arange(0, 14, 1).view({7, 2});
  Iterator it = Dataset::from_tensor_slices({x}).batch(3).iter();
  std::optional<Element> first = it.next();
  ASSERT_TRUE(first);
  EXPECT_EQ((*first)[0].data<float>(), x.data<float>());
  std::optional<Element> second = it.next();
  EXPECT_EQ((*second)[0].data<float>(), x.data<float>() + 6);
  EXPECT_EQ((*second)[0].to_vector<float>(), (std::vector<float>{6, 7, 8, 9, 10, 11}));
  // Position survives save/restore at a batch boundary.
  auto state = it.save();
  Iterator again = Dataset::from_tensor_slices({x}).batch(3).iter();
  again.restore(state);
  std::optional<Element> last = again.next();
  ASSERT_TRUE(last);
  EXPECT_EQ((*last)[0].to_vector<float>(), (std::vector<float>{12, 13}));
  EXPECT_FALSE(again.next());
}

TEST(BatchingBatch, KeepsDictNames) {
  Dataset ds = Dataset::from_tensor_slices(Element::dict({{"a", zeros({4, 2})}, {"b", ones({4})}})).batch(2);
  EXPECT_EQ(ds.element_spec().to_string(), "{a: float32[-1,2], b: float32[-1]}");
  EXPECT_EQ(collect(ds)[1]["b"].to_vector<float>(), (std::vector<float>{1, 1}));
}

TEST(BatchingBatch, ShapeMismatchNamesTheElementAndBothShapes) {
  Dataset ds = Dataset::range(10)
                   .map([](const Element& e) { return Element(zeros({e[0].item<int64_t>() == 6 ? 3 : 2})); })
                   .batch(4);
  Iterator it = ds.iter();
  EXPECT_TRUE(it.next());
  EXPECT_THAT(error_of([&] { it.next(); }),
              HasSubstr("[Dataset.batch] element 2 of the batch (input element 6) has component 0 of float32[3], "
                        "element 0 has float32[2]"));
}

TEST(BatchingBatch, RepeatThenBatchCrossesEpochs) {
  EXPECT_EQ(values(Dataset::range(3).repeat(2).batch(4).unbatch()), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  auto b = collect(Dataset::range(3).repeat(2).batch(4));
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0][0].to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 0}));
}

TEST(BatchingPaddedBatch, PadsToTheLongestOrToTheGivenShape) {
  // element i is [i, i, ...] of length i (tf.data's padded_batch docstring example)
  Dataset ds = Dataset::range(1, 5).map([](const Element& e) {
    const int64_t n = e[0].item<int64_t>();
    return Element(fill({n}, double(n), DType::Int64));
  });
  auto all = collect(ds.padded_batch(2));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0][0].shape(), Shape({2, 2}));
  EXPECT_EQ(all[0][0].to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 2, 2}));
  EXPECT_EQ(all[1][0].to_vector<int64_t>(), (std::vector<int64_t>{3, 3, 3, 0, 4, 4, 4, 4}));
  auto fixed = collect(ds.padded_batch(2, {.padded_shapes = {Shape{5}}, .padding_values = {scalar(-1, DType::Int64)}}));
  EXPECT_EQ(fixed[0][0].to_vector<int64_t>(), (std::vector<int64_t>{1, -1, -1, -1, -1, 2, 2, -1, -1, -1}));
  EXPECT_THAT(error_of([&] { collect(ds.padded_batch(2, {.padded_shapes = {Shape{3}}})); }),
              HasSubstr("element 1 of the batch (input element 3) has component 0 of int64[4], larger than its "
                        "padded shape [3]"));
}

TEST(BatchingPaddedBatch, PadsRank2AndCastsAScalarPadding) {
  Dataset ds = Dataset::range(1, 3).map([](const Element& e) {
    const int64_t n = e[0].item<int64_t>();
    return Element{ones({n, n}), scalar(double(n), DType::Int32)};
  });
  auto all = collect(ds.padded_batch(2, {.padding_values = {scalar(9)}}));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0][0].shape(), Shape({2, 2, 2}));
  EXPECT_EQ(all[0][0].to_vector<float>(), (std::vector<float>{1, 9, 9, 9, 1, 1, 1, 1}));
  EXPECT_EQ(all[0][1].to_vector<int32_t>(), (std::vector<int32_t>{1, 2}));
}

TEST(BatchingUnbatch, SplitsTheFirstDimension) {
  Dataset ds = Dataset::from_tensors({arange(0, 6, 1).view({3, 2}), constant<int64_t>({7, 8, 9})}).unbatch();
  EXPECT_EQ(ds.element_spec().to_string(), "(float32[2], int64[])");
  auto all = collect(ds);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1][0].to_vector<float>(), (std::vector<float>{2, 3}));
  EXPECT_EQ(all[2][1].item<int64_t>(), 9);
  EXPECT_THAT(error_of([] { Dataset::range(3).unbatch(); }), HasSubstr("[Dataset.unbatch]"));
}

}  // namespace
}  // namespace deepflow::data
