// SPDX-License-Identifier: Apache-2.0
// TensorFlow's checkpoints behind io::Checkpoint (checkpoint_format.cpp has the rules):
// tf::register_tf_checkpoint_format() (checkpoint.h) installs them; this is the structural
// match of a TensorFlow object graph onto deepflow's objects that restore() runs.
//
//   std::map<std::string, std::string> keys = tf::map_object_graph(graph, objects, bindings);
//   // keys["model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE"]
//   //   == "optimizer/_trainable_variables/0/.ATTRIBUTES/VARIABLE_VALUE"   (Keras 3)
#pragma once

#include <map>
#include <string>
#include <vector>

#include "deepflow/io/checkpoint_formats.h"

namespace tensorflow {
class TrackableObjectGraph;
}  // namespace tensorflow

namespace deepflow::tf {

/// For every value of `objects` (a Keras 3 or tf-keras model's layers and weights, an
/// optimizer's iterations, learning rate and slots, Variables, iterators, save_counter)
/// that the object graph holds: deepflow's key -> the checkpoint key TensorFlow stored it
/// under. `bindings` are the values io::Checkpoint walked (their paths give the trainable
/// order that tf-keras's slot lists follow). Values the graph lacks are left out; a
/// malformed graph (ids out of range, cycles) maps what it can and never throws.
std::map<std::string, std::string> map_object_graph(const tensorflow::TrackableObjectGraph& graph,
                                                    const io::Trackable::Map& objects,
                                                    const std::vector<io::CheckpointBinding>& bindings);

}  // namespace deepflow::tf
