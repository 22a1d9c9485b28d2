// SPDX-License-Identifier: Apache-2.0
// Where Keras 3 keeps each layer's variables in model.weights.h5, shared by the .keras
// reader and writer (keras_file.h). Internal to deepflow_io.
//
// Keras walks the model: a model's `layers` list first, each child named after its class
// in snake case, counted within the list ("dense", "dense_1"; never after the layer's
// name, which is not reproducible), then its attributes. A layer's own variables are the
// datasets "0".."n-1" of "<path>/vars" (trainable ones first, in creation order).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "deepflow/keras/config.h"
#include "deepflow/keras/model.h"

namespace deepflow::keras::detail {

/// Keras's naming.to_snake_case: "Conv2D" -> "conv2d", "BatchNormalization" ->
/// "batch_normalization", "LSTM" -> "lstm", "MaxPooling2D" -> "max_pooling2d".
std::string keras_snake_case(const std::string& class_name);

/// The layers of a Sequential or functional model in Keras 3's model.layers order (what
/// Keras computes when it rebuilds the model): a Sequential's stack; a functional model's
/// layers sorted by depth from the outputs (deepest first), ties by first visit of a
/// depth-first walk from the outputs (keras/src/ops/function.py map_graph). Input layers
/// are left out.
std::vector<LayerPtr> keras_layer_order(const Model& model);

/// One group of variables: "<path>/vars" and the weights stored there as "0", "1", ...
struct VarGroup {
  std::string path;
  std::vector<Variable> vars;
  std::string layer;  ///< the layer's name, for errors
};

/// The groups of `layer`'s weights under `path` ("" for the top model, else e.g.
/// "layers/dense"), appended to `out` in weights() order. `entry`: the layer's entry in
/// its parent's config.json (nested models take their children's order from it) or null
/// to use keras_layer_order. Throws "<who>layer 'x' (class C) ..." for a layer that keeps
/// weights in sublayers whose Keras layout is not known here.
void var_groups(const Layer& layer, const std::string& path, const Config* entry, std::vector<VarGroup>& out,
                const std::string& who);

}  // namespace deepflow::keras::detail
