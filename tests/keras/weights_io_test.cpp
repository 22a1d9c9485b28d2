// SPDX-License-Identifier: Apache-2.0
// Model::save_weights / load_weights: round trips, the byte layout, every kind of bad
// file, and atomic writes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "deepflow/keras/initializers.h"
#include "deepflow/keras/model.h"
#include "deepflow/ops/ops.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
namespace fs = std::filesystem;

// A subclassed model whose weights exist from construction: a float32 kernel, a bfloat16
// bias, and a non-trainable int64 counter.
class Small : public Model {
 public:
  explicit Small(Shape kernel = {3, 2}, bool with_counter = true, std::string name = "small",
                 DType bias_dtype = DType::BFloat16)
      : Model(std::move(name)) {
    add_weight("kernel", kernel, initializers::RandomNormal(0, 1));
    add_weight("bias", {2}, initializers::RandomUniform(-1, 1), true, nullptr, bias_dtype);
    if (with_counter) add_weight("counter", {}, initializers::Constant(7), false, nullptr, DType::Int64);
  }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

void expect_same_weights(const Model& a, const Model& b) {
  TensorList wa = a.get_weights(), wb = b.get_weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    ASSERT_EQ(wa[i].dtype(), wb[i].dtype());
    testing::expect_near(cast(wa[i], DType::Float64), cast(wb[i], DType::Float64), 0);
  }
}

class KerasWeightsIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("df_weights_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(KerasWeightsIo, RoundTrip) {
  auto a = std::make_shared<Small>();
  a->set_weights({random_normal({3, 2}), cast(constant({0.5f, -0.25f}), DType::BFloat16), scalar(41, DType::Int64)});
  const std::string p = path("w.weights");
  a->save_weights(p);
  auto b = std::make_shared<Small>();
  EXPECT_NE(b->get_weights()[2].item<int64_t>(), 41);
  b->load_weights(p);
  expect_same_weights(*a, *b);
  EXPECT_EQ(b->get_weights()[2].item<int64_t>(), 41);
  // Saving again over the file replaces it.
  a->set_weights({zeros({3, 2}), zeros({2}, DType::BFloat16), scalar(1, DType::Int64)});
  a->save_weights(p);
  b->load_weights(p);
  EXPECT_EQ(b->get_weights()[2].item<int64_t>(), 1);
  EXPECT_FALSE(fs::exists(p + ".tmp-" + std::to_string(::getpid())));
}

TEST_F(KerasWeightsIo, SameArchitectureWithOtherUniqueNames) {
  // Layer names made unique per process ("model", "model_1") still match.
  auto a = std::make_shared<Small>(Shape{3, 2}, true, "");
  auto b = std::make_shared<Small>(Shape{3, 2}, true, "");
  ASSERT_NE(a->weights()[0].name(), b->weights()[0].name());
  a->save_weights(path("w"));
  b->load_weights(path("w"));
  expect_same_weights(*a, *b);
}

TEST_F(KerasWeightsIo, ByteLayout) {
  // One uint8 weight holding "123456789": CRC32C's check value is 0xE3069283.
  class Bytes : public Model {
   public:
    Bytes() : Model("b") { add_weight("w", {9}, initializers::Zeros(), true, nullptr, DType::UInt8); }
  };
  auto m = std::make_shared<Bytes>();
  const std::string digits = "123456789";
  std::vector<uint8_t> v(digits.begin(), digits.end());
  m->set_weights({constant(v)});
  m->save_weights(path("b"));
  std::string want = "DFWEIGHTS1\n";
  auto u64 = [&](uint64_t x) { want.append(reinterpret_cast<const char*>(&x), 8); };
  u64(1);
  u64(3);
  want += "b/w";
  u64(5);
  want += "uint8";
  u64(1);
  u64(9);
  u64(9);
  want += std::string("\x83\x92\x06\xE3", 4);
  want += digits;
  EXPECT_EQ(read_file(path("b")), want);
}

TEST_F(KerasWeightsIo, MismatchedModelsAreErrorsNamingTheWeight) {
  const std::string p = path("w");
  std::make_shared<Small>()->save_weights(p);
  auto wide = std::make_shared<Small>(Shape{4, 2});
  const TensorList before = wide->get_weights();
  EXPECT_THAT(error_of([&] { wide->load_weights(p); }),
              HasSubstr("[Model.load_weights] " + p +
                        ": weight 0 ('small/kernel') is float32[3,2] in the file, float32[4,2] in the model"));
  testing::expect_near(wide->get_weights()[0], before[0], 0);  // nothing assigned
  auto fewer = std::make_shared<Small>(Shape{3, 2}, false);
  EXPECT_THAT(error_of([&] { fewer->load_weights(p); }),
              HasSubstr("[Model.load_weights] " + p + " holds 3 weights, model 'small' has 2"));
  auto f32_bias = std::make_shared<Small>(Shape{3, 2}, true, "small", DType::Float32);
  EXPECT_THAT(error_of([&] { f32_bias->load_weights(p); }),
              HasSubstr("weight 1 ('small/bias') is bfloat16[2] in the file, float32[2] in the model"));
  auto other = std::make_shared<Small>(Shape{3, 2}, true, "other");
  EXPECT_THAT(error_of([&] { other->load_weights(p); }),
              HasSubstr(": weight 0 is 'small/kernel' in the file, 'other/kernel' in the model"));
  EXPECT_THAT(error_of([&] { other->load_weights(path("missing")); }),
              HasSubstr("[Model.load_weights] " + path("missing") + ": cannot open"));
}

TEST_F(KerasWeightsIo, TruncatedAndCorruptFiles) {
  const std::string p = path("w");
  auto m = std::make_shared<Small>();
  m->save_weights(p);
  const std::string good = read_file(p);
  const TensorList before = m->get_weights();
  // Every truncation is an error naming the file, never a crash.
  for (size_t n = 0; n < good.size(); ++n) {
    write_file(p, good.substr(0, n));
    std::string e = error_of([&] { m->load_weights(p); });
    EXPECT_THAT(e, HasSubstr("[Model.load_weights] " + p + ": ")) << "cut at " << n;
    if (n >= 11) {
      EXPECT_THAT(e, ::testing::AnyOf(HasSubstr("truncated file"), HasSubstr("corrupt file"))) << n;
    }
  }
  write_file(p, good.substr(0, good.size() - 3));
  EXPECT_THAT(error_of([&] { m->load_weights(p); }),
              HasSubstr(": truncated file: weight 2 ('small/counter') needs 8 bytes at offset"));
  // A flipped bit in the data fails the checksum of that weight.
  // The kernel's data follows its dtype name, rank, 2 dims, byte length and checksum.
  const size_t kernel_data = good.find("float32") + 7 + 8 + 16 + 8 + 4;
  std::string flipped = good;
  flipped[kernel_data + 5] ^= 0x01;
  write_file(p, flipped);
  EXPECT_THAT(error_of([&] { m->load_weights(p); }),
              HasSubstr(": corrupt file: the data of weight 0 ('small/kernel') fails its checksum"));
  // Flipped bits in lengths and dims are caught by the layout checks.
  flipped = good;
  flipped[kernel_data - 4 - 8] ^= 0x40;  // the kernel's byte length
  write_file(p, flipped);
  EXPECT_THAT(error_of([&] { m->load_weights(p); }), HasSubstr("('small/kernel') float32[3,2] holds"));
  flipped = good;
  flipped[11 + 7] = '\x7F';  // a count of ~2^63 tensors
  write_file(p, flipped);
  EXPECT_THAT(error_of([&] { m->load_weights(p); }), HasSubstr("tensors cannot fit in"));
  write_file(p, "GIF89a" + good);
  EXPECT_THAT(error_of([&] { m->load_weights(p); }),
              HasSubstr(": not a deepflow weights file (it does not start with \"DFWEIGHTS1\\n\")"));
  write_file(p, good + "x");
  EXPECT_THAT(error_of([&] { m->load_weights(p); }), HasSubstr(": corrupt file: 1 trailing bytes after the last"));
  // None of the failures touched the weights.
  for (size_t i = 0; i < before.size(); ++i)
    testing::expect_near(cast(m->get_weights()[i], DType::Float64), cast(before[i], DType::Float64), 0);
}

TEST_F(KerasWeightsIo, FailedWriteKeepsTheOldFile) {
  const std::string p = path("w");
  auto m = std::make_shared<Small>();
  m->save_weights(p);
  const std::string old = read_file(p);
  // The temporary name is taken (by a directory): the write fails before the rename.
  const std::string tmp = p + ".tmp-" + std::to_string(::getpid());
  fs::create_directory(tmp);
  m->set_weights({zeros({3, 2}), zeros({2}, DType::BFloat16), scalar(0, DType::Int64)});
  EXPECT_THAT(error_of([&] { m->save_weights(p); }), HasSubstr("[Model.save_weights] " + p + ": cannot create " + tmp));
  EXPECT_EQ(read_file(p), old);
  fs::remove(tmp);
  // A missing directory: an error naming the path, nothing left behind.
  const std::string nowhere = path("no/such/dir/w");
  EXPECT_THAT(error_of([&] { m->save_weights(nowhere); }),
              HasSubstr("[Model.save_weights] " + nowhere + ": cannot create"));
  EXPECT_THAT(error_of([&] { m->save_weights(nowhere); }), HasSubstr("No such file or directory"));
  EXPECT_EQ(read_file(p), old);
  // Renaming over a directory fails after the temporary was written: it is removed.
  fs::create_directories(path("adir/sub"));
  EXPECT_THAT(error_of([&] { m->save_weights(path("adir")); }), HasSubstr("cannot rename"));
  EXPECT_FALSE(fs::exists(path("adir") + ".tmp-" + std::to_string(::getpid())));
}

}  // namespace
}  // namespace deepflow::keras
