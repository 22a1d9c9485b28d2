// SPDX-License-Identifier: Apache-2.0
// CheckpointWriter (checkpoint.h) and the DT_STRING layout of the data file, which
// TensorFlow's BundleWriter::Add and BundleReader::GetValue define (docs/formats.md).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

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

// Each length enters the CRC as 4 little-endian bytes, or 8 when it needs them (not as
// its varint bytes).
uint32_t extend_with_length(uint32_t crc, uint64_t len) {
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = char(uint8_t(len >> (8 * i)));
  return crc32c_extend(crc, buf, len <= 0xffffffffull ? 4 : 8);
}

}  // namespace

std::string encode_string_tensor(const std::string* values, size_t n, uint32_t* crc) {
  std::string out;
  uint32_t c = 0;
  for (size_t i = 0; i < n; ++i) {
    coding::put_varint64(&out, values[i].size());
    c = extend_with_length(c, values[i].size());
  }
  const size_t at = out.size();
  coding::put_fixed32(&out, crc32c_mask(c));
  c = crc32c_extend(c, out.data() + at, 4);
  for (size_t i = 0; i < n; ++i) {
    out += values[i];
    c = crc32c_extend(c, values[i].data(), values[i].size());
  }
  *crc = c;
  return out;
}

std::string decode_string_tensor(const char* data, size_t size, std::string* out, size_t n, uint32_t* crc) {
  if (n > size) return std::to_string(n) + " strings cannot fit in " + std::to_string(size) + " bytes";
  std::vector<uint64_t> lengths(n);
  uint32_t c = 0;
  size_t pos = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!coding::get_varint64(data, size, &pos, &lengths[i]))
      return "the length of string " + std::to_string(i) + " is cut off";
    c = extend_with_length(c, lengths[i]);
  }
  if (size - pos < 4) return "the checksum of the lengths is cut off";
  if (crc32c_unmask(coding::load_fixed32(data + pos)) != c) return "the lengths fail their CRC32C check";
  c = crc32c_extend(c, data + pos, 4);
  pos += 4;
  uint64_t total = 0;
  for (uint64_t len : lengths) {
    if (len > size - pos - total) return "the strings need more bytes than the entry's " + std::to_string(size);
    total += len;
  }
  if (total != size - pos) return std::to_string(size - pos - total) + " bytes are left after the strings";
  c = crc32c_extend(c, data + pos, size_t(total));
  if (out) {
    for (size_t i = 0; i < n; ++i) {
      out[i].assign(data + pos, size_t(lengths[i]));
      pos += size_t(lengths[i]);
    }
  }
  *crc = c;
  return "";
}

struct CheckpointWriter::Impl {
  std::string prefix, data_path, temp_path;
  int fd = -1;
  uint64_t offset = 0;
  std::map<std::string, tensorflow::BundleEntryProto> entries;
  bool finished = false;

  void append(const void* data, size_t n) {
    io::detail::write_all(fd, data, n, temp_path, "[tf::checkpoint] ");
    offset += n;
  }
};

CheckpointWriter::CheckpointWriter(std::string prefix) : impl_(std::make_unique<Impl>()) {
  Impl& w = *impl_;
  w.prefix = std::move(prefix);
  w.data_path = checkpoint_data_path(w.prefix, 0, 1);
  w.temp_path = io::detail::temp_path(w.data_path);
  w.fd = ::open(w.temp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  DF_CHECK(w.fd >= 0, "[tf::checkpoint] ", w.temp_path, ": cannot create: ", std::strerror(errno));
}

CheckpointWriter::~CheckpointWriter() {
  if (impl_->fd >= 0) ::close(impl_->fd);
  if (!impl_->finished) ::unlink(impl_->temp_path.c_str());
}

void CheckpointWriter::add(const std::string& key, const Tensor& tensor) {
  Impl& w = *impl_;
  DF_CHECK(!w.finished, "[tf::checkpoint] ", w.prefix, ": add('", key, "') after finish()");
  DF_CHECK(!key.empty(), "[tf::checkpoint] ", w.prefix, ": the empty key is the header's; tensors need a name");
  DF_CHECK(!w.entries.count(key), "[tf::checkpoint] ", w.prefix, ": tensor '", key, "' added twice");
  DF_CHECK(tensor.defined() && !tensor.is_symbolic(), "[tf::checkpoint] ", w.prefix, ": tensor '", key,
           "' has no value (undefined or symbolic)");
  tensorflow::BundleEntryProto e;
  e.set_dtype(tensorflow::DataType(tf_dtype(tensor.dtype())));
  tensorflow::TensorShapeProto* shape = e.mutable_shape();  // present even for scalars, as TF writes it
  for (int64_t d : tensor.shape().to_vector()) shape->add_dim()->set_size(d);
  e.set_offset(int64_t(w.offset));
  uint32_t crc = 0;
  if (tensor.dtype() == DType::String) {
    const std::string bytes = encode_string_tensor(tensor.data<std::string>(), size_t(tensor.size()), &crc);
    w.append(bytes.data(), bytes.size());
    e.set_size(int64_t(bytes.size()));
  } else {
    crc = crc32c(tensor.raw_data(), tensor.nbytes());
    w.append(tensor.raw_data(), tensor.nbytes());
    e.set_size(int64_t(tensor.nbytes()));
  }
  e.set_crc32c(crc32c_mask(crc));
  w.entries.emplace(key, std::move(e));
}

void CheckpointWriter::add_object_graph(const tensorflow::TrackableObjectGraph& graph) {
  add(kObjectGraphKey, string_scalar(graph.SerializeAsString()));
}

void CheckpointWriter::finish() {
  Impl& w = *impl_;
  DF_CHECK(!w.finished, "[tf::checkpoint] ", w.prefix, ": finish() called twice");
  DF_CHECK(::fsync(w.fd) == 0, "[tf::checkpoint] ", w.temp_path, ": cannot fsync: ", std::strerror(errno));
  DF_CHECK(::close(w.fd) == 0, "[tf::checkpoint] ", w.temp_path, ": cannot close: ", std::strerror(errno));
  w.fd = -1;
  io::detail::rename_file(w.temp_path, w.data_path, "[tf::checkpoint] ");

  tensorflow::BundleHeaderProto header;
  header.set_num_shards(1);
  header.mutable_version()->set_producer(1);
  TableWriter table;
  table.add("", header.SerializeAsString());
  for (const auto& [key, entry] : w.entries) table.add(key, entry.SerializeAsString());
  io::detail::write_file_atomic(checkpoint_index_path(w.prefix), table.finish(), "[tf::checkpoint] ");
  w.finished = true;
}

}  // namespace deepflow::tf
