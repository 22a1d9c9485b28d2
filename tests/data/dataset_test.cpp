// SPDX-License-Identifier: Apache-2.0
// The framework: elements, specs, options, iterators and range-for, cardinality.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "data/data_test_util.h"

namespace deepflow::data {
namespace {

using ::testing::HasSubstr;
using deepflow::testing::error_of;

TEST(DatasetElement, TupleAndDict) {
  Element t{scalar(1), scalar(2, DType::Int64)};
  EXPECT_EQ(t.size(), 2u);
  EXPECT_FALSE(t.is_dict());
  Element d = Element::dict({{"x", scalar(1)}, {"y", scalar(3, DType::Int32)}});
  EXPECT_TRUE(d.is_dict());
  EXPECT_EQ(d["y"].item<int32_t>(), 3);
  EXPECT_THAT(error_of([&] { (void)d["z"]; }), HasSubstr("[Element] no component 'z'; components: x, y"));
  EXPECT_THAT(error_of([&] { (void)t["x"]; }), HasSubstr("no component 'x'"));
  EXPECT_THAT(error_of([] { Element::dict({{"a", scalar(1)}, {"a", scalar(2)}}); }), HasSubstr("duplicate"));
  EXPECT_THAT(error_of([] { Element({scalar(1)}, {"a", "b"}); }), HasSubstr("2 names for 1 components"));
}

TEST(DatasetElementSpec, ToStringOfAndMatches) {
  ElementSpec s{{{DType::Float32, Shape{-1, 28, 28}}, {DType::Int64, Shape{-1}}}, {}};
  EXPECT_EQ(s.to_string(), "(float32[-1,28,28], int64[-1])");
  ElementSpec d{{{DType::Float32, Shape{4}}, {DType::Int64, Shape{}}}, {"x", "y"}};
  EXPECT_EQ(d.to_string(), "{x: float32[4], y: int64[]}");
  Element e{zeros({3, 28, 28}), zeros({3}, DType::Int64)};
  EXPECT_TRUE(s.matches(e));
  EXPECT_EQ(ElementSpec::of(e).to_string(), "(float32[3,28,28], int64[3])");
  EXPECT_FALSE(s.matches(Element{zeros({3, 28, 27}), zeros({3}, DType::Int64)}));
  EXPECT_FALSE(s.matches(Element{zeros({3, 28, 28}), zeros({3}, DType::Int32)}));
  EXPECT_FALSE(s.matches(Element{zeros({3, 28, 28})}));
  EXPECT_FALSE(d.matches(Element{zeros({4}), zeros({}, DType::Int64)}));  // names differ
  EXPECT_TRUE(d.matches(Element::dict({{"x", zeros({4})}, {"y", zeros({}, DType::Int64)}})));
}

TEST(DatasetRange, ValuesStepsAndDtype) {
  EXPECT_EQ(values(Dataset::range(5)), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(values(Dataset::range(2, 10, 3)), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(values(Dataset::range(5, 0, -2)), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(values(Dataset::range(3, 3)), std::vector<int64_t>{});
  EXPECT_EQ(Dataset::range(2, 10, 3).cardinality(), 3);
  EXPECT_EQ(Dataset::range(5, 0, -2).cardinality(), 3);
  EXPECT_EQ(Dataset::range(0, 5, -1).cardinality(), 0);
  Dataset f = Dataset::range(0, 3, 1, DType::Float32);
  EXPECT_EQ(f.element_spec().to_string(), "(float32[])");
  Iterator it = f.iter();
  EXPECT_EQ(it.next()->tensors()[0].dtype(), DType::Float32);
  // int64 exact past 2^53
  const int64_t big = (int64_t(1) << 60) + 1;
  auto bigs = collect(Dataset::range(big, big + 2));
  ASSERT_EQ(bigs.size(), 2u);
  EXPECT_EQ(bigs[0][0].item<int64_t>(), big);
  EXPECT_EQ(bigs[1][0].item<int64_t>(), big + 1);
  EXPECT_THAT(error_of([] { Dataset::range(0, 5, 0); }), HasSubstr("[Dataset.range] step must not be 0"));
}

TEST(DatasetIterator, EndIsStickyAndRangeForWorks) {
  Iterator it = Dataset::range(2).iter();
  EXPECT_TRUE(it.next());
  EXPECT_TRUE(it.next());
  EXPECT_FALSE(it.next());
  EXPECT_FALSE(it.next());
  int64_t sum = 0, n = 0;
  for (const Element& e : Dataset::range(1, 5)) {
    sum += e[0].item<int64_t>();
    ++n;
  }
  EXPECT_EQ(sum, 10);
  EXPECT_EQ(n, 4);
  for (const Element& e : Dataset::range(0)) ADD_FAILURE() << "empty dataset yielded " << e[0];
  Iterator empty;
  EXPECT_THAT(error_of([&] { empty.next(); }), HasSubstr("[Iterator] the iterator is empty"));
  EXPECT_THAT(error_of([] { Dataset().cardinality(); }), HasSubstr("[Dataset] the dataset is undefined"));
}

TEST(DatasetIterator, IndependentIteratorsAndErrorsAreSticky) {
  Dataset ds = Dataset::range(3);
  Iterator a = ds.iter(), b = ds.iter();
  EXPECT_EQ(a.next()->tensors()[0].item<int64_t>(), 0);
  EXPECT_EQ(a.next()->tensors()[0].item<int64_t>(), 1);
  EXPECT_EQ(b.next()->tensors()[0].item<int64_t>(), 0);
  Iterator bad = ds.map([](const Element& e) -> Element {
                     if (e[0].item<int64_t>() == 1) throw Error("boom");
                     return e;
                   }).iter();
  EXPECT_TRUE(bad.next());
  EXPECT_THAT(error_of([&] { bad.next(); }), HasSubstr("[Dataset.map] element 1: boom"));
  EXPECT_THAT(error_of([&] { bad.next(); }), HasSubstr("ended with an error: [Dataset.map] element 1: boom"));
}

TEST(DatasetSlices, TensorsTuplesAndDicts) {
  Tensor x = constant({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {3, 2});
  Tensor y = constant<int64_t>({7, 8, 9});
  Dataset ds = Dataset::from_tensor_slices({x, y});
  EXPECT_EQ(ds.cardinality(), 3);
  EXPECT_EQ(ds.element_spec().to_string(), "(float32[2], int64[])");
  std::vector<Element> all = collect(ds);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1][0].to_vector<float>(), (std::vector<float>{3, 4}));
  EXPECT_EQ(all[1][0].shape(), Shape({2}));
  EXPECT_EQ(all[2][1].item<int64_t>(), 9);
  EXPECT_EQ(all[2][1].rank(), 0);

  Dataset dd = Dataset::from_tensor_slices(Element::dict({{"a", y}, {"b", x}}));
  EXPECT_EQ(dd.element_spec().to_string(), "{a: int64[], b: float32[2]}");
  EXPECT_EQ(collect(dd)[0]["b"].to_vector<float>(), (std::vector<float>{1, 2}));

  EXPECT_THAT(error_of([&] { Dataset::from_tensor_slices({x, constant<int64_t>({1, 2})}); }),
              HasSubstr("component 0 is float32[3,2], component 1 is int64[2]"));
  EXPECT_THAT(error_of([] { Dataset::from_tensor_slices({scalar(1)}); }), HasSubstr("is a scalar"));
}

TEST(DatasetFromTensors, OneElement) {
  Dataset ds = Dataset::from_tensors({constant({1.f, 2.f}), scalar(3)});
  EXPECT_EQ(ds.cardinality(), 1);
  EXPECT_EQ(ds.element_spec().to_string(), "(float32[2], float32[])");
  auto all = collect(ds);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0][0].to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(DatasetOptions, OutermostWithOptionsWins) {
  Dataset ds = Dataset::range(4);
  EXPECT_TRUE(ds.options().deterministic);
  Options o;
  o.deterministic = false;
  Options o2;
  o2.autotune.enabled = false;
  Dataset a = ds.with_options(o).map([](const Element& e) { return e; }).batch(2);
  EXPECT_FALSE(a.options().deterministic);
  Dataset b = a.with_options(o2);
  EXPECT_TRUE(b.options().deterministic);
  EXPECT_FALSE(b.options().autotune.enabled);
  EXPECT_EQ(values(a.unbatch()), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(DatasetCardinality, ThroughTransformations) {
  Dataset r = Dataset::range(10);
  EXPECT_EQ(r.batch(3).cardinality(), 4);
  EXPECT_EQ(r.batch(3, {.drop_remainder = true}).cardinality(), 3);
  EXPECT_EQ(r.repeat().cardinality(), kInfiniteCardinality);
  EXPECT_EQ(r.repeat(3).cardinality(), 30);
  EXPECT_EQ(r.filter([](const Element&) { return true; }).cardinality(), kUnknownCardinality);
  EXPECT_EQ(r.repeat().take(7).cardinality(), 7);
  EXPECT_EQ(r.skip(4).cardinality(), 6);
  EXPECT_EQ(r.skip(40).cardinality(), 0);
  EXPECT_EQ(r.take(-1).cardinality(), 10);
  EXPECT_EQ(r.shard(3, 0).cardinality(), 4);
  EXPECT_EQ(r.shard(3, 2).cardinality(), 3);
  EXPECT_EQ(r.concatenate(r).cardinality(), 20);
  EXPECT_EQ(Dataset::zip({r, r.take(4)}).cardinality(), 4);
  EXPECT_EQ(Dataset::zip({r, r.repeat()}).cardinality(), 10);
  EXPECT_EQ(r.map([](const Element& e) { return e; }).cardinality(), 10);
}

}  // namespace
}  // namespace deepflow::data
