// SPDX-License-Identifier: Apache-2.0
// map (sequential), filter, flat_map, take, skip, repeat, concatenate, enumerate, shard.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "data/data_test_util.h"

namespace deepflow::data {
namespace {

using ::testing::HasSubstr;
using deepflow::testing::error_of;

Element times(const Element& e, double k) { return Element(scalar(e[0].flat(0) * k, DType::Int64)); }

TEST(TransformationsMap, AppliesInOrderAndCallsOncePerElement) {
  int calls = 0;
  Dataset ds = Dataset::range(5).map([&](const Element& e) {
    ++calls;
    return times(e, 10);
  });
  EXPECT_EQ(calls, 0);  // lazy
  EXPECT_EQ(values(ds), (std::vector<int64_t>{0, 10, 20, 30, 40}));
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(ds.element_spec().to_string(), "<unknown>");
  // a map may change the element's structure
  Dataset pairs = Dataset::range(3).map([](const Element& e) { return Element{e[0], scalar(1.5)}; });
  auto all = collect(pairs);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].size(), 2u);
  EXPECT_EQ(all[2][1].item<float>(), 1.5f);
}

TEST(TransformationsMap, ErrorsNameTheElementAndKeepTheMessage) {
  Dataset ds = Dataset::range(20).map([](const Element& e) -> Element {
    if (e[0].item<int64_t>() == 12) throw std::runtime_error("bad pixel");
    return e;
  });
  Iterator it = ds.iter();
  EXPECT_EQ(take_values(it, 12).size(), 12u);
  EXPECT_THAT(error_of([&] { it.next(); }), HasSubstr("[Dataset.map] element 12: bad pixel"));
  // deepflow errors from ops inside keep their text too
  Dataset bad = Dataset::range(3).map([](const Element& e) { return Element(reshape(e[0], {2})); });
  EXPECT_THAT(error_of([&] { collect(bad); }), HasSubstr("[Dataset.map] element 0: [reshape]"));
  EXPECT_THAT(error_of([] { Dataset::range(3).map([](const Element& e) { return e; }, {.num_parallel_calls = 0}); }),
              HasSubstr("num_parallel_calls must be >= 1 or kAutotune, got 0"));
}

TEST(TransformationsFilter, KeepsMatchingElementsAndWrapsErrors) {
  Dataset ds = Dataset::range(10).filter([](const Element& e) { return e[0].item<int64_t>() % 3 == 0; });
  EXPECT_EQ(values(ds), (std::vector<int64_t>{0, 3, 6, 9}));
  Dataset none = Dataset::range(10).filter([](const Element&) { return false; });
  EXPECT_TRUE(values(none).empty());
  Dataset bad = Dataset::range(10).filter([](const Element& e) -> bool {
    if (e[0].item<int64_t>() == 4) throw Error("nope");
    return true;
  });
  EXPECT_THAT(error_of([&] { collect(bad); }), HasSubstr("[Dataset.filter] element 4: nope"));
}

TEST(TransformationsFlatMap, ConcatenatesTheInnerDatasets) {
  Dataset ds = Dataset::range(1, 4).flat_map([](const Element& e) { return Dataset::range(e[0].item<int64_t>()); });
  EXPECT_EQ(values(ds), (std::vector<int64_t>{0, 0, 1, 0, 1, 2}));
  Dataset bad = Dataset::range(3).flat_map([](const Element& e) -> Dataset {
    if (e[0].item<int64_t>() == 2) throw Error("no dataset");
    return Dataset::range(1);
  });
  EXPECT_THAT(error_of([&] { collect(bad); }), HasSubstr("[Dataset.flat_map] element 2: no dataset"));
}

TEST(TransformationsTakeSkip, Counts) {
  Dataset r = Dataset::range(6);
  EXPECT_EQ(values(r.take(2)), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(values(r.take(10)).size(), 6u);
  EXPECT_EQ(values(r.take(-1)).size(), 6u);
  EXPECT_TRUE(values(r.take(0)).empty());
  EXPECT_EQ(values(r.skip(4)), (std::vector<int64_t>{4, 5}));
  EXPECT_TRUE(values(r.skip(-1)).empty());
  EXPECT_TRUE(values(r.skip(9)).empty());
  EXPECT_EQ(values(r.skip(1).take(2)), (std::vector<int64_t>{1, 2}));
}

TEST(TransformationsRepeat, PassesAndForever) {
  Dataset r = Dataset::range(3);
  EXPECT_EQ(values(r.repeat(2)), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_TRUE(values(r.repeat(0)).empty());
  EXPECT_EQ(values(r.repeat().take(7)), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0}));
  // repeat() of an empty dataset ends instead of spinning
  EXPECT_TRUE(values(Dataset::range(0).repeat()).empty());
  EXPECT_TRUE(values(r.filter([](const Element&) { return false; }).repeat()).empty());
  // each pass re-creates the input: a generator restarts
  int starts = 0;
  Dataset g = Dataset::from_generator(
      [&] {
        ++starts;
        return GeneratorFn([i = 0]() mutable -> std::optional<Element> {
          if (i == 2) return std::nullopt;
          return Element(scalar(i++, DType::Int64));
        });
      },
      ElementSpec{{{DType::Int64, Shape{}}}, {}});
  EXPECT_EQ(values(g.repeat(3)), (std::vector<int64_t>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(starts, 3);
}

TEST(TransformationsConcatenate, OneAfterTheOther) {
  Dataset a = Dataset::range(2), b = Dataset::range(10, 12);
  EXPECT_EQ(values(a.concatenate(b)), (std::vector<int64_t>{0, 1, 10, 11}));
  Dataset v1 = Dataset::from_tensor_slices({zeros({2, 3})}), v2 = Dataset::from_tensor_slices({zeros({2, 4})});
  EXPECT_EQ(v1.concatenate(v2).element_spec().to_string(), "(float32[-1])");
  EXPECT_EQ(collect(v1.concatenate(v2)).size(), 4u);
  EXPECT_THAT(error_of([&] { a.concatenate(v1); }), HasSubstr("[Dataset.concatenate] component 0 differs"));
}

TEST(TransformationsEnumerate, PrependsTheIndex) {
  Dataset ds = Dataset::from_tensor_slices({constant({5.f, 6.f, 7.f})}).enumerate(100);
  EXPECT_EQ(ds.element_spec().to_string(), "(int64[], float32[])");
  auto all = collect(ds);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2][0].item<int64_t>(), 102);
  EXPECT_EQ(all[2][1].item<float>(), 7.f);
}

TEST(TransformationsShard, EveryNth) {
  Dataset r = Dataset::range(10);
  EXPECT_EQ(values(r.shard(3, 0)), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(values(r.shard(3, 2)), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_THAT(error_of([&] { r.shard(3, 3); }), HasSubstr("[Dataset.shard] index must be in [0, 3), got 3"));
  EXPECT_THAT(error_of([&] { r.shard(0, 0); }), HasSubstr("num_shards must be positive"));
}

TEST(TransformationsApply, CallsTheFunction) {
  auto evens = [](const Dataset& d) { return d.filter([](const Element& e) { return e[0].item<int64_t>() % 2 == 0; }); };
  EXPECT_EQ(values(Dataset::range(5).apply(evens)), (std::vector<int64_t>{0, 2, 4}));
}

}  // namespace
}  // namespace deepflow::data
