// SPDX-License-Identifier: Apache-2.0
// CheckpointReader (checkpoint.h): the index is read and checked whole when opened; data
// shards are opened then and read with pread, one tensor at a time.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "deepflow/core/crc32c.h"
#include "deepflow/core/error.h"
#include "deepflow/io/atomic_file.h"
#include "deepflow/tf/checkpoint.h"
#include "deepflow/tf/dtype.h"
#include "deepflow/tf/table.h"
#include "tensorflow/tensor_bundle.pb.h"
#include "tensorflow/trackable_object_graph.pb.h"

namespace deepflow::tf {

namespace {

constexpr int kBundleVersion = 1;  // TensorFlow's kTensorBundleVersion
constexpr int kMaxShards = 99999;  // what "%05d" file names allow
constexpr int kMaxRank = 254;

struct Shard {
  std::string path;
  int fd = -1;
  uint64_t size = 0;
};

CheckpointEntry parse_entry(const TableEntry& t, const std::string& who) {
  tensorflow::BundleEntryProto p;
  DF_CHECK(p.ParseFromString(t.value), who, ": the entry of key '", t.key, "' is not a BundleEntryProto");
  CheckpointEntry e;
  e.key = t.key;
  e.tf_dtype = int(p.dtype());
  DF_CHECK(!p.shape().unknown_rank() && p.shape().dim_size() <= kMaxRank, who, ": key '", t.key,
           "' has an unknown or absurd rank");
  int64_t n = 1;
  for (const auto& d : p.shape().dim()) {
    DF_CHECK(d.size() >= 0, who, ": key '", t.key, "' has a negative dimension ", d.size());
    DF_CHECK(d.size() == 0 || n <= (int64_t(1) << 62) / d.size(), who, ": key '", t.key,
             "' has too many elements");
    n *= d.size();
    e.shape.push_back(d.size());
  }
  if (p.slices_size() > 0) {
    e.sliced = true;
    return e;
  }
  e.shard_id = p.shard_id();
  e.offset = p.offset();
  e.size = p.size();
  e.crc32c = p.crc32c();
  DF_CHECK(e.offset >= 0 && e.size >= 0 && e.size <= INT64_MAX - e.offset, who, ": key '", t.key,
           "' has a bad offset ", e.offset, " or size ", e.size);
  if (const size_t elem = tf_dtype_size(e.tf_dtype); elem > 0) {
    DF_CHECK(n <= e.size && uint64_t(n) * elem == uint64_t(e.size), who, ": key '", t.key, "' (",
             tf_dtype_name(e.tf_dtype), ", ", n, " elements) has ", e.size, " bytes, not ", uint64_t(n) * elem);
  } else if (e.tf_dtype == 7 /* DT_STRING */) {
    DF_CHECK(n <= e.size - 4 && e.size >= 4, who, ": key '", t.key, "' (", n, " strings) has only ", e.size,
             " bytes");
  }
  return e;
}

}  // namespace

std::string checkpoint_index_path(const std::string& prefix) { return prefix + ".index"; }

std::string checkpoint_data_path(const std::string& prefix, int shard, int num_shards) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ".data-%05d-of-%05d", shard, num_shards);
  return prefix + buf;
}

struct CheckpointReader::Impl {
  std::string prefix, index_path;
  int num_shards = 1;
  std::vector<CheckpointEntry> entries;
  std::vector<Shard> shards;

  ~Impl() {
    for (Shard& s : shards)
      if (s.fd >= 0) ::close(s.fd);
  }

  void parse(std::string_view bytes, bool open_data);
  void open_shards();
};

void CheckpointReader::Impl::parse(std::string_view bytes, bool open_data) {
  const std::string who = "[tf::checkpoint] " + index_path;
  std::vector<TableEntry> table = read_table(bytes, who);
  DF_CHECK(!table.empty() && table[0].key.empty(), who, ": no header entry (the empty key)");
  tensorflow::BundleHeaderProto header;
  DF_CHECK(header.ParseFromString(table[0].value), who, ": the header entry is not a BundleHeaderProto");
  DF_CHECK(header.num_shards() >= 1 && header.num_shards() <= kMaxShards, who, ": the header claims ",
           header.num_shards(), " data shards");
  DF_CHECK(header.endianness() == tensorflow::BundleHeaderProto::LITTLE, who,
           ": a big-endian checkpoint (only little-endian tensor data is read)");
  const auto& v = header.version();
  DF_CHECK(v.min_consumer() <= kBundleVersion, who, ": written for readers of bundle version ", v.min_consumer(),
           " or newer (this reader is version ", kBundleVersion, ")");
  for (int bad : v.bad_consumers())
    DF_CHECK(bad != kBundleVersion, who, ": the writer marked readers of version ", bad, " as unable to read it");
  num_shards = header.num_shards();
  entries.reserve(table.size() - 1);
  for (size_t i = 1; i < table.size(); ++i) {
    entries.push_back(parse_entry(table[i], who));
    const CheckpointEntry& e = entries.back();
    DF_CHECK(e.sliced || (e.shard_id >= 0 && e.shard_id < num_shards), who, ": key '", e.key,
             "' is in shard ", e.shard_id, " of ", num_shards);
  }
  if (open_data) open_shards();
}

void CheckpointReader::Impl::open_shards() {
  shards.resize(size_t(num_shards));
  for (int i = 0; i < num_shards; ++i) {
    Shard& s = shards[size_t(i)];
    s.path = checkpoint_data_path(prefix, i, num_shards);
    s.fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
    DF_CHECK(s.fd >= 0, "[tf::checkpoint] ", s.path, ": cannot open data shard ", i, " of ", index_path, ": ",
             std::strerror(errno));
    struct stat st {};
    DF_CHECK(::fstat(s.fd, &st) == 0 && S_ISREG(st.st_mode), "[tf::checkpoint] ", s.path, ": not a regular file");
    s.size = uint64_t(st.st_size);
  }
  for (const CheckpointEntry& e : entries) {
    if (e.sliced) continue;
    const Shard& s = shards[size_t(e.shard_id)];
    DF_CHECK(uint64_t(e.offset + e.size) <= s.size, "[tf::checkpoint] ", s.path, ": tensor '", e.key,
             "' needs bytes [", e.offset, ", ", e.offset + e.size, "), the file has ", s.size, " (truncated)");
  }
}

CheckpointReader::CheckpointReader(std::string prefix) : impl_(std::make_unique<Impl>()) {
  impl_->prefix = std::move(prefix);
  impl_->index_path = checkpoint_index_path(impl_->prefix);
  impl_->parse(io::detail::read_file(impl_->index_path, "[tf::checkpoint] "), true);
}

CheckpointReader::CheckpointReader(std::string prefix, std::string_view index_bytes, bool open_data)
    : impl_(std::make_unique<Impl>()) {
  impl_->prefix = std::move(prefix);
  impl_->index_path = checkpoint_index_path(impl_->prefix);
  impl_->parse(index_bytes, open_data);
}

CheckpointReader::~CheckpointReader() = default;
CheckpointReader::CheckpointReader(CheckpointReader&&) noexcept = default;
CheckpointReader& CheckpointReader::operator=(CheckpointReader&&) noexcept = default;

const std::string& CheckpointReader::prefix() const { return impl_->prefix; }
int CheckpointReader::num_shards() const { return impl_->num_shards; }
const std::vector<CheckpointEntry>& CheckpointReader::entries() const { return impl_->entries; }

namespace {
const CheckpointEntry* find(const std::vector<CheckpointEntry>& es, const std::string& key) {
  auto it = std::lower_bound(es.begin(), es.end(), key,
                             [](const CheckpointEntry& e, const std::string& k) { return e.key < k; });
  return it != es.end() && it->key == key ? &*it : nullptr;
}
}  // namespace

bool CheckpointReader::has(const std::string& key) const { return find(impl_->entries, key) != nullptr; }

const CheckpointEntry& CheckpointReader::entry(const std::string& key) const {
  const CheckpointEntry* e = find(impl_->entries, key);
  DF_CHECK(e, "[tf::checkpoint] ", impl_->index_path, ": no tensor '", key, "' (the checkpoint has ",
           impl_->entries.size(), ")");
  return *e;
}

std::string CheckpointReader::read_bytes(const std::string& key) const {
  const CheckpointEntry& e = entry(key);
  DF_CHECK(!e.sliced, "[tf::checkpoint] ", impl_->index_path, ": tensor '", key,
           "' is saved in slices (a partitioned variable); reading sliced tensors is not supported");
  DF_CHECK(!impl_->shards.empty(), "[tf::checkpoint] ", impl_->index_path, ": data files not opened");
  const Shard& s = impl_->shards[size_t(e.shard_id)];
  std::string bytes(size_t(e.size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t r = ::pread(s.fd, bytes.data() + done, bytes.size() - done, off_t(uint64_t(e.offset) + done));
    if (r < 0 && errno == EINTR) continue;
    DF_CHECK(r > 0, "[tf::checkpoint] ", s.path, ": cannot read tensor '", key, "': ",
             r < 0 ? std::strerror(errno) : "the file ends early (truncated)");
    done += size_t(r);
  }
  uint32_t crc = 0;
  if (e.tf_dtype == 7 /* DT_STRING */) {
    int64_t n = 1;
    for (int64_t d : e.shape) n *= d;
    const std::string problem = decode_string_tensor(bytes.data(), bytes.size(), nullptr, size_t(n), &crc);
    DF_CHECK(problem.empty(), "[tf::checkpoint] ", s.path, ": corrupt string tensor '", key, "': ", problem);
  } else {
    crc = crc32c(bytes.data(), bytes.size());
  }
  DF_CHECK(crc32c_mask(crc) == e.crc32c, "[tf::checkpoint] ", s.path, ": tensor '", key,
           "' fails its CRC32C check (corrupt data)");
  return bytes;
}

Tensor CheckpointReader::read(const std::string& key) const {
  const CheckpointEntry& e = entry(key);
  const std::optional<DType> dtype = dtype_from_tf(e.tf_dtype);
  DF_CHECK(dtype.has_value(), "[tf::checkpoint] ", impl_->index_path, ": tensor '", key, "' has dtype ",
           tf_dtype_name(e.tf_dtype), ", which deepflow has no dtype for");
  const std::string bytes = read_bytes(key);
  Tensor t(Shape(e.shape), *dtype);
  if (*dtype == DType::String) {
    uint32_t crc = 0;
    decode_string_tensor(bytes.data(), bytes.size(), t.data<std::string>(), size_t(t.size()), &crc);
    return t;
  }
  if (*dtype == DType::Bool) {
    for (size_t i = 0; i < bytes.size(); ++i)
      DF_CHECK(uint8_t(bytes[i]) <= 1, "[tf::checkpoint] ", impl_->index_path, ": corrupt bool tensor '", key,
               "': element ", i, " is byte ", int(uint8_t(bytes[i])));
  }
  if (!bytes.empty()) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
  return t;
}

bool CheckpointReader::object_graph(tensorflow::TrackableObjectGraph* out) const {
  if (!has(kObjectGraphKey)) return false;
  const CheckpointEntry& e = entry(kObjectGraphKey);
  DF_CHECK(e.tf_dtype == 7 && e.shape.empty(), "[tf::checkpoint] ", impl_->index_path, ": '", kObjectGraphKey,
           "' is ", tf_dtype_name(e.tf_dtype), " of rank ", e.shape.size(), ", not a DT_STRING scalar");
  const Tensor t = read(kObjectGraphKey);
  DF_CHECK(out->ParseFromString(t.data<std::string>()[0]), "[tf::checkpoint] ", impl_->index_path, ": '",
           kObjectGraphKey, "' is not a TrackableObjectGraph");
  return true;
}

}  // namespace deepflow::tf
