// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the tensor bundle reader (checkpoints, SavedModel variables).
// Input: one mode byte, then the index file's bytes, then (after the marker "DFSPLIT!",
// if present) the data file's bytes. Mode bits, so the fuzzer gets past the checksums
// to the parsing behind them:
//   bit 0: the index part is a bare serialized BundleIndex; the harness appends a valid
//          trailer (version, CRC, length, magic) instead of taking the bytes as they are;
//   bit 1: read without mmap;
//   bit 2: stamp the data part's 64-byte header (magic, version, the index's bundle id);
//   bit 3: set every entry's CRC to that of the bytes it points at (when they exist).
// Any input may be rejected with a deepflow::Error; anything else (a crash, a sanitizer
// report, another exception, a hang, memory beyond -rss_limit_mb) is a bug. Invariants:
//   - a tensor read has its entry's dtype and shape, and (numeric) its exact bytes;
//   - every tensor read, written to a new bundle and read back, is equal.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bundle.pb.h"
#include "deepflow/core/crc32c.h"
#include "deepflow/core/error.h"
#include "deepflow/io/bundle.h"
#include "deepflow/io/bundle_format.h"

namespace {

using namespace deepflow;
using namespace deepflow::io;

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

// tmpfs when there is one: the writer's fsyncs are free there. Removed at exit (the
// name lives on the heap: static strings are destroyed before atexit handlers run).
const std::string& scratch() {
  static const std::string* dir = [] {
    auto* d = new std::string(std::string(::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") + "/bundle_fuzz_" +
                              std::to_string(::getpid()));
    std::filesystem::create_directories(*d);
    return d;
  }();
  static const bool cleanup = [] {
    return std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(*dir, ec);
    }) == 0;
  }();
  (void)cleanup;
  return *dir;
}

void put(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) bug("cannot write " + path);
}

bool same(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DType::String) return a.to_vector<std::string>() == b.to_vector<std::string>();
  return a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string index = body, shard;
  const size_t split = body.find("DFSPLIT!");
  if (split != std::string::npos) {
    index = body.substr(0, split);
    shard = body.substr(split + 8);
  }
  if (mode & (1 | 4 | 8)) {
    // The proto bytes: the whole index part (bit 0) or the part before its trailer.
    const size_t trailer = mode & 1 ? 0 : std::min(index.size(), bundle_format::kTrailerSize);
    proto::BundleIndex p;
    const bool parsed = p.ParseFromString(index.substr(0, index.size() - trailer));
    if (parsed && (mode & 4)) {
      const std::string header = bundle_format::encode_data_header(p.header().bundle_id());
      if (shard.size() < header.size()) shard.resize(header.size(), '\0');
      shard.replace(0, header.size(), header);
    }
    if (parsed && (mode & 8)) {
      for (proto::BundleEntryProto& e : *p.mutable_entries())
        if (e.offset() <= shard.size() && e.size() <= shard.size() - e.offset())
          e.set_crc32c(crc32c(shard.data() + e.offset(), size_t(e.size())));
    }
    if (parsed && (mode & (1 | 8))) index = bundle_format::encode_index(p);
  }
  const std::string prefix = scratch() + "/in";
  put(bundle_index_path(prefix), index);
  put(bundle_data_path(prefix), shard);

  std::vector<std::pair<std::string, Tensor>> good;
  try {
    BundleReader r(prefix, {.mmap = !(mode & 2)});
    for (const std::string& k : r.keys()) {
      const BundleEntry& e = r.entry(k);
      Tensor t;
      try {
        t = r.read(k);
      } catch (const Error&) {
        continue;
      }
      if (t.dtype() != e.dtype || t.shape() != e.shape) bug("a tensor read does not match its entry: " + k);
      if (t.dtype() != DType::String && t.nbytes() > 0 &&
          std::memcmp(t.raw_data(), shard.data() + e.offset, t.nbytes()) != 0)
        bug("a tensor read does not hold its bytes: " + k);
      if (t.dtype() != DType::String && t.dtype() != DType::Bool) {
        double sum = 0;
        for (int64_t i = 0; i < t.size() && i < 4096; ++i) sum += t.flat(i);  // touch the values
        (void)sum;
      }
      good.emplace_back(k, t);
    }
  } catch (const Error&) {
    return 0;
  }
  if (good.empty()) return 0;
  const std::string out = scratch() + "/out";
  {
    BundleWriter w(out);
    for (const auto& [k, t] : good) w.add(k, t);
    w.finish();
  }
  BundleReader back(out, {.mmap = (mode & 16) != 0});
  if (back.keys().size() != good.size()) bug("a round trip changed the key count");
  for (const auto& [k, t] : good)
    if (!same(back.read(k), t)) bug("a round trip changed tensor " + k);
  return 0;
}
