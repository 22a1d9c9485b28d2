// SPDX-License-Identifier: Apache-2.0
// TFRecord reader and writer. The reader keeps one buffer per file and hands out views
// into it, so a pass allocates only when a record is larger than any seen before; it
// reads (or inflates) buffer_size bytes at a time and checks both CRCs of every record
// with the hardware CRC32C.
#include "deepflow/data/tfrecord.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <vector>

#include "deepflow/core/crc32c.h"
#include "deepflow/core/error.h"

namespace deepflow::data {

static_assert(std::endian::native == std::endian::little, "TFRecord framing is little-endian");

namespace {

using ::deepflow::detail::cat;

constexpr size_t kHeader = 12;
constexpr size_t kFooter = 4;
// No real record comes near this; a larger length with a valid checksum is hostile.
constexpr uint64_t kMaxRecord = uint64_t(1) << 50;

std::atomic<int64_t> g_skipped{0};

const char* compression_name(Compression c) { return c == Compression::Gzip ? "GZIP" : "ZLIB"; }

// zlib's window bits: 15 (32 KiB window) with the zlib wrapper, +16 for gzip's.
int window_bits(Compression c) { return c == Compression::Gzip ? 15 + 16 : 15; }

uint64_t load_u64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t load_u32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void encode_header(char* out, uint64_t length) {
  std::memcpy(out, &length, 8);
  const uint32_t c = crc32c_mask(crc32c(out, 8));
  std::memcpy(out + 8, &c, 4);
}

}  // namespace

Compression parse_compression(const std::string& type, const char* where) {
  if (type.empty() || type == "NONE") return Compression::None;
  if (type == "ZLIB") return Compression::Zlib;
  if (type == "GZIP") return Compression::Gzip;
  fail("[", where, "] unknown compression_type '", type, "'; expected \"\", \"ZLIB\" or \"GZIP\"");
}

int64_t tfrecord_skipped_records() { return g_skipped.load(std::memory_order_relaxed); }

std::string tfrecord_encode(std::string_view payload) {
  std::string out(kHeader + payload.size() + kFooter, '\0');
  encode_header(out.data(), payload.size());
  std::memcpy(out.data() + kHeader, payload.data(), payload.size());
  const uint32_t c = crc32c_mask(crc32c(payload.data(), payload.size()));
  std::memcpy(out.data() + kHeader + payload.size(), &c, 4);
  return out;
}

// --- writer ---

struct RecordWriter::Impl {
  static constexpr size_t kBuffer = 256 << 10;
  std::string path, tmp_path;
  Compression compression = Compression::None;
  int fd = -1;
  bool closed = false;
  int64_t records = 0;
  std::vector<char> buf;  // pending bytes for the file (compressed ones with zlib)
  size_t used = 0;
  z_stream z{};
  bool z_live = false;

  [[noreturn]] void io_fail(const char* what) const {
    fail("[TFRecordWriter] ", path, ": ", what, " ", tmp_path, ": ", std::strerror(errno));
  }

  void write_fd(const char* p, size_t n) {
    while (n > 0) {
      const ssize_t k = ::write(fd, p, n);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) io_fail("cannot write");
      p += k;
      n -= size_t(k);
    }
  }
  void drain() {
    write_fd(buf.data(), used);
    used = 0;
  }

  // Runs deflate over the input with `flush`, writing whole output buffers as they fill.
  void deflate_bytes(const char* p, size_t n, int flush) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(p));
    z.avail_in = uInt(n);
    for (;;) {
      if (used == buf.size()) drain();
      z.next_out = reinterpret_cast<Bytef*>(buf.data() + used);
      z.avail_out = uInt(buf.size() - used);
      const int rc = ::deflate(&z, flush);
      used = buf.size() - z.avail_out;
      DF_CHECK(rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR, "[TFRecordWriter] ", path,
               ": deflate failed: ", z.msg ? z.msg : "zlib error ", rc);
      if (flush == Z_FINISH ? rc == Z_STREAM_END : (z.avail_in == 0 && z.avail_out != 0)) break;
    }
  }

  void append(const char* p, size_t n) {
    if (compression != Compression::None) {
      // deflate takes at most 4 GiB per call.
      while (n > 0) {
        const size_t k = std::min<size_t>(n, size_t(1) << 30);
        deflate_bytes(p, k, Z_NO_FLUSH);
        p += k;
        n -= k;
      }
      return;
    }
    if (used + n > buf.size()) drain();
    if (n >= buf.size()) return write_fd(p, n);  // a large record goes straight out
    std::memcpy(buf.data() + used, p, n);
    used += n;
  }

  void discard() {
    if (z_live) deflateEnd(&z);
    z_live = false;
    if (fd >= 0) {
      ::close(fd);
      ::unlink(tmp_path.c_str());
    }
    fd = -1;
  }
};

RecordWriter::RecordWriter(std::string path, RecordWriterOptions options) : impl_(std::make_unique<Impl>()) {
  static std::atomic<uint64_t> counter{0};
  Impl& m = *impl_;
  m.path = std::move(path);
  m.compression = parse_compression(options.compression_type, "TFRecordWriter");
  DF_CHECK(options.compression_level >= -1 && options.compression_level <= 9, "[TFRecordWriter] ", m.path,
           ": compression_level must be in [-1, 9], got ", options.compression_level);
  m.tmp_path = m.path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  m.fd = ::open(m.tmp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (m.fd < 0) m.io_fail("cannot create");
  m.buf.resize(Impl::kBuffer);
  if (m.compression != Compression::None) {
    if (deflateInit2(&m.z, options.compression_level, Z_DEFLATED, window_bits(m.compression), 8, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
      m.discard();
      fail("[TFRecordWriter] ", m.path, ": deflateInit2 failed");
    }
    m.z_live = true;
  }
}

RecordWriter::~RecordWriter() {
  if (impl_) impl_->discard();
}
RecordWriter::RecordWriter(RecordWriter&&) noexcept = default;
RecordWriter& RecordWriter::operator=(RecordWriter&& o) noexcept {
  if (this != &o) {
    if (impl_) impl_->discard();
    impl_ = std::move(o.impl_);
  }
  return *this;
}

const std::string& RecordWriter::path() const { return impl_->path; }
int64_t RecordWriter::records_written() const { return impl_->records; }

void RecordWriter::write(std::string_view record) {
  Impl& m = *impl_;
  DF_CHECK(!m.closed, "[TFRecordWriter] ", m.path, ": write after close()");
  char header[kHeader];
  encode_header(header, record.size());
  const uint32_t footer = crc32c_mask(crc32c(record.data(), record.size()));
  m.append(header, kHeader);
  m.append(record.data(), record.size());
  m.append(reinterpret_cast<const char*>(&footer), kFooter);
  ++m.records;
}

void RecordWriter::flush() {
  Impl& m = *impl_;
  DF_CHECK(!m.closed, "[TFRecordWriter] ", m.path, ": flush after close()");
  if (m.compression != Compression::None) m.deflate_bytes(nullptr, 0, Z_SYNC_FLUSH);
  m.drain();
}

void RecordWriter::close() {
  Impl& m = *impl_;
  if (m.closed) return;
  try {
    if (m.compression != Compression::None) {
      m.deflate_bytes(nullptr, 0, Z_FINISH);
      deflateEnd(&m.z);
      m.z_live = false;
    }
    m.drain();
    if (::fsync(m.fd) != 0) m.io_fail("cannot fsync");
    const int fd = m.fd;
    m.fd = -1;
    if (::close(fd) != 0) {
      ::unlink(m.tmp_path.c_str());
      m.io_fail("cannot close");
    }
    if (::rename(m.tmp_path.c_str(), m.path.c_str()) != 0) {
      const int err = errno;
      ::unlink(m.tmp_path.c_str());
      errno = err;
      m.io_fail("cannot rename over the target");
    }
  } catch (...) {
    m.discard();
    m.closed = true;
    throw;
  }
  m.closed = true;
  // The rename is durable once the directory is synced (best effort: some file
  // systems refuse to fsync a directory).
  const size_t slash = m.path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : m.path.substr(0, slash);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

// --- reader ---

struct RecordReader::Impl {
  std::string path;
  RecordReaderOptions options;
  Compression compression = Compression::None;
  int fd = -1;
  uint64_t file_size = 0;  // plain files: to reject impossible lengths before allocating
  // The uncompressed stream: bytes [buf_offset, buf_offset + end) are buf[0, end);
  // the next record starts at buf[begin].
  std::vector<char> buf;
  size_t begin = 0, end = 0;
  uint64_t buf_offset = 0;
  bool eof = false;
  int64_t skipped = 0;
  // Compressed input.
  z_stream z{};
  bool z_live = false, z_done = false;
  std::vector<char> in;
  uint64_t in_offset = 0;  // compressed bytes consumed from the file (for messages)

  ~Impl() {
    if (z_live) inflateEnd(&z);
    if (fd >= 0) ::close(fd);
  }

  [[noreturn]] void io_fail(const char* what) const {
    fail("[TFRecordDataset] ", path, ": ", what, ": ", std::strerror(errno));
  }

  size_t read_fd(char* p, size_t n) {
    for (;;) {
      const ssize_t k = ::read(fd, p, n);
      if (k >= 0) return size_t(k);
      if (errno != EINTR) io_fail("read failed");
    }
  }

  void count_skip() {
    ++skipped;
    g_skipped.fetch_add(1, std::memory_order_relaxed);
  }

  // A damaged compressed stream cannot be resynchronised: with skip_bad_records it ends
  // the file (counted), otherwise it is an error.
  void stream_fail(const std::string& what) {
    if (!options.skip_bad_records) fail("[TFRecordDataset] ", path, ": ", what);
    count_skip();
    z_done = true;
  }

  // Inflates up to n bytes into p; 0 at the end of the stream.
  size_t inflate_some(char* p, size_t n) {
    z.next_out = reinterpret_cast<Bytef*>(p);
    z.avail_out = uInt(std::min<size_t>(n, size_t(1) << 30));
    const uInt want = z.avail_out;
    while (!z_done && z.avail_out > 0) {
      if (z.avail_in == 0) {
        const size_t k = read_fd(in.data(), in.size());
        if (k == 0) {
          // zlib may still hold output that did not fit last time: take it first (without
          // this, a truncated stream read in larger pieces lost its last bytes).
          const uInt room = z.avail_out;
          const int rc = ::inflate(&z, Z_NO_FLUSH);
          if (rc == Z_STREAM_END) {
            z_done = true;
            break;
          }
          if (z.avail_out < room) continue;
          // Zero bytes in all is an empty file, not a broken stream.
          if (in_offset == 0 && z.total_out == 0) {
            z_done = true;
            break;
          }
          stream_fail(cat("truncated ", compression_name(compression), " stream: the file ends at compressed byte ",
                          in_offset, " before the end of the stream (uncompressed byte ",
                          buf_offset + end + (want - z.avail_out), ")"));
          break;
        }
        z.next_in = reinterpret_cast<Bytef*>(in.data());
        z.avail_in = uInt(k);
      }
      const uInt avail_before = z.avail_in;
      const int rc = ::inflate(&z, Z_NO_FLUSH);
      in_offset += avail_before - z.avail_in;
      if (rc == Z_STREAM_END) {
        // Concatenated streams (gzip members) continue; otherwise the data ends here.
        if (z.avail_in == 0) {
          const size_t k = read_fd(in.data(), in.size());
          if (k == 0) {
            z_done = true;
            break;
          }
          z.next_in = reinterpret_cast<Bytef*>(in.data());
          z.avail_in = uInt(k);
        }
        inflateReset(&z);
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        stream_fail(cat("corrupted ", compression_name(compression), " stream at compressed byte ", in_offset, ": ",
                        z.msg ? z.msg : "zlib error"));
        break;
      }
    }
    return want - z.avail_out;
  }

  size_t fill_some(char* p, size_t n) { return compression == Compression::None ? read_fd(p, n) : inflate_some(p, n); }

  // Makes n bytes from buf[begin] available; false when the stream ends first.
  bool ensure(size_t n) {
    while (end - begin < n) {
      if (eof) return false;
      if (begin > 0 && (buf.size() - begin < n || end == buf.size())) {
        std::memmove(buf.data(), buf.data() + begin, end - begin);
        buf_offset += begin;
        end -= begin;
        begin = 0;
      }
      // Grow only as far as data arrives, so a bogus length costs at most twice the
      // bytes the stream really has.
      if (end == buf.size()) buf.resize(std::max(std::min(n, buf.size() * 2), buf.size() + 1));
      const size_t k = fill_some(buf.data() + end, buf.size() - end);
      if (k == 0) eof = true;
      end += k;
    }
    return true;
  }

  void reset_stream(uint64_t offset) {
    begin = end = 0;
    buf_offset = offset;
    eof = false;
    if (compression != Compression::None) {
      inflateReset(&z);
      z.avail_in = 0;
      z_done = false;
      in_offset = 0;
    }
  }

  uint64_t offset() const { return buf_offset + begin; }

  // A bad record at buf[begin]: throw, or count it and move on.
  void bad(const std::string& what, bool skip_whole, uint64_t whole_size) {
    if (!options.skip_bad_records) fail("[TFRecordDataset] ", path, ": ", what);
    count_skip();
    if (skip_whole) {
      begin += whole_size;
      return;
    }
    // Scan forward for a header whose length checksum matches.
    ++begin;
    while (ensure(kHeader)) {
      const char* h = buf.data() + begin;
      if (crc32c_unmask(load_u32(h + 8)) == crc32c(h, 8)) return;
      ++begin;
    }
    begin = end;  // fewer than a header's bytes are left: the file ends
  }

  std::optional<std::string_view> read() {
    for (;;) {
      const uint64_t start = offset();
      if (!ensure(1)) return std::nullopt;
      if (!ensure(kHeader)) {
        bad(cat("truncated record at byte ", start, " (the header needs ", kHeader, " bytes, ", end - begin,
                " are left)"),
            false, 0);
        continue;
      }
      const char* h = buf.data() + begin;
      const uint64_t length = load_u64(h);
      if (crc32c_unmask(load_u32(h + 8)) != crc32c(h, 8)) {
        bad(cat("corrupted record at byte ", start, ": the header's length checksum does not match"), false, 0);
        continue;
      }
      if (length > kMaxRecord) {
        bad(cat("record size too large at byte ", start, ": ", length, " bytes"), false, 0);
        continue;
      }
      const uint64_t total = kHeader + length + kFooter;
      if (compression == Compression::None && start + total > file_size) {
        struct stat st {};  // the file may have grown since we opened it
        if (::fstat(fd, &st) == 0) file_size = uint64_t(st.st_size);
      }
      if ((compression == Compression::None && start + total > file_size) || !ensure(size_t(total))) {
        const uint64_t left =
            compression == Compression::None ? file_size - std::min(file_size, start) : uint64_t(end - begin);
        bad(cat("truncated record at byte ", start, " (", total, " bytes with header and footer, ", left, " are left)"),
            false, 0);
        continue;
      }
      const char* data = buf.data() + begin + kHeader;
      if (crc32c_unmask(load_u32(data + length)) != crc32c(data, size_t(length))) {
        bad(cat("corrupted record at byte ", start, ": the data checksum does not match (", length, " bytes)"), true,
            size_t(total));
        continue;
      }
      begin += size_t(total);
      return std::string_view(data, size_t(length));
    }
  }

  void seek(uint64_t target) {
    if (target >= buf_offset && target <= buf_offset + end) {
      begin = size_t(target - buf_offset);
      return;
    }
    if (compression == Compression::None) {
      struct stat st {};
      if (::fstat(fd, &st) == 0) file_size = uint64_t(st.st_size);
      DF_CHECK(target <= file_size, "[TFRecordDataset] ", path, ": cannot seek to byte ", target, ": the file has ",
               file_size, " bytes");
      if (::lseek(fd, off_t(target), SEEK_SET) < 0) io_fail("cannot seek");
      reset_stream(target);
      return;
    }
    if (target < buf_offset) {  // inflate again from the start
      if (::lseek(fd, 0, SEEK_SET) < 0) io_fail("cannot seek");
      reset_stream(0);
    }
    while (buf_offset + end < target) {
      begin = end;
      if (!ensure(1)) break;
    }
    DF_CHECK(target <= buf_offset + end, "[TFRecordDataset] ", path, ": cannot seek to byte ", target,
             ": the uncompressed stream has ", buf_offset + end, " bytes");
    begin = size_t(target - buf_offset);
  }
};

RecordReader::RecordReader(std::string path, RecordReaderOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = std::move(path);
  m.compression = parse_compression(options.compression_type, "TFRecordDataset");
  DF_CHECK(options.buffer_size > 0, "[TFRecordDataset] ", m.path, ": buffer_size must be positive, got ",
           options.buffer_size);
  m.options = std::move(options);
  m.fd = ::open(m.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (m.fd < 0) fail("[TFRecordDataset] cannot open ", m.path, ": ", std::strerror(errno));
  struct stat st {};
  if (::fstat(m.fd, &st) != 0) m.io_fail("cannot stat");
  DF_CHECK(!S_ISDIR(st.st_mode), "[TFRecordDataset] cannot read ", m.path, ": it is a directory");
  m.file_size = uint64_t(st.st_size);
  m.buf.resize(size_t(m.options.buffer_size));
  if (m.compression != Compression::None) {
    m.in.resize(size_t(m.options.buffer_size));
    DF_CHECK(inflateInit2(&m.z, window_bits(m.compression)) == Z_OK, "[TFRecordDataset] ", m.path,
             ": inflateInit2 failed");
    m.z_live = true;
  }
#ifdef POSIX_FADV_SEQUENTIAL
  ::posix_fadvise(m.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
}

RecordReader::~RecordReader() = default;
RecordReader::RecordReader(RecordReader&&) noexcept = default;
RecordReader& RecordReader::operator=(RecordReader&&) noexcept = default;

std::optional<std::string_view> RecordReader::read() { return impl_->read(); }
uint64_t RecordReader::offset() const { return impl_->offset(); }
void RecordReader::seek(uint64_t offset) { impl_->seek(offset); }
int64_t RecordReader::skipped_records() const { return impl_->skipped; }
const std::string& RecordReader::path() const { return impl_->path; }

}  // namespace deepflow::data
