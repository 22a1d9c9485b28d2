// SPDX-License-Identifier: Apache-2.0
// Frozen GraphDefs (a .pb of TensorFlow 1 style, or TF2's convert_variables_to_constants_v2):
// a bare tensorflow.GraphDef whose weights are Const nodes, with no signatures, imported
// as a traced deepflow function.
//
//   tf::GraphDefModel m = tf::import_graph_def("frozen.pb", {"x"}, {"Identity:0"});
//   Tensor y = m.function(TensorList{x})[0];
//
// Inputs are placeholders by name (default: every Placeholder, in graph order); outputs are
// values "node:k" (default: output 0 of every node no other node consumes, NoOps left out).
// Placeholders need a known rank. TF1's reference dtypes (*_REF) import as their values.
// TF1 control flow (what freezing lowers If and While to: Switch and Merge; Enter, Merge,
// Switch on LoopCond, NextIteration and Exit) becomes deepflow's cond and while_loop
// (tf1_control_flow.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "deepflow/function/function.h"

namespace deepflow::tf {

struct GraphDefModel {
  std::vector<std::string> inputs;   ///< placeholder names, in function input order
  std::vector<std::string> outputs;  ///< "node:k", in function output order
  /// Signature keys of the inputs and outputs where the file names them (a TF.js model's
  /// `signature`), in the same order; empty otherwise.
  std::vector<std::string> input_keys, output_keys;
  Signature input_signature;         ///< the placeholders' dtypes and shapes (-1: any)
  Function function;                 ///< traces the graph for the given input types
};

GraphDefModel import_graph_def(const std::string& path, std::vector<std::string> inputs = {},
                               std::vector<std::string> outputs = {});
/// `source` names the bytes in messages.
GraphDefModel import_graph_def_from_bytes(std::string_view bytes, const std::string& source,
                                          std::vector<std::string> inputs = {}, std::vector<std::string> outputs = {});

}  // namespace deepflow::tf
