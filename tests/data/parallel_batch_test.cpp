// SPDX-License-Identifier: Apache-2.0
// batch with num_parallel_calls: the same batches as the sequential batch, the
// remainder rule, shape errors with the element index, save/restore.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "data/data_test_util.h"

namespace deepflow::data {
namespace {

using ::testing::HasSubstr;
using deepflow::testing::error_of;
using namespace std::chrono_literals;

// Each batch as the vector of its first component's values.
std::vector<std::vector<int64_t>> batches(const Dataset& ds) {
  std::vector<std::vector<int64_t>> out;
  for (const Element& e : collect(ds)) {
    std::vector<int64_t> b;
    for (int64_t i = 0; i < e[0].size(); ++i) b.push_back(int64_t(e[0].flat(i)));
    out.push_back(b);
  }
  return out;
}

TEST(ParallelBatch, SameBatchesAsSequential) {
  // (x, [x, x]) elements: two components, one of them a vector.
  Dataset in = Dataset::range(103).map([](const Element& e) {
    return Element{e[0], fill({2}, e[0].flat(0), DType::Float32)};
  });
  for (bool drop : {false, true})
    for (int64_t p : std::vector<int64_t>{2, 4, kAutotune}) {
      Dataset par = in.batch(10, {.drop_remainder = drop, .num_parallel_calls = p});
      Dataset seq = in.batch(10, {.drop_remainder = drop});
      EXPECT_EQ(batches(par), batches(seq)) << "drop " << drop << " p " << p;
      EXPECT_EQ(collect(par).size(), drop ? 10u : 11u);
      const Element first = collect(par)[0];
      EXPECT_EQ(first[1].shape(), (Shape{10, 2}));
      EXPECT_EQ(par.cardinality(), drop ? 10 : 11);
    }
  Dataset r = Dataset::range(25);
  EXPECT_EQ(r.batch(10, {.num_parallel_calls = 3}).cardinality(), 3);
  EXPECT_EQ(r.batch(10, {.drop_remainder = true, .num_parallel_calls = 3}).cardinality(), 2);
  EXPECT_EQ(r.batch(10, {.drop_remainder = true, .num_parallel_calls = 3}).element_spec().to_string(), "(int64[10])");
  EXPECT_EQ(r.batch(10, {.num_parallel_calls = 3}).element_spec().to_string(), "(int64[-1])");
  EXPECT_TRUE(batches(Dataset::range(0).batch(4, {.num_parallel_calls = 2})).empty());
  EXPECT_EQ(batches(Dataset::range(8).batch(4, {.drop_remainder = true, .num_parallel_calls = 2})).size(), 2u);
}

TEST(ParallelBatch, NonDeterministicKeepsEveryElement) {
  Dataset ds = Dataset::range(64)
                   .map([](const Element& e) {
                     if (int64_t(e[0].flat(0)) < 8) std::this_thread::sleep_for(2ms);
                     return e;
                   })
                   .batch(8, {.num_parallel_calls = 4, .deterministic = false});
  std::vector<int64_t> all;
  for (const auto& b : batches(ds)) {
    EXPECT_EQ(b.size(), 8u);
    all.insert(all.end(), b.begin(), b.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<int64_t> want(64);
  for (int64_t i = 0; i < 64; ++i) want[size_t(i)] = i;
  EXPECT_EQ(all, want);
}

TEST(ParallelBatch, ShapeMismatchNamesTheElement) {
  Dataset ds = Dataset::range(40)
                   .map([](const Element& e) {
                     const int64_t x = int64_t(e[0].flat(0));
                     return Element(zeros({x == 25 ? 3 : 2}));
                   })
                   .batch(10, {.num_parallel_calls = 3});
  Iterator it = ds.iter();
  EXPECT_TRUE(it.next().has_value());
  EXPECT_TRUE(it.next().has_value());
  EXPECT_EQ(error_of([&] { it.next(); }),
            "[Dataset.batch] element 5 of the batch (input element 25) has component 0 of float32[3], element 0 has "
            "float32[2]: batch needs equal shapes (padded_batch pads them)");
  EXPECT_THAT(error_of([] { Dataset::range(3).batch(2, {.num_parallel_calls = -7}); }),
              HasSubstr("num_parallel_calls must be >= 1 or kAutotune, got -7"));
}

TEST(ParallelBatch, SaveRestoreMidPass) {
  Dataset ds = Dataset::range(57).batch(5, {.num_parallel_calls = 3});
  const auto all = batches(ds);
  for (int k : {0, 2, 11, 12}) {
    Iterator it = ds.iter();
    for (int i = 0; i < k; ++i) ASSERT_TRUE(it.next().has_value());
    std::this_thread::sleep_for(2ms);
    const std::string state = it.save();
    Iterator fresh = ds.iter();
    fresh.restore(state);
    std::vector<std::vector<int64_t>> rest;
    while (auto e = fresh.next()) {
      std::vector<int64_t> b;
      for (int64_t i = 0; i < (*e)[0].size(); ++i) b.push_back(int64_t((*e)[0].flat(i)));
      rest.push_back(b);
    }
    EXPECT_EQ(rest, std::vector<std::vector<int64_t>>(all.begin() + k, all.end())) << "after " << k;
  }
}

TEST(ParallelBatch, DestroyingMidPassJoinsPromptly) {
  Iterator it = Dataset::range(0, 1 << 30)
                    .map([](const Element& e) {
                      std::this_thread::sleep_for(2ms);
                      return e;
                    })
                    .batch(16, {.num_parallel_calls = 4})
                    .iter();
  ASSERT_TRUE(it.next().has_value());
  const auto t0 = std::chrono::steady_clock::now();
  it = Iterator();
  // The one batch being read (16 x 2 ms) finishes; nothing more.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
}

}  // namespace
}  // namespace deepflow::data
