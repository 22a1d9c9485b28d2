// SPDX-License-Identifier: Apache-2.0
// The evaluator behind every TensorFlow import: it walks the nodes of a GraphDef or a
// FunctionDef body that the requested outputs need, in dependency order, and turns each
// into deepflow ops through the importer table (op_importer.h). Called eagerly it
// computes (the SavedModel restore function); called inside a trace it builds a deepflow
// graph (the signatures). Library functions called as ops, (Stateful)PartitionedCall, If
// and While are inlined or mapped onto cond / while_loop. Nodes whose inputs are all known
// at import time and whose op is stateless are folded (shape arithmetic).
//
// Internal to deepflow_tf.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "deepflow/tf/graph_def.h"
#include "deepflow/tf/op_importer.h"

namespace tensorflow {
class GraphDef;
class FunctionDef;
class FunctionDefLibrary;
}  // namespace tensorflow

namespace deepflow::tf::detail {

/// What one import shares.
struct ImportShared {
  std::string source;  ///< the file, for messages
  std::map<std::string, const tensorflow::FunctionDef*> functions;
  /// Variables by (container or "localhost") + "/" + shared_name, made by VarHandleOp.
  std::map<std::string, std::shared_ptr<Variable>> variables;
  /// Lookup tables by container + "/" + shared_name (or node name), made by HashTableV2.
  std::map<std::string, std::shared_ptr<LookupTable>> tables;
  /// RestoreV2: reads a tensor by checkpoint key from the prefix it is given.
  std::function<Tensor(const std::string& prefix, const std::string& key)> restore;
  /// Variable reads give the variable's value at trace time, a constant the graph passes
  /// fold (batch norm into convolutions, ...): for signatures that assign no variable.
  bool freeze_variables = false;

  void add_library(const tensorflow::FunctionDefLibrary& library);
};

/// Calls library function `name` on `args` (one Value per flat input); returns its flat
/// outputs in output_arg order. `path` prefixes node descriptions ("StatefulPartitionedCall/").
Values call_function(ImportShared& shared, const std::string& name, const Values& args, const std::string& path);

/// Evaluates what `fetches` need in `graph` ("node" or "node:k" values; "^node" runs the
/// node for its effects and gives an undefined Value), with `feeds` ("node:k") bound.
Values evaluate_graph(ImportShared& shared, const tensorflow::GraphDef& graph,
                      const std::map<std::string, Value>& feeds, const std::vector<std::string>& fetches);

/// A parsed GraphDef as a GraphDefModel (graph_def.cpp): what import_graph_def does after
/// parsing, for the importers of other containers of GraphDefs (TF.js's model.json).
GraphDefModel import_graph_message(tensorflow::GraphDef graph, const std::string& source,
                                   std::vector<std::string> inputs, std::vector<std::string> outputs);

/// RestoreV2 (ops_state.cpp): reads its keys through shared.restore.
Values import_restore_v2(NodeContext& c, ImportShared& shared);

}  // namespace deepflow::tf::detail
