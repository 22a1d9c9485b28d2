// SPDX-License-Identifier: Apache-2.0
// The sorted-table file format TensorFlow's checkpoint index (`<prefix>.index`) is written
// in: LevelDB's table format (docs/formats.md, "TensorFlow checkpoints"). A table is
// data blocks of prefix-compressed, sorted key/value entries with restart points, an
// empty metaindex block, an index block (one entry per data block: a separator key and
// the block's offset and size) and a 48-byte footer ending in the magic
// 0xdb4775248b80fb57. Every block has a 5-byte trailer: a compression type (0 none,
// 1 Snappy) and a masked CRC32C of the contents and the type byte.
//
//   std::vector<tf::TableEntry> entries = tf::read_table(bytes, "[tf::checkpoint] x.index");
//   tf::TableWriter w;  w.add("", header);  w.add("a", entry_a);  std::string file = w.finish();
//
// The reader checks everything it reads (footer, handles, every block's CRC, the restart
// array, varint bounds, sorted and unique keys) and throws deepflow::Error for any fault;
// it never reads outside the given bytes. The writer produces the bytes TensorFlow's
// TableBuilder produces with BundleWriter's options: uncompressed blocks, a restart every
// 16 entries in data blocks and at every entry of the index block, blocks closed once they
// reach 256 KiB, shortest separators between blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace deepflow::tf {

/// One key/value pair of a table.
struct TableEntry {
  std::string key;
  std::string value;
};

/// The last 8 bytes of every table file: fixed64 0xdb4775248b80fb57, little-endian.
inline constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
/// The footer: two block handles, zero padding to 40 bytes, the magic.
inline constexpr size_t kTableFooterSize = 48;
/// The trailer after every block's contents: type byte and masked CRC32C.
inline constexpr size_t kBlockTrailerSize = 5;
/// Block compression types.
inline constexpr uint8_t kNoCompression = 0;
inline constexpr uint8_t kSnappyCompression = 1;

/// True when `bytes` ends in the table magic (a cheap test for "this is a TF index").
bool has_table_magic(std::string_view bytes);

/// Every entry of the table in `bytes`, in key order. `who` starts every error message
/// (e.g. "[tf::checkpoint] /ckpt/model.index"), followed by what is wrong and where.
std::vector<TableEntry> read_table(std::string_view bytes, const std::string& who);

/// The contents of one block (without its trailer), checked and decompressed: the
/// `size` bytes at `offset` followed by the trailer. Exposed for tests and the fuzzer.
std::string read_block(std::string_view file, uint64_t offset, uint64_t size, const std::string& who);
/// The entries of one block's contents (restart array included), appended to `out`.
void parse_block(std::string_view contents, const std::string& who, std::vector<TableEntry>* out);

/// Builds a block: entries added in increasing key order, a restart point (a full key)
/// every `restart_interval` entries.
class BlockBuilder {
 public:
  explicit BlockBuilder(int restart_interval) : restart_interval_(restart_interval) {}
  void add(std::string_view key, std::string_view value);
  /// Appends the restart array and returns the contents; the builder is then reset.
  std::string finish();
  /// The size finish() would return now (LevelDB's CurrentSizeEstimate).
  size_t size_estimate() const { return buffer_.size() + 4 * (restarts_.size() + 1); }
  bool empty() const { return buffer_.empty(); }

 private:
  int restart_interval_;
  std::string buffer_;
  std::vector<uint32_t> restarts_{0};
  int counter_ = 0;
  std::string last_key_;
};

/// Writes a table: add() keys in strictly increasing bytewise order, then finish().
class TableWriter {
 public:
  /// The block size at which a data block is closed (TensorFlow's table option: 256 KiB).
  explicit TableWriter(size_t block_size = 256 * 1024) : block_size_(block_size) {}
  /// Throws when `key` is not greater than the previous key.
  void add(std::string_view key, std::string_view value);
  /// The whole file.
  std::string finish();

 private:
  void flush_data_block();
  void write_block(BlockBuilder& block, std::string* handle);

  size_t block_size_;
  std::string file_;
  BlockBuilder data_{16};
  BlockBuilder index_{1};
  std::string last_key_;
  bool any_ = false;
  bool pending_index_entry_ = false;
  std::string pending_handle_;
};

/// LevelDB's varints (7 bits per byte, low first) and fixed-width little-endian integers.
namespace coding {
void put_varint64(std::string* out, uint64_t v);
void put_fixed32(std::string* out, uint32_t v);
/// Decodes a varint at data[*pos, end); advances *pos. False when it is cut off or longer
/// than 10 bytes (or, for 32 bits, its value does not fit).
bool get_varint64(const char* data, size_t end, size_t* pos, uint64_t* v);
bool get_varint32(const char* data, size_t end, size_t* pos, uint32_t* v);
uint32_t load_fixed32(const char* p);
}  // namespace coding

}  // namespace deepflow::tf
