// SPDX-License-Identifier: Apache-2.0
// shuffle: buffer semantics, seeds, reshuffle_each_iteration, epochs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "data/data_test_util.h"
#include "deepflow/core/random.h"

namespace deepflow::data {
namespace {

using ::testing::HasSubstr;
using deepflow::testing::error_of;

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(size_t(n), 0);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ShuffleBuffer, IsAPermutationThatOnlyReachesBufferSizeAhead) {
  for (int64_t buffer : {1, 2, 5, 20, 100}) {
    for (int64_t seed = 0; seed < 10; ++seed) {
      std::vector<int64_t> out = values(Dataset::range(50).shuffle(buffer, {.seed = seed}));
      ASSERT_EQ(sorted(out), iota(50)) << "buffer " << buffer;
      // output j was among the first j + buffer inputs
      for (size_t j = 0; j < out.size(); ++j) ASSERT_LT(out[j], int64_t(j) + buffer) << "buffer " << buffer;
      if (buffer == 1) EXPECT_EQ(out, iota(50));
    }
  }
  EXPECT_NE(values(Dataset::range(50).shuffle(50, {.seed = 1})), iota(50));
  EXPECT_THAT(error_of([] { Dataset::range(3).shuffle(0); }), HasSubstr("[Dataset.shuffle] buffer_size must be positive"));
}

TEST(ShuffleSeeds, SameSeedSameOrderDifferentSeedDifferentOrder) {
  set_random_seed(std::nullopt);
  auto a = values(Dataset::range(30).shuffle(30, {.seed = 7}));
  auto b = values(Dataset::range(30).shuffle(30, {.seed = 7}));
  auto c = values(Dataset::range(30).shuffle(30, {.seed = 8}));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // the global seed makes an unseeded shuffle reproducible
  set_random_seed(42);
  auto g1 = values(Dataset::range(30).shuffle(30));
  set_random_seed(42);
  auto g2 = values(Dataset::range(30).shuffle(30));
  EXPECT_EQ(g1, g2);
  set_random_seed(std::nullopt);
}

TEST(ShuffleEpochs, ReshuffleEachIterationGivesFreshOrders) {
  Dataset ds = Dataset::range(20).shuffle(20, {.seed = 3});
  auto e1 = values(ds), e2 = values(ds);
  EXPECT_EQ(sorted(e1), iota(20));
  EXPECT_EQ(sorted(e2), iota(20));
  EXPECT_NE(e1, e2);
  // the sequence of epoch orders is itself reproducible
  Dataset again = Dataset::range(20).shuffle(20, {.seed = 3});
  EXPECT_EQ(values(again), e1);
  EXPECT_EQ(values(again), e2);

  Dataset fixed = Dataset::range(20).shuffle(20, {.seed = 3, .reshuffle_each_iteration = false});
  EXPECT_EQ(values(fixed), values(fixed));

  // shuffle -> repeat: each pass is a permutation of its own, and passes differ
  auto rep = values(Dataset::range(10).shuffle(10, {.seed = 5}).repeat(3));
  ASSERT_EQ(rep.size(), 30u);
  std::vector<int64_t> p0(rep.begin(), rep.begin() + 10), p1(rep.begin() + 10, rep.begin() + 20);
  EXPECT_EQ(sorted(p0), iota(10));
  EXPECT_EQ(sorted(p1), iota(10));
  EXPECT_NE(p0, p1);
  auto rep_fixed = values(Dataset::range(10).shuffle(10, {.seed = 5, .reshuffle_each_iteration = false}).repeat(2));
  EXPECT_TRUE(std::equal(rep_fixed.begin(), rep_fixed.begin() + 10, rep_fixed.begin() + 10));
  // repeat -> shuffle blends epochs: an element of pass 2 can come out before pass 1 ends
  bool blended = false;
  for (int64_t s = 0; s < 20 && !blended; ++s) {
    auto mix = values(Dataset::range(10).repeat(2).shuffle(10, {.seed = s}));
    std::vector<int64_t> first(mix.begin(), mix.begin() + 10);
    blended = sorted(first) != iota(10);
  }
  EXPECT_TRUE(blended);
}

TEST(ShuffleUniformity, FirstElementIsUniformWithAFullBuffer) {
  Dataset ds = Dataset::range(10).shuffle(10, {.seed = 11});
  std::vector<int> counts(10, 0);
  for (int t = 0; t < 2000; ++t) {
    Iterator it = ds.iter();
    ++counts[size_t(it.next()->tensors()[0].item<int64_t>())];
  }
  // expected 200 each; 5 sigma is about 67
  for (int c : counts) {
    EXPECT_GT(c, 130);
    EXPECT_LT(c, 270);
  }
}

}  // namespace
}  // namespace deepflow::data
