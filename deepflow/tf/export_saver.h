// SPDX-License-Identifier: Apache-2.0
// Internal to the TensorFlow exporter: the FunctionDefs that saver_def's restore and save
// tensors call (export_saver.cpp).
#pragma once

#include <string>
#include <vector>

#include "deepflow/ops/variable.h"
#include "tensorflow/function.pb.h"

namespace deepflow::tf::detail {

/// (file_prefix, resources...) -> file_prefix: RestoreV2 of `keys` (plus the object graph,
/// unused), each assigned to its variable.
void write_restore_function(tensorflow::FunctionDef* fd, const std::string& name, const std::vector<Variable>& vars,
                            const std::vector<std::string>& keys);
/// (file_prefix, resources...) -> file_prefix: SaveV2 of the variables under `keys` and of
/// `object_graph` (a serialized TrackableObjectGraph) under _CHECKPOINTABLE_OBJECT_GRAPH.
void write_save_function(tensorflow::FunctionDef* fd, const std::string& name, const std::vector<Variable>& vars,
                         const std::vector<std::string>& keys, const std::string& object_graph);

}  // namespace deepflow::tf::detail
