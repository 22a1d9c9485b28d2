// SPDX-License-Identifier: Apache-2.0
// cache: in memory and in files (complete passes only, survives a new pipeline).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <atomic>
#include <numeric>
#include <thread>

#include "data/data_test_util.h"

namespace deepflow::data {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using deepflow::testing::error_of;

Dataset counted(int64_t n, int* calls) {
  return Dataset::range(n).map([calls](const Element& e) {
    ++*calls;
    return Element(scalar(e[0].flat(0) * 2, DType::Int64));
  });
}

std::string temp_prefix(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("deepflow_cache_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string p = (dir / name).string();
  fs::remove(p + ".cache");
  fs::remove(p + ".tmp");
  return p;
}

TEST(CacheMemory, SecondPassReplaysWithoutRunningTheInput) {
  int calls = 0;
  Dataset ds = counted(5, &calls).cache();
  EXPECT_EQ(values(ds), (std::vector<int64_t>{0, 2, 4, 6, 8}));
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(values(ds), (std::vector<int64_t>{0, 2, 4, 6, 8}));
  EXPECT_EQ(calls, 5);
  // cache -> repeat replays too
  EXPECT_EQ(values(ds.repeat(3)).size(), 15u);
  EXPECT_EQ(calls, 5);
}

TEST(CacheMemory, APartialPassCachesNothing) {
  int calls = 0;
  Dataset ds = counted(5, &calls).cache();
  EXPECT_EQ(values(ds.take(2)).size(), 2u);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(values(ds).size(), 5u);
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(values(ds).size(), 5u);
  EXPECT_EQ(calls, 7);
}

TEST(CacheMemory, ShuffleAfterCacheStillShuffles) {
  int calls = 0;
  Dataset ds = counted(20, &calls).cache().shuffle(20, {.seed = 1});
  auto a = values(ds), b = values(ds);
  EXPECT_NE(a, b);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
  EXPECT_EQ(calls, 20);
}

TEST(CacheFile, WritesOnCompletionAndLaterPipelinesReadIt) {
  const std::string prefix = temp_prefix("complete");
  int calls = 0;
  {
    Dataset ds = counted(4, &calls).cache(prefix);
    Iterator it = ds.iter();
    EXPECT_EQ(take_values(it, 4), (std::vector<int64_t>{0, 2, 4, 6}));
    EXPECT_FALSE(fs::exists(prefix + ".cache"));  // not before the end of the input
    EXPECT_TRUE(fs::exists(prefix + ".tmp"));
    EXPECT_FALSE(it.next());
    EXPECT_TRUE(fs::exists(prefix + ".cache"));
    EXPECT_FALSE(fs::exists(prefix + ".tmp"));
  }
  // A new pipeline (as in a new process) with another input reads the file instead.
  int other_calls = 0;
  Dataset later = counted(100, &other_calls).cache(prefix);
  EXPECT_EQ(values(later), (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(other_calls, 0);
  EXPECT_EQ(values(later.repeat(2)).size(), 8u);
}

TEST(CacheFile, AnAbandonedPassLeavesNoCache) {
  const std::string prefix = temp_prefix("abandoned");
  int calls = 0;
  Dataset ds = counted(10, &calls).cache(prefix);
  {
    Iterator it = ds.iter();
    take_values(it, 3);
  }
  EXPECT_FALSE(fs::exists(prefix + ".cache"));
  EXPECT_FALSE(fs::exists(prefix + ".tmp"));
  EXPECT_EQ(values(ds).size(), 10u);
  EXPECT_TRUE(fs::exists(prefix + ".cache"));
  EXPECT_EQ(calls, 13);
}

TEST(CacheFile, AStaleTempFileIsIgnored) {
  const std::string prefix = temp_prefix("stale");
  std::ofstream(prefix + ".tmp") << "half a cache from a crashed run";
  int calls = 0;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(values(counted(3, &calls).cache(prefix)), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("ignoring the incomplete cache file"));
  EXPECT_EQ(values(counted(3, &calls).cache(prefix)), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(calls, 3);
}

TEST(CacheFile, StringsDictsAndEmptyInputsRoundTrip) {
  const std::string prefix = temp_prefix("strings");
  Tensor words = constant(std::vector<std::string>{"alpha", "", std::string("nul\0byte", 8)});
  Dataset ds = Dataset::from_tensor_slices(Element::dict({{"w", words}, {"x", arange(0, 6, 1).view({3, 2})}}));
  auto first = collect(ds.cache(prefix));
  auto again = collect(Dataset::range(1).map([](const Element&) -> Element { throw Error("not called"); }).cache(prefix));
  ASSERT_EQ(again.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(again[i].names(), (std::vector<std::string>{"w", "x"}));
    EXPECT_EQ(*again[i]["w"].data<std::string>(), *first[i]["w"].data<std::string>());
    EXPECT_EQ(again[i]["x"].to_vector<float>(), first[i]["x"].to_vector<float>());
  }
  EXPECT_EQ(again[2]["w"].data<std::string>()->size(), 8u);

  const std::string empty = temp_prefix("empty");
  EXPECT_TRUE(values(Dataset::range(0).cache(empty)).empty());
  EXPECT_TRUE(fs::exists(empty + ".cache"));
  EXPECT_TRUE(values(Dataset::range(5).cache(empty)).empty());
}

TEST(CacheFile, ACorruptFileIsAnErrorNamingTheFile) {
  const std::string prefix = temp_prefix("corrupt");
  values(Dataset::range(50).cache(prefix));
  const auto size = fs::file_size(prefix + ".cache");
  fs::resize_file(prefix + ".cache", size - 20);
  EXPECT_THAT(error_of([&] { values(Dataset::range(50).cache(prefix)); }),
              HasSubstr("[Dataset.cache] " + prefix + ".cache: truncated at byte"));
  std::ofstream(prefix + ".cache", std::ios::binary) << "not a cache";
  EXPECT_THAT(error_of([&] { values(Dataset::range(50).cache(prefix)); }), HasSubstr("bad magic bytes"));
}

TEST(CacheMemory, IteratorsInSeveralThreadsShareOneDataset) {
  std::atomic<int> atomic_calls{0};
  Dataset ds = Dataset::range(200)
                   .map([&](const Element& e) {
                     ++atomic_calls;
                     return e;
                   })
                   .cache()
                   .shuffle(50, {.seed = 2});
  std::vector<std::vector<int64_t>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int pass = 0; pass < 3; ++pass) {
        std::vector<int64_t> v = values(ds);
        std::sort(v.begin(), v.end());
        got[size_t(t)].insert(got[size_t(t)].end(), v.begin(), v.end());
      }
    });
  for (std::thread& th : threads) th.join();
  std::vector<int64_t> one(200);
  std::iota(one.begin(), one.end(), 0);
  for (const auto& g : got)
    for (int pass = 0; pass < 3; ++pass) EXPECT_TRUE(std::equal(one.begin(), one.end(), g.begin() + pass * 200));
  const int before = atomic_calls.load();
  values(ds);
  EXPECT_EQ(atomic_calls.load(), before);  // complete now: replayed
}

}  // namespace
}  // namespace deepflow::data
