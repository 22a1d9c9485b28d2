// SPDX-License-Identifier: Apache-2.0
// Keras model files: keras::save_model / keras::load_model (tf.keras's model.save and
// keras.models.load_model in the SavedModel format).
//
//   model->compile({.optimizer = keras::optimizers::Adam(), .loss = {"mse"}});
//   model->fit(x, y, {.epochs = 2});
//   keras::save_model(*model, "/models/regressor");
//
//   // later, in a process that links the layers (and registers its custom ones):
//   keras::ModelPtr m = keras::load_model("/models/regressor");
//   m->fit(x, y, {.epochs = 1});          // continues: same optimizer state (Adam's m, v, step)
//
//   // or, without any model code, the traced forward pass:
//   io::SavedModel sm = io::load_saved_model("/models/regressor");
//   Tensor y = sm.signature("serving_default")({{"input_layer", x}}).at("dense_1");
//
// The directory is a SavedModel (deepflow/io/saved_model.h) with
//   - a `serving_default` signature: the model's forward pass (training false) traced
//     with the batch dim unknown; inputs named after the Input layers, outputs after the
//     output layers (Keras 2's SavedModel names; "output_<i>" where a layer gives several);
//   - object_metadata: JSON {"format": "deepflow.keras", "format_version": 1, "class_name",
//     "name", "model_config" (serialization.h; null for a subclassed model),
//     "compile_config" (null when not compiled), "weights": [variable names in
//     Model::weights() order], "optimizer_variables": [names in Optimizer::variables()
//     order] (null without include_optimizer)};
//   - variables: every weight, and with include_optimizer the optimizer's iterations,
//     learning rate and slots. They are matched back by position through the name lists,
//     so a custom layer that does not keep its name still loads.
//
// A path ending in ".keras", ".h5" or ".hdf5" is a Keras file instead (keras_file.h):
// save_model writes Keras 3's .keras format (Keras 3 loads it), load_model reads .keras
// files and tf-keras's legacy .h5 files; the SavedModel options do not apply to them.
//
// load_model rebuilds the model from its config (custom layers must be registered:
// an unknown class is "[keras.load_model] <dir>: [keras.layers.deserialize] unknown layer
// class 'Foo'; register it with ..."), assigns the weights (checking each dtype and shape),
// compiles with the saved compile config and restores the optimizer's variables, so fit()
// goes on where the saved model stopped. A subclassed model cannot be rebuilt (its graph
// is C++ code): load_model says so and points at io::load_saved_model, which runs its
// saved serving function.
#pragma once

#include <optional>
#include <string>

#include "deepflow/function/function.h"
#include "deepflow/keras/model.h"

namespace deepflow::keras {

struct SaveModelOptions {
  /// Save the optimizer's variables (iterations, learning rate, slots) to resume training.
  bool include_optimizer = true;
  /// Replace an existing directory (atomically), as Keras's model.save does by default.
  bool overwrite = true;
  /// The serving function's inputs (-1 for unknown dims). Unset: the Input layers' dtypes
  /// and shapes with the batch dim unknown; for a subclassed model, the shapes of its first
  /// call (float32).
  std::optional<Signature> input_signature;
  /// A JSON object whose members are added to object_metadata (a front end's own
  /// description of the model, e.g. the Python class and get_config() of a subclassed
  /// model); they must not replace the keys listed in the file comment.
  std::string extra_metadata;
  /// The SavedModel format (io::SaveOptions::format): "" is deepflow's own, which
  /// load_model reads; "TensorFlow" writes one that tf.saved_model.load and TF Serving run
  /// (its serving signature and the variables, no Keras config: load_model cannot rebuild
  /// the model from it; tf::load_tf_saved_model / io::load_saved_model run it).
  std::string format;
};

/// Writes `model` as a SavedModel directory `dir` (see the file comment). Errors name the
/// directory and what is wrong.
void save_model(Model& model, const std::string& dir, const SaveModelOptions& options = {});
inline void save_model(const ModelPtr& model, const std::string& dir, const SaveModelOptions& options = {}) {
  save_model(*model, dir, options);
}

struct LoadModelOptions {
  /// Compile with the saved compile config and restore the optimizer state (when saved).
  bool compile = true;
};

/// A new model from a directory save_model wrote: config, weights, compile config and
/// optimizer state.
ModelPtr load_model(const std::string& dir, const LoadModelOptions& options = {});

/// The object_metadata JSON of a directory save_model wrote (checked to be a deepflow.keras
/// model of a version this library reads), for a front end that rebuilds the model itself.
std::string read_model_metadata(const std::string& dir);

/// What load_model does once the model is rebuilt (and, for the optimizer state,
/// compiled): assigns the saved weights in Model::weights() order, checking each dtype and
/// shape, then, when `optimizer` and the model has one, builds it and restores its saved
/// variables. Throws "[keras.load_model] <dir>: ..." naming the variable at fault.
void restore_model_state(Model& model, const std::string& dir, bool optimizer = true);

}  // namespace deepflow::keras
