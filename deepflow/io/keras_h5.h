// SPDX-License-Identifier: Apache-2.0
// A small RAII layer over the HDF5 C API for the Keras file formats (keras_file.h):
// files opened from an in-memory image or created in memory, groups, attributes that
// hold strings, and datasets read into / written from Tensors. Internal to deepflow_io.
//
//   h5::File f = h5::File::open_image(bytes, "model.weights.h5");
//   h5::Group vars = f.root().group("layers/dense/vars");
//   h5::Dataset d = vars.dataset("0");
//   if (d.shape() == want) tensor = d.read();
//
// libhdf5 (Debian's serial build) is not thread-safe: every call here holds one process
// wide lock, and HDF5's own error printing is switched off; a failing call throws
// "<who><file>: <what we did>: <HDF5's innermost message>".
#pragma once

#include <hdf5.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "deepflow/core/tensor.h"

namespace deepflow::io::h5 {

/// Owns one hid_t (file, group, dataset, attribute, dataspace, type or property list)
/// and closes it with the matching H5*close.
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  /// Copies share the object (H5Iinc_ref); each closes its reference.
  Handle(const Handle& o);
  Handle& operator=(const Handle& o);
  Handle(Handle&& o) noexcept : id_(o.id_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept;
  ~Handle();
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
};

/// Where errors point: the message prefix ("[keras.load_model] ") and the file's name.
struct Context {
  std::string who;
  std::string file;
};

/// What every object of one file shares: the error context.
struct FileState {
  Context ctx;
};

class Dataset {
 public:
  Dataset(std::shared_ptr<const FileState> st, Handle h, std::string path);
  const std::string& path() const { return path_; }
  /// The dims ([] for a scalar).
  Shape shape() const;
  /// The element type as one of ours; throws for types we do not hold (compound, int16...).
  DType dtype() const;
  /// The whole dataset as a new tensor of shape() and dtype().
  Tensor read() const;

 private:
  std::shared_ptr<const FileState> st_;
  Handle h_;
  std::string path_;
};

class Group {
 public:
  Group(std::shared_ptr<const FileState> st, Handle h, std::string path);
  const std::string& path() const { return path_; }
  /// Whether a link `name` (a relative path, "a/b" allowed) exists below this group.
  bool has(const std::string& name) const;
  /// Whether `name` exists and is a group.
  bool has_group(const std::string& name) const;
  Group group(const std::string& name) const;
  Dataset dataset(const std::string& name) const;
  /// The names of the direct members, in HDF5's name order.
  std::vector<std::string> members() const;
  /// A string attribute (fixed or variable length, scalar or a list): its strings. A
  /// list attribute Keras split in chunks ("layer_names0", "layer_names1", ...) is
  /// joined. Missing: nullopt. An empty list of any type is an empty vector.
  std::optional<std::vector<std::string>> string_attr(const std::string& name) const;
  /// The attribute's single string (a scalar or a one-element list); nullopt when missing.
  std::optional<std::string> string_attr1(const std::string& name) const;

  // Writing (files made by File::create_in_memory).
  Group create_group(const std::string& name) const;
  void write_dataset(const std::string& name, const Tensor& value) const;
  /// A scalar variable-length UTF-8 string attribute (what h5py writes for a str).
  void write_string_attr(const std::string& name, const std::string& value) const;

 private:
  std::optional<std::vector<std::string>> read_attr(const std::string& name) const;
  std::shared_ptr<const FileState> st_;
  Handle h_;
  std::string path_;
};

class File {
 public:
  /// Opens an HDF5 file image (HDF5 keeps its own copy: `bytes` may go away). Throws naming
  /// `ctx.file` when it is not a readable HDF5 file.
  static File open_image(std::string_view bytes, Context ctx);
  /// An empty file that lives in memory until image() takes its bytes.
  static File create_in_memory(Context ctx);
  Group root() const;
  /// The bytes of a file made by create_in_memory (flushed first).
  std::string image() const;
  File(File&&) noexcept = default;

 private:
  File() = default;
  std::shared_ptr<FileState> st_;
  Handle h_;
};

/// True when `bytes` start with HDF5's signature (a superblock at offset 0).
bool is_hdf5(std::string_view bytes);

}  // namespace deepflow::io::h5
