// SPDX-License-Identifier: Apache-2.0
// Checkpoints in other formats behind io::Checkpoint: a library that reads and writes
// another format (deepflow_tf: TensorFlow's checkpoints and object graph) registers it,
// Checkpoint::restore hands it the prefixes it accepts, and Checkpoint::write /
// save with CheckpointOptions::format = its name write through it.
//
//   io::register_checkpoint_format({.name = "TensorFlow", .accepts = ..., .open = ..., .write = ...});
//   ckpt.restore("/tf_runs/ckpt-3");                         // a TF-written checkpoint
//   ckpt.write("/runs/x", {.format = "TensorFlow"});         // one TensorFlow restores
//
// A format sees the objects and the values Checkpoint walked from them (their keys in
// deepflow's naming, docs/checkpoints.md) and translates between those keys and its file;
// the checks (dtype and shape of every value before any is assigned) and the status stay
// in Checkpoint, the same for every format.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "deepflow/io/checkpoint.h"

namespace deepflow::io {

/// One value a Checkpoint saves and restores, named as deepflow's bundles name it.
struct CheckpointBinding {
  std::string key;   ///< "model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE"
  std::string path;  ///< the object path: the key without "/.ATTRIBUTES/..."
  Variable var;      ///< undefined for an iterator
  data::Iterator* iterator = nullptr;
  /// "path (variable name)", for messages.
  std::string describe() const { return var.defined() ? path + " (" + var.name() + ")" : path; }
};

/// A checkpoint opened for restore: its tensors, found by deepflow's keys.
class CheckpointSource {
 public:
  virtual ~CheckpointSource() = default;
  /// The file's own keys (those a restore can consume), sorted.
  virtual std::vector<std::string> file_keys() const = 0;
  /// Every deepflow key this file has a value for, sorted (decides which optimizer slots
  /// to build before they are restored).
  virtual std::vector<std::string> keys() const = 0;
  /// The file key holding deepflow's `key`, or "" when the file has none.
  virtual std::string find(const std::string& key) const = 0;
  /// The dtype and shape of a file key's tensor (from the index: nothing is read).
  virtual DType dtype(const std::string& file_key) const = 0;
  virtual Shape shape(const std::string& file_key) const = 0;
  /// The tensor, checksum checked.
  virtual Tensor read(const std::string& file_key) const = 0;
};

struct CheckpointFormat {
  std::string name;  ///< "TensorFlow": CheckpointOptions::format and messages
  /// True for a bundle prefix in this format (cheap: called on every restore).
  std::function<bool(const std::string& prefix)> accepts;
  /// Opens `prefix` for a restore into `objects`; `bindings` are the values walked so far
  /// (model weights and variables; an optimizer's slots come after the source says which
  /// exist).
  std::function<std::unique_ptr<CheckpointSource>(const std::string& prefix, const Trackable::Map& objects,
                                                   const std::vector<CheckpointBinding>& bindings)>
      open;
  /// Writes every binding's current value at `prefix` (save_counter included).
  std::function<void(const std::string& prefix, const Trackable::Map& objects,
                     const std::vector<CheckpointBinding>& bindings)>
      write;
};

/// Adds a format (once per name; a second registration of the same name is ignored).
void register_checkpoint_format(CheckpointFormat format);
/// The first registered format that accepts `prefix`, or null (deepflow's own bundles).
const CheckpointFormat* find_checkpoint_format(const std::string& prefix);
/// The registered format named `name`, or null.
const CheckpointFormat* find_checkpoint_format_by_name(const std::string& name);

}  // namespace deepflow::io
