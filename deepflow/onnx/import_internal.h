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
  /// Dynamic dims known to be equal (a Reshape's output dim that a partial shape's unknown
  /// element named, a Transpose's moved dim): (tensor id, dim) -> an equal earlier one.
  mutable std::map<std::pair<uint64_t, int>, std::pair<uint64_t, int>> dim_alias;

 private:
  mutable std::unordered_map<const ::onnx::GraphProto*, std::vector<std::string>> free_names_;
};

/// One element of a partly known shape value: its value when known; when unknown and it
/// is a dim of a tensor unchanged (Shape, then Gather/Concat/... or +0, *1), that tensor's
/// id and the dim, so a consumer can prove what it equals.
struct PartialElem {
  std::optional<int64_t> value;
  uint64_t src = 0;
  int dim = -1;
};

/// A shape value partly known at import time: an integer scalar or 1-D vector (what Shape
/// of a tensor with dynamic dims and the integer ops on it make) with at least one unknown
/// element. Values fully known at import time are concrete Tensors instead.
struct PartialValue {
  DType dtype = DType::Int64;
  bool scalar = false;
  std::vector<PartialElem> elems;
  bool fully_known() const;
  /// "[?,48,28,28]" (a scalar without the brackets).
  std::string to_string() const;
};

/// The values of one (sub)graph being evaluated, by name; names it does not define are
/// looked up in the enclosing graph's scope (ONNX's outer-scope references). A name bound
/// to a PartialValue maps to an undefined Tensor in find().
class Scope {
 public:
  explicit Scope(const Scope* parent) : parent_(parent) {}
  const Tensor* find(const std::string& name) const;
  /// The partial value bound to name (in the innermost scope defining it), else null.
  const PartialValue* find_partial(const std::string& name) const;
  void set(const std::string& name, Tensor t) {
    partial_.erase(name);
    values_[name] = std::move(t);
  }
  void set_partial(const std::string& name, PartialValue v) {
    values_[name] = Tensor();
    partial_[name] = std::move(v);
  }

 private:
  const Scope* parent_;
  std::unordered_map<std::string, Tensor> values_;
  std::unordered_map<std::string, PartialValue> partial_;
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
  std::optional<std::vector<int64_t>> partial_shape_input(size_t i) const override;
  /// The partial value input i is bound to, else null.
  const PartialValue* partial_input(size_t i) const;
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

/// The outputs of a node folded on partial values: a concrete Tensor or a PartialValue each.
struct PartialOutput {
  Tensor tensor;
  std::optional<PartialValue> partial;
};

/// Folds a node over partly known shape values (import_partial.cpp): Shape of a tensor with
/// dynamic dims, and Gather/Slice/Squeeze/Unsqueeze/Concat/Cast/Identity/Add/Sub/Mul/Div/
/// Equal/Where with a partial input. nullopt when the node is not one it folds (the op
/// importer then runs and rejects a partial input clearly).
std::optional<std::vector<PartialOutput>> fold_partial(const GraphNodeContext& ctx);

/// The earliest known (tensor id, dim) equal to dim d of tensor id t (itself when none).
std::pair<uint64_t, int> dim_root(const NodeContext& ctx, uint64_t t, int d);
/// Records that dynamic dim d of tensor t equals dim sd of tensor src.
void alias_dim(const NodeContext& ctx, uint64_t t, int d, uint64_t src, int sd);

/// ctx's partial input i when ctx is the importer's context, else null (ops_tensor.cpp's
/// Expand reads where unknown elements came from).
const PartialValue* partial_input(const NodeContext& ctx, size_t i);

}  // namespace deepflow::onnx::detail
