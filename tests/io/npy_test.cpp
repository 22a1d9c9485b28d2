// SPDX-License-Identifier: Apache-2.0
#include "deepflow/io/npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "deepflow/ops/ops.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace deepflow::io {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

// What numpy writes: magic, version 1.0, little-endian header length, the dict padded
// with spaces to 64 bytes and a newline, then the data.
std::string numpy_file(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += char(major);
  out += char(0);
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out += char((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

template <class T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

TEST(Npy, WritesWhatNumpyWrites) {
  const std::string expected =
      numpy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", raw<float>({1, 2, 3}));
  ASSERT_EQ(expected.size(), 128u + 12);  // numpy's data offset is 128 here
  EXPECT_EQ(npy_bytes(constant({1.f, 2.f, 3.f})), expected);
  EXPECT_EQ(
      npy_bytes(ones({2, 3}, DType::Int64)),
      numpy_file("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }", raw<int64_t>({1, 1, 1, 1, 1, 1})));
  EXPECT_EQ(npy_bytes(scalar(5, DType::Int32)),
            numpy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (), }", raw<int32_t>({5})));
}

TEST(Npy, RoundTripsEveryDtype) {
  testing::TempDir tmp;
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::Int8, DType::UInt8, DType::Int32,
                   DType::Int64, DType::Bool}) {
    Tensor t = cast(constant({0.0, 1.0, -2.0, 3.0, 4.0, 0.0}, {2, 3}, DType::Float64), dt);
    write_npy(tmp / "t.npy", t);
    Tensor back = read_npy(tmp / "t.npy");
    EXPECT_EQ(back.dtype(), dt);
    EXPECT_EQ(back.shape(), Shape({2, 3}));
    EXPECT_EQ(cast(back, DType::Float64).to_vector<double>(), cast(t, DType::Float64).to_vector<double>())
        << dtype_name(dt);
  }
  Tensor empty = zeros({0, 4});
  EXPECT_EQ(parse_npy(npy_bytes(empty)).shape(), Shape({0, 4}));
  // bfloat16 has no numpy dtype: written as float32.
  Tensor bf = parse_npy(npy_bytes(cast(constant({1.5f, -2.f}), DType::BFloat16)));
  EXPECT_EQ(bf.dtype(), DType::Float32);
  EXPECT_EQ(bf.to_vector<float>(), (std::vector<float>{1.5f, -2.f}));
}

TEST(Npy, StringsBigEndianFortranAndVersion2) {
  Tensor s =
      parse_npy(numpy_file("{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }", std::string("ab\0xyz", 6)));
  EXPECT_EQ(s.to_vector<std::string>(), (std::vector<std::string>{"ab", "xyz"}));
  EXPECT_EQ(parse_npy(npy_bytes(s)).to_vector<std::string>(), s.to_vector<std::string>());

  Tensor be = parse_npy(
      numpy_file("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", std::string("\0\0\0\x01\0\0\x01\0", 8)));
  EXPECT_EQ(be.to_vector<int32_t>(), (std::vector<int32_t>{1, 256}));

  // np.asfortranarray([[1, 2, 3], [4, 5, 6]]): column-major data.
  Tensor f = parse_npy(
      numpy_file("{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3), }", raw<int64_t>({1, 4, 2, 5, 3, 6})));
  EXPECT_EQ(f.shape(), Shape({2, 3}));
  EXPECT_EQ(f.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));

  Tensor v2 = parse_npy(
      numpy_file("{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (1L, 2)}", raw<double>({0.5, 7}), 2));
  EXPECT_EQ(v2.to_vector<double>(), (std::vector<double>{0.5, 7}));
}

TEST(Npy, BadFilesAreClearErrors) {
  auto err = [](const std::string& dict, const std::string& data = "") {
    return error_of([&] { parse_npy(numpy_file(dict, data), "x.npy"); });
  };
  EXPECT_THAT(err("{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }", std::string(12, 'a')),
              HasSubstr("[read_npy] x.npy: unsupported dtype '<U3'"));
  EXPECT_THAT(err("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"), HasSubstr("unsupported dtype '|O'"));
  EXPECT_THAT(err("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", raw<float>({1, 2})),
              HasSubstr("shape (3) of '<f4' needs 12 data bytes, the file has 8"));
  EXPECT_THAT(err("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000, 100000000000), }", "abcd"),
              HasSubstr("needs more data bytes, the file has 4"));
  EXPECT_THAT(err("{'descr': '<f4', 'fortran_order': False}"), HasSubstr("needs 'descr', 'fortran_order' and 'shape'"));
  EXPECT_THAT(err("{'descr': '<f4', 'evil': __import__('os'), }"), HasSubstr("unknown header key 'evil'"));
  EXPECT_THAT(error_of([] { parse_npy("PK\x03\x04 a zip", "x.npz"); }), HasSubstr("x.npz: not a .npy file"));
  EXPECT_THAT(error_of([] { read_npy("/nonexistent/x.npy"); }), HasSubstr("/nonexistent/x.npy"));
  std::string v9 = npy_bytes(ones({2}));
  v9[6] = 9;
  EXPECT_THAT(error_of([&] { parse_npy(v9, "x.npy"); }), HasSubstr("unsupported .npy format version 9.0"));
}

TEST(Npy, TruncatedAndFlippedNeverCrash) {
  const std::string bytes = npy_bytes(constant({1.f, 2.f, 3.f, 4.f}, {2, 2}));
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THAT(error_of([&] { parse_npy(bytes.substr(0, n), "t.npy"); }), HasSubstr("[read_npy] t.npy: "))
        << "length " << n;
  std::mt19937 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string b = bytes;
    b[rng() % 80] ^= char(1 << (rng() % 8));  // the header is where parsing can go wrong
    try {
      Tensor t = parse_npy(b, "t.npy");
      if (t.dtype() != DType::String) {
        EXPECT_LE(t.nbytes(), b.size());
      }
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("t.npy"));
    }
  }
}

}  // namespace
}  // namespace deepflow::io
