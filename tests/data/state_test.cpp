// SPDX-License-Identifier: Apache-2.0
// Iterator save / restore: every transformation, a long pipeline, and bad state bytes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "data/data_test_util.h"

namespace deepflow::data {
namespace {

using ::testing::HasSubstr;
using deepflow::testing::error_of;

// Every component of an element as text, so whole elements compare.
std::string text(const Element& e) {
  std::string s;
  for (size_t i = 0; i < e.size(); ++i) s += (e.is_dict() ? e.names()[i] + "=" : "") + e[i].to_string() + ";";
  return s;
}
std::vector<std::string> rest(Iterator& it) {
  std::vector<std::string> out;
  while (std::optional<Element> e = it.next()) out.push_back(text(*e));
  return out;
}

// For each k: read k elements, save; the rest read by a fresh iterator restored from
// the bytes (of the same dataset, and of the pipeline built again by `make`, as a new
// process would) equals the rest read by the original iterator (read first: a
// shuffle's later epochs follow its dataset's seed sequence, which restore resets).
void check_save_restore(const std::function<Dataset()>& make, std::vector<int> ks) {
  Dataset ds = make();
  for (int k : ks) {
    SCOPED_TRACE("after " + std::to_string(k) + " elements");
    Iterator it = ds.iter();
    for (int i = 0; i < k; ++i) ASSERT_TRUE(it.next()) << "the dataset has fewer than " << k << " elements";
    const std::string state = it.save();
    const std::vector<std::string> expected = rest(it);
    Iterator again = ds.iter();
    again.restore(state);
    EXPECT_EQ(rest(again), expected);
    Iterator rebuilt = make().iter();
    rebuilt.restore(state);
    EXPECT_EQ(rest(rebuilt), expected);
  }
}

Element plus_one(const Element& e) { return Element(scalar(e[0].flat(0) + 1, DType::Int64)); }
bool odd(const Element& e) { return int64_t(e[0].flat(0)) % 2 == 1; }

TEST(StateSources, RangeSlicesTensorsZip) {
  check_save_restore([] { return Dataset::range(7); }, {0, 1, 4, 7});
  check_save_restore([] { return Dataset::from_tensor_slices({arange(0, 12, 1).view({6, 2})}); }, {0, 3, 6});
  check_save_restore([] { return Dataset::from_tensors({ones({2})}); }, {0, 1});
  check_save_restore([] { return Dataset::zip({Dataset::range(5), Dataset::range(10, 20)}); }, {0, 2, 5});
}

TEST(StateTransformations, EachOne) {
  auto r = [] { return Dataset::range(10); };
  check_save_restore([&] { return r().map(plus_one); }, {0, 3, 10});
  check_save_restore([&] { return r().filter(odd); }, {0, 2, 5});
  check_save_restore([&] { return r().take(6); }, {0, 3, 6});
  check_save_restore([&] { return r().skip(3); }, {0, 1, 7});
  check_save_restore([&] { return r().repeat(3); }, {0, 9, 10, 11, 25, 30});
  check_save_restore([&] { return r().take(2).repeat().take(9); }, {0, 1, 2, 3, 8});
  check_save_restore([&] { return r().concatenate(Dataset::range(100, 103)); }, {0, 5, 10, 11, 13});
  check_save_restore([&] { return r().enumerate(5); }, {0, 4, 10});
  check_save_restore([&] { return r().shard(3, 1); }, {0, 1, 3});
  check_save_restore([&] { return r().batch(4); }, {0, 1, 2, 3});
  check_save_restore([&] { return r().batch(3).unbatch(); }, {0, 1, 4, 9, 10});
  check_save_restore([&] {
    return r().map([](const Element& e) { return Element(fill({int64_t(e[0].flat(0)) % 3 + 1}, 1)); }).padded_batch(3);
  }, {0, 2});
  check_save_restore(
      [&] { return Dataset::range(1, 5).flat_map([](const Element& e) { return Dataset::range(int64_t(e[0].flat(0))); }); },
      {0, 1, 2, 4, 7, 10});
  check_save_restore([&] { return r().with_options(Options{}); }, {0, 5});
}

TEST(StateShuffle, BufferGeneratorAndIteration) {
  check_save_restore([] { return Dataset::range(30).shuffle(8, {.seed = 4}); }, {0, 1, 10, 25, 30});
  // a later epoch (iteration k > 0) restores its own order
  check_save_restore([] { return Dataset::range(12).shuffle(12, {.seed = 4}).repeat(3); }, {5, 13, 30});
  // dict elements and strings in the buffer
  check_save_restore(
      [] {
        return Dataset::from_tensor_slices(Element::dict({{"s", constant(std::vector<std::string>{"a", "bb", "", "dddd"})},
                                                          {"v", arange(0, 4, 1)}}))
            .shuffle(3, {.seed = 9});
      },
      {0, 1, 2, 4});
}

TEST(StateCache, MemoryAndFile) {
  check_save_restore([] { return Dataset::range(6).cache(); }, {0, 3, 6});
  // a complete memory cache: the second pass replays (restored in a new pipeline, it re-reads its input)
  check_save_restore([] { return Dataset::range(6).cache().repeat(2); }, {2, 6, 8});
  const std::string dir = (std::filesystem::temp_directory_path() / ("deepflow_state_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  const std::string prefix = dir + "/c";
  std::filesystem::remove(prefix + ".cache");
  check_save_restore([&] { return Dataset::range(6).cache(prefix); }, {0, 3});  // writing: restored passes read uncached
  values(Dataset::range(6).cache(prefix));
  ASSERT_TRUE(std::filesystem::exists(prefix + ".cache"));
  check_save_restore([&] { return Dataset::range(6).cache(prefix); }, {0, 2, 6});  // reading the file
  std::filesystem::remove_all(dir);
}

TEST(StateTextSources, TextLineAndCsv) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("deepflow_state_text_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/a.txt") << "a1\na2\na3\n";
  std::ofstream(dir + "/b.txt") << "b1\nb2";
  check_save_restore([&] { return Dataset::text_line({dir + "/a.txt", dir + "/b.txt"}); }, {0, 2, 3, 4, 5});
  std::ofstream(dir + "/c.csv") << "h\n1\n2\n\"3\"\n";
  check_save_restore([&] { return Dataset::csv({dir + "/c.csv"}, {.record_defaults = {scalar(0)}, .header = true}); },
                     {0, 1, 3});
  std::filesystem::remove_all(dir);
}

TEST(StateLongPipeline, SlicesShuffleMapBatchRepeat) {
  auto make = [] {
    Tensor x = arange(0, 200, 1).view({100, 2});
    Tensor y = arange(0, 100, 1, DType::Int64);
    return Dataset::from_tensor_slices({x, y})
        .shuffle(16, {.seed = 21})
        .map([](const Element& e) { return Element{mul(e[0], scalar(2)), e[1]}; })
        .batch(7)
        .repeat(3);
  };
  check_save_restore(make, {0, 1, 7, 14, 15, 20, 45});
}

TEST(StateErrors, CorruptShortAndForeignStates) {
  Dataset ds = Dataset::range(10).shuffle(4, {.seed = 1}).batch(2);
  Iterator it = ds.iter();
  it.next();
  const std::string good = it.save();
  Iterator fresh = ds.iter();
  EXPECT_THAT(error_of([&] { fresh.restore(""); }), HasSubstr("[Iterator.restore] the state is 0 bytes, too short"));
  EXPECT_THAT(error_of([&] { fresh.restore("XXXX" + good.substr(4)); }), HasSubstr("bad magic bytes"));
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x40;
  EXPECT_THAT(error_of([&] { fresh.restore(flipped); }), HasSubstr("[Iterator.restore] the state is corrupt: checksum"));
  // every truncation is an error, never a crash
  for (size_t n = 0; n < good.size(); n += 7)
    EXPECT_THAT(error_of([&] { fresh.restore(good.substr(0, n)); }), HasSubstr("[Iterator.restore]"));
  Iterator other = Dataset::range(10).batch(2).iter();
  EXPECT_THAT(error_of([&] { other.restore(good); }),
              HasSubstr("[Iterator.restore] the state was saved from the pipeline batch(shuffle(range)), this iterator "
                        "runs batch(range)"));
  fresh.restore(good);  // still usable after failed restores
  EXPECT_EQ(rest(fresh), rest(it));
}

TEST(StateReaderWriter, RoundTripsEveryKind) {
  IteratorStateWriter w;
  w.write_int("a/int", -5);
  w.write_string("a/str", std::string("x\0y", 3));
  w.write_tensor("a/t", arange(0, 6, 1).view({2, 3}));
  w.write_tensor("a/s", constant(std::vector<std::string>{"p", "", "qq"}));
  w.write_tensor("a/scalar", scalar(3, DType::BFloat16));
  IteratorStateReader r(w.serialize());
  EXPECT_TRUE(r.contains("a/int"));
  EXPECT_FALSE(r.contains("a/nope"));
  EXPECT_EQ(r.read_int("a/int"), -5);
  EXPECT_EQ(r.read_string("a/str"), std::string("x\0y", 3));
  Tensor t = r.read_tensor("a/t");
  EXPECT_EQ(t.shape(), Shape({2, 3}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(r.read_tensor("a/s").to_vector<std::string>(), (std::vector<std::string>{"p", "", "qq"}));
  EXPECT_EQ(r.read_tensor("a/scalar").item<float>(), 3.f);
  EXPECT_THAT(error_of([&] { r.read_int("a/nope"); }), HasSubstr("[Iterator.restore] missing key 'a/nope'"));
  EXPECT_THAT(error_of([&] { r.read_int("a/str"); }), HasSubstr("[Iterator.restore] 'a/str' is not an int"));
}

}  // namespace
}  // namespace deepflow::data
