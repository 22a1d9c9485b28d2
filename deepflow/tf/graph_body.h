// SPDX-License-Identifier: Apache-2.0
// The evaluator's walk over one GraphDef or FunctionDef body (graph_eval.cpp), and the
// TF1 control flow of frozen graphs on it (tf1_control_flow.cpp): nodes are evaluated on
// demand, what a node needs first, each once per Body.
//
// Internal to deepflow_tf.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "deepflow/tf/graph_eval.h"

namespace tensorflow {
class NodeDef;
}  // namespace tensorflow

namespace deepflow::tf::detail {

class Body {
 public:
  Body(ImportShared& shared, std::vector<const tensorflow::NodeDef*> nodes, std::string path, bool function_body);

  /// Binds a function argument (by name) or a graph feed ("node:k").
  void bind(const std::string& name, Value v) { bound_[name] = std::move(v); }
  /// The value an input string names, evaluating what it needs first.
  const Value& value(const std::string& ref);
  /// Runs a node (and what it depends on) for its effects.
  void run_node(const std::string& name);

 private:
  struct Nodes {
    std::vector<const tensorflow::NodeDef*> list;
    std::unordered_map<std::string, int> index;
  };

  Body(ImportShared& shared, std::shared_ptr<const Nodes> nodes, std::string path, bool function_body);
  std::string ref_key(const std::string& ref) const;
  // (node index, flat output) of an input string; node -1 for a bound name.
  std::pair<int, int> parse(const std::string& ref);
  // Evaluates node `root` after its inputs, iteratively (graphs can be deep).
  void run(int root);
  Values evaluate(const tensorflow::NodeDef& n);

  // --- TF1 control flow (tf1_control_flow.cpp) ---
  /// A new walk over the same nodes with the same bindings and nothing evaluated: a cond
  /// branch or a loop's cond or body, traced inside cond / while_loop.
  Body fork() const;
  /// Merge, Exit and NextIteration take their inputs themselves (a loop's Merge is its own
  /// input's input; a cond's Merge evaluates each branch inside its branch of a cond).
  static bool takes_inputs_itself(const std::string& op);
  /// Merge of a cond's two branches: cond on the Switches' predicate (the branch alone when
  /// the predicate is known at import time). Outputs: the value and value_index.
  Values tf1_merge(const tensorflow::NodeDef& n);
  /// Exit of a loop frame: the frame (Enter, Merge, Switch on LoopCond, NextIteration)
  /// runs as one while_loop, once per Body; each Exit takes its loop variable.
  Values tf1_exit(const tensorflow::NodeDef& n);
  void tf1_loop(int loop_cond);
  /// For the value `ref` names: the outputs (0, 1) of cond Switches it depends on, by
  /// predicate ("node:k"), through data and control inputs.
  std::map<std::string, std::set<int>> branch_conditions(const std::string& ref);

  ImportShared& shared_;
  std::shared_ptr<const Nodes> nodes_;
  std::string path_;
  bool function_body_;
  std::map<std::string, Value> bound_;
  std::vector<std::optional<Values>> results_;
  std::set<int> visiting_;
  /// TF1 loops run so far: by LoopCond node, each Switch's final loop variable.
  std::map<int, std::map<int, Value>> loops_;
};

/// The dense tensors of vs; an error naming the node and `what` for anything else.
TensorList tensors_of(const Values& vs, const NodeContext& c, const char* what);
/// A bool scalar from a predicate tensor (non-zero is true; a one-element tensor reshaped).
Tensor as_predicate(const Tensor& t);

}  // namespace deepflow::tf::detail
