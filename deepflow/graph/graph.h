// SPDX-License-Identifier: Apache-2.0
// Graph: the IR that graph mode, traced functions and the executor share.
//
// A graph is a list of nodes in SSA form: each node applies one op (by its
// registered name) with attributes to values produced by earlier nodes, and
// produces typed outputs. A value is (node, output index). Nodes may also carry
// control inputs (run after these nodes) and a device ("/cpu:0"). A graph used as
// a function has designated inputs (placeholder nodes) and outputs.
//
//   auto g = std::make_shared<Graph>();
//   {
//     GraphScope scope(g);                       // deepflow/graph/builder.h
//     Tensor x = placeholder(DType::Float32, {-1, 3});
//     Tensor y = relu(matmul(x, w));             // nodes, not results
//   }
//   std::cout << g->to_string();                 // the text form (deepflow/graph/text.h)
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "deepflow/ops/op.h"

namespace deepflow {

/// One value of a graph: output `index` of node `node`.
struct ValueRef {
  int node = -1;
  int index = 0;
  friend bool operator==(const ValueRef&, const ValueRef&) = default;
};

struct Node {
  std::string name;              ///< unique within the graph: "dense/matmul", "x"
  OpId op = OpId::kNumPrimitives;
  Attrs attrs;
  std::vector<ValueRef> inputs;
  std::vector<int> control_inputs;  ///< nodes that must run first
  TypeList outputs;               ///< dtype and (partly known) shape of each output
  std::string device;             ///< "" (anywhere), "/cpu:0", "/cpu:1", ...
  const OpDef& def() const { return op_def(op); }
};

class Graph : public std::enable_shared_from_this<Graph> {
 public:
  Graph() = default;
  Graph(const Graph&) = default;
  Graph& operator=(const Graph&) = default;

  /// Appends a node (its name made unique when taken) and returns its id. Inputs must name
  /// existing nodes; the outputs are taken as given (use infer_node to compute them).
  int add_node(Node n);
  int num_nodes() const { return int(nodes_.size()); }
  const Node& node(int id) const { return nodes_.at(size_t(id)); }
  Node& mutable_node(int id) { return nodes_.at(size_t(id)); }
  const std::vector<Node>& nodes() const { return nodes_; }
  /// The id of the node with this name, or -1.
  int find(const std::string& name) const;
  /// The value "name" or "name:k"; throws "[graph] no node named 'x'".
  ValueRef value(const std::string& name) const;
  /// "name" for output 0, "name:k" otherwise.
  std::string value_name(ValueRef v) const;
  const TensorType& type(ValueRef v) const;
  /// A name not yet used in this graph, from base ("matmul" -> "matmul_1").
  std::string unique_name(const std::string& base) const;

  /// A symbolic tensor that names value v of this graph (keeps the graph alive).
  Tensor symbolic(ValueRef v);
  /// The value a symbolic tensor of this graph names; throws if it belongs elsewhere.
  ValueRef value_of(const Tensor& t) const;
  /// True when t is a symbolic tensor of this graph.
  bool owns(const Tensor& t) const;

  /// The function interface: inputs are placeholder nodes, outputs any values.
  std::vector<int> inputs;
  std::vector<ValueRef> outputs;

  /// Node ids in an order where every node follows its inputs and control inputs;
  /// throws "[graph] cycle through node 'x'" when there is none.
  std::vector<int> topological_order() const;
  /// Checks every node: known op, inputs that exist, no cycle, and that each node's
  /// recorded output types agree with its op's infer on its inputs' types.
  void validate() const;

  /// The text form (see deepflow/graph/text.h).
  std::string to_string() const;

 private:
  std::vector<Node> nodes_;
  std::unordered_map<std::string, int> by_name_;
};

/// Runs the op's infer rule for a node on symbolic inputs of its inputs' types.
TypeList infer_node(const Graph& g, const Node& n);

}  // namespace deepflow
