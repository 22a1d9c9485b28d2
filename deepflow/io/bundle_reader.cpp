// SPDX-License-Identifier: Apache-2.0
// BundleReader (bundle.h): opens the index and every shard it names up front, so a
// missing or foreign shard is an error of the constructor, not of some later read.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "deepflow/core/crc32c.h"
#include "deepflow/io/atomic_file.h"
#include "deepflow/io/bundle.h"
#include "deepflow/io/bundle_format.h"

namespace deepflow::io {

using namespace bundle_format;

namespace {

// One mapped shard; tensors handed out hold a shared reference to it.
struct Mapping {
  void* addr = nullptr;
  size_t len = 0;
  ~Mapping() {
    if (addr) ::munmap(addr, len);
  }
};

void release_mapping(void* ctx, void*) { delete static_cast<std::shared_ptr<Mapping>*>(ctx); }

struct Shard {
  std::string path;
  int fd = -1;       // kept open when not mapped
  uint64_t size = 0;
  std::shared_ptr<Mapping> map;
};

}  // namespace

struct BundleReader::Impl {
  std::string prefix, index_path;
  BundleReadOptions options;
  std::vector<BundleEntry> entries;  // sorted by key
  std::vector<Shard> shards;

  ~Impl() {
    for (Shard& s : shards)
      if (s.fd >= 0) ::close(s.fd);
  }

  void read_bytes(const Shard& s, uint64_t offset, void* dst, size_t n, const std::string& key) const {
    char* p = static_cast<char*>(dst);
    while (n > 0) {
      const ssize_t r = ::pread(s.fd, p, n, off_t(offset));
      if (r < 0 && errno == EINTR) continue;
      DF_CHECK(r >= 0, "[BundleReader] ", s.path, ": read error in tensor '", key, "': ", std::strerror(errno));
      DF_CHECK(r > 0, "[BundleReader] ", s.path, ": tensor '", key, "' ends past the end of the file (truncated)");
      p += r;
      n -= size_t(r);
      offset += uint64_t(r);
    }
  }
};

BundleReader::BundleReader(std::string prefix, BundleReadOptions options) : impl_(std::make_shared<Impl>()) {
  Impl& r = *impl_;
  r.prefix = std::move(prefix);
  r.index_path = bundle_index_path(r.prefix);
  r.options = options;
  ParsedIndex parsed = parse_index(detail::read_file(r.index_path, "[BundleReader] "), r.index_path);
  r.entries = std::move(parsed.entries);

  r.shards.resize(size_t(parsed.num_shards));
  for (int i = 0; i < parsed.num_shards; ++i) {
    Shard& s = r.shards[size_t(i)];
    s.path = bundle_data_path(r.prefix, i, parsed.num_shards);
    s.fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
    DF_CHECK(s.fd >= 0, "[BundleReader] ", s.path, ": cannot open data shard ", i, " of ", r.index_path, ": ",
             std::strerror(errno));
    struct stat st {};
    DF_CHECK(::fstat(s.fd, &st) == 0, "[BundleReader] ", s.path, ": cannot stat: ", std::strerror(errno));
    DF_CHECK(S_ISREG(st.st_mode), "[BundleReader] ", s.path, ": not a regular file");
    s.size = uint64_t(st.st_size);
    char header[kDataHeaderSize] = {};
    const size_t got = size_t(std::max<ssize_t>(0, ::pread(s.fd, header, sizeof header, 0)));
    const std::string problem = check_data_header(header, std::min<uint64_t>(got, s.size), parsed.bundle_id);
    DF_CHECK(problem.empty(), "[BundleReader] ", s.path, ": ", problem);
    if (options.mmap) {
      // MAP_PRIVATE with write access: the file is opened read-only and never changes,
      // but an in-place kernel handed a tensor it solely owns may write into the
      // buffer; copy-on-write gives it a private page instead of a crash.
      void* addr = ::mmap(nullptr, size_t(s.size), PROT_READ | PROT_WRITE, MAP_PRIVATE, s.fd, 0);
      DF_CHECK(addr != MAP_FAILED, "[BundleReader] ", s.path, ": cannot mmap ", s.size, " bytes: ",
               std::strerror(errno));
      s.map = std::make_shared<Mapping>();
      s.map->addr = addr;
      s.map->len = size_t(s.size);
      ::close(s.fd);
      s.fd = -1;
    }
  }
}

BundleReader::~BundleReader() = default;

std::vector<std::string> BundleReader::keys() const {
  std::vector<std::string> out;
  out.reserve(impl_->entries.size());
  for (const BundleEntry& e : impl_->entries) out.push_back(e.key);
  return out;
}

namespace {
const BundleEntry* find_entry(const std::vector<BundleEntry>& es, const std::string& key) {
  auto it = std::lower_bound(es.begin(), es.end(), key,
                             [](const BundleEntry& e, const std::string& k) { return e.key < k; });
  return it != es.end() && it->key == key ? &*it : nullptr;
}
}  // namespace

bool BundleReader::contains(const std::string& key) const { return find_entry(impl_->entries, key) != nullptr; }

const BundleEntry& BundleReader::entry(const std::string& key) const {
  const BundleEntry* e = find_entry(impl_->entries, key);
  DF_CHECK(e, "[BundleReader] ", impl_->prefix, ": no tensor '", key, "' (the bundle has ", impl_->entries.size(),
           " tensors)");
  return *e;
}

const std::string& BundleReader::prefix() const { return impl_->prefix; }

Tensor BundleReader::read(const std::string& key) const {
  const BundleEntry& e = entry(key);
  const Impl& r = *impl_;
  const Shard& s = r.shards[size_t(e.shard)];
  DF_CHECK(e.offset + e.size <= s.size, "[BundleReader] ", s.path, ": tensor '", key, "' needs bytes [", e.offset,
           ", ", e.offset + e.size, "), the file has only ", s.size, " (truncated?)");
  const int64_t n = e.shape.num_elements();

  // Strings are decoded into fresh std::string elements whatever the options.
  if (e.dtype == DType::String) {
    std::string bytes(size_t(e.size), '\0');
    if (s.map) std::memcpy(bytes.data(), static_cast<const char*>(s.map->addr) + e.offset, bytes.size());
    else r.read_bytes(s, e.offset, bytes.data(), bytes.size(), key);
    const uint32_t crc = crc32c(bytes.data(), bytes.size());
    DF_CHECK(crc == e.crc32c, "[BundleReader] ", s.path, ": tensor '", key, "' fails its checksum (corrupt data)");
    Tensor t(e.shape, DType::String);
    const std::string problem = decode_strings(bytes.data(), bytes.size(), t.data<std::string>(), size_t(n));
    DF_CHECK(problem.empty(), "[BundleReader] ", s.path, ": corrupt string tensor '", key, "': ", problem);
    return t;
  }

  Tensor t;
  const void* bytes = nullptr;
  if (s.map && e.size > 0) {
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = e.shape;
    impl->dtype = e.dtype;
    impl->id = TensorImpl::next_id();
    void* data = static_cast<char*>(s.map->addr) + e.offset;
    auto* ctx = new std::shared_ptr<Mapping>(s.map);
    try {
      impl->storage = std::make_shared<Storage>(data, size_t(e.size), &release_mapping, ctx);
    } catch (...) {
      delete ctx;
      throw;
    }
    t = Tensor(std::move(impl));
    bytes = data;
  } else {
    t = Tensor(e.shape, e.dtype);
    if (e.size > 0) r.read_bytes(s, e.offset, t.raw_data(), size_t(e.size), key);
    bytes = e.size > 0 ? t.raw_data() : nullptr;
  }
  // Checked on every read: a mapped tensor's pages are touched here anyway when they
  // are first used, and a bad byte must not reach a model silently.
  const uint32_t crc = crc32c(bytes, size_t(e.size));
  DF_CHECK(crc == e.crc32c, "[BundleReader] ", s.path, ": tensor '", key, "' fails its checksum (corrupt data)");
  if (e.dtype == DType::Bool) {
    // Any byte but 0 and 1 in a bool is undefined behaviour when read as bool.
    const auto* b = static_cast<const uint8_t*>(bytes);
    for (uint64_t i = 0; i < e.size; ++i)
      DF_CHECK(b[i] <= 1, "[BundleReader] ", s.path, ": corrupt bool tensor '", key, "': element ", i,
               " is byte ", int(b[i]));
  }
  return t;
}

}  // namespace deepflow::io
