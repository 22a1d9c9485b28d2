// SPDX-License-Identifier: Apache-2.0
// Tensor bundles: round trips of every dtype (mapped and copied), alignment, atomicity
// (no files without finish, stale temporaries removed), and damaged files: the index
// truncated at every length and flipped at every bit, flipped tensor bytes, a wrong
// version, a missing, short or foreign data shard, and corrupt entries behind a valid
// checksum. Every error must name the file, and the key when there is one.
#include "deepflow/io/bundle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bundle.pb.h"
#include "deepflow/io/bundle_format.h"
#include "deepflow/ops/ops.h"
#include "io_test_util.h"
#include "test_util.h"

namespace deepflow::io {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::error_of;
using testing::TempDir;

// Values whose bytes differ per element, of every dtype.
std::vector<std::pair<std::string, Tensor>> sample_tensors() {
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back("f32", constant({1.5f, -2.f, 3.25f, 4.f, 5.f, 6.f}, {2, 3}));
  out.emplace_back("f64", constant({1.0, 2.5, -3.0}, {3}, DType::Float64));
  out.emplace_back("f16", constant({0.5, 1.5, -2.0, 8.0}, {2, 2}, DType::Float16));
  out.emplace_back("bf16", constant({0.25, -1.0}, {2}, DType::BFloat16));
  out.emplace_back("i8", constant({-128, 0, 127}, {3}, DType::Int8));
  out.emplace_back("u8", constant({0, 7, 255}, {3}, DType::UInt8));
  out.emplace_back("i32", constant({-5, 1 << 30}, {2}, DType::Int32));
  out.emplace_back("i64", constant({double(int64_t(1) << 40), -1}, {2}, DType::Int64));
  out.emplace_back("bool", constant({1, 0, 1}, {3}, DType::Bool));
  out.emplace_back("scalar", scalar(42.0));
  out.emplace_back("empty", zeros({0, 5}));
  out.emplace_back("str", constant(std::vector<std::string>{"", "abc", std::string("\0\xff\n", 3), std::string(300, 'x')},
                                   Shape{2, 2}));
  out.emplace_back("str_scalar", string_scalar("hello"));
  out.emplace_back("str_empty", constant(std::vector<std::string>{}, Shape{0}));
  return out;
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& key) {
  ASSERT_EQ(got.dtype(), want.dtype()) << key;
  ASSERT_EQ(got.shape(), want.shape()) << key;
  if (want.dtype() == DType::String) {
    EXPECT_EQ(got.to_vector<std::string>(), want.to_vector<std::string>()) << key;
  } else if (want.nbytes() > 0) {
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0) << key;
  }
}

std::string write_sample(const std::string& prefix) {
  BundleWriter w(prefix);
  for (const auto& [k, t] : sample_tensors()) w.add(k, t);
  w.finish();
  return prefix;
}

TEST(Bundle, RoundTripsEveryDtypeMappedAndCopied) {
  TempDir dir;
  const std::string prefix = write_sample(dir / "b");
  EXPECT_EQ(testing::list_dir(dir.path()), (std::vector<std::string>{"b.data-00000-of-00001", "b.index"}));
  for (bool mmap : {true, false}) {
    BundleReader r(prefix, {.mmap = mmap});
    std::vector<std::string> keys;
    for (const auto& [k, t] : sample_tensors()) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    EXPECT_EQ(r.keys(), keys);
    for (const auto& [k, want] : sample_tensors()) {
      Tensor got = r.read(k);
      expect_same(got, want, k);
      const BundleEntry& e = r.entry(k);
      EXPECT_EQ(e.key, k);
      EXPECT_EQ(e.dtype, want.dtype());
      EXPECT_EQ(e.shape, want.shape());
      EXPECT_EQ(e.offset % 64, 0u) << k;
      if (want.dtype() != DType::String) {
        EXPECT_EQ(e.size, want.nbytes()) << k;
      }
      if (got.size() > 0 && got.dtype() != DType::String) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(got.raw_data()) % 64, 0u) << k;
      }
    }
    EXPECT_TRUE(r.contains("f32"));
    EXPECT_FALSE(r.contains("f3"));
    EXPECT_THAT(error_of([&] { r.read("nope"); }), HasSubstr("[BundleReader] " + prefix + ": no tensor 'nope'"));
  }
}

TEST(Bundle, MappedTensorsOutliveTheReaderAndWritesStayPrivate) {
  TempDir dir;
  const std::string prefix = dir / "b";
  {
    BundleWriter w(prefix);
    w.add("w", fill({1024}, 3.0));
    w.finish();
  }
  Tensor t;
  {
    BundleReader r(prefix);
    t = r.read("w");
  }
  EXPECT_EQ(t.to_vector<float>()[1000], 3.f);
  t.data<float>()[0] = 7.f;  // copy-on-write: the file keeps its bytes
  EXPECT_EQ(BundleReader(prefix).read("w").to_vector<float>()[0], 3.f);
  EXPECT_EQ(BundleReader(prefix, {.mmap = false}).read("w").to_vector<float>()[0], 3.f);
}

TEST(Bundle, NothingAppearsWithoutFinish) {
  TempDir dir;
  {
    BundleWriter w(dir / "b");
    w.add("x", ones({4}));
  }
  EXPECT_TRUE(testing::list_dir(dir.path()).empty());
  EXPECT_THAT(error_of([&] { BundleReader r(dir / "b"); }),
              AllOf(HasSubstr("[BundleReader] " + dir / "b.index"), HasSubstr("cannot open")));
}

TEST(Bundle, RemovesTemporariesOfDeadWriters) {
  TempDir dir;
  // pid 999999999 cannot exist (pid_max is at most 2^22); a live pid's files stay.
  testing::write_bytes(dir / "b.index.tmp-999999999-0", "junk");
  testing::write_bytes(dir / "b.data-00000-of-00001.tmp-999999999-3", "junk");
  testing::write_bytes(dir / ("b.index.tmp-" + std::to_string(::getppid()) + "-0"), "live");
  testing::write_bytes(dir / "bb.index.tmp-999999999-0", "another prefix");
  write_sample(dir / "b");
  EXPECT_EQ(testing::list_dir(dir.path()),
            (std::vector<std::string>{"b.data-00000-of-00001", "b.index",
                                      "b.index.tmp-" + std::to_string(::getppid()) + "-0", "bb.index.tmp-999999999-0"}));
}

TEST(Bundle, WriterErrors) {
  TempDir dir;
  EXPECT_THAT(error_of([&] { BundleWriter w(dir / "no/such/dir/b"); }),
              AllOf(HasSubstr("[BundleWriter] " + dir / "no/such/dir/b"), HasSubstr("does the directory exist?")));
  BundleWriter w(dir / "b");
  w.add("x", ones({2}));
  EXPECT_THAT(error_of([&] { w.add("x", ones({2})); }), HasSubstr("duplicate key 'x'"));
  EXPECT_THAT(error_of([&] { w.add("", ones({2})); }), HasSubstr("empty key"));
  EXPECT_THAT(error_of([&] { w.add("u", Tensor()); }), HasSubstr("'u' is not a concrete tensor (undefined)"));
  w.finish();
  EXPECT_THAT(error_of([&] { w.add("y", ones({2})); }), HasSubstr("add('y') after finish()"));
  EXPECT_THAT(error_of([&] { w.finish(); }), HasSubstr("finish() called twice"));
}

TEST(Bundle, OverwritingAPrefixReplacesTheBundle) {
  TempDir dir;
  {
    BundleWriter w(dir / "b");
    w.add("x", fill({3}, 1.0));
    w.finish();
  }
  {
    BundleWriter w(dir / "b");
    w.add("x", fill({3}, 2.0));
    w.add("y", fill({1}, 5.0));
    w.finish();
  }
  BundleReader r(dir / "b");
  EXPECT_EQ(r.read("x").to_vector<float>(), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(r.keys().size(), 2u);
}

// Every prefix of the index is refused with a message naming the file. The reader
// parses the index first, so the checks run on bytes in memory (parse_index) and a
// sample of them through files.
TEST(Bundle, IndexTruncatedAtEveryLength) {
  TempDir dir;
  const std::string prefix = write_sample(dir / "b");
  const std::string path = prefix + ".index";
  const std::string index = testing::read_bytes(path);
  ASSERT_GT(index.size(), 100u);
  for (size_t n = 0; n < index.size(); ++n) {
    const std::string err = error_of([&] { bundle_format::parse_index(index.substr(0, n), path); });
    EXPECT_THAT(err, HasSubstr("[BundleReader] " + path + ": ")) << n;
    EXPECT_THAT(err, AnyOf(HasSubstr("truncated"), HasSubstr("corrupt"), HasSubstr("format version"))) << n;
  }
  for (size_t n : {size_t(0), size_t(1), index.size() / 2, index.size() - 24, index.size() - 1}) {
    testing::write_bytes(path, index.substr(0, n));
    EXPECT_THAT(error_of([&] { BundleReader r(prefix); }), HasSubstr("[BundleReader] " + path + ": truncated")) << n;
  }
}

TEST(Bundle, IndexBitFlipsAreDetected) {
  TempDir dir;
  const std::string prefix = write_sample(dir / "b");
  const std::string path = prefix + ".index";
  const std::string index = testing::read_bytes(path);
  for (size_t bit = 0; bit < index.size() * 8; ++bit) {
    std::string bad = index;
    bad[bit / 8] = char(bad[bit / 8] ^ (1 << (bit % 8)));
    EXPECT_THAT(error_of([&] { bundle_format::parse_index(bad, path); }), HasSubstr("[BundleReader] " + path + ": "))
        << "bit " << bit;
    if (bit % 97 == 0) {
      testing::write_bytes(path, bad);
      EXPECT_THAT(error_of([&] { BundleReader r(prefix); }), HasSubstr("[BundleReader] " + path + ": ")) << bit;
    }
  }
  // Which check fires depends on where the flip lands.
  auto flip = [&](size_t byte) {
    std::string bad = index;
    bad[byte] = char(bad[byte] ^ 4);
    return error_of([&] { bundle_format::parse_index(bad, path); });
  };
  EXPECT_THAT(flip(3), HasSubstr("corrupt: the index fails its checksum"));
  EXPECT_THAT(flip(index.size() - 24), HasSubstr("format version 5, this build reads version 1"));
  EXPECT_THAT(flip(index.size() - 16), HasSubstr("truncated or corrupt: the trailer says"));
  EXPECT_THAT(flip(index.size() - 1), HasSubstr("does not end with the 24-byte DFBUNDLE trailer"));
}

TEST(Bundle, DataBitFlipsNameTheKey) {
  TempDir dir;
  const std::string prefix = write_sample(dir / "b");
  const std::string data_path = bundle_data_path(prefix);
  const std::string data = testing::read_bytes(data_path);
  std::vector<BundleEntry> entries;
  {
    BundleReader r(prefix);
    for (const std::string& k : r.keys()) entries.push_back(r.entry(k));
  }
  for (const BundleEntry& e : entries) {
    for (uint64_t byte = e.offset; byte < e.offset + e.size; byte += std::max<uint64_t>(1, e.size / 7)) {
      for (int bit : {0, 5}) {
        std::string bad = data;
        bad[byte] = char(bad[byte] ^ (1 << bit));
        testing::write_bytes(data_path, bad);
        for (bool mmap : {true, false}) {
          BundleReader r(prefix, {.mmap = mmap});
          EXPECT_THAT(error_of([&] { r.read(e.key); }),
                      AllOf(HasSubstr("[BundleReader] " + data_path + ": tensor '" + e.key + "' fails its checksum")))
              << e.key << " byte " << byte;
        }
      }
    }
  }
  // The data header: its magic and bundle id are checked at open.
  for (size_t byte : {0, 16}) {
    std::string bad = data;
    bad[byte] = char(bad[byte] ^ 1);
    testing::write_bytes(data_path, bad);
    EXPECT_THAT(error_of([&] { BundleReader r(prefix); }), HasSubstr("[BundleReader] " + data_path + ": "));
  }
}

TEST(Bundle, WrongVersionIsNamed) {
  TempDir dir;
  const std::string prefix = write_sample(dir / "b");
  const std::string index = testing::read_bytes(prefix + ".index");
  proto::BundleIndex p;
  ASSERT_TRUE(p.ParseFromArray(index.data(), int(index.size() - bundle_format::kTrailerSize)));
  testing::write_bytes(prefix + ".index", bundle_format::encode_index(p, 2));
  EXPECT_THAT(error_of([&] { BundleReader r(prefix); }),
              HasSubstr("[BundleReader] " + prefix + ".index: format version 2, this build reads version 1 "
                        "(written by a newer deepflow?)"));
  // Header and trailer disagreeing.
  p.mutable_header()->set_version(7);
  testing::write_bytes(prefix + ".index", bundle_format::encode_index(p));
  EXPECT_THAT(error_of([&] { BundleReader r(prefix); }), HasSubstr("the header says format version 7, the trailer 1"));
  // A data shard of another version.
  testing::write_bytes(prefix + ".index", index);
  std::string data = testing::read_bytes(bundle_data_path(prefix));
  data[8] = 3;
  testing::write_bytes(bundle_data_path(prefix), data);
  EXPECT_THAT(error_of([&] { BundleReader r(prefix); }),
              HasSubstr(bundle_data_path(prefix) + ": format version 3, this build reads version 1"));
}

TEST(Bundle, MissingShortOrForeignShard) {
  TempDir dir;
  const std::string prefix = write_sample(dir / "b");
  const std::string data_path = bundle_data_path(prefix);
  const std::string data = testing::read_bytes(data_path);
  std::filesystem::remove(data_path);
  EXPECT_THAT(error_of([&] { BundleReader r(prefix); }),
              AllOf(HasSubstr("[BundleReader] " + data_path + ": cannot open data shard 0 of " + prefix + ".index"),
                    HasSubstr("No such file")));

  // Cut inside the last tensor: the others still read, the last names its key.
  BundleEntry last;
  testing::write_bytes(data_path, data);
  {
    BundleReader r(prefix);
    for (const std::string& k : r.keys())
      if (r.entry(k).size > 1 && r.entry(k).offset > last.offset) last = r.entry(k);
  }
  ASSERT_GT(last.size, 1u);
  testing::write_bytes(data_path, data.substr(0, last.offset + last.size - 1));
  for (bool mmap : {true, false}) {
    BundleReader r(prefix, {.mmap = mmap});
    EXPECT_EQ(r.read("f32").to_vector<float>()[2], 3.25f);
    EXPECT_THAT(error_of([&] { r.read(last.key); }),
                AllOf(HasSubstr("[BundleReader] " + data_path + ": tensor '" + last.key + "' needs bytes"),
                      HasSubstr("truncated")));
  }
  testing::write_bytes(data_path, data.substr(0, 10));
  EXPECT_THAT(error_of([&] { BundleReader r(prefix); }), HasSubstr(data_path + ": truncated: 10 bytes"));

  // Another bundle's data file under this name.
  write_sample(dir / "other");
  std::filesystem::copy_file(bundle_data_path(dir / "other"), data_path,
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_THAT(error_of([&] { BundleReader r(prefix); }),
              AllOf(HasSubstr(data_path), HasSubstr("belongs to another bundle")));
}

// Entries that pass the checksum but contradict themselves (what a fuzzer or a buggy
// writer could produce).
TEST(Bundle, CorruptEntriesBehindAValidChecksum) {
  TempDir dir;
  const std::string prefix = write_sample(dir / "b");
  const std::string index = testing::read_bytes(prefix + ".index");
  proto::BundleIndex good;
  ASSERT_TRUE(good.ParseFromArray(index.data(), int(index.size() - bundle_format::kTrailerSize)));
  auto expect_error = [&](const std::function<void(proto::BundleIndex&)>& edit, const std::string& want) {
    proto::BundleIndex p = good;
    edit(p);
    testing::write_bytes(prefix + ".index", bundle_format::encode_index(p));
    EXPECT_THAT(error_of([&] { BundleReader r(prefix); }), AllOf(HasSubstr(prefix + ".index: "), HasSubstr(want)));
  };
  auto f32 = [](proto::BundleIndex& p) -> proto::BundleEntryProto& {
    for (auto& e : *p.mutable_entries())
      if (e.key() == "f32") return e;
    throw std::runtime_error("no f32");
  };
  expect_error([&](auto& p) { f32(p).set_size(25); }, "corrupt entry 'f32': float32[2,3] holds 25 bytes");
  expect_error([&](auto& p) { f32(p).set_dtype(proto::DataType(99)); }, "corrupt entry 'f32': dtype 99");
  expect_error([&](auto& p) { f32(p).set_offset(f32(p).offset() + 4); }, "is not 64-byte aligned");
  expect_error([&](auto& p) { f32(p).set_offset(~uint64_t(0) - 8); }, "are outside a data file");
  expect_error([&](auto& p) { f32(p).set_shard(1); }, "shard 1 of 1");
  expect_error([&](auto& p) { f32(p).add_dims(-3); }, "dim -3");
  expect_error([&](auto& p) {
    f32(p).clear_dims();
    for (int i = 0; i < 5; ++i) f32(p).add_dims(int64_t(1) << 40);
  }, "has too many elements");
  expect_error([&](auto& p) { *p.add_entries() = f32(p); }, "key 'f32' appears twice");
  expect_error([&](auto& p) { p.mutable_header()->set_num_shards(0); }, "corrupt: 0 data shards");
  expect_error([&](auto& p) { p.mutable_header()->set_endianness(proto::BundleHeader::BIG); }, "big-endian");
  expect_error(
      [&](auto& p) {
        for (auto& e : *p.mutable_entries())
          if (e.key() == "str") e.add_dims(1000);
      },
      "corrupt entry 'str': string[2,2,1000] cannot fit in");
}

TEST(Bundle, StringDecodingRejectsBadLengths) {
  std::string out[2];
  const std::string good = bundle_format::encode_strings(std::vector<std::string>{"ab", "c"}.data(), 2);
  EXPECT_EQ(bundle_format::decode_strings(good.data(), good.size(), out, 2), "");
  EXPECT_EQ(out[0], "ab");
  EXPECT_EQ(out[1], "c");
  EXPECT_THAT(bundle_format::decode_strings(good.data(), good.size() - 1, out, 2), HasSubstr("the strings take"));
  const std::string huge = "\xff\xff\xff\xff\x0f";
  EXPECT_THAT(bundle_format::decode_strings(huge.data(), huge.size(), out, 1), HasSubstr("claims 4294967295 bytes"));
  const std::string endless(12, '\x80');
  EXPECT_THAT(bundle_format::decode_strings(endless.data(), endless.size(), out, 1), HasSubstr("not a valid varint"));
  EXPECT_THAT(bundle_format::decode_strings(endless.data(), 3, out, 1), HasSubstr("runs past"));
}

}  // namespace
}  // namespace deepflow::io
