// SPDX-License-Identifier: Apache-2.0
// interleave: tf.data's order (sequential and parallel agree), non-deterministic
// mode, parallel pulls hide latency, errors in order, early destruction,
// save/restore of the cycle.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "data/data_test_util.h"

namespace deepflow::data {
namespace {

using ::testing::HasSubstr;
using deepflow::testing::error_of;
using namespace std::chrono_literals;

int64_t v(const Element& e) { return int64_t(e[0].flat(0)); }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// x -> x repeated x + 1 times: cycle elements of different lengths.
Dataset repeats(const Element& e) { return Dataset::from_tensors(e).repeat(v(e) + 1); }

TEST(Interleave, TensorFlowDocExample) {
  // tf.data's interleave docstring: range(1, 6), each x repeated 6 times, cycle 2, block 4.
  const std::vector<int64_t> want = {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5};
  for (int64_t p : std::vector<int64_t>{1, 2, 4, kAutotune}) {
    Dataset ds = Dataset::range(1, 6).interleave([](const Element& e) { return Dataset::from_tensors(e).repeat(6); },
                                                  {.cycle_length = 2, .block_length = 4, .num_parallel_calls = p});
    EXPECT_EQ(values(ds), want) << "num_parallel_calls " << p;
  }
}

TEST(Interleave, ParallelOrderEqualsSequential) {
  for (int64_t cycle : {1, 2, 3, 5})
    for (int64_t block : {1, 2, 3}) {
      auto make = [&](int64_t p) {
        return Dataset::range(9).interleave(repeats, {.cycle_length = cycle, .block_length = block, .num_parallel_calls = p});
      };
      const std::vector<int64_t> seq = values(make(1));
      EXPECT_EQ(seq.size(), 45u);  // 1 + 2 + ... + 9
      EXPECT_EQ(values(make(3)), seq) << "cycle " << cycle << " block " << block;
      EXPECT_EQ(values(make(kAutotune)), seq) << "cycle " << cycle << " block " << block;
    }
}

TEST(Interleave, CycleOneIsFlatMap) {
  Dataset in = Dataset::range(5);
  EXPECT_EQ(values(in.interleave(repeats, {.cycle_length = 1})), values(in.flat_map(repeats)));
  EXPECT_TRUE(values(Dataset::range(0).interleave(repeats, {.cycle_length = 2, .num_parallel_calls = 2})).empty());
}

TEST(Interleave, NonDeterministicLetsFastElementsOvertake) {
  auto fn = [](const Element& e) {
    return Dataset::from_tensors(e).repeat(3).map([](const Element& x) {
      if (v(x) == 0) std::this_thread::sleep_for(40ms);
      return x;
    });
  };
  std::vector<int64_t> out = values(Dataset::range(3).interleave(fn, {.cycle_length = 3, .num_parallel_calls = 3, .deterministic = false}));
  ASSERT_EQ(out.size(), 9u);
  EXPECT_NE(out[0], 0);
  std::sort(out.begin(), out.end());
  EXPECT_EQ(out, (std::vector<int64_t>{0, 0, 0, 1, 1, 1, 2, 2, 2}));
}

TEST(Interleave, ParallelPullsHideLatency) {
  // 4 sources, each 5 elements of 20 ms latency: the waits overlap.
  std::atomic<int> now{0}, most{0};
  auto fn = [&](const Element& e) {
    return Dataset::from_tensors(e).repeat(5).map([&](const Element& x) {
      const int n = ++now;
      most = std::max(most.load(), n);
      std::this_thread::sleep_for(20ms);
      --now;
      return x;
    });
  };
  EXPECT_EQ(values(Dataset::range(4).interleave(fn, {.cycle_length = 4, .num_parallel_calls = 4})).size(), 20u);
  EXPECT_GE(most.load(), 3);  // (not timed: the machine is shared; overlap is what matters)
  EXPECT_LE(most.load(), 4);
}

TEST(Interleave, ErrorsComeInOrder) {
  // The function fails on input element 3; elements before that point come first,
  // in the sequential order, then the error naming the input element.
  auto fn = [](const Element& e) {
    if (v(e) == 3) throw Error("no dataset for 3");
    return repeats(e);
  };
  std::vector<int64_t> seq_prefix;
  for (int64_t p : std::vector<int64_t>{1, 2, kAutotune}) {
    Iterator it = Dataset::range(6).interleave(fn, {.cycle_length = 2, .num_parallel_calls = p}).iter();
    std::vector<int64_t> got;
    std::string msg;
    try {
      while (auto e = it.next()) got.push_back(v(*e));
    } catch (const Error& e) {
      msg = e.what();
    }
    EXPECT_EQ(msg, "[Dataset.interleave] element 3: no dataset for 3");
    if (p == 1) seq_prefix = got;
    EXPECT_EQ(got, seq_prefix) << "num_parallel_calls " << p;
  }
  EXPECT_EQ(seq_prefix, (std::vector<int64_t>{0, 1, 1, 2, 2}));  // tf.data opens 3 next
  // An error inside a cycle element passes through as it is.
  auto inner = [](const Element& e) {
    return Dataset::range(3).map([x = v(e)](const Element& y) {
      if (x == 1 && v(y) == 2) throw Error("inner");
      return y;
    });
  };
  EXPECT_THAT(error_of([&] { values(Dataset::range(2).interleave(inner, {.cycle_length = 2, .num_parallel_calls = 2})); }),
              HasSubstr("[Dataset.map] element 2: inner"));
  EXPECT_THAT(error_of([] { Dataset::range(2).interleave(repeats, {.block_length = 0}); }),
              HasSubstr("[Dataset.interleave] block_length must be >= 1, got 0"));
}

TEST(Interleave, DestroyingMidPassJoinsPromptly) {
  auto slow = [](const Element& e) {
    return Dataset::from_tensors(e).repeat().map([](const Element& x) {
      std::this_thread::sleep_for(50ms);
      return x;
    });
  };
  Iterator it = Dataset::range(0, 1 << 30).interleave(slow, {.cycle_length = 4, .num_parallel_calls = 4}).iter();
  ASSERT_TRUE(it.next().has_value());
  const auto t0 = std::chrono::steady_clock::now();
  it = Iterator();
  EXPECT_LT(seconds_since(t0), 0.5);
}

TEST(Interleave, SaveRestoreTheCycle) {
  for (int64_t p : {1, 3}) {
    Dataset ds = Dataset::range(8).interleave(repeats, {.cycle_length = 3, .block_length = 2, .num_parallel_calls = p});
    const std::vector<int64_t> all = values(ds);
    for (int k : {0, 1, 5, 13, 30, 36}) {
      Iterator it = ds.iter();
      std::vector<int64_t> head = take_values(it, k);
      std::this_thread::sleep_for(2ms);  // workers fill the slot buffers
      const std::string state = it.save();
      std::vector<int64_t> rest = rest_values(it);
      Iterator fresh = ds.iter();
      fresh.restore(state);
      EXPECT_EQ(rest_values(fresh), rest) << "p " << p << " after " << k;
      head.insert(head.end(), rest.begin(), rest.end());
      EXPECT_EQ(head, all);
    }
  }
}

}  // namespace
}  // namespace deepflow::data
