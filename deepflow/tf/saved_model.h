// SPDX-License-Identifier: Apache-2.0
// SavedModels written by TensorFlow (tf.saved_model.save, Keras 3's model.export, tf-keras's
// model.save) loaded and run by deepflow.
//
//   tf::TfSavedModel m = tf::load_tf_saved_model("resnet50/");     // the "serve" MetaGraph
//   std::map<std::string, Tensor> out = m.signature("serving_default")({{"inputs", images}});
//
// Loading reads saved_model.pb (TensorFlow's messages, proto/tensorflow/), restores the
// variables the way TensorFlow's C++ loader does (it feeds the variables/ prefix to the
// saver's filename tensor and runs the restore function, whose RestoreV2 reads TF's
// checkpoint bundle), then traces each signature into a deepflow function: the top-level
// graph's placeholders become its inputs, the (Stateful)PartitionedCall it makes is
// inlined with its library functions, and TF ops map onto deepflow's (op_importer.h).
// Errors start with "[tf::import]" and name the file, the node and the op.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "deepflow/function/function.h"
#include "deepflow/ops/variable.h"

namespace tensorflow {
class MetaGraphDef;
}  // namespace tensorflow

namespace deepflow::tf {

/// One signature: call it with a map from input key to tensor.
class TfSignature {
 public:
  const std::string& key() const;
  const std::string& method_name() const;  ///< "tensorflow/serving/predict"
  /// Keys with dtypes and shapes (-1: any size), sorted by key.
  const std::map<std::string, TensorType>& inputs() const;
  const std::map<std::string, TensorType>& outputs() const;
  /// Runs the traced function. Every input key must be given once with its dtype and a
  /// compatible shape ("[tf::run] ..." errors list the expected inputs).
  std::map<std::string, Tensor> operator()(const std::map<std::string, Tensor>& inputs) const;
  /// The traced function: inputs and outputs in key order.
  const Function& function() const;
  /// The same traces with FunctionOptions::optimize off (graph() is what runs), for a caller
  /// that runs the passes itself (io::load_saved_model): no optimized copy is kept.
  const Function& traced_function() const;

  struct Impl;
  explicit TfSignature(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<Impl> impl_;
};

class TfSavedModel {
 public:
  const std::string& dir() const;
  const std::vector<std::string>& tags() const;
  std::vector<std::string> signature_keys() const;  ///< sorted; the init op left out
  bool has_signature(const std::string& key) const;
  const TfSignature& signature(const std::string& key) const;
  /// The restored variables by shared name (the VarHandleOp names of the graph).
  std::map<std::string, Variable> variables() const;
  /// "2.21.0": the TensorFlow version that wrote the file.
  const std::string& tensorflow_version() const;
  /// The loaded MetaGraphDef, as saved.
  const tensorflow::MetaGraphDef& meta_graph() const;

  struct State;
  explicit TfSavedModel(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

/// True when <dir>/saved_model.pb holds a MetaGraph with a TensorFlow graph (what
/// TensorFlow writes), not a deepflow graph.
bool is_tf_saved_model(const std::string& dir);

/// Makes io::load_saved_model, io::read_saved_model_info and everything on them (`deepflow
/// saved_model`, `deepflow serve`) take TensorFlow's SavedModels. Idempotent.
void register_tf_saved_model_format();

/// Loads the MetaGraph of `dir` whose tag set equals `tags`.
TfSavedModel load_tf_saved_model(const std::string& dir, const std::vector<std::string>& tags = {"serve"});

}  // namespace deepflow::tf
