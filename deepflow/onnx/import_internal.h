// SPDX-License-Identifier: Apache-2.0
// Internal to the ONNX importer (import.cpp, import_graph.cpp, ops_control.cpp): TensorProto
// decoding and the graph evaluator that walks a (sub)graph's nodes through the op importers.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "deepflow/onnx/op_importer.h"
#include "deepflow/ops/variable.h"

namespace deepflow::onnx::detail {

/// A TensorProto as a concrete Tensor (raw_data or the typed fields); `where` names it in
/// errors ("<file>: initializer 'w'").
Tensor tensor_from_proto(const ::onnx::TensorProto& t, const std::string& where);

/// What every node of one import shares: the file name for messages, the opset, and the
/// free names of each subgraph (computed once).
struct ImportShared {
  std::string source;
  int64_t opset = 0;
  /// Names a subgraph (and its nested subgraphs) reads that it does not define itself.
  const std::vector<std::string>& free_names(const ::onnx::GraphProto& g) const;

 private:
  mutable std::unordered_map<const ::onnx::GraphProto*, std::vector<std::string>> free_names_;
};

/// The values of one (sub)graph being evaluated, by name; names it does not define are
/// looked up in the enclosing graph's scope (ONNX's outer-scope references).
class Scope {
 public:
  explicit Scope(const Scope* parent) : parent_(parent) {}
  const Tensor* find(const std::string& name) const;
  void set(const std::string& name, Tensor t) { values_[name] = std::move(t); }

 private:
  const Scope* parent_;
  std::unordered_map<std::string, Tensor> values_;
};

/// A known value is a concrete tensor (initializers, Constant nodes, ops folded under
/// `BuildScopeGuard eager(nullptr)`); symbolic tensors are the traced ones.
inline bool is_known(const Tensor& t) { return t.defined() && !t.is_symbolic(); }

/// Evaluates graph `g` with `inputs` bound to its declared inputs (in order) and returns its
/// outputs. `initializers` are the graph's initializer values (null: decode g's own).
/// `path` prefixes node descriptions of subgraphs ("If_0/then_branch/").
TensorList evaluate_graph(const ::onnx::GraphProto& g, const Scope* parent, const TensorList& inputs,
                          const ImportShared& shared, const std::string& path,
                          const std::map<std::string, Tensor>* initializers = nullptr);

/// The importer's NodeContext; ops_control.cpp reaches the graph attributes through it.
class GraphNodeContext : public NodeContext {
 public:
  GraphNodeContext(const ::onnx::NodeProto& node, size_t index, const Scope& scope, const ImportShared& shared,
                   std::string path);

  const ::onnx::NodeProto& node() const override { return node_; }
  int64_t opset() const override { return shared_.opset; }
  std::string describe() const override;
  size_t num_inputs() const override { return size_t(node_.input_size()); }
  Tensor input(size_t i) const override;
  std::optional<Tensor> known_input(size_t i) const override;
  size_t num_outputs() const override { return size_t(node_.output_size()); }
  const ::onnx::AttributeProto* attr(const std::string& name) const override;
  std::function<TensorList(const TensorList&)> attr_graph(const std::string& name) const override;
  size_t graph_num_inputs(const std::string& name) const override;

  /// The GraphProto of a graph attribute; throws naming the node when absent.
  const ::onnx::GraphProto& graph_proto(const std::string& name) const;
  /// Number of declared outputs of a graph attribute.
  size_t graph_num_outputs(const std::string& name) const;
  /// True when every outer-scope name the node's subgraphs read is known.
  bool subgraphs_known() const;
  const ImportShared& shared() const { return shared_; }

 private:
  const ::onnx::NodeProto& node_;
  size_t index_;
  const Scope& scope_;
  const ImportShared& shared_;
  std::string path_;
};

}  // namespace deepflow::onnx::detail
