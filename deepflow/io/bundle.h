// SPDX-License-Identifier: Apache-2.0
// Tensor bundles: the files behind checkpoints and a SavedModel's variables.
//
// A bundle with prefix P is TensorFlow's layout, `P.index` plus one data shard
// `P.data-00000-of-00001`, with our own index encoding (docs/formats.md):
//
//   io::BundleWriter w("/ckpt/ckpt-3");
//   w.add("model/dense/kernel", kernel);
//   w.finish();                        // now, and only now, the bundle exists
//   io::BundleReader r("/ckpt/ckpt-3");
//   Tensor k = r.read("model/dense/kernel");
//
// Every tensor carries a CRC32C of its bytes, checked when it is read. Tensor bytes
// start at 64-byte-aligned offsets of the data file, so a reader can memory-map the
// shard and hand out tensors that point into the mapping instead of copying.
// Writes are atomic: both files go to temporaries in the same directory, are
// fsynced and renamed (data first, index last), so a reader never sees half a
// bundle under the final names; a crash leaves only temporaries, which the next
// writer of that prefix removes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "deepflow/core/tensor.h"

namespace deepflow::io {

/// One tensor's record in the index.
struct BundleEntry {
  std::string key;
  DType dtype = DType::Float32;
  Shape shape;
  int32_t shard = 0;
  uint64_t offset = 0;  ///< bytes from the start of the shard
  uint64_t size = 0;    ///< bytes in the shard (string tensors: their encoded size)
  uint32_t crc32c = 0;  ///< of those bytes
};

class BundleWriter {
 public:
  /// Starts a bundle at `prefix` (its directory must exist). Errors name the path.
  explicit BundleWriter(std::string prefix);
  /// Without finish(), the destructor removes the temporaries: no bundle appears.
  ~BundleWriter();
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;
  /// Adds a concrete tensor of any dtype (strings included). Keys are unique.
  void add(const std::string& key, const Tensor& t);
  /// Writes the index, fsyncs and renames both files into place.
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct BundleReadOptions {
  /// Map the data shard and return tensors that point into it (no copy). Off: read
  /// each tensor into fresh memory.
  bool mmap = true;
};

class BundleReader {
 public:
  /// Opens `prefix.index` (and the shard it names). A missing, truncated, corrupt or
  /// newer-version file is an Error naming the file and what is wrong.
  explicit BundleReader(std::string prefix, BundleReadOptions options = {});
  ~BundleReader();
  /// Keys in sorted order.
  std::vector<std::string> keys() const;
  bool contains(const std::string& key) const;
  /// Throws "[BundleReader] <prefix>: no tensor 'k'" when absent.
  const BundleEntry& entry(const std::string& key) const;
  /// The tensor, CRC checked; a mismatch names the key and the file.
  Tensor read(const std::string& key) const;
  const std::string& prefix() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with mapped tensors, which keep the mapping alive
};

/// `prefix.data-00000-of-00001` and `prefix.index`: the file names of a bundle.
std::string bundle_data_path(const std::string& prefix, int shard = 0, int num_shards = 1);
std::string bundle_index_path(const std::string& prefix);

}  // namespace deepflow::io
