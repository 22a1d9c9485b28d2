// SPDX-License-Identifier: Apache-2.0
// The byte layout of tensor bundles (docs/formats.md, "Tensor bundles"): encoders and the
// validating index parser that BundleWriter and BundleReader use, exposed for the tests
// and the fuzz target, which build files byte by byte.
//
//   std::string index = bundle_format::encode_index(proto);   // BundleIndex + trailer
//   bundle_format::ParsedIndex p = bundle_format::parse_index(index, "x.index");
//
// Internal to deepflow_io: not part of the public API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "deepflow/io/bundle.h"

namespace deepflow::proto {
class BundleIndex;
class BundleEntryProto;
}  // namespace deepflow::proto

namespace deepflow::io::bundle_format {

/// The format version this build writes and the newest it reads.
inline constexpr uint32_t kFormatVersion = 1;
/// Tensor bytes start at multiples of this in a data shard (mmap'ed tensors stay aligned).
inline constexpr uint64_t kAlignment = 64;
/// The index trailer: u32 version, u32 CRC32C of the index bytes, u64 their length,
/// then the magic "DFBUNDLE" (little-endian integers).
inline constexpr size_t kTrailerSize = 24;
inline constexpr char kTrailerMagic[9] = "DFBUNDLE";
/// A data shard starts with 64 bytes: "DFBDATA\n", u32 version, u32 zero, u64 bundle id, zeros.
inline constexpr size_t kDataHeaderSize = 64;
inline constexpr char kDataMagic[9] = "DFBDATA\n";
/// Sanity bounds on what a (checksummed) index may claim.
inline constexpr int kMaxShards = 99999;

/// The 64-byte header of a data shard.
std::string encode_data_header(uint64_t bundle_id, uint32_t version = kFormatVersion);
/// Checks a shard's header against the index; returns "" or what is wrong.
std::string check_data_header(const void* data, size_t n, uint64_t bundle_id);

/// n strings as n varint64 lengths followed by the bytes of each, in order.
std::string encode_strings(const std::string* values, size_t n);
/// Decodes exactly `size` bytes into out[0..n); returns "" or what is wrong.
std::string decode_strings(const char* data, size_t size, std::string* out, size_t n);

/// Serializes the index (deterministically) and appends the trailer. `version` other
/// than kFormatVersion is for tests of the version check.
std::string encode_index(const proto::BundleIndex& index, uint32_t version = kFormatVersion);
void entry_to_proto(const BundleEntry& e, proto::BundleEntryProto* out);

struct ParsedIndex {
  uint64_t bundle_id = 0;
  int num_shards = 1;
  std::vector<BundleEntry> entries;  ///< sorted by key, each checked for consistency
};
/// Checks the trailer (magic, version, length, CRC), parses and validates every entry
/// (dtype, rank, dims, size against dtype and shape, offsets, shard ids). Errors:
/// "[BundleReader] <path>: ...".
ParsedIndex parse_index(const std::string& bytes, const std::string& path);

}  // namespace deepflow::io::bundle_format
