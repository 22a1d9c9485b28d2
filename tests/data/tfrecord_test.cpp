// SPDX-License-Identifier: Apache-2.0
#include "deepflow/data/tfrecord.h"

#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "data_test_util.h"
#include "deepflow/core/crc32c.h"
#include "deepflow/data/dataset.h"
#include "test_util.h"
#include "oracle.h"

namespace deepflow::data {
namespace {

using deepflow::testing::error_of;
using ::testing::HasSubstr;

// A fresh directory per test, removed with its files at the end.
class TFRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "tfrecord_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const auto& f : files()) std::remove((dir_ + "/" + f).c_str());
    ::rmdir(dir_.c_str());
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (dirent* e = ::readdir(d))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.push_back(e->d_name);
      ::closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  static std::string slurp(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  static void spit(const std::string& p, const std::string& bytes) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), std::streamsize(bytes.size()));
  }
  static std::vector<std::string> read_all(const std::string& p, RecordReaderOptions o = {}) {
    RecordReader r(p, o);
    std::vector<std::string> out;
    while (auto rec = r.read()) out.emplace_back(*rec);
    return out;
  }
  static void write_all(const std::string& p, const std::vector<std::string>& recs, RecordWriterOptions o = {}) {
    RecordWriter w(p, o);
    for (const auto& r : recs) w.write(r);
    w.close();
  }
  std::string dir_;
};

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

std::vector<std::string> sample_records() {
  std::mt19937 rng(11);
  std::vector<std::string> recs = {"", "hello", std::string(1, '\0'), std::string(3000, 'z')};
  for (int i = 0; i < 200; ++i) {
    std::string r(rng() % 300, '\0');
    for (auto& c : r) c = static_cast<char>(rng());
    recs.push_back(r);
  }
  recs.push_back(std::string(1 << 20, 'q'));  // larger than any buffer below
  return recs;
}

TEST_F(TFRecordTest, WriterEmitsTheSpecBytes) {
  write_all(path("a"), {"", "hello"});
  EXPECT_EQ(hex(slurp(path("a"))),
            "00 00 00 00 00 00 00 00 29 03 98 07 d8 ea 82 a2 "
            "05 00 00 00 00 00 00 00 ea b2 04 3e 68 65 6c 6c 6f bb 1f 1c 19");
  EXPECT_EQ(hex(tfrecord_encode("hello")), "05 00 00 00 00 00 00 00 ea b2 04 3e 68 65 6c 6c 6f bb 1f 1c 19");
  EXPECT_EQ(files(), std::vector<std::string>{"a"});  // no temporary file left behind
}

TEST_F(TFRecordTest, ReadsTheSpecBytes) {
  spit(path("a"), tfrecord_encode("") + tfrecord_encode("hello"));
  RecordReader r(path("a"));
  EXPECT_EQ(r.offset(), 0u);
  auto a = r.read();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(*a, "");
  EXPECT_EQ(r.offset(), 16u);
  auto b = r.read();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(*b, "hello");
  EXPECT_EQ(r.offset(), 37u);
  EXPECT_FALSE(r.read().has_value());
  EXPECT_FALSE(r.read().has_value());  // stays at the end
}

TEST_F(TFRecordTest, RoundTripsEveryCompressionAndBufferSize) {
  const auto recs = sample_records();
  for (const std::string type : {"", "ZLIB", "GZIP"}) {
    write_all(path("r"), recs, {.compression_type = type});
    for (int64_t buffer : {1, 13, 4096, 256 << 10}) {
      const auto got = read_all(path("r"), {.compression_type = type, .buffer_size = buffer});
      ASSERT_EQ(got.size(), recs.size()) << type << " buffer " << buffer;
      for (size_t i = 0; i < recs.size(); ++i) ASSERT_EQ(got[i], recs[i]) << type << " record " << i;
    }
  }
}

TEST_F(TFRecordTest, CompressionWrapsTheWholeStream) {
  const std::vector<std::string> recs = {"", "hello", std::string(5000, 'a')};
  write_all(path("plain"), recs);
  write_all(path("z"), recs, {.compression_type = "ZLIB"});
  write_all(path("gz"), recs, {.compression_type = "GZIP", .compression_level = 9});
  const std::string plain = slurp(path("plain")), z = slurp(path("z")), gz = slurp(path("gz"));
  ASSERT_GE(z.size(), 2u);
  EXPECT_EQ(uint8_t(z[0]), 0x78);  // zlib header, deflate with a 32 KiB window
  EXPECT_EQ((uint8_t(z[0]) * 256 + uint8_t(z[1])) % 31, 0);
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(hex(gz.substr(0, 2)), "1f 8b");
  EXPECT_LT(gz.size(), plain.size() / 10);  // 5000 a's compress
  // An independent gunzip yields exactly the uncompressed framing.
  if (std::system("command -v gzip >/dev/null 2>&1") != 0) DEEPFLOW_ORACLE_MISSING("no gzip binary");
  ASSERT_EQ(std::system(("gzip -dc < '" + path("gz") + "' > '" + path("gunzipped") + "'").c_str()), 0);
  EXPECT_EQ(slurp(path("gunzipped")), plain);
  // And a file gzip compressed (two concatenated members) reads as GZIP.
  ASSERT_EQ(std::system(("gzip -c < '" + path("plain") + "' > '" + path("two.gz") + "' && gzip -c < '" + path("plain") +
                         "' >> '" + path("two.gz") + "'")
                            .c_str()),
            0);
  EXPECT_EQ(read_all(path("two.gz"), {.compression_type = "GZIP"}).size(), 2 * recs.size());
  // So does Python's zlib for the ZLIB file, when python3 is there.
  if (std::system("command -v python3 >/dev/null 2>&1") == 0) {
    ASSERT_EQ(std::system(("python3 -c 'import sys, zlib; sys.stdout.buffer.write(zlib.decompress(open(sys.argv[1], "
                           "\"rb\").read()))' '" + path("z") + "' > '" + path("unzlibbed") + "'").c_str()),
              0);
    EXPECT_EQ(slurp(path("unzlibbed")), plain);
  }
  // The wrong compression type is an error, never garbage records.
  EXPECT_THAT(error_of([&] { read_all(path("gz")); }), HasSubstr("corrupted record at byte 0"));
  EXPECT_THAT(error_of([&] { read_all(path("gz"), {.compression_type = "ZLIB"}); }),
              HasSubstr("corrupted ZLIB stream at compressed byte"));
}

TEST_F(TFRecordTest, EmptyFiles) {
  spit(path("empty"), "");
  for (const std::string type : {"", "ZLIB", "GZIP"}) {
    EXPECT_TRUE(read_all(path("empty"), {.compression_type = type}).empty()) << type;
    write_all(path("none"), {}, {.compression_type = type});
    EXPECT_TRUE(read_all(path("none"), {.compression_type = type}).empty()) << type;
  }
}

TEST_F(TFRecordTest, WriterIsAtomic) {
  write_all(path("t"), {"old"});
  {
    RecordWriter w(path("t"));
    w.write("new");
    w.flush();
    EXPECT_EQ(read_all(path("t")), std::vector<std::string>{"old"});  // not published yet
    EXPECT_EQ(files().size(), 2u);                                    // t and its temporary file
    w.close();
    w.close();  // again: nothing
    EXPECT_THAT(error_of([&] { w.write("x"); }), HasSubstr("[TFRecordWriter] " + path("t") + ": write after close()"));
  }
  EXPECT_EQ(read_all(path("t")), std::vector<std::string>{"new"});
  // Destroyed without close(), by an exception: the target keeps its old records and
  // no temporary file remains.
  try {
    RecordWriter w(path("t"));
    w.write("half");
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(read_all(path("t")), std::vector<std::string>{"new"});
  {
    RecordWriter w(path("fresh"), {.compression_type = "GZIP"});
    w.write("never");
  }
  EXPECT_EQ(files(), std::vector<std::string>{"t"});
}

TEST_F(TFRecordTest, WriterErrors) {
  EXPECT_THAT(error_of([&] { RecordWriter w(path("no/such/dir/f")); }),
              HasSubstr("[TFRecordWriter] " + path("no/such/dir/f") + ": cannot create"));
  EXPECT_THAT(error_of([&] { RecordWriter w(path("f"), {.compression_type = "SNAPPY"}); }),
              HasSubstr("[TFRecordWriter] unknown compression_type 'SNAPPY'"));
  EXPECT_THAT(error_of([&] { RecordWriter w(path("f"), {.compression_type = "GZIP", .compression_level = 12}); }),
              HasSubstr("compression_level must be in [-1, 9], got 12"));
  EXPECT_TRUE(files().empty());
}

TEST_F(TFRecordTest, ReaderOpenErrors) {
  EXPECT_THAT(error_of([&] { RecordReader r(path("missing")); }),
              HasSubstr("[TFRecordDataset] cannot open " + path("missing") + ": No such file"));
  EXPECT_THAT(error_of([&] { RecordReader r(dir_); }), HasSubstr("it is a directory"));
  spit(path("a"), "");
  EXPECT_THAT(error_of([&] { RecordReader r(path("a"), {.compression_type = "gzip"}); }),
              HasSubstr("[TFRecordDataset] unknown compression_type 'gzip'"));
}

TEST_F(TFRecordTest, TruncatedRecordsNameFileAndOffset) {
  const std::string two = tfrecord_encode("") + tfrecord_encode("hello");  // "hello" at byte 16
  spit(path("h"), two.substr(0, 16 + 5));
  EXPECT_THAT(error_of([&] { read_all(path("h")); }),
              HasSubstr("[TFRecordDataset] " + path("h") +
                        ": truncated record at byte 16 (the header needs 12 bytes, 5 are left)"));
  spit(path("p"), two.substr(0, two.size() - 1));
  EXPECT_THAT(error_of([&] { read_all(path("p")); }),
              HasSubstr(path("p") + ": truncated record at byte 16 (21 bytes with header and footer, 20 are left)"));
  // The records before the damage are delivered first.
  RecordReader r(path("p"));
  EXPECT_EQ(r.read().value(), "");
  EXPECT_THAT(error_of([&] { r.read(); }), HasSubstr("truncated record at byte 16"));
}

TEST_F(TFRecordTest, CorruptRecordsSayHeaderOrData) {
  std::string bytes = tfrecord_encode("abc") + tfrecord_encode("hello");  // "hello" at byte 19
  std::string h = bytes;
  h[19 + 9] ^= 1;  // the length's checksum
  spit(path("h"), h);
  EXPECT_THAT(error_of([&] { read_all(path("h")); }),
              HasSubstr(path("h") + ": corrupted record at byte 19: the header's length checksum does not match"));
  std::string d = bytes;
  d[19 + 12 + 2] ^= 0x40;  // a payload byte
  spit(path("d"), d);
  EXPECT_THAT(error_of([&] { read_all(path("d")); }),
              HasSubstr(path("d") + ": corrupted record at byte 19: the data checksum does not match (5 bytes)"));
  // A huge length with a valid checksum.
  std::string big(12, '\0');
  const uint64_t len = ~uint64_t(0);
  std::memcpy(big.data(), &len, 8);
  const uint32_t c = crc32c_mask(crc32c(big.data(), 8));
  std::memcpy(big.data() + 8, &c, 4);
  spit(path("big"), big + "rest");
  EXPECT_THAT(error_of([&] { read_all(path("big")); }),
              HasSubstr("record size too large at byte 0: 18446744073709551615 bytes"));
  // A length that checks but exceeds the file is a truncation, found without allocating it.
  const uint64_t len2 = uint64_t(1) << 40;
  std::memcpy(big.data(), &len2, 8);
  const uint32_t c2 = crc32c_mask(crc32c(big.data(), 8));
  std::memcpy(big.data() + 8, &c2, 4);
  spit(path("long"), big + "rest");
  EXPECT_THAT(error_of([&] { read_all(path("long")); }), HasSubstr("truncated record at byte 0"));
  EXPECT_THAT(error_of([&] { read_all(path("long"), {.compression_type = ""}); }), HasSubstr("16 are left"));
}

TEST_F(TFRecordTest, CompressedStreamErrors) {
  write_all(path("gz"), sample_records(), {.compression_type = "GZIP"});
  const std::string gz = slurp(path("gz"));
  spit(path("cut"), gz.substr(0, gz.size() / 2));
  EXPECT_THAT(error_of([&] { read_all(path("cut"), {.compression_type = "GZIP"}); }),
              HasSubstr("[TFRecordDataset] " + path("cut") +
                        ": truncated GZIP stream: the file ends at compressed byte " + std::to_string(gz.size() / 2)));
  std::string bad = gz;
  for (size_t i = 100; i < 140; ++i) bad[i] = char(0xFF);
  spit(path("bad"), bad);
  EXPECT_THAT(error_of([&] { read_all(path("bad"), {.compression_type = "GZIP"}); }),
              ::testing::AnyOf(HasSubstr("corrupted GZIP stream at compressed byte"), HasSubstr("corrupted record")));
  // With skip_bad_records the records before the damage survive and the rest is dropped.
  const int64_t before = tfrecord_skipped_records();
  RecordReader r(path("cut"), {.compression_type = "GZIP", .skip_bad_records = true});
  size_t n = 0;
  const auto recs = sample_records();
  while (auto rec = r.read()) ASSERT_EQ(*rec, recs[n++]);
  EXPECT_GT(n, 0u);
  EXPECT_LT(n, recs.size());
  EXPECT_GE(r.skipped_records(), 1);
  EXPECT_EQ(tfrecord_skipped_records() - before, r.skipped_records());
}

TEST_F(TFRecordTest, SkipBadRecordsResynchronises) {
  const std::vector<std::string> good = {"first", "second", "third", "fourth"};
  std::string data_bad = tfrecord_encode("bad data");
  data_bad[12 + 3] ^= 1;
  std::string header_bad = tfrecord_encode("bad header, and its length lies");
  header_bad[0] ^= 0x10;
  const std::string bytes = tfrecord_encode(good[0]) + data_bad + tfrecord_encode(good[1]) + "junk!" + header_bad +
                            tfrecord_encode(good[2]) + tfrecord_encode(good[3]) + tfrecord_encode("cut").substr(0, 14);
  spit(path("f"), bytes);
  EXPECT_THAT(error_of([&] { read_all(path("f")); }), HasSubstr("corrupted record at byte 21"));
  for (const std::string type : {"", "GZIP"}) {
    std::string p = path("f");
    if (!type.empty()) {  // the same bytes inside a gzip stream: resync works on the inflated bytes
      if (std::system(("gzip -c < '" + path("f") + "' > '" + path("f.gz") + "'").c_str()) != 0) continue;
      p = path("f.gz");
    }
    const int64_t before = tfrecord_skipped_records();
    for (int64_t buffer : {7, 1 << 16}) {
      RecordReader r(p, {.compression_type = type, .buffer_size = buffer, .skip_bad_records = true});
      std::vector<std::string> got;
      while (auto rec = r.read()) got.emplace_back(*rec);
      EXPECT_EQ(got, good) << type << " buffer " << buffer;
      // The bad data record, the junk plus the bad header, and the truncated tail.
      EXPECT_EQ(r.skipped_records(), 3) << type;
    }
    EXPECT_EQ(tfrecord_skipped_records() - before, 6);
  }
}

TEST_F(TFRecordTest, SeekRestoresAPosition) {
  const auto recs = sample_records();
  for (const std::string type : {"", "ZLIB"}) {
    write_all(path("s"), recs, {.compression_type = type});
    RecordReader r(path("s"), {.compression_type = type, .buffer_size = 1024});
    std::vector<uint64_t> offsets;
    for (size_t i = 0; i < recs.size(); ++i) {
      offsets.push_back(r.offset());
      ASSERT_TRUE(r.read().has_value());
    }
    const uint64_t end = r.offset();
    EXPECT_FALSE(r.read().has_value());
    for (size_t i : {size_t(150), size_t(3), size_t(0), recs.size() - 1, size_t(100)}) {
      r.seek(offsets[i]);
      EXPECT_EQ(r.offset(), offsets[i]);
      auto rec = r.read();
      ASSERT_TRUE(rec.has_value());
      EXPECT_EQ(*rec, recs[i]) << type << " record " << i;
    }
    // A fresh reader seeks forward without reading first (what a restored iterator does).
    RecordReader fresh(path("s"), {.compression_type = type});
    fresh.seek(offsets[200]);
    EXPECT_EQ(fresh.read().value(), recs[200]);
    fresh.seek(end);
    EXPECT_FALSE(fresh.read().has_value());
    EXPECT_THAT(error_of([&] { fresh.seek(end + 1); }),
                HasSubstr("[TFRecordDataset] " + path("s") + ": cannot seek to byte " + std::to_string(end + 1)));
  }
}

// A truncated ZLIB stream whose last inflated byte stays inside zlib when a read asks for
// exactly the bytes before it (found by tfrecord_fuzz): the reader must still get all 17
// bytes, so a record found after a skipped byte reads the same after a seek back to 0.
TEST_F(TFRecordTest, TruncatedZlibStreamGivesItsPendingBytes) {
  const unsigned char z[] = {0x78, 0x9c, 0x63, 0x60, 0x80, 0x02, 0x4d, 0xe6, 0x19, 0xec, 0x37, 0x5e, 0x35, 0x2d, 0x62};
  spit(path("t.z"), std::string(reinterpret_cast<const char*>(z), sizeof z));
  RecordReader r(path("t.z"), {.compression_type = "ZLIB", .buffer_size = 8, .skip_bad_records = true});
  auto first = r.read();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, "");
  EXPECT_FALSE(r.read().has_value());
  const int64_t skipped = r.skipped_records();
  r.seek(0);  // inflates again from the start, in one 16-byte piece this time
  auto again = r.read();
  ASSERT_TRUE(again.has_value()) << "the record at byte 1 was lost on the second pass";
  EXPECT_EQ(*again, "");
  EXPECT_FALSE(r.read().has_value());
  EXPECT_EQ(r.skipped_records(), 2 * skipped);
}

TEST_F(TFRecordTest, ReaderIsMovable) {
  write_all(path("m"), {"a", "b"});
  RecordReader r(path("m"));
  EXPECT_EQ(r.read().value(), "a");
  RecordReader moved = std::move(r);
  EXPECT_EQ(moved.read().value(), "b");
  EXPECT_EQ(moved.path(), path("m"));
}

// --- Dataset::tfrecord ---

std::vector<std::string> strings_of(const Dataset& ds) {
  std::vector<std::string> out;
  for (const Element& e : ds) {
    EXPECT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].dtype(), DType::String);
    EXPECT_EQ(e[0].rank(), 0);
    out.push_back(*e[0].data<std::string>());
  }
  return out;
}

std::vector<std::string> next_strings(Iterator& it, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    auto e = it.next();
    if (!e) break;
    out.push_back(*(*e)[0].data<std::string>());
  }
  return out;
}

class TFRecordDatasetTest : public TFRecordTest {
 protected:
  // Files a (3 records), b (empty), c (2 records); records named "<file><index>".
  std::vector<std::string> three_files(const std::string& type = "") {
    write_all(path("a"), {"a0", "a1", "a2"}, {.compression_type = type});
    write_all(path("b"), {}, {.compression_type = type});
    write_all(path("c"), {"c0", "c1"}, {.compression_type = type});
    return {path("a"), path("b"), path("c")};
  }
};

TEST_F(TFRecordDatasetTest, ReadsFilesInOrder) {
  for (const std::string type : {"", "ZLIB", "GZIP"}) {
    const Dataset ds = Dataset::tfrecord(three_files(type), {.compression_type = type});
    EXPECT_EQ(ds.element_spec().to_string(), "(string[])");
    EXPECT_EQ(strings_of(ds), (std::vector<std::string>{"a0", "a1", "a2", "c0", "c1"})) << type;
    EXPECT_EQ(strings_of(ds).size(), 5u);  // a dataset iterates again from the start
  }
  EXPECT_TRUE(strings_of(Dataset::tfrecord({})).empty());
}

TEST_F(TFRecordDatasetTest, ParallelReadsInterleaveFiles) {
  const auto files = three_files();
  write_all(path("d"), {"d0", "d1", "d2", "d3"});
  const std::vector<std::string> four = {files[0], files[1], files[2], path("d")};
  // Cycle of 2, one record each, as tf.data's interleave: a and b open; b is empty, so
  // the turn goes back to a, and c takes b's slot; d opens when a and c are done.
  EXPECT_EQ(strings_of(Dataset::tfrecord(four, {.num_parallel_reads = 2})),
            (std::vector<std::string>{"a0", "a1", "c0", "a2", "c1", "d0", "d1", "d2", "d3"}));
  auto all = strings_of(Dataset::tfrecord(four, {.num_parallel_reads = kAutotune}));
  EXPECT_EQ(all, (std::vector<std::string>{"a0", "c0", "d0", "a1", "c1", "d1", "a2", "d2", "d3"}));
}

TEST_F(TFRecordDatasetTest, SaveAndRestoreMidFile) {
  for (const std::string type : {"", "GZIP"}) {
    const Dataset ds = Dataset::tfrecord(three_files(type), {.compression_type = type, .buffer_size = 5});
    for (int k = 0; k <= 5; ++k) {
      Iterator it = ds.iter();
      const auto head = next_strings(it, k);
      const std::string state = it.save();
      const auto rest = next_strings(it, 100);
      Iterator again = ds.iter();
      again.restore(state);
      EXPECT_EQ(next_strings(again, 100), rest) << type << " after " << k;
      std::vector<std::string> whole = head;
      whole.insert(whole.end(), rest.begin(), rest.end());
      EXPECT_EQ(whole, (std::vector<std::string>{"a0", "a1", "a2", "c0", "c1"}));
    }
  }
}

TEST_F(TFRecordDatasetTest, SaveAndRestoreWithParallelReads) {
  auto files = three_files();
  write_all(path("d"), {"d0", "d1", "d2", "d3"});
  files.push_back(path("d"));
  const Dataset ds = Dataset::tfrecord(files, {.num_parallel_reads = 2});
  const std::vector<std::string> all = strings_of(ds);
  ASSERT_EQ(all.size(), 9u);
  for (int k : {0, 1, 3, 6, 9}) {
    Iterator it = ds.iter();
    const auto head = next_strings(it, k);
    const std::string state = it.save();
    Iterator again = ds.iter();
    again.restore(state);
    std::vector<std::string> whole = head;
    for (const auto& s : next_strings(again, 100)) whole.push_back(s);
    EXPECT_EQ(whole, all) << "restored after " << k;
  }
}

TEST_F(TFRecordDatasetTest, BadRecordsAreErrorsOrSkipped) {
  auto files = three_files();
  std::string c = slurp(path("c"));
  c[18 + 12] ^= 1;  // c1's first payload byte (each record here is 12 + 2 + 4 bytes)
  spit(path("c"), c);
  Iterator it = Dataset::tfrecord(files).iter();
  EXPECT_EQ(next_strings(it, 4), (std::vector<std::string>{"a0", "a1", "a2", "c0"}));
  EXPECT_THAT(error_of([&] { it.next(); }),
              HasSubstr("[TFRecordDataset] " + path("c") + ": corrupted record at byte 18: the data checksum"));
  spit(path("a"), slurp(path("a")).substr(0, 30));  // a1 cut short
  EXPECT_THAT(error_of([&] { collect(Dataset::tfrecord(files)); }),
              HasSubstr(path("a") + ": truncated record at byte 18"));
  const int64_t before = tfrecord_skipped_records();
  EXPECT_EQ(strings_of(Dataset::tfrecord(files, {.skip_bad_records = true})), (std::vector<std::string>{"a0", "c0"}));
  EXPECT_EQ(tfrecord_skipped_records() - before, 2);
  EXPECT_THAT(error_of([&] { collect(Dataset::tfrecord({path("missing")})); }),
              HasSubstr("[TFRecordDataset] cannot open " + path("missing")));
}

TEST_F(TFRecordDatasetTest, OptionErrors) {
  EXPECT_THAT(error_of([] { Dataset::tfrecord({"x"}, {.compression_type = "LZ4"}); }),
              HasSubstr("[TFRecordDataset] unknown compression_type 'LZ4'"));
  EXPECT_THAT(error_of([] { Dataset::tfrecord({"x"}, {.buffer_size = 0}); }),
              HasSubstr("[TFRecordDataset] buffer_size must be positive, got 0"));
  EXPECT_THAT(error_of([] {
                Dataset::tfrecord({"x", "y"}, {.num_parallel_reads = 0});
              }),
              HasSubstr("[TFRecordDataset] num_parallel_reads must be >= 1 or kAutotune, got 0"));
}

TEST_F(TFRecordDatasetTest, ParallelReadErrorReachesTheConsumer) {
  auto files = three_files();
  spit(path("c"), slurp(path("c")).substr(0, 20));
  Iterator it = Dataset::tfrecord(files, {.num_parallel_reads = 3}).iter();
  std::string err;
  int n = 0;
  try {
    while (it.next()) ++n;
  } catch (const Error& e) {
    err = e.what();
  }
  EXPECT_THAT(err, HasSubstr(path("c") + ": truncated record at byte 18"));
  EXPECT_LE(n, 4);
}

}  // namespace
}  // namespace deepflow::data
