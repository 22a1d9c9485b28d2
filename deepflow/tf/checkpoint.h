// SPDX-License-Identifier: Apache-2.0
// TensorFlow's checkpoints (tf.train.Checkpoint, SavedModel variables/, the V2 tensor
// bundle format): read and write them (docs/formats.md, "TensorFlow checkpoints").
//
//   tf::CheckpointReader r("/runs/tf/ckpt-1");             // ckpt-1.index + ckpt-1.data-*
//   for (const tf::CheckpointEntry& e : r.entries()) ...   // key, TF dtype, shape
//   Tensor k = r.read("model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE");
//   tensorflow::TrackableObjectGraph g;
//   if (r.object_graph(&g)) ...                             // _CHECKPOINTABLE_OBJECT_GRAPH
//
//   tf::CheckpointWriter w("/runs/ours/ckpt-1");
//   w.add("v/.ATTRIBUTES/VARIABLE_VALUE", tensor);
//   w.add_object_graph(graph);                              // tf.train.Checkpoint.restore needs it
//   w.finish();                                             // tf.train.load_checkpoint reads it
//
// The index is `<prefix>.index`, a sorted table (table.h) whose key "" holds a
// BundleHeaderProto and every other key a BundleEntryProto; tensors sit in
// `<prefix>.data-00000-of-0000N`. Every tensor read is checked against its masked CRC32C.
// Errors are deepflow::Error starting "[tf::checkpoint] " and naming the file and key.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "deepflow/core/tensor.h"

namespace tensorflow {
class TrackableObjectGraph;
}  // namespace tensorflow

namespace deepflow::tf {

/// The key under which tf.train.Checkpoint stores its TrackableObjectGraph (a DT_STRING scalar).
inline constexpr char kObjectGraphKey[] = "_CHECKPOINTABLE_OBJECT_GRAPH";

/// "<prefix>.index" and "<prefix>.data-%05d-of-%05d".
std::string checkpoint_index_path(const std::string& prefix);
std::string checkpoint_data_path(const std::string& prefix, int shard, int num_shards);

/// One tensor of a checkpoint, as its BundleEntryProto describes it.
struct CheckpointEntry {
  std::string key;
  int tf_dtype = 0;  ///< TensorFlow's DataType number (tf_dtype_name() gives "DT_FLOAT")
  std::vector<int64_t> shape;
  int shard_id = 0;
  int64_t offset = 0;
  int64_t size = 0;      ///< bytes in the data file
  uint32_t crc32c = 0;   ///< masked CRC32C of those bytes
  bool sliced = false;   ///< a partitioned variable saved in slices (not readable here)
};

/// Opens a TensorFlow checkpoint: reads and checks the whole index, and opens every data
/// shard it names (a missing shard is an error here, not at the first read).
class CheckpointReader {
 public:
  /// `prefix` without ".index" ("/ckpt/ckpt-3", "/model/variables/variables").
  explicit CheckpointReader(std::string prefix);
  /// Reads an index given in memory; errors name `<prefix>.index`, and the data files are
  /// opened only when `open_data` is true (otherwise read() fails). For tests and the fuzzer.
  CheckpointReader(std::string prefix, std::string_view index_bytes, bool open_data);
  ~CheckpointReader();
  CheckpointReader(CheckpointReader&&) noexcept;
  CheckpointReader& operator=(CheckpointReader&&) noexcept;

  const std::string& prefix() const;
  int num_shards() const;
  /// Every entry but the header, sorted by key.
  const std::vector<CheckpointEntry>& entries() const;
  bool has(const std::string& key) const;
  /// Throws naming the key when it is absent.
  const CheckpointEntry& entry(const std::string& key) const;

  /// The tensor under `key`, checksum checked. DT_FLOAT, DOUBLE, HALF, BFLOAT16, INT8,
  /// UINT8, INT32, INT64, BOOL and STRING; other dtypes and sliced entries are errors.
  Tensor read(const std::string& key) const;
  /// The raw bytes of a tensor (checksum checked), whatever its dtype.
  std::string read_bytes(const std::string& key) const;
  /// Parses _CHECKPOINTABLE_OBJECT_GRAPH into *out; false when the checkpoint has none
  /// (a TF1 name-based checkpoint). Throws when it is present but malformed.
  bool object_graph(tensorflow::TrackableObjectGraph* out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Writes a single-shard checkpoint TensorFlow reads: tensors go to the data file as
/// they are added (in the order added), the index is written by finish(). Both files
/// are written to temporaries and renamed into place, data first, so an index never
/// names a data file that is not complete; a writer destroyed before finish() leaves
/// nothing behind.
class CheckpointWriter {
 public:
  explicit CheckpointWriter(std::string prefix);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  /// Adds a concrete tensor of any deepflow dtype under `key` (not "", no duplicates).
  void add(const std::string& key, const Tensor& tensor);
  /// Adds the object graph as the DT_STRING scalar _CHECKPOINTABLE_OBJECT_GRAPH.
  void add_object_graph(const tensorflow::TrackableObjectGraph& graph);
  /// Writes the index and moves both files into place.
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// True when `prefix`.index ends in the table magic: TensorFlow's format, not deepflow's bundle.
bool is_tf_checkpoint(const std::string& prefix);

/// Makes io::Checkpoint speak TensorFlow's checkpoints (io/checkpoint_formats.h):
/// restore() takes the ones tf.train.Checkpoint writes for Keras 3 and tf-keras models and
/// their optimizers (matched through the object graph), and CheckpointOptions::format =
/// "TensorFlow" writes ones TensorFlow restores into either (checkpoint_format.cpp).
/// Idempotent; the CLI calls it at start-up.
void register_tf_checkpoint_format();

/// The bytes of n strings in a checkpoint's data file: n varint64 lengths, a masked
/// CRC32C of the lengths, the string bytes. *crc gets the entry's (unmasked) CRC32C.
std::string encode_string_tensor(const std::string* values, size_t n, uint32_t* crc);
/// Decodes exactly `size` bytes into out[0..n) (out may be null: only check); returns ""
/// or what is wrong. *crc gets the entry's (unmasked) CRC32C, to compare with its entry.
std::string decode_string_tensor(const char* data, size_t size, std::string* out, size_t n, uint32_t* crc);

}  // namespace deepflow::tf
