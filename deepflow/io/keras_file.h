// SPDX-License-Identifier: Apache-2.0
// Keras's own model files: `.keras` (Keras 3: a zip of config.json, metadata.json and
// model.weights.h5) and legacy `.h5` (tf-keras's `model.save("x.h5")`: one HDF5 file
// with the model_config attribute and model_weights). keras::save_model and
// keras::load_model (keras_saving.h) come here for paths ending in ".keras", ".h5" or
// ".hdf5", as Keras's do.
//
//   keras::ModelPtr m = keras::load_model("classifier.keras");   // written by Keras 3
//   Tensor y = m->predict(x);
//   keras::save_model(*m, "copy.keras");    // keras.models.load_model("copy.keras") takes it
//
// Loading: the config becomes our layers (model_from_config; a class we lack fails with
// "[keras.load_model] <file>: [keras.layers.deserialize] unknown layer class 'Foo' ...",
// naming the layer too), then each layer's weights are read from HDF5 and assigned in
// order, every shape and dtype checked against the rebuilt layer, the weight at fault
// named. In a .keras file a layer's variables are the datasets "0", "1", ... of the group
// `layers/<snake_case class>[_<k>]/vars` (Keras names the groups after the class, counted
// per model: dense, dense_1; recurrent layers keep theirs under `.../cell/vars`, nested
// models under `.../layers/...`). In a legacy .h5 file they are
// `model_weights/<layer name>/<weight name>` in the order of the group's `weight_names`.
// The optimizer's saved variables are not restored (training starts a fresh optimizer).
// Truncated or corrupt files give a deepflow::Error naming the file, never a crash.
//
// Saving writes a .keras file: Keras 3's config (each object wrapped as {"module",
// "class_name", "config", "registered_name"}), its layer order (Keras sorts a functional
// model's layers by depth, which fixes the weight group names) and its HDF5 layout. The
// compile config and optimizer are not written: Keras 3 loads the model uncompiled. The
// file is replaced atomically.
#pragma once

#include <string>
#include <string_view>

#include "deepflow/keras/model.h"

namespace deepflow::keras {

/// Whether `path` names a Keras model file (".keras", ".h5", ".hdf5") rather than a
/// SavedModel directory.
bool is_keras_file_path(const std::string& path);

/// A new model from a .keras or legacy .h5 file (the format is told by the bytes: a zip
/// or an HDF5 signature). Errors start "[keras.load_model] <path>: ".
ModelPtr load_keras_file(const std::string& path);
/// The same from the file's bytes; `name` stands for the file in errors.
ModelPtr load_keras_file_from_memory(std::string_view bytes, const std::string& name);

/// The model config of a Keras file (config.json, or a legacy .h5's model_config
/// attribute) as JSON text, for a front end that builds the layers itself.
std::string read_keras_file_config(const std::string& path);
/// Assigns the weights of a Keras file to `model`, built from that file's config (by a
/// front end: read_keras_file_config), with load_keras_file's checks and errors.
void restore_keras_file_weights(Model& model, const std::string& path);

/// Writes `model` (Sequential or functional) as a .keras file Keras 3 loads. Errors start
/// "[keras.save_model] <path>: " and name the layer at fault (a subclassed model, a layer
/// whose weights Keras keeps in sublayers we do not know the layout of).
void save_keras_file(const Model& model, const std::string& path);
/// The bytes save_keras_file would write (`name` stands for the file in errors).
std::string keras_file_bytes(const Model& model, const std::string& name = "model.keras");
/// The model.weights.h5 member alone (Keras 3's layout), e.g. for model.save_weights-style use.
std::string keras_weights_h5_bytes(const Model& model, const std::string& name = "model.weights.h5");

}  // namespace deepflow::keras
