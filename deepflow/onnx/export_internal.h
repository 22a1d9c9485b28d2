// SPDX-License-Identifier: Apache-2.0
// Internal to the ONNX exporter (export.cpp, export_ops.cpp): the state of one export and
// the per-op table that turns a deepflow node into ONNX nodes.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "deepflow/graph/graph.h"

namespace deepflow::onnx::detail {

/// One export of one graph: the GraphProto being filled and the ONNX name of each value.
class ExportContext {
 public:
  ExportContext(const Graph& g, ::onnx::GraphProto* out, int64_t opset) : g_(g), out_(out), opset_(opset) {}

  const Graph& graph() const { return g_; }
  int64_t opset() const { return opset_; }
  /// The ONNX name of a deepflow value (set when its node was exported).
  const std::string& name(ValueRef v) const;
  void set_name(ValueRef v, std::string name);
  bool has_name(ValueRef v) const;
  const TensorType& type(ValueRef v) const { return g_.type(v); }
  /// The value of a const or read_variable node (read now), else nullopt.
  std::optional<Tensor> constant(ValueRef v) const;

  /// A fresh ONNX value name from `base`.
  std::string fresh(const std::string& base);
  /// Takes `name` as is; false when it is already used.
  bool claim(const std::string& name);
  /// Names the ONNX nodes made for the deepflow node being exported.
  void set_node_prefix(std::string prefix) { prefix_ = std::move(prefix), node_count_ = 0; }
  /// Appends an ONNX node; returns it for attributes.
  ::onnx::NodeProto* add(const std::string& op_type, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs);
  /// add() with one fresh output, returned.
  std::string add1(const std::string& op_type, const std::vector<std::string>& inputs, const std::string& base,
                   ::onnx::NodeProto** node = nullptr);
  /// An initializer holding `t` (deduplicated for equal small int64 constants).
  std::string initializer(const Tensor& t, const std::string& base);
  std::string ints(const std::vector<int64_t>& v, const std::string& base = "const");
  /// A rank-0 initializer of dtype d.
  std::string scalar(double v, DType d, const std::string& base = "const");

 private:
  const Graph& g_;
  ::onnx::GraphProto* out_;
  int64_t opset_;
  std::map<std::pair<int, int>, std::string> names_;
  std::unordered_map<std::string, int> used_;
  std::map<std::string, std::string> int_consts_;
  std::string prefix_;
  int node_count_ = 0;
};

void set_attr(::onnx::NodeProto* n, const std::string& name, int64_t v);
void set_attr(::onnx::NodeProto* n, const std::string& name, float v);
void set_attr(::onnx::NodeProto* n, const std::string& name, const std::string& v);
void set_attr(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v);
void set_attr(::onnx::NodeProto* n, const std::string& name, const ::onnx::TensorProto& v);
/// A TensorProto (raw_data) of a concrete tensor.
::onnx::TensorProto tensor_to_proto(const Tensor& t, const std::string& name);

/// One node to export: its inputs' and outputs' ONNX names and its attributes with defaults.
struct NodeExport {
  const Node& node;
  ExportContext& cx;
  std::vector<std::string> in;
  std::vector<std::string> out;  ///< "" for outputs nobody reads

  const TensorType& in_type(int i) const { return cx.type(node.inputs.at(size_t(i))); }
  const TensorType& out_type(int i) const { return node.outputs.at(size_t(i)); }
  std::optional<Tensor> in_constant(int i) const { return cx.constant(node.inputs.at(size_t(i))); }
  bool attr_bool(const char* n) const;
  int64_t attr_int(const char* n) const;
  double attr_float(const char* n) const;
  const std::string& attr_string(const char* n) const;
  DType attr_dtype(const char* n) const;
  const std::vector<int64_t>& attr_ints(const char* n) const;
  /// out[i], or a fresh name when the output is unused.
  std::string out_name(int i);
  /// "[onnx::export] node 'name' (op)".
  std::string describe() const;
};

using ExportFn = void (*)(NodeExport& e);
/// The per-op table (export_ops.cpp); ops absent here are unmapped.
const std::map<OpId, ExportFn>& export_table();

}  // namespace deepflow::onnx::detail
