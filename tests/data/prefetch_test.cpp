// SPDX-License-Identifier: Apache-2.0
// prefetch: order, a bounded buffer, overlap of producer and consumer, errors,
// early destruction, save/restore with buffered elements.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

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

std::vector<int64_t> iota(int64_t a, int64_t b) {
  std::vector<int64_t> out;
  for (int64_t i = a; i < b; ++i) out.push_back(i);
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Waits up to 2 s for pred (so a bug fails the test instead of hanging it).
template <class P>
bool eventually(P pred) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!pred()) {
    if (seconds_since(t0) > 2) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(Prefetch, KeepsOrderForEveryBufferSize) {
  for (int64_t b : std::vector<int64_t>{0, 1, 2, 7, 100, kAutotune}) {
    Dataset ds = Dataset::range(50).prefetch(b);
    EXPECT_EQ(values(ds), iota(0, 50)) << "buffer " << b;
    EXPECT_EQ(ds.cardinality(), 50);
  }
  Options off;
  off.autotune.enabled = false;  // the legacy buffer rule
  EXPECT_EQ(values(Dataset::range(300).prefetch(kAutotune).with_options(off)), iota(0, 300));
  EXPECT_THAT(error_of([] { Dataset::range(3).prefetch(-5); }),
              HasSubstr("[Dataset.prefetch] buffer_size must be >= 0 or kAutotune, got -5"));
}

TEST(Prefetch, BufferIsBounded) {
  std::atomic<int> produced{0};
  Dataset ds = Dataset::range(1000).map([&](const Element& e) {
    ++produced;
    return e;
  });
  Iterator it = ds.prefetch(3).iter();
  ASSERT_EQ(take_values(it, 1), std::vector<int64_t>{0});
  // 1 consumed + 3 buffered, and no more however long we wait.
  EXPECT_TRUE(eventually([&] { return produced.load() == 4; })) << produced.load();
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(produced.load(), 4);
  ASSERT_EQ(take_values(it, 2), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(eventually([&] { return produced.load() == 6; })) << produced.load();
}

TEST(Prefetch, OverlapsProducerAndConsumer) {
  // Producer 20 ms per element and consumer 20 ms: with prefetch about 10 x 20 ms
  // in all, without it 2 x that. Compared in the same run, as the machine is shared.
  auto run = [](int64_t buffer) {
    Dataset ds = Dataset::range(10).map([](const Element& e) {
      std::this_thread::sleep_for(20ms);
      return e;
    });
    if (buffer > 0) ds = ds.prefetch(buffer);
    const auto t0 = std::chrono::steady_clock::now();
    int n = 0;
    for (const Element& e : ds) {
      (void)e;
      std::this_thread::sleep_for(20ms);
      ++n;
    }
    EXPECT_EQ(n, 10);
    return seconds_since(t0);
  };
  const double serial = run(0), overlapped = run(2);
  EXPECT_LT(overlapped, 0.75 * serial) << overlapped << " s with prefetch, " << serial << " s without";
}

TEST(Prefetch, ProducerRunsOneOpenMpThread) {
  std::atomic<int> threads{0};
  Dataset ds = Dataset::range(3).map([&](const Element& e) {
    threads = omp_get_max_threads();
    return e;
  });
  EXPECT_EQ(values(ds.prefetch(2)).size(), 3u);
  EXPECT_EQ(threads.load(), 1);
}

TEST(Prefetch, ErrorComesAfterTheElementsBeforeIt) {
  Dataset ds = Dataset::range(10)
                   .map([](const Element& e) {
                     if (v(e) == 4) throw Error("four");
                     return e;
                   })
                   .prefetch(8);
  Iterator it = ds.iter();
  EXPECT_EQ(take_values(it, 4), iota(0, 4));
  EXPECT_EQ(error_of([&] { it.next(); }), "[Dataset.map] element 4: four");
}

TEST(Prefetch, DestroyingMidPassJoinsPromptly) {
  // Producer blocked on a full buffer.
  {
    Iterator it = Dataset::range(0, 1 << 30).prefetch(2).iter();
    ASSERT_TRUE(it.next().has_value());
    std::this_thread::sleep_for(5ms);
  }
  // Producer inside a slow input: destruction waits for that one call only.
  Iterator it = Dataset::range(0, 1 << 30)
                    .map([](const Element& e) {
                      std::this_thread::sleep_for(100ms);
                      return e;
                    })
                    .prefetch(4)
                    .iter();
  ASSERT_TRUE(it.next().has_value());
  const auto t0 = std::chrono::steady_clock::now();
  it = Iterator();
  EXPECT_LT(seconds_since(t0), 0.5);
}

TEST(Prefetch, SaveRestoreWithBufferedElements) {
  Dataset ds = Dataset::range(40).prefetch(5).map([](const Element& e) { return e; }).prefetch(kAutotune);
  for (int k : {0, 3, 10, 39, 40}) {
    Iterator it = ds.iter();
    EXPECT_EQ(take_values(it, k), iota(0, k));
    std::this_thread::sleep_for(5ms);  // buffers fill up
    const std::string state = it.save();
    EXPECT_EQ(rest_values(it), iota(k, 40));
    Iterator fresh = ds.iter();
    fresh.restore(state);
    EXPECT_EQ(rest_values(fresh), iota(k, 40)) << "after " << k;
  }
}

}  // namespace
}  // namespace deepflow::data
