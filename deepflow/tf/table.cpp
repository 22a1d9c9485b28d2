// SPDX-License-Identifier: Apache-2.0
// The table reader (table.h) and LevelDB's integer coding.
#include "deepflow/tf/table.h"

#include <snappy.h>

#include <algorithm>
#include <cstring>

#include "deepflow/core/crc32c.h"
#include "deepflow/core/error.h"

namespace deepflow::tf {

namespace coding {

void put_varint64(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out->push_back(char(uint8_t(v)));
}

void put_fixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(char(uint8_t(v >> (8 * i))));
}

bool get_varint64(const char* data, size_t end, size_t* pos, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && *pos < end; shift += 7) {
    const uint8_t byte = uint8_t(data[(*pos)++]);
    result |= uint64_t(byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      *v = result;
      return true;
    }
  }
  return false;
}

bool get_varint32(const char* data, size_t end, size_t* pos, uint32_t* v) {
  uint64_t wide = 0;
  const size_t start = *pos;
  if (!get_varint64(data, end, pos, &wide) || *pos - start > 5 || wide > 0xffffffffull) return false;
  *v = uint32_t(wide);
  return true;
}

uint32_t load_fixed32(const char* p) {
  const auto* u = reinterpret_cast<const uint8_t*>(p);
  return uint32_t(u[0]) | uint32_t(u[1]) << 8 | uint32_t(u[2]) << 16 | uint32_t(u[3]) << 24;
}

}  // namespace coding

using namespace coding;

namespace {

// A block handle: varint64 offset, varint64 size.
struct Handle {
  uint64_t offset = 0, size = 0;
};

Handle parse_handle(const char* data, size_t end, size_t* pos, const std::string& who, const char* what) {
  Handle h;
  DF_CHECK(get_varint64(data, end, pos, &h.offset) && get_varint64(data, end, pos, &h.size), who, ": the ", what,
           " handle is cut off or malformed");
  return h;
}

uint64_t load_fixed64(const char* p) {
  return uint64_t(load_fixed32(p)) | uint64_t(load_fixed32(p + 4)) << 32;
}

}  // namespace

bool has_table_magic(std::string_view bytes) {
  return bytes.size() >= kTableFooterSize && load_fixed64(bytes.data() + bytes.size() - 8) == kTableMagic;
}

std::string read_block(std::string_view file, uint64_t offset, uint64_t size, const std::string& who) {
  DF_CHECK(offset <= file.size() && size <= file.size() - offset &&
               kBlockTrailerSize <= file.size() - offset - size,
           who, ": block at offset ", offset, " of ", size, " bytes (+", kBlockTrailerSize,
           " trailer) runs past the end of the file (", file.size(), " bytes): truncated or corrupt");
  const char* p = file.data() + offset;
  const uint8_t type = uint8_t(p[size]);
  const uint32_t stored = crc32c_unmask(load_fixed32(p + size + 1));
  const uint32_t actual = crc32c_extend(crc32c(p, size), p + size, 1);
  DF_CHECK(stored == actual, who, ": block at offset ", offset, " of ", size,
           " bytes fails its CRC32C check (corrupt file)");
  if (type == kNoCompression) return std::string(p, size);
  DF_CHECK(type == kSnappyCompression, who, ": block at offset ", offset, " has unknown compression type ",
           int(type), " (0: none, 1: Snappy)");
  size_t raw = 0;
  DF_CHECK(snappy::GetUncompressedLength(p, size, &raw), who, ": Snappy block at offset ", offset,
           " has a malformed length header");
  // Snappy expands at most ~22x (a 3-byte copy of 64 bytes); a larger claim is corrupt.
  DF_CHECK(raw <= 32 * size + 64, who, ": Snappy block at offset ", offset, " claims ", raw,
           " bytes from ", size, " (corrupt)");
  std::string out(raw, '\0');
  DF_CHECK(snappy::RawUncompress(p, size, out.data()), who, ": Snappy block at offset ", offset,
           " does not decompress (corrupt)");
  return out;
}

void parse_block(std::string_view contents, const std::string& who, std::vector<TableEntry>* out) {
  const char* d = contents.data();
  const size_t n = contents.size();
  DF_CHECK(n >= 4, who, ": block of ", n, " bytes is too short for its restart count");
  const uint32_t num_restarts = load_fixed32(d + n - 4);
  DF_CHECK(num_restarts >= 1 && num_restarts <= (n - 4) / 4, who, ": block of ", n, " bytes claims ",
           num_restarts, " restart points (corrupt)");
  const size_t limit = n - 4 - 4 * size_t(num_restarts);  // where the entries end
  // Entry starts with shared == 0, to check the restart array against.
  std::vector<size_t> full_key_starts;
  std::string key;
  size_t pos = 0;
  const size_t first = out->size();
  while (pos < limit) {
    const size_t start = pos;
    uint32_t shared = 0, non_shared = 0, value_len = 0;
    DF_CHECK(get_varint32(d, limit, &pos, &shared) && get_varint32(d, limit, &pos, &non_shared) &&
                 get_varint32(d, limit, &pos, &value_len),
             who, ": entry at block offset ", start, " has a cut-off or malformed header");
    DF_CHECK(shared <= key.size(), who, ": entry at block offset ", start, " shares ", shared,
             " bytes with a previous key of ", key.size());
    DF_CHECK(non_shared <= limit - pos && value_len <= limit - pos - non_shared, who, ": entry at block offset ",
             start, " (", non_shared, " key and ", value_len, " value bytes) runs past the block's entries");
    if (shared == 0) full_key_starts.push_back(start);
    key.resize(shared);
    key.append(d + pos, non_shared);
    pos += non_shared;
    out->push_back({key, std::string(d + pos, value_len)});
    pos += value_len;
  }
  DF_CHECK(out->size() == first || full_key_starts.front() == 0, who,
           ": the block's first entry shares bytes with a key before it");
  for (uint32_t i = 0; i < num_restarts; ++i) {
    const uint32_t r = load_fixed32(d + limit + 4 * size_t(i));
    const bool ok = out->size() == first ? r == 0
                                         : std::binary_search(full_key_starts.begin(), full_key_starts.end(), r);
    DF_CHECK(ok, who, ": restart point ", i, " (offset ", r, ") is not the start of an entry with a full key");
  }
}

std::vector<TableEntry> read_table(std::string_view file, const std::string& who) {
  DF_CHECK(file.size() >= kTableFooterSize, who, ": ", file.size(),
           " bytes is too short for a table (the footer alone is ", kTableFooterSize, "): truncated");
  DF_CHECK(has_table_magic(file), who, ": no table magic at the end (not a TensorFlow checkpoint index, or truncated)");
  const size_t footer = file.size() - kTableFooterSize;
  const std::string_view blocks = file.substr(0, footer);  // blocks never reach into the footer
  size_t pos = footer;
  const size_t handles_end = file.size() - 8;
  const Handle meta = parse_handle(file.data(), handles_end, &pos, who, "metaindex");
  const Handle index = parse_handle(file.data(), handles_end, &pos, who, "index");

  std::vector<TableEntry> metaindex;  // read for its CRC; TensorFlow leaves it empty
  parse_block(read_block(blocks, meta.offset, meta.size, who + " (metaindex block)"), who + " (metaindex block)",
              &metaindex);
  std::vector<TableEntry> index_entries;
  parse_block(read_block(blocks, index.offset, index.size, who + " (index block)"), who + " (index block)",
              &index_entries);

  std::vector<TableEntry> entries;
  for (const TableEntry& ie : index_entries) {
    size_t hp = 0;
    const Handle h = parse_handle(ie.value.data(), ie.value.size(), &hp, who, "data block");
    DF_CHECK(hp == ie.value.size(), who, ": index entry has ", ie.value.size() - hp, " stray bytes after its handle");
    const std::string ctx = who + " (data block at offset " + std::to_string(h.offset) + ")";
    const size_t before = entries.size();
    parse_block(read_block(blocks, h.offset, h.size, ctx), ctx, &entries);
    DF_CHECK(entries.size() == before || entries.back().key <= ie.key, ctx,
             ": its last key is past the index's separator (corrupt index)");
  }
  for (size_t i = 1; i < entries.size(); ++i)
    DF_CHECK(entries[i - 1].key < entries[i].key, who, ": keys are not sorted and unique at '", entries[i].key, "'");
  return entries;
}

}  // namespace deepflow::tf
