// SPDX-License-Identifier: Apache-2.0
// map with num_parallel_calls: order, determinism, concurrency, errors, early
// destruction, save/restore. Timing checks use generous bounds (the build machine
// is shared); where a bug could hang, the test bounds its own wait.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "data/data_test_util.h"

namespace deepflow::data {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using deepflow::testing::error_of;
using namespace std::chrono_literals;

int64_t v(const Element& e) { return int64_t(e[0].flat(0)); }
Element i64(int64_t x) { return Element(scalar(double(x), DType::Int64)); }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Counts calls running at once and remembers the most.
struct Concurrency {
  std::atomic<int> now{0}, most{0};
  void enter() {
    const int n = ++now;
    int m = most.load();
    while (n > m && !most.compare_exchange_weak(m, n)) {
    }
  }
  void leave() { --now; }
};

std::vector<int64_t> expected_range(int64_t n, int64_t mul, int64_t add) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(i * mul + add);
  return out;
}

TEST(ParallelMap, KeepsInputOrderWhenDeterministic) {
  for (int64_t p : std::vector<int64_t>{2, 3, 8, kAutotune}) {
    // Jitter makes later elements finish first; the output must not notice.
    Dataset ds = Dataset::range(200).map(
        [](const Element& e) {
          if (v(e) % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
          return i64(v(e) * 2);
        },
        {.num_parallel_calls = p});
    EXPECT_EQ(values(ds), expected_range(200, 2, 0)) << "num_parallel_calls " << p;
    EXPECT_EQ(ds.cardinality(), 200);
  }
}

TEST(ParallelMap, NonDeterministicEmitsInCompletionOrder) {
  auto slow_first = [](const Element& e) {
    if (v(e) == 0) std::this_thread::sleep_for(150ms);
    return e;
  };
  std::vector<int64_t> out = values(Dataset::range(20).map(slow_first, {.num_parallel_calls = 4, .deterministic = false}));
  ASSERT_EQ(out.size(), 20u);
  EXPECT_NE(out[0], 0);  // element 0 was still sleeping
  std::sort(out.begin(), out.end());
  EXPECT_EQ(out, expected_range(20, 1, 0));
  // Options::deterministic decides when the map leaves it unset; an explicit true wins.
  Options o;
  o.deterministic = false;
  EXPECT_NE(values(Dataset::range(20).map(slow_first, {.num_parallel_calls = 4}).with_options(o))[0], 0);
  EXPECT_EQ(values(Dataset::range(20).map(slow_first, {.num_parallel_calls = 4, .deterministic = true}).with_options(o))[0], 0);
}

TEST(ParallelMap, RunsUpToNumParallelCallsAtOnce) {
  Concurrency c;
  auto fn = [&c](const Element& e) {
    c.enter();
    std::this_thread::sleep_for(5ms);
    c.leave();
    return e;
  };
  EXPECT_EQ(values(Dataset::range(40).map(fn, {.num_parallel_calls = 4})).size(), 40u);
  EXPECT_LE(c.most.load(), 4);
  EXPECT_GE(c.most.load(), 3);  // sleeps overlap even on a loaded machine
  // With autotuning off, kAutotune means the CPU budget.
  Concurrency c2;
  auto fn2 = [&c2](const Element& e) {
    c2.enter();
    std::this_thread::sleep_for(5ms);
    c2.leave();
    return e;
  };
  Options o;
  o.autotune.enabled = false;
  o.autotune.cpu_budget = 3;
  EXPECT_EQ(values(Dataset::range(30).map(fn2, {.num_parallel_calls = kAutotune}).with_options(o)).size(), 30u);
  EXPECT_LE(c2.most.load(), 3);
  EXPECT_GE(c2.most.load(), 2);
}

TEST(ParallelMap, WorkersRunOneOpenMpThread) {
  std::atomic<int> most{0};
  auto fn = [&most](const Element& e) {
    most = std::max(most.load(), omp_get_max_threads());
    return e;
  };
  EXPECT_EQ(values(Dataset::range(8).map(fn, {.num_parallel_calls = 2})).size(), 8u);
  EXPECT_EQ(most.load(), 1);
}

TEST(ParallelMap, ErrorComesAfterTheElementsBeforeIt) {
  for (bool det : {true, false}) {
    Dataset ds = Dataset::range(100).map(
        [](const Element& e) {
          if (v(e) == 12) throw Error("boom");
          if (v(e) < 12) std::this_thread::sleep_for(1ms);  // the error is ready first
          return e;
        },
        {.num_parallel_calls = 4, .deterministic = det});
    Iterator it = ds.iter();
    std::vector<int64_t> got;
    std::string msg;
    try {
      while (std::optional<Element> e = it.next()) got.push_back(v(*e));
    } catch (const Error& e) {
      msg = e.what();
    }
    EXPECT_EQ(msg, "[Dataset.map] element 12: boom");
    if (det) {
      EXPECT_EQ(got, expected_range(12, 1, 0));
    } else {
      // Later elements may overtake the failing call (as many as finish while it
      // runs); every element before it comes first.
      std::sort(got.begin(), got.end());
      ASSERT_GE(got.size(), 12u);
      EXPECT_EQ(std::vector<int64_t>(got.begin(), got.begin() + 12), expected_range(12, 1, 0));
      EXPECT_EQ(std::count(got.begin(), got.end(), 12), 0);
    }
    EXPECT_THAT(error_of([&] { it.next(); }), HasSubstr("element 12: boom"));  // stays failed
  }
}

TEST(ParallelMap, InputErrorsPassThroughUnwrapped) {
  Dataset ds = Dataset::range(10)
                   .map([](const Element& e) {
                     if (v(e) == 5) throw Error("inner");
                     return e;
                   })
                   .map([](const Element& e) { return e; }, {.num_parallel_calls = 3});
  Iterator it = ds.iter();
  EXPECT_EQ(take_values(it, 5), expected_range(5, 1, 0));
  std::string msg = error_of([&] { it.next(); });
  EXPECT_EQ(msg, "[Dataset.map] element 5: inner");
}

TEST(ParallelMap, EmptyAndEndAreClean) {
  EXPECT_TRUE(values(Dataset::range(0).map([](const Element& e) { return e; }, {.num_parallel_calls = 4})).empty());
  Iterator it = Dataset::range(3).map([](const Element& e) { return e; }, {.num_parallel_calls = 2}).iter();
  EXPECT_EQ(rest_values(it), expected_range(3, 1, 0));
  EXPECT_FALSE(it.next().has_value());
  EXPECT_FALSE(it.next().has_value());
  EXPECT_THAT(error_of([] { Dataset::range(3).map([](const Element& e) { return e; }, {.num_parallel_calls = 0}); }),
              HasSubstr("[Dataset.map] num_parallel_calls must be >= 1 or kAutotune, got 0"));
}

TEST(ParallelMap, DestroyingMidPassJoinsPromptly) {
  // An endless input and a slow function: destruction must stop reading and wait
  // only for the calls already running (one 100 ms sleep each).
  std::atomic<int> calls{0};
  auto slow = [&calls](const Element& e) {
    ++calls;
    std::this_thread::sleep_for(100ms);
    return e;
  };
  {
    Iterator it = Dataset::range(0, 1 << 30).map(slow, {.num_parallel_calls = 3}).iter();
    ASSERT_TRUE(it.next().has_value());
    const auto t0 = std::chrono::steady_clock::now();
    it = Iterator();
    EXPECT_LT(seconds_since(t0), 1.0);
  }
  EXPECT_LE(calls.load(), 8);
  // Never started: nothing to join.
  { Iterator it = Dataset::range(10).map(slow, {.num_parallel_calls = 3}).iter(); }
  // Destroyed after an error, with calls still running.
  {
    Iterator it = Dataset::range(0, 1 << 30)
                      .map(
                          [](const Element& e) {
                            if (v(e) == 0) throw Error("first");
                            std::this_thread::sleep_for(20ms);
                            return e;
                          },
                          {.num_parallel_calls = 4})
                      .iter();
    EXPECT_THAT(error_of([&] { it.next(); }), HasSubstr("element 0: first"));
  }
}

TEST(ParallelMap, SaveRestoreMidPass) {
  auto jitter = [](const Element& e) {
    if (v(e) % 5 == 0) std::this_thread::sleep_for(std::chrono::microseconds(500));
    return i64(v(e) + 1000);
  };
  Dataset ds = Dataset::range(60).map(jitter, {.num_parallel_calls = 4}).batch(4).unbatch();
  for (int k : {0, 1, 7, 30, 60}) {
    Iterator it = ds.iter();
    std::vector<int64_t> head = take_values(it, k);
    const std::string state = it.save();
    std::vector<int64_t> rest = rest_values(it);
    Iterator fresh = ds.iter();
    fresh.restore(state);
    EXPECT_EQ(rest_values(fresh), rest) << "after " << k;
    head.insert(head.end(), rest.begin(), rest.end());
    EXPECT_EQ(head, expected_range(60, 1, 1000));
  }
}

TEST(ParallelMap, CheapFunctionsRunInChunks) {
  // Cheap calls are taken many at a time: order, errors inside a chunk and
  // save/restore with chunks in flight must be as for single calls.
  auto cheap = [](const Element& e) {
    if (v(e) == 3001) throw Error("bad");
    return i64(v(e) * 3);
  };
  for (bool det : {true, false}) {
    Iterator it = Dataset::range(5000).map(cheap, {.num_parallel_calls = 3, .deterministic = det}).iter();
    std::vector<int64_t> got = take_values(it, 1000);
    const std::string state = it.save();
    std::vector<int64_t> rest;
    std::string msg;
    try {
      while (auto e = it.next()) rest.push_back(v(*e));
    } catch (const Error& e) {
      msg = e.what();
    }
    EXPECT_EQ(msg, "[Dataset.map] element 3001: bad");
    Iterator fresh = Dataset::range(5000).map(cheap, {.num_parallel_calls = 3, .deterministic = det}).iter();
    fresh.restore(state);
    std::vector<int64_t> rest2;
    EXPECT_EQ(error_of([&] {
                while (auto e = fresh.next()) rest2.push_back(v(*e));
              }),
              "[Dataset.map] element 3001: bad");
    if (det) {
      EXPECT_EQ(got, expected_range(1000, 3, 0));
      const std::vector<int64_t> all = expected_range(3001, 3, 0);
      EXPECT_EQ(rest, std::vector<int64_t>(all.begin() + 1000, all.end()));
      EXPECT_EQ(rest2, rest);
    } else {
      got.insert(got.end(), rest.begin(), rest.end());
      std::sort(got.begin(), got.end());
      ASSERT_GE(got.size(), 3001u);
      EXPECT_EQ(std::vector<int64_t>(got.begin(), got.begin() + 3001), expected_range(3001, 3, 0));
      EXPECT_EQ(std::count(got.begin(), got.end(), 3001 * 3), 0);
    }
  }
  EXPECT_EQ(values(Dataset::range(7777).map([](const Element& e) { return e; }, {.num_parallel_calls = 2})),
            expected_range(7777, 1, 0));
}

TEST(ParallelMap, SaveRestoreKeepsABufferedError) {
  Dataset ds = Dataset::range(20).map(
      [](const Element& e) {
        if (v(e) == 3) throw Error("bad three");
        return e;
      },
      {.num_parallel_calls = 4});
  Iterator it = ds.iter();
  EXPECT_EQ(take_values(it, 2), expected_range(2, 1, 0));
  std::this_thread::sleep_for(20ms);  // let the error reach the buffer
  const std::string state = it.save();
  Iterator fresh = ds.iter();
  fresh.restore(state);
  EXPECT_EQ(take_values(fresh, 1), std::vector<int64_t>{2});
  EXPECT_EQ(error_of([&] { fresh.next(); }), "[Dataset.map] element 3: bad three");
}

}  // namespace
}  // namespace deepflow::data
