// SPDX-License-Identifier: Apache-2.0
// text_line and csv: lines, compression, CSV fields, defaults and errors.
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

std::string write_file(const std::string& name, const std::string& bytes) {
  fs::path dir = fs::temp_directory_path() / ("deepflow_text_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string p = (dir / name).string();
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

// Deflate with stored (uncompressed) blocks, in a zlib or gzip wrapper: valid
// streams for the reader without linking zlib into the test.
uint32_t crc32(const std::string& s) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}
std::string stored_deflate(const std::string& s) {
  std::string out;
  size_t pos = 0;
  do {
    const size_t n = std::min<size_t>(s.size() - pos, 1000);  // several blocks
    const bool last = pos + n == s.size();
    out += char(last ? 1 : 0);
    out += char(n & 0xFF);
    out += char(n >> 8);
    out += char(~n & 0xFF);
    out += char((~n >> 8) & 0xFF);
    out += s.substr(pos, n);
    pos += n;
  } while (pos < s.size());
  return out;
}
std::string zlib_stream(const std::string& s) {
  uint32_t a = 1, b = 0;
  for (unsigned char ch : s) {
    a = (a + ch) % 65521;
    b = (b + a) % 65521;
  }
  const uint32_t adler = (b << 16) | a;
  std::string out = "\x78\x01" + stored_deflate(s);
  for (int k = 3; k >= 0; --k) out += char((adler >> (8 * k)) & 0xFF);
  return out;
}
std::string gzip_stream(const std::string& s) {
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  out += stored_deflate(s);
  const uint32_t crc = crc32(s), n = uint32_t(s.size());
  for (int k = 0; k < 4; ++k) out += char((crc >> (8 * k)) & 0xFF);
  for (int k = 0; k < 4; ++k) out += char((n >> (8 * k)) & 0xFF);
  return out;
}

std::vector<std::string> lines(const Dataset& ds) {
  std::vector<std::string> out;
  for (const Element& e : collect(ds)) out.push_back(*e[0].data<std::string>());
  return out;
}

TEST(TextSourcesTextLine, LinesWithoutNewlinesAcrossFiles) {
  const std::string a = write_file("a.txt", "first\nsecond\r\n\nlast without newline");
  const std::string b = write_file("b.txt", "b1\nb2\n");
  Dataset ds = Dataset::text_line({a, b});
  EXPECT_EQ(ds.element_spec().to_string(), "(string[])");
  EXPECT_EQ(lines(ds), (std::vector<std::string>{"first", "second", "", "last without newline", "b1", "b2"}));
  EXPECT_TRUE(lines(Dataset::text_line({write_file("empty.txt", "")})).empty());
  EXPECT_THAT(error_of([&] { lines(Dataset::text_line({a, "/nonexistent/x.txt"})); }),
              HasSubstr("[TextLineDataset] cannot open /nonexistent/x.txt"));
}

TEST(TextSourcesTextLine, LongLinesAndManyBlocks) {
  std::string big, line(300000, 'x');
  for (int i = 0; i < 5; ++i) big += line + std::to_string(i) + "\n";
  auto got = lines(Dataset::text_line({write_file("big.txt", big)}));
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[4], line + "4");
}

TEST(TextSourcesTextLine, ZlibAndGzip) {
  std::string text;
  for (int i = 0; i < 500; ++i) text += "line " + std::to_string(i) + "\n";
  const std::string z = write_file("t.z", zlib_stream(text));
  const std::string g = write_file("t.gz", gzip_stream(text));
  auto lz = lines(Dataset::text_line({z}, {.compression_type = "ZLIB"}));
  auto lg = lines(Dataset::text_line({g}, {.compression_type = "GZIP"}));
  ASSERT_EQ(lz.size(), 500u);
  EXPECT_EQ(lz[499], "line 499");
  EXPECT_EQ(lg, lz);
  // a real gzip file, when the tool is there
  const std::string plain = write_file("real.txt", text);
  if (std::system(("gzip -kf " + plain + " 2>/dev/null").c_str()) == 0)
    EXPECT_EQ(lines(Dataset::text_line({plain + ".gz"}, {.compression_type = "GZIP"})), lz);
  // truncated and corrupt streams are errors naming the file
  const std::string cut = write_file("cut.gz", gzip_stream(text).substr(0, 2000));
  EXPECT_THAT(error_of([&] { lines(Dataset::text_line({cut}, {.compression_type = "GZIP"})); }),
              HasSubstr("[TextLineDataset] " + cut + ": the compressed data is truncated"));
  EXPECT_THAT(error_of([&] { lines(Dataset::text_line({z}, {.compression_type = "GZIP"})); }),
              HasSubstr("[TextLineDataset] " + z + ": corrupt compressed data"));
  EXPECT_THAT(error_of([&] { Dataset::text_line({z}, {.compression_type = "BZ2"}).iter().next(); }),
              HasSubstr("compression_type must be"));
}

CsvOptions three_columns() {
  CsvOptions o;
  o.record_defaults = {scalar(0.5f), scalar(-1, DType::Int64), string_scalar("none")};
  return o;
}

TEST(TextSourcesCsv, TypesQuotesDefaultsAndHeader) {
  const std::string f = write_file("a.csv",
                                   "x,n,name\n"
                                   "1.5,2,plain\n"
                                   ",,\n"
                                   "3,4,\"quoted, with comma\"\n"
                                   "4,5,\"say \"\"hi\"\"\"\n"
                                   "5,NA,\"two\nlines\"\r\n"
                                   "6,7,\"\"\n");
  CsvOptions o = three_columns();
  o.header = true;
  o.na_value = "NA";
  Dataset ds = Dataset::csv({f}, o);
  EXPECT_EQ(ds.element_spec().to_string(), "(float32[], int64[], string[])");
  auto all = collect(ds);
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[0][0].item<float>(), 1.5f);
  EXPECT_EQ(all[0][1].item<int64_t>(), 2);
  EXPECT_EQ(*all[0][2].data<std::string>(), "plain");
  EXPECT_EQ(all[1][0].item<float>(), 0.5f);  // empty fields take the defaults
  EXPECT_EQ(all[1][1].item<int64_t>(), -1);
  EXPECT_EQ(*all[1][2].data<std::string>(), "none");
  EXPECT_EQ(*all[2][2].data<std::string>(), "quoted, with comma");
  EXPECT_EQ(*all[3][2].data<std::string>(), "say \"hi\"");
  EXPECT_EQ(all[4][1].item<int64_t>(), -1);  // na_value
  EXPECT_EQ(*all[4][2].data<std::string>(), "two\nlines");
  EXPECT_EQ(*all[5][2].data<std::string>(), "");  // a quoted empty string is a value
}

TEST(TextSourcesCsv, SelectColsDelimiterAndRequiredColumns) {
  const std::string f = write_file("b.csv", "a;b;c;d\n1;2;3;4\n5;;7;8\n");
  CsvOptions o;
  o.field_delim = ';';
  o.header = true;
  o.select_cols = {1, 3};
  o.record_defaults = {Tensor(), scalar(0, DType::Int32)};
  o.column_dtypes = {DType::Int64, DType::Int32};
  Dataset ds = Dataset::csv({f}, o);
  EXPECT_EQ(ds.element_spec().to_string(), "(int64[], int32[])");
  Iterator it = ds.iter();
  auto first = it.next();
  EXPECT_EQ((*first)[0].item<int64_t>(), 2);
  EXPECT_EQ((*first)[1].item<int32_t>(), 4);
  EXPECT_THAT(error_of([&] { it.next(); }),
              HasSubstr("[CsvDataset] " + f + ":3: column 1 is empty and has no default (a required column)"));
}

TEST(TextSourcesCsv, BadRecordsNameFileAndLine) {
  const std::string f = write_file("c.csv", "1,2,a\n1,2\n");
  EXPECT_THAT(error_of([&] { collect(Dataset::csv({f}, three_columns())); }),
              HasSubstr("[CsvDataset] " + f + ":2: expected 3 fields, got 2"));
  const std::string g = write_file("d.csv", "1,2,a\n1,zz,b\n");
  EXPECT_THAT(error_of([&] { collect(Dataset::csv({g}, three_columns())); }),
              HasSubstr("[CsvDataset] " + g + ":2: column 1: 'zz' is not a valid int64"));
  const std::string h = write_file("e.csv", "1,2,\"open\n");
  EXPECT_THAT(error_of([&] { collect(Dataset::csv({h}, three_columns())); }), HasSubstr("unterminated quoted field"));
  CsvOptions none;
  EXPECT_THAT(error_of([&] { Dataset::csv({f}, none); }), HasSubstr("must name at least one column"));
}

TEST(TextSourcesCsv, GzipAndSeveralFiles) {
  const std::string a = write_file("p1.csv.gz", gzip_stream("1,1,a\n2,2,b\n"));
  const std::string b = write_file("p2.csv.gz", gzip_stream("3,3,c\n"));
  CsvOptions o = three_columns();
  o.compression_type = "GZIP";
  auto all = collect(Dataset::csv({a, b}, o));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(*all[2][2].data<std::string>(), "c");
}

}  // namespace
}  // namespace deepflow::data
