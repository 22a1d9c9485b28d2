// SPDX-License-Identifier: Apache-2.0
// The LevelDB table format of TensorFlow's checkpoint index (deepflow/tf/table.h), on
// tables built byte by byte: restart points, shared key prefixes, Snappy blocks, CRC
// checks, and corrupt or cut-off files that must fail with a clear error.
#include "deepflow/tf/table.h"

#include <gtest/gtest.h>
#include <snappy.h>

#include <string>
#include <vector>

#include "deepflow/core/crc32c.h"
#include "test_util.h"

namespace deepflow::tf {
namespace {

using deepflow::testing::error_of;

std::string varint(uint64_t v) {
  std::string s;
  coding::put_varint64(&s, v);
  return s;
}
std::string fixed32(uint32_t v) {
  std::string s;
  coding::put_fixed32(&s, v);
  return s;
}
// One block entry: shared prefix length, the rest of the key, the value.
std::string entry(size_t shared, const std::string& suffix, const std::string& value) {
  return varint(shared) + varint(suffix.size()) + varint(value.size()) + suffix + value;
}
std::string block(const std::string& entries, const std::vector<uint32_t>& restarts) {
  std::string out = entries;
  for (uint32_t r : restarts) out += fixed32(r);
  return out + fixed32(uint32_t(restarts.size()));
}
std::string trailer(const std::string& contents, uint8_t type) {
  const char t = char(type);
  return std::string(1, t) + fixed32(crc32c_mask(crc32c_extend(crc32c(contents.data(), contents.size()), &t, 1)));
}
std::string handle(uint64_t offset, uint64_t size) { return varint(offset) + varint(size); }
std::string footer(const std::string& meta, const std::string& index) {
  std::string f = meta + index;
  f.resize(40, '\0');
  return f + fixed32(uint32_t(kTableMagic)) + fixed32(uint32_t(kTableMagic >> 32));
}

// A one-data-block table around `data` (block contents) with the given type.
std::string table_around(const std::string& data, uint8_t type, const std::string& separator) {
  std::string file = data + trailer(data, type);
  const std::string meta = block("", {0});
  const uint64_t meta_at = file.size();
  file += meta + trailer(meta, 0);
  const std::string index = block(entry(0, separator, handle(0, data.size())), {0});
  const uint64_t index_at = file.size();
  file += index + trailer(index, 0);
  return file + footer(handle(meta_at, meta.size()), handle(index_at, index.size()));
}

// "apple", "applesauce" (shares 5), "apricot" (shares 2), "banana" (a restart point).
std::string four_entries() {
  const std::string e0 = entry(0, "apple", "1"), e1 = entry(5, "sauce", "22"), e2 = entry(2, "ricot", "333");
  const std::string e3 = entry(0, "banana", "");
  return block(e0 + e1 + e2 + e3, {0, uint32_t((e0 + e1 + e2).size())});
}

const std::vector<TableEntry> kFour = {{"apple", "1"}, {"applesauce", "22"}, {"apricot", "333"}, {"banana", ""}};

void expect_entries(const std::vector<TableEntry>& got, const std::vector<TableEntry>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].key, want[i].key) << i;
    EXPECT_EQ(got[i].value, want[i].value) << i;
  }
}

TEST(TfTable, ReadsSharedPrefixesAndRestartPoints) {
  const std::string file = table_around(four_entries(), kNoCompression, "c");
  EXPECT_TRUE(has_table_magic(file));
  expect_entries(read_table(file, "t.index"), kFour);
}

TEST(TfTable, WriterMatchesTheLayoutByteForByte) {
  // The same four entries as TensorFlow's TableBuilder writes them: one restart (fewer
  // than 16 entries), the separator after the last block is the short successor "c".
  TableWriter w;
  for (const TableEntry& e : kFour) w.add(e.key, e.value);
  const std::string e0 = entry(0, "apple", "1"), e1 = entry(5, "sauce", "22"), e2 = entry(2, "ricot", "333");
  const std::string data = block(e0 + e1 + e2 + entry(0, "banana", ""), {0});
  EXPECT_EQ(w.finish(), table_around(data, kNoCompression, "c"));
}

TEST(TfTable, RestartEvery16EntriesInDataBlocksAndEveryEntryInTheIndex) {
  TableWriter w(/*block_size=*/300);
  std::vector<TableEntry> want;
  for (int i = 0; i < 100; ++i) want.push_back({"key/" + std::to_string(1000 + i), std::string(size_t(i % 7), 'v')});
  for (const TableEntry& e : want) w.add(e.key, e.value);
  const std::string file = w.finish();
  expect_entries(read_table(file, "t.index"), want);

  // The index block: its handle is the second one of the footer.
  size_t pos = file.size() - kTableFooterSize;
  uint64_t meta_off, meta_size, index_off, index_size;
  ASSERT_TRUE(coding::get_varint64(file.data(), file.size(), &pos, &meta_off));
  ASSERT_TRUE(coding::get_varint64(file.data(), file.size(), &pos, &meta_size));
  ASSERT_TRUE(coding::get_varint64(file.data(), file.size(), &pos, &index_off));
  ASSERT_TRUE(coding::get_varint64(file.data(), file.size(), &pos, &index_size));
  EXPECT_EQ(meta_size, 8u);  // empty: one restart at 0 and the count
  const std::string index = read_block(file, index_off, index_size, "t.index");
  std::vector<TableEntry> blocks;
  parse_block(index, "t.index", &blocks);
  ASSERT_GT(blocks.size(), 2u);
  EXPECT_EQ(coding::load_fixed32(index.data() + index.size() - 4), blocks.size());  // a restart per entry
  // Separators are shortened between blocks ("key/1020" < sep < next first key).
  EXPECT_LT(blocks[0].key.size(), want[0].key.size() + 1);

  // The first data block has ceil(n / 16) restarts, at entries 0, 16, 32, ...
  size_t hp = 0;
  uint64_t off, size;
  ASSERT_TRUE(coding::get_varint64(blocks[0].value.data(), blocks[0].value.size(), &hp, &off));
  ASSERT_TRUE(coding::get_varint64(blocks[0].value.data(), blocks[0].value.size(), &hp, &size));
  const std::string first = read_block(file, off, size, "t.index");
  std::vector<TableEntry> in_first;
  parse_block(first, "t.index", &in_first);
  const uint32_t restarts = coding::load_fixed32(first.data() + first.size() - 4);
  EXPECT_EQ(restarts, (in_first.size() + 15) / 16);
  EXPECT_GT(in_first.size(), 16u);
}

TEST(TfTable, ReadsSnappyBlocks) {
  const std::string raw = four_entries();
  std::string compressed;
  snappy::Compress(raw.data(), raw.size(), &compressed);
  expect_entries(read_table(table_around(compressed, kSnappyCompression, "c"), "t.index"), kFour);

  // A length header that disagrees with the data (under a valid CRC), a huge claimed
  // length, an unknown block type.
  std::string bad = compressed;
  bad[0] = char(raw.size() + 5);
  std::string e = error_of([&] { read_table(table_around(bad, kSnappyCompression, "c"), "t.index"); });
  EXPECT_NE(e.find("does not decompress"), std::string::npos) << e;
  bad = varint(1u << 30) + compressed.substr(1);
  e = error_of([&] { read_table(table_around(bad, kSnappyCompression, "c"), "t.index"); });
  EXPECT_NE(e.find("claims"), std::string::npos) << e;
  e = error_of([&] { read_table(table_around(raw, 7, "c"), "t.index"); });
  EXPECT_NE(e.find("unknown compression type 7"), std::string::npos) << e;
}

TEST(TfTable, CrcMismatchIsAnError) {
  std::string file = table_around(four_entries(), kNoCompression, "c");
  file[3] = char(file[3] ^ 1);
  const std::string e = error_of([&] { read_table(file, "[tf::checkpoint] /x/model.index"); });
  EXPECT_NE(e.find("/x/model.index"), std::string::npos) << e;
  EXPECT_NE(e.find("CRC32C"), std::string::npos) << e;
}

TEST(TfTable, MalformedBlocksAreErrors) {
  auto err = [](const std::string& data, const std::string& sep = "c") {
    return error_of([&] { read_table(table_around(data, kNoCompression, sep), "t.index"); });
  };
  // A restart point in the middle of an entry, or at an entry that shares a prefix.
  const std::string e0 = entry(0, "apple", "1"), e1 = entry(5, "sauce", "22");
  EXPECT_NE(err(block(e0 + e1, {0, 3})).find("restart point 1"), std::string::npos);
  EXPECT_NE(err(block(e0 + e1, {0, uint32_t(e0.size())})).find("restart point 1"), std::string::npos);
  // More shared bytes than the previous key has; the first entry sharing anything.
  EXPECT_NE(err(block(e0 + entry(9, "x", ""), {0})).find("shares 9 bytes"), std::string::npos);
  EXPECT_NE(err(block(entry(2, "x", ""), {0})).find("shares 2 bytes"), std::string::npos);
  // A value running past the entries, a restart count larger than the block.
  EXPECT_NE(err(block(varint(0) + varint(1) + varint(50) + "k", {0})).find("runs past"), std::string::npos);
  EXPECT_NE(err(std::string("\0\0\0\0\xff\0\0\0", 8)).find("restart points"), std::string::npos);
  // Keys out of order, and a last key past the index's separator.
  EXPECT_NE(err(block(entry(0, "b", "") + entry(0, "a", ""), {0, 4})).find("not sorted"), std::string::npos);
  EXPECT_NE(err(four_entries(), "b").find("separator"), std::string::npos);
}

TEST(TfTable, BadFootersAreErrors) {
  const std::string file = table_around(four_entries(), kNoCompression, "c");
  std::string bad_magic = file;
  bad_magic.back() = 'x';
  EXPECT_NE(error_of([&] { read_table(bad_magic, "t.index"); }).find("no table magic"), std::string::npos);
  EXPECT_FALSE(has_table_magic(bad_magic));
  EXPECT_NE(error_of([&] { read_table("short", "t.index"); }).find("too short"), std::string::npos);
  // An index handle pointing past the blocks.
  const std::string data = four_entries();
  const uint64_t meta_at = data.size() + kBlockTrailerSize;
  std::string far = file.substr(0, file.size() - kTableFooterSize) + footer(handle(meta_at, 8), handle(1u << 30, 20));
  EXPECT_NE(error_of([&] { read_table(far, "t.index"); }).find("runs past the end"), std::string::npos);
}

TEST(TfTable, EveryTruncationIsAClearError) {
  TableWriter w;
  for (int i = 0; i < 40; ++i) w.add("k" + std::to_string(100 + i), "value " + std::to_string(i));
  const std::string file = w.finish();
  for (size_t n = 0; n < file.size(); ++n) {
    const std::string e = error_of([&] { read_table(file.substr(0, n), "cut.index"); });
    EXPECT_EQ(e.rfind("cut.index", 0), 0u) << n << ": " << e;
  }
}

TEST(TfTable, WriterRefusesUnsortedKeys) {
  TableWriter w;
  w.add("b", "");
  EXPECT_NE(error_of([&] { w.add("a", ""); }).find("increasing order"), std::string::npos);
  EXPECT_NE(error_of([&] { w.add("b", ""); }).find("increasing order"), std::string::npos);
}

}  // namespace
}  // namespace deepflow::tf
