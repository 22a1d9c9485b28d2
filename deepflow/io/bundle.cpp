// SPDX-License-Identifier: Apache-2.0
// Tensor bundles (bundle.h); the byte layout is in docs/formats.md, "Tensor bundles".
#include "deepflow/io/bundle.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>

#include "bundle.pb.h"
#include "deepflow/core/crc32c.h"
#include "deepflow/io/atomic_file.h"
#include "deepflow/io/bundle_format.h"

namespace deepflow::io {

static_assert(std::endian::native == std::endian::little, "bundles store little-endian tensor bytes");

using namespace bundle_format;

std::string bundle_data_path(const std::string& prefix, int shard, int num_shards) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ".data-%05d-of-%05d", shard, num_shards);
  return prefix + buf;
}

std::string bundle_index_path(const std::string& prefix) { return prefix + ".index"; }

// ------------------------------------------------------------------------------------
// Writer

struct BundleWriter::Impl {
  std::string prefix, data_path, index_path, data_tmp, index_tmp;
  int data_fd = -1;
  uint64_t offset = 0;  // bytes in the data file so far
  uint64_t bundle_id = 0;
  std::map<std::string, BundleEntry> entries;
  bool finished = false;
  bool failed = false;

  void write(const void* p, size_t n) {
    detail::write_all(data_fd, p, n, data_tmp, "[BundleWriter] ");
    offset += n;
  }
  void pad_to(uint64_t alignment) {
    static const char kZeros[kAlignment] = {};
    const uint64_t pad = (alignment - offset % alignment) % alignment;
    write(kZeros, size_t(pad));
  }
  void discard() {
    if (data_fd >= 0) ::close(data_fd);
    data_fd = -1;
    ::unlink(data_tmp.c_str());
    if (!index_tmp.empty()) ::unlink(index_tmp.c_str());
  }
};

BundleWriter::BundleWriter(std::string prefix) : impl_(std::make_unique<Impl>()) {
  Impl& w = *impl_;
  DF_CHECK(!prefix.empty(), "[BundleWriter] empty prefix");
  w.prefix = std::move(prefix);
  w.data_path = bundle_data_path(w.prefix);
  w.index_path = bundle_index_path(w.prefix);
  // Temporaries of this prefix left by a killed writer would otherwise pile up.
  const std::string base = detail::base_of(w.prefix);
  detail::remove_stale_temporaries(detail::dir_of(w.prefix), base + ".data-");
  detail::remove_stale_temporaries(detail::dir_of(w.prefix), base + ".index.tmp-");
  w.data_tmp = detail::temp_path(w.data_path);
  w.data_fd = ::open(w.data_tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  DF_CHECK(w.data_fd >= 0, "[BundleWriter] ", w.prefix, ": cannot create ", w.data_tmp, ": ", std::strerror(errno),
           errno == ENOENT ? " (does the directory exist?)" : "");
  std::random_device rd;
  w.bundle_id = (uint64_t(rd()) << 32) ^ rd();
  try {
    const std::string header = encode_data_header(w.bundle_id);
    w.write(header.data(), header.size());
  } catch (...) {
    w.discard();
    throw;
  }
}

BundleWriter::~BundleWriter() {
  if (impl_ && !impl_->finished) impl_->discard();
}

void BundleWriter::add(const std::string& key, const Tensor& t) {
  Impl& w = *impl_;
  DF_CHECK(!w.finished, "[BundleWriter] ", w.prefix, ": add('", key, "') after finish()");
  DF_CHECK(!w.failed, "[BundleWriter] ", w.prefix, ": add('", key, "') after an earlier write failed");
  DF_CHECK(!key.empty(), "[BundleWriter] ", w.prefix, ": empty key");
  DF_CHECK(!w.entries.count(key), "[BundleWriter] ", w.prefix, ": duplicate key '", key, "'");
  DF_CHECK(t.defined() && !t.is_symbolic(), "[BundleWriter] ", w.prefix, ": '", key,
           "' is not a concrete tensor (", t.defined() ? "symbolic" : "undefined", ")");
  BundleEntry e;
  e.key = key;
  e.dtype = t.dtype();
  e.shape = t.shape();
  try {
    w.pad_to(kAlignment);
    e.offset = w.offset;
    if (t.dtype() == DType::String) {
      const std::string bytes = encode_strings(t.data<std::string>(), size_t(t.size()));
      e.size = bytes.size();
      e.crc32c = crc32c(bytes.data(), bytes.size());
      w.write(bytes.data(), bytes.size());
    } else {
      e.size = t.nbytes();
      const void* data = e.size ? t.raw_data() : nullptr;
      e.crc32c = crc32c(data, size_t(e.size));
      w.write(data, size_t(e.size));
    }
  } catch (...) {
    w.failed = true;  // the data file's tail is unknown now
    throw;
  }
  w.entries.emplace(key, std::move(e));
}

void BundleWriter::finish() {
  Impl& w = *impl_;
  DF_CHECK(!w.finished, "[BundleWriter] ", w.prefix, ": finish() called twice");
  DF_CHECK(!w.failed, "[BundleWriter] ", w.prefix, ": finish() after a failed write");
  try {
    proto::BundleIndex index;
    proto::BundleHeader* h = index.mutable_header();
    h->set_version(kFormatVersion);
    h->set_endianness(proto::BundleHeader::LITTLE);
    h->set_num_shards(1);
    h->set_bundle_id(w.bundle_id);
    for (const auto& [key, e] : w.entries) entry_to_proto(e, index.add_entries());
    const std::string bytes = encode_index(index);

    w.index_tmp = detail::temp_path(w.index_path);
    const int fd = ::open(w.index_tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    DF_CHECK(fd >= 0, "[BundleWriter] ", w.prefix, ": cannot create ", w.index_tmp, ": ", std::strerror(errno));
    try {
      detail::write_all(fd, bytes.data(), bytes.size(), w.index_tmp, "[BundleWriter] ");
      DF_CHECK(::fsync(fd) == 0, "[BundleWriter] ", w.index_tmp, ": cannot fsync: ", std::strerror(errno));
    } catch (...) {
      ::close(fd);
      throw;
    }
    DF_CHECK(::close(fd) == 0, "[BundleWriter] ", w.index_tmp, ": cannot close: ", std::strerror(errno));
    DF_CHECK(::fsync(w.data_fd) == 0, "[BundleWriter] ", w.data_tmp, ": cannot fsync: ", std::strerror(errno));
    const int data_fd = w.data_fd;
    w.data_fd = -1;
    DF_CHECK(::close(data_fd) == 0, "[BundleWriter] ", w.data_tmp, ": cannot close: ", std::strerror(errno));
    // Data first, index last: the index under its final name means the bundle is whole.
    detail::rename_file(w.data_tmp, w.data_path, "[BundleWriter] ");
    detail::rename_file(w.index_tmp, w.index_path, "[BundleWriter] ");
  } catch (...) {
    w.failed = true;
    w.discard();
    throw;
  }
  w.finished = true;
  detail::fsync_dir(detail::dir_of(w.prefix));
}

}  // namespace deepflow::io
