// SPDX-License-Identifier: Apache-2.0
// Model::save_weights / Model::load_weights: every weight of a model in one file.
//
// Format (all integers little-endian):
//
//   "DFWEIGHTS1\n"                       11 bytes of magic
//   count                                uint64: the number of tensors
//   then per tensor, in Model::weights() order:
//     name_len, name                     uint64, bytes ("dense/kernel")
//     dtype_len, dtype                   uint64, bytes (dtype_name(): "float32", "bfloat16")
//     rank, dims[rank]                   uint64, int64 each
//     nbytes                             uint64: the data's byte count (dims * dtype size)
//     crc                                uint32: CRC32C (Castagnoli, as TFRecord's) of the data
//     data                               nbytes, row-major, little-endian elements
//
// and nothing after the last tensor. Writes are atomic: the file is written as
// "<path>.tmp-<pid>", fsynced, renamed over `path`, and the directory fsynced, so a
// crash or a failed write leaves either the old file or the new one, never half of it.
// Loading parses and checks the whole file (lengths against the file size before any
// allocation, every CRC) and checks each weight's name, dtype and shape against the
// model's before it assigns anything: a bad file changes no weight.
#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "deepflow/core/crc32c.h"
#include "deepflow/keras/model.h"

namespace deepflow::keras {
namespace {

static_assert(std::endian::native == std::endian::little, "the weights file stores host-order little-endian data");

constexpr char kMagic[] = "DFWEIGHTS1\n";
constexpr size_t kMagicLen = sizeof(kMagic) - 1;

// Layer names are made unique per process ("dense", "dense_1", ...), so the same
// architecture built twice names its weights differently; a name matches when equal
// or equal once each component's "_<n>" suffix is dropped ("dense_3/kernel" ~ "dense/kernel").
std::string base_name(const std::string& name) {
  std::string out;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    std::string part = name.substr(start, end - start);
    const size_t us = part.rfind('_');
    if (us != std::string::npos && us + 1 < part.size() &&
        part.find_first_not_of("0123456789", us + 1) == std::string::npos)
      part.resize(us);
    out += (out.empty() && start == 0 ? "" : "/") + part;
    start = end + 1;
  }
  return out;
}

class Writer {
 public:
  void u64(uint64_t v) { raw(&v, 8); }
  void u32(uint32_t v) { raw(&v, 4); }
  void str(const std::string& s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void raw(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  const std::string& bytes() const { return buf_; }

 private:
  std::string buf_;
};

[[noreturn]] void io_fail(const std::string& what, const std::string& path) {
  fail("[Model.save_weights] ", path, ": ", what, ": ", std::strerror(errno));
}

void write_all(int fd, const std::string& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) io_fail("cannot write", path);
    done += size_t(n);
  }
}

// Reads fields from the file's bytes, every length checked against what is left.
class Reader {
 public:
  Reader(const std::string& bytes, const std::string& path) : bytes_(bytes), path_(path) {}
  uint64_t u64(const char* what) {
    uint64_t v;
    take(&v, 8, what);
    return v;
  }
  uint32_t u32(const char* what) {
    uint32_t v;
    take(&v, 4, what);
    return v;
  }
  std::string str(const char* what, size_t max_len) {
    const uint64_t n = u64(what);
    DF_CHECK(n <= max_len, "[Model.load_weights] ", path_, ": corrupt file: ", what, " of ", n,
             " bytes at offset ", pos_ - 8, " (at most ", max_len, ")");
    std::string s(static_cast<size_t>(n), '\0');
    take(s.data(), s.size(), what);
    return s;
  }
  void take(void* dst, size_t n, const char* what) {
    DF_CHECK(n <= left(), "[Model.load_weights] ", path_, ": truncated file: ", what, " needs ", n,
             " bytes at offset ", pos_, ", the file has ", bytes_.size());
    std::memcpy(dst, bytes_.data() + pos_, n);
    pos_ += n;
  }
  size_t left() const { return bytes_.size() - pos_; }
  size_t pos() const { return pos_; }

 private:
  const std::string& bytes_;
  const std::string& path_;
  size_t pos_ = 0;
};

struct Entry {
  std::string name;
  Tensor value;
};

std::vector<Entry> parse_weights(const std::string& bytes, const std::string& path) {
  Reader r(bytes, path);
  std::string magic(kMagicLen, '\0');
  DF_CHECK(bytes.size() >= kMagicLen && bytes.compare(0, kMagicLen, kMagic) == 0, "[Model.load_weights] ", path,
           ": not a deepflow weights file (it does not start with \"DFWEIGHTS1\\n\")");
  r.take(magic.data(), kMagicLen, "magic");
  const uint64_t count = r.u64("the tensor count");
  // Each tensor takes at least 44 bytes (lengths, rank, nbytes, crc): a bound before reserving.
  DF_CHECK(count <= r.left() / 44, "[Model.load_weights] ", path, ": corrupt file: ", count,
           " tensors cannot fit in ", bytes.size(), " bytes");
  std::vector<Entry> out;
  out.reserve(size_t(count));
  for (uint64_t i = 0; i < count; ++i) {
    Entry e;
    e.name = r.str("a weight name", 4096);
    const std::string dtype_text = r.str("a dtype name", 32);
    DType dtype;
    try {
      dtype = dtype_from_name(dtype_text);
    } catch (const Error&) {
      fail("[Model.load_weights] ", path, ": corrupt file: weight ", i, " ('", e.name, "') has unknown dtype '",
           dtype_text, "'");
    }
    const uint64_t rank = r.u64("a rank");
    DF_CHECK(rank <= uint64_t(kMaxRank), "[Model.load_weights] ", path, ": corrupt file: weight ", i, " ('",
             e.name, "') has rank ", rank);
    Shape shape;
    uint64_t elems = 1;
    bool overflow = false;
    for (uint64_t d = 0; d < rank; ++d) {
      const int64_t dim = int64_t(r.u64("a dim"));
      DF_CHECK(dim >= 0, "[Model.load_weights] ", path, ": corrupt file: weight ", i, " ('", e.name,
               "') has dim ", dim);
      overflow = overflow || __builtin_mul_overflow(elems, uint64_t(dim), &elems);
      shape.push_back(dim);
    }
    const uint64_t nbytes = r.u64("a byte length");
    uint64_t want = 0;
    overflow = overflow || __builtin_mul_overflow(elems, uint64_t(dtype_size(dtype)), &want);
    DF_CHECK(!overflow && nbytes == want, "[Model.load_weights] ", path, ": corrupt file: weight ", i, " ('",
             e.name, "') ", dtype_name(dtype), shape, " holds ", nbytes, " bytes");
    const uint32_t crc = r.u32("a checksum");
    DF_CHECK(nbytes <= r.left(), "[Model.load_weights] ", path, ": truncated file: weight ", i, " ('", e.name,
             "') needs ", nbytes, " bytes at offset ", r.pos(), ", the file has ", bytes.size());
    const uint32_t got = crc32c(bytes.data() + r.pos(), size_t(nbytes));
    DF_CHECK(got == crc, "[Model.load_weights] ", path, ": corrupt file: the data of weight ", i, " ('", e.name,
             "') fails its checksum");
    e.value = Tensor(shape, dtype);
    if (nbytes > 0) r.take(e.value.raw_data(), size_t(nbytes), "weight data");
    out.push_back(std::move(e));
  }
  DF_CHECK(r.left() == 0, "[Model.load_weights] ", path, ": corrupt file: ", r.left(),
           " trailing bytes after the last weight");
  return out;
}

}  // namespace

void Model::save_weights(const std::string& path) const {
  const std::vector<Variable> ws = weights();
  Writer w;
  w.raw(kMagic, kMagicLen);
  w.u64(ws.size());
  for (const Variable& v : ws) {
    Tensor t = v.value();
    w.str(v.name());
    w.str(dtype_name(t.dtype()));
    w.u64(uint64_t(t.rank()));
    for (int64_t d : t.shape()) w.u64(uint64_t(d));
    w.u64(t.nbytes());
    const void* data = t.nbytes() > 0 ? t.raw_data() : nullptr;
    w.u32(crc32c(data, t.nbytes()));
    w.raw(data, t.nbytes());
  }

  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) io_fail("cannot create " + tmp, path);
  try {
    write_all(fd, w.bytes(), tmp);
    if (::fsync(fd) != 0) io_fail("cannot fsync " + tmp, path);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    errno = err;
    io_fail("cannot close " + tmp, path);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    errno = err;
    io_fail("cannot rename " + tmp + " over it", path);
  }
  // The rename is durable once the directory is synced.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void Model::load_weights(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DF_CHECK(in, "[Model.load_weights] ", path, ": cannot open: ", std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  DF_CHECK(!in.bad(), "[Model.load_weights] ", path, ": read error: ", std::strerror(errno));
  const std::vector<Entry> entries = parse_weights(bytes, path);

  std::vector<Variable> ws = weights();
  DF_CHECK(entries.size() == ws.size(), "[Model.load_weights] ", path, " holds ", entries.size(),
           " weights, model '", name(), "' has ", ws.size(), ws.empty() ? " (is it built?)" : "");
  for (size_t i = 0; i < ws.size(); ++i) {
    const Entry& e = entries[i];
    const Variable& v = ws[i];
    DF_CHECK(e.name == v.name() || base_name(e.name) == base_name(v.name()), "[Model.load_weights] ", path,
             ": weight ", i, " is '", e.name, "' in the file, '", v.name(), "' in the model");
    DF_CHECK(e.value.dtype() == v.dtype() && e.value.shape() == v.shape(), "[Model.load_weights] ", path,
             ": weight ", i, " ('", v.name(), "') is ", dtype_name(e.value.dtype()), e.value.shape(),
             " in the file, ", dtype_name(v.dtype()), v.shape(), " in the model");
  }
  for (size_t i = 0; i < ws.size(); ++i) ws[i].assign(entries[i].value);
}

}  // namespace deepflow::keras
