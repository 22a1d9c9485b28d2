// SPDX-License-Identifier: Apache-2.0
#include "deepflow/data/example.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"

namespace deepflow::data {
namespace {

using deepflow::testing::error_of;
using ::testing::HasSubstr;

std::string bytes_of(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s.push_back(char(b));
  return s;
}

std::string hex(const std::string& s) {
  std::string out;
  char b[4];
  for (unsigned char c : s) {
    std::snprintf(b, sizeof b, "%02x ", c);
    out += b;
  }
  if (!out.empty()) out.pop_back();
  return out;
}

// specs.md 2.2: Example{features{feature{"x": float_list{[1.0]}}}} is these 17 bytes.
const std::string kSpecExample =
    bytes_of({0x0a, 0x0f, 0x0a, 0x0d, 0x0a, 0x01, 0x78, 0x12, 0x08, 0x12, 0x06, 0x0a, 0x04, 0x00, 0x00, 0x80, 0x3f});

Tensor strings(std::vector<std::string> v) { return constant(v); }

TEST(Example, BuilderWritesTheSpecBytes) {
  EXPECT_EQ(hex(ExampleBuilder().set("x", std::vector<float>{1.f}).serialize()), hex(kSpecExample));
  // Map entries come out sorted, whatever the order of set().
  EXPECT_EQ(ExampleBuilder().set("b", std::vector<int64_t>{1}).set("a", std::vector<float>{2.f}).serialize(),
            ExampleBuilder().set("a", std::vector<float>{2.f}).set("b", std::vector<int64_t>{1}).serialize());
}

TEST(Example, ReadExampleRoundTrip) {
  const auto m = read_example(kSpecExample);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m.at("x").kind, FeatureValues::Kind::Float);
  EXPECT_EQ(m.at("x").floats, std::vector<float>{1.f});
  EXPECT_EQ(m.at("x").to_string(), "float_list [1]");

  const std::string ex = ExampleBuilder()
                             .set("f", std::vector<float>{1.5f, -2.f})
                             .set("i", std::vector<int64_t>{INT64_MIN, 0, INT64_MAX})
                             .set("s", std::vector<std::string>{"ab", std::string("\0\xff", 2), ""})
                             .set("e", std::vector<float>{})
                             .serialize();
  const auto r = read_example(ex);
  EXPECT_EQ(r.at("f").to_string(), "float_list [1.5, -2]");
  EXPECT_EQ(r.at("i").int64s, (std::vector<int64_t>{INT64_MIN, 0, INT64_MAX}));
  EXPECT_EQ(r.at("s").to_string(), "bytes_list [\"ab\", \"\\x00\\xff\", \"\"]");
  EXPECT_EQ(r.at("e").kind, FeatureValues::Kind::Float);  // an empty list keeps its kind
  EXPECT_TRUE(r.at("e").floats.empty());
  EXPECT_THAT(error_of([] { read_example("\x0a\x05zz"); }),
              HasSubstr("[read_example] not a valid tf.train.Example (4 bytes)"));
}

TEST(Example, UnpackedListsParseToo) {
  // float_list value 1.0 written unpacked: tag 0x0d (field 1, fixed32) instead of 0x0a.
  // Feature{float_list{0d 00 00 80 3f}} = 12 05 0d 00 00 80 3f; entry key "x".
  const std::string unpacked =
      bytes_of({0x0a, 0x0e, 0x0a, 0x0c, 0x0a, 0x01, 0x78, 0x12, 0x07, 0x12, 0x05, 0x0d, 0x00, 0x00, 0x80, 0x3f});
  EXPECT_EQ(read_example(unpacked).at("x").floats, std::vector<float>{1.f});
  // int64_list [3, 300] unpacked: 1a 05 08 03 08 ac 02 (tag 0x08 = field 1 varint).
  const std::string ints =
      bytes_of({0x0a, 0x0e, 0x0a, 0x0c, 0x0a, 0x01, 0x6b, 0x12, 0x07, 0x1a, 0x05, 0x08, 0x03, 0x08, 0xac, 0x02});
  const ParsedExamples p = parse_single_example(string_scalar(ints), {{"k", FixedLenFeature{DType::Int64, {2}}}});
  EXPECT_EQ(p.dense.at("k").to_vector<int64_t>(), (std::vector<int64_t>{3, 300}));
}

TEST(Example, ParseExampleDenseAndSparse) {
  const std::vector<std::string> exs = {
      ExampleBuilder()
          .set("img", std::vector<float>{1, 2, 3, 4})
          .set("label", std::vector<int64_t>{7})
          .set("name", std::vector<std::string>{"first"})
          .set("tags", std::vector<std::string>{"a", "b"})
          .set("ignored", std::vector<float>{9})
          .serialize(),
      ExampleBuilder()
          .set("img", std::vector<float>{5, 6, 7, 8})
          .set("name", std::vector<std::string>{"second"})
          .serialize(),
      ExampleBuilder()
          .set("img", std::vector<float>{0, 0, 0, 1})
          .set("label", std::vector<int64_t>{3})
          .set("name", std::vector<std::string>{"third"})
          .set("tags", std::vector<std::string>{"c", "d", "e"})
          .serialize(),
  };
  const std::map<std::string, FeatureSpec> spec = {
      {"img", FixedLenFeature{DType::Float32, {2, 2}}},
      {"label", FixedLenFeature{DType::Int64, {}, scalar(-1, DType::Int64)}},
      {"name", FixedLenFeature{DType::String, {1}}},
      {"tags", VarLenFeature{DType::String}},
  };
  const ParsedExamples p = parse_example(strings(exs), spec);
  EXPECT_EQ(p.dense.at("img").shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(p.dense.at("img").to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 1}));
  EXPECT_EQ(p.dense.at("label").shape(), (Shape{3}));
  EXPECT_EQ(p.dense.at("label").to_vector<int64_t>(), (std::vector<int64_t>{7, -1, 3}));  // default for example 1
  EXPECT_EQ(p.dense.at("name").shape(), (Shape{3, 1}));
  EXPECT_EQ(p.dense.at("name").to_vector<std::string>(), (std::vector<std::string>{"first", "second", "third"}));
  EXPECT_EQ(p.dense.count("ignored"), 0u);
  const SparseTensor& t = p.sparse.at("tags");
  EXPECT_EQ(t.indices.shape(), (Shape{5, 2}));
  EXPECT_EQ(t.indices.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 1, 2, 0, 2, 1, 2, 2}));
  EXPECT_EQ(t.values.to_vector<std::string>(), (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(t.dense_shape.to_vector<int64_t>(), (std::vector<int64_t>{3, 3}));

  const Element e = p.to_element();
  EXPECT_EQ(e.names(),
            (std::vector<std::string>{"img", "label", "name", "tags/dense_shape", "tags/indices", "tags/values"}));
  EXPECT_EQ(e["tags/values"].size(), 5);
}

TEST(Example, ParseSingleExample) {
  const ParsedExamples p =
      parse_single_example(string_scalar(kSpecExample), {{"x", FixedLenFeature{DType::Float32, {}}},
                                                         {"v", VarLenFeature{DType::Int64}},
                                                         {"d", FixedLenFeature{DType::Float32, {3}, scalar(0.5f)}}});
  EXPECT_EQ(p.dense.at("x").shape(), Shape{});
  EXPECT_EQ(p.dense.at("x").item<float>(), 1.f);
  EXPECT_EQ(p.dense.at("d").to_vector<float>(), (std::vector<float>{0.5f, 0.5f, 0.5f}));  // one value repeated
  const SparseTensor& v = p.sparse.at("v");                                               // absent: empty
  EXPECT_EQ(v.indices.shape(), (Shape{0, 1}));
  EXPECT_EQ(v.values.shape(), (Shape{0}));
  EXPECT_EQ(v.values.dtype(), DType::Int64);
  EXPECT_EQ(v.dense_shape.to_vector<int64_t>(), std::vector<int64_t>{0});
}

TEST(Example, FullDefaultValue) {
  const Tensor d = constant({1.f, 2.f, 3.f, 4.f}, {2, 2});
  const ParsedExamples p =
      parse_example(strings({kSpecExample, kSpecExample}), {{"m", FixedLenFeature{DType::Float32, {4}, d}}});
  EXPECT_EQ(p.dense.at("m").to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4}));
}

TEST(Example, ErrorsNameFeatureAndExample) {
  const std::string ints = ExampleBuilder().set("x", std::vector<int64_t>{1, 2}).serialize();
  const std::string three = ExampleBuilder().set("x", std::vector<float>{1, 2, 3}).serialize();
  const Tensor batch = strings({kSpecExample, ints, three, "\xff\xff"});
  auto parse = [&](FeatureSpec s, Tensor b) { return parse_example(b, {{"x", s}}); };
  EXPECT_THAT(error_of([&] {
                parse(FixedLenFeature{DType::Float32, {}}, batch);
              }),
              HasSubstr("[parse_example] feature 'x' of example 1 is an int64_list; the spec asks for float32 "
                        "(a float_list)"));
  EXPECT_THAT(error_of([&] { parse(VarLenFeature{DType::String}, batch); }),
              HasSubstr("[parse_example] feature 'x' of example 0 is a float_list; the spec asks for string (a "
                        "bytes_list)"));
  EXPECT_THAT(error_of([&] {
                parse(FixedLenFeature{DType::Float32, {2, 2}}, strings({three}));
              }),
              HasSubstr("[parse_example] feature 'x' of example 0: expected 4 float32 values (shape [2,2]), got 3"));
  EXPECT_THAT(error_of([&] {
                parse(FixedLenFeature{DType::Float32, {3}}, strings({three, kSpecExample}));
              }),
              HasSubstr("feature 'x' of example 1: expected 3 float32 values (shape [3]), got 1"));
  EXPECT_THAT(error_of([&] {
                parse(VarLenFeature{DType::Float32}, strings({three, "\xff\xff"}));
              }),
              HasSubstr("[parse_example] example 1 is not a valid tf.train.Example (2 bytes)"));
  EXPECT_THAT(error_of([&] {
                parse_example(strings({ints, kSpecExample}), {{"y", FixedLenFeature{DType::Int64, {}}}});
              }),
              HasSubstr("[parse_example] example 0 has no feature 'y' and its FixedLenFeature has no default_value"));
  EXPECT_THAT(error_of([&] {
                parse(FixedLenFeature{DType::Float64, {}}, batch);
              }),
              HasSubstr("[parse_example] feature 'x': dtype float64 is not supported; use float32, int64 or string"));
  EXPECT_THAT(error_of([&] {
                parse(FixedLenFeature{DType::Float32, {2}, scalar(1, DType::Int64)}, batch);
              }),
              HasSubstr("feature 'x': default_value is int64, the feature is float32"));
  EXPECT_THAT(error_of([&] {
                parse(FixedLenFeature{DType::Float32, {2}, constant({1.f, 2.f, 3.f})}, batch);
              }),
              HasSubstr("default_value has shape [3] (3 values); the feature has shape [2] (2 values)"));
  EXPECT_THAT(error_of([&] {
                parse(FixedLenFeature{DType::Float32, {-1}}, batch);
              }),
              HasSubstr("FixedLenFeature shape [?] must be fully defined"));
  EXPECT_THAT(error_of([&] { parse(VarLenFeature{}, constant({1.f})); }),
              HasSubstr("[parse_example] serialized must be a string tensor, got float32"));
  EXPECT_THAT(error_of([&] { parse(VarLenFeature{}, string_scalar(kSpecExample)); }),
              HasSubstr("[parse_example] serialized must be a vector [batch] of strings, got shape []"));
  EXPECT_THAT(error_of([&] { parse_single_example(strings({kSpecExample}), {}); }),
              HasSubstr("[parse_single_example] serialized must be a scalar of strings, got shape [1]"));
  EXPECT_THAT(error_of([&] {
                parse_single_example(string_scalar(ints), {{"x", FixedLenFeature{DType::Float32, {2}}}});
              }),
              HasSubstr("[parse_single_example] feature 'x' of example 0 is an int64_list"));
}

TEST(Example, EmptyBatch) {
  const ParsedExamples p =
      parse_example(strings({}), {{"x", FixedLenFeature{DType::Float32, {3}}}, {"v", VarLenFeature{DType::Float32}}});
  EXPECT_EQ(p.dense.at("x").shape(), (Shape{0, 3}));
  EXPECT_EQ(p.sparse.at("v").dense_shape.to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
}

}  // namespace
}  // namespace deepflow::data
