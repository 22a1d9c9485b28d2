// SPDX-License-Identifier: Apache-2.0
#include "deepflow/io/bundle_format.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstring>

#include "bundle.pb.h"
#include "deepflow/core/crc32c.h"

namespace deepflow::io::bundle_format {
namespace {

void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
uint32_t get_u32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t get_u64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// The trailer's CRC covers the index bytes and the version and length fields, so a flip
// anywhere but in the magic is a checksum failure (or a length or version mismatch).
uint32_t index_crc(const char* index, size_t n, uint32_t version) {
  uint32_t crc = crc32c(index, n);
  const uint64_t len = n;
  crc = crc32c_extend(crc, &version, 4);
  return crc32c_extend(crc, &len, 8);
}

}  // namespace

std::string encode_data_header(uint64_t bundle_id, uint32_t version) {
  std::string out(kDataMagic, 8);
  put_u32(out, version);
  put_u32(out, 0);
  put_u64(out, bundle_id);
  out.resize(kDataHeaderSize, '\0');
  return out;
}

std::string check_data_header(const void* data, size_t n, uint64_t bundle_id) {
  const char* p = static_cast<const char*>(data);
  if (n < kDataHeaderSize)
    return ::deepflow::detail::cat("truncated: ", n, " bytes, less than the ", kDataHeaderSize, "-byte data header");
  if (std::memcmp(p, kDataMagic, 8) != 0) return "not a bundle data file (no DFBDATA header)";
  const uint32_t version = get_u32(p + 8);
  if (version != kFormatVersion)
    return ::deepflow::detail::cat("format version ", version, ", this build reads version ", kFormatVersion);
  if (get_u64(p + 16) != bundle_id)
    return "it belongs to another bundle than the index (its bundle id differs): a data file replaced, or "
           "left by an interrupted write over the same prefix";
  return "";
}

std::string encode_strings(const std::string* values, size_t n) {
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += values[i].size() + 10;
  std::string out;
  out.reserve(total);
  for (size_t i = 0; i < n; ++i) {
    uint64_t v = values[i].size();
    while (v >= 0x80) {
      out.push_back(char(uint8_t(v) | 0x80));
      v >>= 7;
    }
    out.push_back(char(v));
  }
  for (size_t i = 0; i < n; ++i) out += values[i];
  return out;
}

std::string decode_strings(const char* data, size_t size, std::string* out, size_t n) {
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  size_t pos = 0;
  std::vector<uint64_t> lengths(n);  // n <= size: checked by parse_index
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (pos >= size) return ::deepflow::detail::cat("string length ", i, " runs past the tensor's ", size, " bytes");
      if (shift > 63) return ::deepflow::detail::cat("string length ", i, " is not a valid varint");
      const uint8_t b = p[pos++];
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    if (v > size) return ::deepflow::detail::cat("string ", i, " claims ", v, " bytes, the tensor has ", size);
    lengths[i] = v;
    total += v;
    if (total > size) return ::deepflow::detail::cat("the string lengths add up past the tensor's ", size, " bytes");
  }
  if (pos + total != size)
    return ::deepflow::detail::cat("the strings take ", pos + total, " bytes, the entry says ", size);
  for (size_t i = 0; i < n; ++i) {
    out[i].assign(data + pos, size_t(lengths[i]));
    pos += size_t(lengths[i]);
  }
  return "";
}

void entry_to_proto(const BundleEntry& e, proto::BundleEntryProto* out) {
  out->set_key(e.key);
  out->set_dtype(proto::DataType(int(e.dtype) + 1));
  for (int64_t d : e.shape) out->add_dims(d);
  out->set_shard(e.shard);
  out->set_offset(e.offset);
  out->set_size(e.size);
  out->set_crc32c(e.crc32c);
}

std::string encode_index(const proto::BundleIndex& index, uint32_t version) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    index.SerializeToCodedStream(&coded);
  }
  const uint32_t crc = index_crc(out.data(), out.size(), version);
  const uint64_t len = out.size();
  put_u32(out, version);
  put_u32(out, crc);
  put_u64(out, len);
  out.append(kTrailerMagic, 8);
  return out;
}

ParsedIndex parse_index(const std::string& bytes, const std::string& path) {
  const std::string who = "[BundleReader] " + path + ": ";
  DF_CHECK(bytes.size() >= kTrailerSize && std::memcmp(bytes.data() + bytes.size() - 8, kTrailerMagic, 8) == 0,
           who, "truncated or not a bundle index: it does not end with the ", kTrailerSize,
           "-byte DFBUNDLE trailer (the file has ", bytes.size(), " bytes)");
  const char* trailer = bytes.data() + bytes.size() - kTrailerSize;
  const uint32_t version = get_u32(trailer);
  const uint32_t stored_crc = get_u32(trailer + 4);
  const uint64_t len = get_u64(trailer + 8);
  const size_t have = bytes.size() - kTrailerSize;
  DF_CHECK(version != 0 && version <= kFormatVersion, who, "format version ", version, ", this build reads version ",
           kFormatVersion, version > kFormatVersion ? " (written by a newer deepflow?)" : " (corrupt trailer?)");
  DF_CHECK(len == have, who, "truncated or corrupt: the trailer says ", len, " index bytes, the file has ", have,
           " before it");
  const uint32_t crc = index_crc(bytes.data(), have, version);
  DF_CHECK(crc == stored_crc, who, "corrupt: the index fails its checksum (stored 0x", std::hex, stored_crc,
           ", computed 0x", crc, ")");

  proto::BundleIndex index;
  DF_CHECK(index.ParseFromArray(bytes.data(), int(have)), who, "corrupt: the index does not parse");
  const proto::BundleHeader& h = index.header();
  DF_CHECK(h.version() == version, who, "corrupt: the header says format version ", h.version(),
           ", the trailer ", version);
  DF_CHECK(h.endianness() == proto::BundleHeader::LITTLE, who,
           "big-endian tensor data: this build reads little-endian bundles only");
  DF_CHECK(h.num_shards() >= 1 && h.num_shards() <= kMaxShards, who, "corrupt: ", h.num_shards(), " data shards");

  ParsedIndex out;
  out.bundle_id = h.bundle_id();
  out.num_shards = h.num_shards();
  out.entries.reserve(size_t(index.entries_size()));
  for (const proto::BundleEntryProto& p : index.entries()) {
    BundleEntry e;
    e.key = p.key();
    const std::string bad = who + "corrupt entry '" + e.key + "': ";
    DF_CHECK(!e.key.empty(), who, "corrupt: an entry with an empty key");
    DF_CHECK(p.dtype() >= 1 && p.dtype() <= kNumDTypes, bad, "dtype ", int(p.dtype()));
    e.dtype = DType(p.dtype() - 1);
    DF_CHECK(p.dims_size() <= kMaxRank, bad, "rank ", p.dims_size(), " (at most ", kMaxRank, ")");
    // Element count with overflow checks: dims come from outside.
    uint64_t elems = 1;
    bool overflow = false, zero = false;
    for (int64_t d : p.dims()) {
      DF_CHECK(d >= 0, bad, "dim ", d);
      e.shape.push_back(d);
      zero = zero || d == 0;
      overflow = overflow || __builtin_mul_overflow(elems, uint64_t(d), &elems);
    }
    if (zero) elems = 0, overflow = false;
    DF_CHECK(!overflow, bad, "shape ", e.shape, " has too many elements");
    e.shard = p.shard();
    e.offset = p.offset();
    e.size = p.size();
    e.crc32c = p.crc32c();
    DF_CHECK(e.shard >= 0 && e.shard < out.num_shards, bad, "shard ", e.shard, " of ", out.num_shards);
    uint64_t end = 0;
    DF_CHECK(!__builtin_add_overflow(e.offset, e.size, &end) && e.offset >= kDataHeaderSize, bad, "bytes [",
             e.offset, ", +", e.size, ") are outside a data file");
    if (e.dtype == DType::String) {
      // Every element takes at least its one-byte length: bounds the allocation on read.
      DF_CHECK(elems <= e.size, bad, "string", e.shape, " cannot fit in ", e.size, " bytes");
    } else {
      uint64_t want = 0;
      DF_CHECK(!__builtin_mul_overflow(elems, uint64_t(dtype_size(e.dtype)), &want) && want == e.size, bad,
               dtype_name(e.dtype), e.shape, " holds ", e.size, " bytes");
      DF_CHECK(e.offset % kAlignment == 0, bad, "offset ", e.offset, " is not ", kAlignment, "-byte aligned");
    }
    out.entries.push_back(std::move(e));
  }
  std::sort(out.entries.begin(), out.entries.end(),
            [](const BundleEntry& a, const BundleEntry& b) { return a.key < b.key; });
  for (size_t i = 1; i < out.entries.size(); ++i)
    DF_CHECK(out.entries[i].key != out.entries[i - 1].key, who, "corrupt: key '", out.entries[i].key,
             "' appears twice");
  return out;
}

}  // namespace deepflow::io::bundle_format
