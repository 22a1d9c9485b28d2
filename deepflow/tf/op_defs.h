// SPDX-License-Identifier: Apache-2.0
// TensorFlow's OpDefs of the ops the importer maps (op_defs.pbtxt, written from TF 2.21's
// registry by scripts/make-tf-op-defs.py): the argument lists that turn a FunctionDef's
// "node:out_arg:i" into a flat output index, and the attr defaults that SavedModels strip.
//
// Internal to deepflow_tf.
#pragma once

#include <string>

namespace tensorflow {
class OpDef;
class NodeDef;
class AttrValue;
}  // namespace tensorflow

namespace deepflow::tf {

/// The OpDef of a TF op type, or null when the table does not have it.
const tensorflow::OpDef* find_op_def(const std::string& op);

/// How many flat values an argument stands for on `node` (its number_attr N, the length
/// of its type_list_attr, or 1).
int arg_length(const tensorflow::OpDef& def, const tensorflow::NodeDef& node, bool output, int index);
/// The flat index of output "out_arg:i" of `node`; -1 when out_arg is not an output of def.
int flat_output_index(const tensorflow::OpDef& def, const tensorflow::NodeDef& node, const std::string& out_arg,
                      int i);
/// Number of flat outputs of `node`.
int num_flat_outputs(const tensorflow::OpDef& def, const tensorflow::NodeDef& node);
/// The attr `name` of node, or its OpDef default; null when neither has it.
const tensorflow::AttrValue* attr_or_default(const tensorflow::OpDef* def, const tensorflow::NodeDef& node,
                                             const std::string& name);

}  // namespace deepflow::tf
