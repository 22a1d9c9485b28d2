// SPDX-License-Identifier: Apache-2.0
// from_generator, zip, list_files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "data/data_test_util.h"

namespace deepflow::data {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using deepflow::testing::error_of;

// A generator of n float32 vectors [i, i]; element `bad_at` has another shape.
Dataset counting_generator(int n, int bad_at = -1, int throw_at = -1) {
  return Dataset::from_generator(
      [=] {
        return GeneratorFn([=, i = 0]() mutable -> std::optional<Element> {
          if (i == n) return std::nullopt;
          if (i == throw_at) throw std::runtime_error("sensor offline");
          const int k = i++;
          return Element{fill({k == bad_at ? 3 : 2}, k), scalar(k, DType::Int64)};
        });
      },
      ElementSpec{{{DType::Float32, Shape{2}}, {DType::Int64, Shape{}}}, {}});
}

TEST(SourcesGenerator, YieldsItsElementsEachPass) {
  Dataset ds = counting_generator(4);
  EXPECT_EQ(ds.cardinality(), kUnknownCardinality);
  EXPECT_EQ(ds.element_spec().to_string(), "(float32[2], int64[])");
  auto all = collect(ds);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[3][0].to_vector<float>(), (std::vector<float>{3, 3}));
  EXPECT_EQ(values(ds.map([](const Element& e) { return Element(e[1]); })), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(collect(ds).size(), 4u);  // a second pass restarts the generator
}

TEST(SourcesGenerator, SpecMismatchAndThrowsNameTheElement) {
  Iterator it = counting_generator(10, 7).iter();
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(it.next());
  EXPECT_THAT(error_of([&] { it.next(); }),
              HasSubstr("[Dataset.from_generator] element 7 is (float32[3], int64[]), which does not match the spec "
                        "(float32[2], int64[])"));
  EXPECT_THAT(error_of([] { collect(counting_generator(10, -1, 7)); }),
              HasSubstr("[Dataset.from_generator] element 7: sensor offline"));
  // dims -1 in the spec accept any size
  Dataset any = Dataset::from_generator(
      [] {
        return GeneratorFn([i = 1]() mutable -> std::optional<Element> {
          if (i > 3) return std::nullopt;
          return Element(zeros({i++}));
        });
      },
      ElementSpec{{{DType::Float32, Shape{-1}}}, {}});
  EXPECT_EQ(collect(any).size(), 3u);
}

TEST(SourcesGenerator, CannotSave) {
  Iterator it = counting_generator(3).map([](const Element& e) { return e; }).iter();
  it.next();
  EXPECT_THAT(error_of([&] { it.save(); }), HasSubstr("[Iterator.save] from_generator cannot save its position"));
}

TEST(SourcesZip, SideBySideUntilTheShortestEnds) {
  Dataset a = Dataset::range(5), b = Dataset::from_tensor_slices({constant({10.f, 11.f, 12.f})});
  Dataset z = Dataset::zip({a, b});
  EXPECT_EQ(z.element_spec().to_string(), "(int64[], float32[])");
  auto all = collect(z);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2][0].item<int64_t>(), 2);
  EXPECT_EQ(all[2][1].item<float>(), 12.f);
  Dataset d1 = Dataset::from_tensor_slices(Element::dict({{"x", zeros({2})}}));
  Dataset d2 = Dataset::from_tensor_slices(Element::dict({{"y", ones({2})}}));
  Dataset dz = Dataset::zip({d1, d2});
  EXPECT_EQ(dz.element_spec().to_string(), "{x: float32[], y: float32[]}");
  EXPECT_EQ(collect(dz)[1]["y"].item<float>(), 1.f);
  EXPECT_THAT(error_of([&] { Dataset::zip({d1, d1}); }), HasSubstr("two datasets have a component named 'x'"));
  EXPECT_EQ(values(Dataset::zip({Dataset::range(3).repeat(), Dataset::range(4)})), (std::vector<int64_t>{0, 1, 2, 0}));
}

TEST(SourcesListFiles, SortedShuffledAndErrors) {
  fs::path dir = fs::temp_directory_path() / ("deepflow_list_files_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<std::string> names;
  for (int i = 0; i < 8; ++i) {
    const std::string p = (dir / ("part-" + std::to_string(i) + ".txt")).string();
    std::ofstream(p) << i;
    names.push_back(p);
  }
  std::ofstream((dir / "other.csv").string()) << "x";
  auto strings = [](const Dataset& ds) {
    std::vector<std::string> out;
    for (const Element& e : collect(ds)) out.push_back(*e[0].data<std::string>());
    return out;
  };
  const std::string pattern = (dir / "part-*.txt").string();
  Dataset ordered = Dataset::list_files(pattern, false);
  EXPECT_EQ(ordered.element_spec().to_string(), "(string[])");
  EXPECT_EQ(strings(ordered), names);
  auto shuffled = strings(Dataset::list_files(pattern, {}, 3));
  EXPECT_NE(shuffled, names);
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, names);
  EXPECT_EQ(strings(Dataset::list_files(pattern, {}, 3)), strings(Dataset::list_files(pattern, {}, 3)));
  EXPECT_THAT(error_of([&] { Dataset::list_files((dir / "*.parquet").string()); }),
              HasSubstr("[Dataset.list_files] no files match the pattern '" + (dir / "*.parquet").string() + "'"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace deepflow::data
