// SPDX-License-Identifier: Apache-2.0
// Object-based checkpoints (tf.train.Checkpoint): the state of a model, its optimizer,
// counters and input pipeline, saved to a tensor bundle and restored by object path.
//
//   Variable step(scalar(0, DType::Int64), "step", false);
//   data::Iterator it = dataset.iter();
//   io::Checkpoint ckpt({{"model", model}, {"optimizer", model->optimizer()},
//                        {"step", step}, {"iterator", &it}});
//   std::string path = ckpt.save("/ckpt/ckpt");           // "/ckpt/ckpt-1"
//   ...
//   ckpt.restore(io::latest_checkpoint("/ckpt")).assert_consumed();
//
// Keys (docs/checkpoints.md) follow TensorFlow's object-based names:
//   model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE     a layer's weight
//   model/layer_with_weights-0/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE
//   optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE, optimizer/learning_rate/...
//   step/.ATTRIBUTES/VARIABLE_VALUE                                   a Variable
//   iterator/.ATTRIBUTES/ITERATOR_STATE                              Iterator::save() bytes
//   save_counter/.ATTRIBUTES/VARIABLE_VALUE
// A layer's weights sit under "layer_with_weights-<i>" (the i-th sublayer that has
// weights, in registration order) and their own name (the variable name without the
// "<layer name>/" prefix), so the keys do not depend on the per-process layer names
// ("dense_3"): the same architecture built anew restores from them.
//
// Restoring checks every matched key's dtype and shape first and assigns nothing when
// one differs; an optimizer gets the slots of every variable the checkpoint holds slots
// for built first (Keras builds slots before restoring them), so restoring into a fresh
// optimizer works. A model that is not built has no weights to match: build it (or
// call it once) before restore. The status reports what did not match, by name.
//
// TensorFlow's checkpoints (with deepflow_tf's tf::register_tf_checkpoint_format()):
// restore() also takes a checkpoint TensorFlow wrote with tf.train.Checkpoint(model=...,
// optimizer=...) of a Keras 3 or tf-keras model and its optimizer, matched through the
// checkpoint's object graph (layers in order, weights by name, the optimizer's iterations,
// learning rate and per-variable slots), and write()/save() with {.format = "TensorFlow"}
// write one that TensorFlow restores into either (docs/checkpoints.md).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "deepflow/data/dataset.h"
#include "deepflow/keras/layer.h"
#include "deepflow/keras/optimizers.h"
#include "deepflow/ops/variable.h"

namespace deepflow::io {

/// Something a checkpoint saves: a layer or model (its weights), an optimizer (its
/// variables), a Variable, a data::Iterator (its position), or a map of those.
class Trackable {
 public:
  using Map = std::map<std::string, Trackable>;

  template <class L>
    requires std::is_convertible_v<const L&, keras::LayerPtr>
  Trackable(const L& layer) : Trackable(keras::LayerPtr(layer)) {}  // NOLINT: implicit, as in TF
  Trackable(keras::LayerPtr layer);                                  // NOLINT
  Trackable(keras::OptimizerPtr optimizer);                          // NOLINT
  Trackable(Variable variable);                                      // NOLINT
  Trackable(data::Iterator* iterator);                               // NOLINT
  Trackable(Map children);                                           // NOLINT

  enum class Kind { Layer, Optimizer, Variable, Iterator, Map };
  Kind kind() const { return kind_; }
  const keras::LayerPtr& layer() const { return layer_; }
  const keras::OptimizerPtr& optimizer() const { return optimizer_; }
  const Variable& variable() const { return variable_; }
  data::Iterator* iterator() const { return iterator_; }
  const Map& children() const { return *children_; }

 private:
  Kind kind_;
  keras::LayerPtr layer_;
  keras::OptimizerPtr optimizer_;
  Variable variable_;
  data::Iterator* iterator_ = nullptr;
  std::shared_ptr<const Map> children_;
};

/// What restore() matched (tf.train.Checkpoint.restore's status object).
class CheckpointStatus {
 public:
  /// Throws "[Checkpoint.restore] <path>: not consumed: ..." unless every key of the
  /// checkpoint was restored into an object and every object found its key.
  const CheckpointStatus& assert_consumed() const;
  /// Throws unless every object found its key (extra keys in the checkpoint are fine).
  const CheckpointStatus& assert_existing_objects_matched() const;
  /// Declares a partial restore intended: no warning about unused keys at destruction.
  const CheckpointStatus& expect_partial() const;
  /// Checkpoint keys that no object took (full keys, sorted).
  const std::vector<std::string>& unused_checkpoint_keys() const;
  /// Objects with no key in the checkpoint ("model/layer_with_weights-1/bias (dense_1/bias)").
  const std::vector<std::string>& unmatched_objects() const;
  /// The bundle prefix that was read.
  const std::string& path() const;

  struct State;
  explicit CheckpointStatus(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

/// How write() and save() write (tf.train.CheckpointOptions' role).
struct CheckpointOptions {
  /// "" (deepflow's bundle) or a registered format's name: "TensorFlow" writes TensorFlow's
  /// checkpoint format with an object graph that tf.train.Checkpoint restores into Keras 3
  /// and tf-keras models and optimizers (needs tf::register_tf_checkpoint_format()).
  std::string format;
};

class Checkpoint {
 public:
  /// Names are path components: non-empty, without '/', and not "save_counter".
  explicit Checkpoint(Trackable::Map objects);

  /// save_counter += 1, writes the bundle "<file_prefix>-<save_counter>", then records it
  /// in the directory's `checkpoint` state file; returns the bundle prefix.
  std::string save(const std::string& file_prefix, const CheckpointOptions& options = {});
  /// Writes the bundle at exactly `file_prefix` (no counter, no state file); returns it.
  std::string write(const std::string& file_prefix, const CheckpointOptions& options = {}) const;
  /// Restores from a bundle prefix, or from the latest checkpoint of a directory, in
  /// deepflow's format or any registered one that accepts the file (TensorFlow's).
  /// Throws on a missing or damaged file and on any dtype or shape mismatch (listing
  /// every one: "model/layer_with_weights-0/kernel (dense/kernel): checkpoint has
  /// float32[784,128], the model has float32[784,64]"), before changing anything.
  CheckpointStatus restore(const std::string& save_path);

  /// The number of save() calls, saved and restored with the checkpoint (int64).
  const Variable& save_counter() const;
  /// The keys save() would write now, sorted.
  std::vector<std::string> keys() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // copies share the objects and the counter
};

/// The prefix named by `directory`/checkpoint (model_checkpoint_path), made absolute
/// against the directory when relative; "" when there is no state file or the bundle
/// it names has no index. Throws on an unreadable or malformed state file.
std::string latest_checkpoint(const std::string& directory);

/// The text of a `checkpoint` state file (TensorFlow's CheckpointState text format).
struct CheckpointState {
  std::string model_checkpoint_path;
  std::vector<std::string> all_model_checkpoint_paths;
  std::vector<double> all_model_checkpoint_timestamps;  ///< seconds since the epoch
  double last_preserved_timestamp = 0;
};
/// Reads `directory`/checkpoint; false when it does not exist. Throws naming the file
/// and the line on a malformed one.
bool read_checkpoint_state(const std::string& directory, CheckpointState* out);
/// Writes `directory`/checkpoint atomically (temporary, fsync, rename, fsync directory).
void write_checkpoint_state(const std::string& directory, const CheckpointState& state);

}  // namespace deepflow::io
