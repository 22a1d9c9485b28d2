// SPDX-License-Identifier: Apache-2.0
// keras::datasets: IDX parsing from hand-made bytes (every payload type, every way a
// file can be malformed), read_idx on files, and the real MNIST when fetched.
#include "deepflow/keras/datasets/mnist.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "deepflow/ops/ops.h"
#include "test_util.h"
#include "oracle.h"

namespace deepflow::keras::datasets {
namespace {

using ::testing::HasSubstr;
using testing::error_of;

// An IDX header: 0, 0, type code, rank, then big-endian uint32 dims.
std::string header(uint8_t code, const std::vector<uint32_t>& dims) {
  std::string s = {'\0', '\0', char(code), char(dims.size())};
  for (uint32_t d : dims) {
    for (int sh = 24; sh >= 0; sh -= 8) s += char((d >> sh) & 0xFF);
  }
  return s;
}
std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s += char(x);
  return s;
}

TEST(KerasIdx, Uint8) {
  Tensor t = parse_idx(header(0x08, {2, 3}) + bytes({0, 1, 2, 250, 254, 255}), "u8");
  EXPECT_EQ(t.dtype(), DType::UInt8);
  EXPECT_EQ(t.shape(), Shape({2, 3}));
  EXPECT_EQ(t.to_vector<int>(), (std::vector<int>{0, 1, 2, 250, 254, 255}));
}

TEST(KerasIdx, BigEndianPayloads) {
  Tensor i32 = parse_idx(header(0x0C, {2}) + bytes({0, 0, 1, 2, 0xFF, 0xFF, 0xFF, 0xFE}), "i32");
  EXPECT_EQ(i32.dtype(), DType::Int32);
  EXPECT_EQ(i32.to_vector<int32_t>(), (std::vector<int32_t>{258, -2}));
  // 1.0f = 0x3F800000, -2.5f = 0xC0200000.
  Tensor f32 = parse_idx(header(0x0D, {1, 2}) + bytes({0x3F, 0x80, 0, 0, 0xC0, 0x20, 0, 0}), "f32");
  EXPECT_EQ(f32.dtype(), DType::Float32);
  EXPECT_EQ(f32.shape(), Shape({1, 2}));
  EXPECT_EQ(f32.to_vector<float>(), (std::vector<float>{1.0f, -2.5f}));
  // 0.5 = 0x3FE0000000000000.
  Tensor f64 = parse_idx(header(0x0E, {1}) + bytes({0x3F, 0xE0, 0, 0, 0, 0, 0, 0}), "f64");
  EXPECT_EQ(f64.dtype(), DType::Float64);
  EXPECT_EQ(f64.to_vector<double>(), (std::vector<double>{0.5}));
  Tensor i8 = parse_idx(header(0x09, {2}) + bytes({0x7F, 0x80}), "i8");
  EXPECT_EQ(i8.dtype(), DType::Int8);
  EXPECT_EQ(i8.to_vector<int>(), (std::vector<int>{127, -128}));
  // int16 has no deepflow dtype: it widens to int32.
  Tensor i16 = parse_idx(header(0x0B, {2}) + bytes({0x01, 0x00, 0xFF, 0xFF}), "i16");
  EXPECT_EQ(i16.dtype(), DType::Int32);
  EXPECT_EQ(i16.to_vector<int32_t>(), (std::vector<int32_t>{256, -1}));
  // Empty dims and rank 0 are well formed.
  EXPECT_EQ(parse_idx(header(0x08, {0, 28}), "empty").shape(), Shape({0, 28}));
  Tensor s = parse_idx(header(0x08, {}) + bytes({7}), "scalar");
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.item<int>(), 7);
}

TEST(KerasIdx, MalformedInputsAreErrorsNamingTheSource) {
  EXPECT_THAT(error_of([] { parse_idx("", "a.idx"); }),
              HasSubstr("[parse_idx] a.idx: truncated header: 0 bytes, an IDX file starts with 4"));
  EXPECT_THAT(error_of([] { parse_idx(bytes({0, 0, 8}), "a.idx"); }), HasSubstr("a.idx: truncated header: 3 bytes"));
  EXPECT_THAT(error_of([] { parse_idx(header(0x08, {5, 5}).substr(0, 9), "b.idx"); }),
              HasSubstr("[parse_idx] b.idx: truncated header: rank 2 needs 12 bytes, the file has 9"));
  EXPECT_THAT(error_of([] { parse_idx(bytes({0x1F, 0x8B, 8, 1, 0, 0, 0, 1, 0}), "c.gz"); }),
              HasSubstr("[parse_idx] c.gz: bad magic 0x1F8B0801"));
  EXPECT_THAT(error_of([] { parse_idx(header(0x0A, {1}) + "x", "d"); }), HasSubstr("d: bad magic 0x00000A01"));
  EXPECT_THAT(error_of([] { parse_idx(bytes({0, 0, 8, 200}), "e"); }),
              HasSubstr("[parse_idx] e: rank 200 exceeds the most a tensor has (12)"));
  EXPECT_THAT(error_of([] { parse_idx(header(0x08, {60000, 28, 28}) + std::string(1000 - 16, '\0'), "f"); }),
              HasSubstr("[parse_idx] f: truncated: dims [60000,28,28] need 47040016 bytes, the file has 1000"));
  // 0xFFFFFFFF^3 * 8 bytes does not fit 64 bits: an error, not a wrapped small size.
  EXPECT_THAT(error_of([] { parse_idx(header(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}), "g"); }),
              HasSubstr("[parse_idx] g: dims [4294967295,4294967295,4294967295] of float64 overflow a 64-bit "
                        "byte count, the file has 16 bytes"));
  // Huge but representable (0xFFFFFFFF * 0xFFFF * 4 + 12): refused before any allocation.
  EXPECT_THAT(error_of([] { parse_idx(header(0x0C, {0xFFFFFFFF, 0xFFFF}), "h"); }),
              HasSubstr("h: truncated: dims [4294967295,65535] need 1125882726711312 bytes, the file has 12"));
  EXPECT_THAT(error_of([] { parse_idx(header(0x08, {2}) + bytes({1, 2, 3}), "i"); }),
              HasSubstr("[parse_idx] i: 1 trailing bytes after the uint8 data of dims [2] (10 bytes)"));
}

class KerasIdxFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("df_idx_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& content) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(KerasIdxFile, ReadIdxNamesTheFile) {
  std::string good = write("good", header(0x08, {3}) + bytes({4, 5, 6}));
  EXPECT_EQ(read_idx(good).to_vector<int>(), (std::vector<int>{4, 5, 6}));
  std::string bad = write("bad", header(0x08, {3}) + bytes({4}));
  EXPECT_THAT(error_of([&] { read_idx(bad); }),
              HasSubstr("[read_idx] " + bad + ": truncated: dims [3] need 11 bytes, the file has 9"));
  std::string missing = (dir_ / "nope").string();
  EXPECT_THAT(error_of([&] { read_idx(missing); }), HasSubstr("[read_idx] " + missing + ": cannot open"));
}

TEST_F(KerasIdxFile, LoadDataChecksFilesAndShapes) {
  const std::string d = dir_.string();
  EXPECT_THAT(error_of([&] { mnist::load_data(d); }),
              HasSubstr("[mnist.load_data] " + d + "/train-images-idx3-ubyte not found; get MNIST with scripts/fetch-data.sh "
                        "(`make deps` runs it)"));
  // A tiny well-formed set: 2 train and 1 test image.
  write("train-images-idx3-ubyte", header(0x08, {2, 28, 28}) + std::string(2 * 784, '\x01'));
  write("train-labels-idx1-ubyte", header(0x08, {2}) + bytes({3, 9}));
  write("t10k-images-idx3-ubyte", header(0x08, {1, 28, 28}) + std::string(784, '\x02'));
  write("t10k-labels-idx1-ubyte", header(0x08, {1}) + bytes({7}));
  auto [train, test] = mnist::load_data(d);
  EXPECT_EQ(train.x.shape(), Shape({2, 28, 28}));
  EXPECT_EQ(train.y.to_vector<int>(), (std::vector<int>{3, 9}));
  EXPECT_EQ(test.x.shape(), Shape({1, 28, 28}));
  EXPECT_EQ(test.y.to_vector<int>(), (std::vector<int>{7}));
  // Labels that do not match the images.
  write("t10k-labels-idx1-ubyte", header(0x08, {2}) + bytes({7, 7}));
  EXPECT_THAT(error_of([&] { mnist::load_data(d); }),
              HasSubstr("[mnist.load_data] " + d + "/t10k-labels-idx1-ubyte: expected uint8 labels [1] to match"));
  write("t10k-images-idx3-ubyte", header(0x08, {1, 28, 27}) + std::string(28 * 27, '\x02'));
  EXPECT_THAT(error_of([&] { mnist::load_data(d); }),
              HasSubstr("t10k-images-idx3-ubyte: expected uint8 images [n,28,28], got uint8 [1,28,27]"));
}

TEST(KerasMnist, DefaultDirFollowsTheEnvironment) {
  const char* old = std::getenv("DEEPFLOW_DATA");
  std::string saved = old ? old : "";
  ::setenv("DEEPFLOW_DATA", "/some/where", 1);
  EXPECT_EQ(mnist::default_dir(), "/some/where/mnist");
  ::unsetenv("DEEPFLOW_DATA");
  EXPECT_THAT(mnist::default_dir(), ::testing::EndsWith("data/mnist"));
  if (old) ::setenv("DEEPFLOW_DATA", saved.c_str(), 1);
}

TEST(KerasMnist, RealData) {
  const std::string dir = mnist::default_dir();
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte")) {
    DEEPFLOW_ORACLE_MISSING("MNIST not in " << dir << " (scripts/fetch-data.sh fetches it)");
  }
  auto [train, test] = mnist::load_data();
  EXPECT_EQ(train.x.shape(), Shape({60000, 28, 28}));
  EXPECT_EQ(train.x.dtype(), DType::UInt8);
  EXPECT_EQ(train.y.shape(), Shape({60000}));
  EXPECT_EQ(test.x.shape(), Shape({10000, 28, 28}));
  EXPECT_EQ(test.y.shape(), Shape({10000}));
  EXPECT_EQ(train.y.flat(0), 5);
  EXPECT_EQ(test.y.flat(0), 7);
  // The standard split's class counts (train: 5923 zeros, test: 1135 ones).
  Tensor train_counts = reduce_sum(one_hot(cast(train.y, DType::Int32), 10), {0});
  EXPECT_EQ(train_counts.flat(0), 5923);
  EXPECT_EQ(train_counts.flat(9), 5949);
  Tensor test_counts = reduce_sum(one_hot(cast(test.y, DType::Int32), 10), {0});
  EXPECT_EQ(test_counts.flat(1), 1135);
  EXPECT_EQ(reduce_max(cast(train.x, DType::Int32)).item<int>(), 255);
}

}  // namespace
}  // namespace deepflow::keras::datasets
