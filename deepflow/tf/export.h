// SPDX-License-Identifier: Apache-2.0
// SavedModels that TensorFlow loads: deepflow's traced functions written in TensorFlow's
// own format (TF op names, FunctionDefs, the object graph, TF's checkpoint keys).
//
//   Variable w(random_normal({3, 2}), "dense/kernel");
//   Function f = function([&](const Tensor& x) { return relu(matmul(x, w.value())); },
//                         {.input_signature = Signature{{DType::Float32, {-1, 3}}}});
//   tf::save_tf_saved_model("/models/m/1", {{.fn = f.get_concrete_function(), .input_names = {"x"}}});
//
//   # in TensorFlow 2.21:
//   m = tf.saved_model.load("/models/m/1")
//   m.signatures["serving_default"](x=tf.ones([4, 3]))   # {"output_0": <tf.Tensor ...>}
//
// On disk, as tf.saved_model.save writes it (docs/formats.md, "TensorFlow SavedModels"):
//
//   saved_model.pb    tensorflow.SavedModel: one MetaGraphDef with
//     graph_def       VarHandleOps (one per variable, shared_name = its node name),
//                     Placeholders "<signature>_<input>", one StatefulPartitionedCall per
//                     signature, saver_filename + the save and restore calls, and a
//                     FunctionDefLibrary: per signature one function (TF ops, inputs in
//                     sorted key order, then one resource argument per variable), plus
//                     __inference__traced_save / __inference__traced_restore (SaveV2 /
//                     RestoreV2 + AssignVariableOp)
//     saver_def       for TF's C++ session loader and TF Serving
//     signature_def   keys -> "serving_default_x:0" / "StatefulPartitionedCall:k"
//     object_graph_def  the SavedObjectGraph tf.saved_model.load walks: a root user object
//                     with the variables and a "signatures" signature_map of bare concrete
//                     functions (bound_inputs = the variables)
//   variables/variables.{index,data-00000-of-00001}
//                     TF's checkpoint: "<escaped variable name>/.ATTRIBUTES/VARIABLE_VALUE"
//                     and _CHECKPOINTABLE_OBJECT_GRAPH
//   fingerprint.pb    FingerprintDef (its hashes are FNV-1a of the pieces TF hashes, not TF's
//                     FarmHash: TensorFlow only logs them)
//   assets/           (empty)
//
// The functions are written as traced (ConcreteFunction::graph()); deepflow primitives map
// to TF ops in export_ops*.cpp, and one without a mapping is an error naming the node and
// the op. Errors start with "[tf::export]".
#pragma once

#include <string>
#include <vector>

#include "deepflow/io/saved_model.h"

namespace deepflow::tf {

/// Writes `signatures` as a TensorFlow SavedModel in `dir` (see the file comment). From
/// `options` it takes tags, overwrite and extra_variables (saved and restored with the
/// others); assets and object metadata are not written (an error when assets are given).
/// The directory is written under a temporary sibling and renamed into place. Returns the
/// object name (root child and VarHandleOp shared_name) of each of options.extra_variables.
/// register_tf_saved_model_format() makes this io::save_saved_model's format "TensorFlow".
std::vector<std::string> save_tf_saved_model(const std::string& dir, const std::vector<io::SignatureSpec>& signatures,
                         const io::SaveOptions& options = {});

/// The deepflow primitives (serialized names: "matmul", "conv2d", ...) that the exporter
/// writes as TensorFlow ops, sorted.
std::vector<std::string> tf_exportable_primitives();

}  // namespace deepflow::tf
