// SPDX-License-Identifier: Apache-2.0
// Graph building: while a GraphScope is alive on a thread, every op call (the same
// public functions that run eagerly) appends a node to its graph and returns a
// symbolic tensor. Concrete tensors used as inputs become constant nodes.
//
//   auto g = std::make_shared<Graph>();
//   Tensor x, y;
//   {
//     GraphScope scope(g);
//     x = placeholder(DType::Float32, {-1, 3}, "x");
//     NameScope dense("dense");
//     y = relu(matmul(x, w.value()) + b.value());   // nodes "dense/matmul", ...
//   }
//   Session(g).run({{x, batch}}, {y});                 // deepflow/graph/session.h
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "deepflow/graph/graph.h"

namespace deepflow {

struct GraphScopeOptions {
  /// Chain every stateful node (variable reads and writes, random ops) to the previous
  /// one, so they run in program order (what traced functions need).
  bool auto_control_dependencies = false;
  /// Called for a symbolic input that belongs to another graph (an enclosing trace); it
  /// returns the value to use in this graph. Unset: such inputs are an error.
  std::function<ValueRef(Graph&, const Tensor&)> capture_symbolic;
};

/// Makes `graph` the target of every op called on this thread while alive.
class GraphScope : public BuildScope {
 public:
  explicit GraphScope(std::shared_ptr<Graph> graph, GraphScopeOptions options = {});
  ~GraphScope() override;
  GraphScope(const GraphScope&) = delete;
  GraphScope& operator=(const GraphScope&) = delete;

  Graph& graph() { return *graph_; }
  const std::shared_ptr<Graph>& graph_ptr() const { return graph_; }
  /// The innermost GraphScope of this thread, or nullptr.
  static GraphScope* current();

  /// The value an input tensor stands for in this graph (capturing it if needed).
  ValueRef input_value(const Tensor& t);
  /// The next node built gets this name (made unique), instead of the op's name.
  void set_next_node_name(std::string name) { next_name_ = std::move(name); }

  // BuildScope
  TensorList add_node(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
                      const TypeList& types) override;
  bool captures(std::span<const Tensor>) const override { return true; }

 private:
  friend class NameScope;
  friend class DeviceScope;
  friend class ControlDependencies;
  std::shared_ptr<Graph> graph_;
  GraphScopeOptions options_;
  BuildScope* prev_scope_;
  GraphScope* prev_graph_scope_;
  std::string prefix_, device_, next_name_;
  std::vector<int> control_deps_;
  int last_stateful_ = -1;
  std::unordered_map<const TensorImpl*, std::pair<Tensor, ValueRef>> captured_;
};

/// Prefixes the names of nodes built while alive: "dense/" + op name.
class NameScope {
 public:
  explicit NameScope(const std::string& name);
  ~NameScope();

 private:
  std::string prev_;
};

/// Places nodes built while alive on a device: "/cpu:0", "/cpu:1" (tf.device).
class DeviceScope {
 public:
  explicit DeviceScope(const std::string& device);
  ~DeviceScope();

 private:
  std::string prev_;
};

/// Nodes built while alive run after the nodes producing `deps` (tf.control_dependencies).
class ControlDependencies {
 public:
  explicit ControlDependencies(const std::vector<Tensor>& deps);
  ~ControlDependencies();

 private:
  size_t prev_size_;
};

/// A placeholder node with a name (tf.compat.v1.placeholder).
Tensor placeholder(DType dtype, const Shape& shape, const std::string& name);

}  // namespace deepflow
