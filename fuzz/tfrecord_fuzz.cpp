// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the TFRecord reader (make fuzz). The first input byte picks the
// options (bits 0-1: compression none / ZLIB / GZIP, bit 2: skip_bad_records, bits 3-5:
// buffer size 1..128 bytes, so records straddle buffer boundaries); the rest is the
// file. Any input may be rejected with a deepflow::Error; anything else (a crash, a
// sanitizer report, another exception, a hang, memory beyond -rss_limit_mb) is a bug.
// Invariants checked:
//   - an uncompressed file read without error is exactly its records re-encoded;
//   - seek(offset()) taken before a record reads that record again;
//   - records written back (same compression) read back equal.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "deepflow/core/error.h"
#include "deepflow/data/tfrecord.h"

namespace {

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

// An anonymous in-memory file, opened by path through /proc like a real one.
struct MemFile {
  int fd;
  std::string path;
  explicit MemFile(const char* name) : fd(::memfd_create(name, MFD_CLOEXEC)) {
    if (fd < 0) bug("memfd_create failed");
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  ~MemFile() { ::close(fd); }
  void set(const uint8_t* data, size_t n) {
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, n, 0) != ssize_t(n)) bug("memfd write failed");
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace deepflow;
  using namespace deepflow::data;
  if (size == 0) return 0;
  static MemFile file("tfrecord_fuzz");
  static const char* kTypes[] = {"", "ZLIB", "GZIP", ""};
  const uint8_t mode = data[0];
  RecordReaderOptions options;
  options.compression_type = kTypes[mode & 3];
  options.skip_bad_records = (mode & 4) != 0;
  options.buffer_size = int64_t(1) << ((mode >> 3) & 7);
  file.set(data + 1, size - 1);

  std::vector<std::string> records;
  std::vector<uint64_t> offsets;
  try {
    RecordReader r(file.path, options);
    while (true) {
      const uint64_t at = r.offset();
      auto rec = r.read();
      if (!rec) break;
      offsets.push_back(at);
      records.emplace_back(*rec);
    }
    // Re-read a few records by seeking back to their offsets.
    for (size_t i = 0; i < records.size() && i < 4; ++i) {
      const size_t k = records.size() - 1 - i * 7 % records.size();
      r.seek(offsets[k]);
      auto rec = r.read();
      if (!rec || *rec != records[k]) bug("seek to a record's offset does not read it again");
    }
  } catch (const Error&) {
    return 0;
  }
  if (options.compression_type.empty() && !options.skip_bad_records) {
    std::string again;
    for (const auto& rec : records) again += tfrecord_encode(rec);
    if (again != std::string(reinterpret_cast<const char*>(data + 1), size - 1))
      bug("an accepted file is not its records re-encoded");
  }
  // Write the records back and read them again.
  static MemFile out("tfrecord_fuzz_out");
  {
    std::string plain;
    for (const auto& rec : records) plain += tfrecord_encode(rec);
    if (options.compression_type.empty()) {
      out.set(reinterpret_cast<const uint8_t*>(plain.data()), plain.size());
    } else {
      // RecordWriter needs a directory for its rename; tmpfs makes its fsync free.
      static const std::string tmp = std::string(::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") +
                                     "/tfrecord_fuzz_" + std::to_string(::getpid());
      RecordWriter w(tmp, {.compression_type = options.compression_type});
      for (const auto& rec : records) w.write(rec);
      w.close();
      RecordReader back(tmp, {.compression_type = options.compression_type});
      for (const auto& rec : records) {
        auto got = back.read();
        if (!got || *got != rec) bug("a compressed round trip lost a record");
      }
      if (back.read()) bug("a compressed round trip gained a record");
      ::unlink(tmp.c_str());
      return 0;
    }
  }
  RecordReader back(out.path);
  for (const auto& rec : records) {
    auto got = back.read();
    if (!got || *got != rec) bug("a round trip lost a record");
  }
  if (back.read()) bug("a round trip gained a record");
  return 0;
}
