// SPDX-License-Identifier: Apache-2.0
// Internal to the TensorFlow exporter (export*.cpp): the FunctionDef being written, and the
// per-primitive table that turns a deepflow node into TF nodes.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "deepflow/graph/graph.h"
#include "tensorflow/function.pb.h"

namespace deepflow::tf::detail {

/// One FunctionDef being filled: unique node names and the TF name ("node:out_arg:i" or an
/// argument name) of each deepflow value.
class FunctionWriter {
 public:
  FunctionWriter(const Graph& g, tensorflow::FunctionDef* out) : g_(g), out_(out) {}

  const Graph& graph() const { return g_; }
  tensorflow::FunctionDef* function() { return out_; }
  /// The TF name of a deepflow value (set when its node was written).
  const std::string& name(ValueRef v) const;
  void set_name(ValueRef v, std::string name) { names_[{v.node, v.index}] = std::move(name); }
  /// A node name not used yet in this function, from `base` cleaned to TF's node-name rules.
  std::string fresh(const std::string& base);
  /// Appends a node `op` named from `base` with these inputs; returns it for attributes.
  tensorflow::NodeDef* add(const std::string& op, const std::string& base, const std::vector<std::string>& inputs);
  /// A Const node holding `t`: returns "name:output:0".
  std::string constant(const Tensor& t, const std::string& base);
  /// A 1-D int32 (or int64) Const.
  std::string ints(const std::vector<int64_t>& v, const std::string& base, DType dtype = DType::Int32);
  /// A scalar Const of dtype d.
  std::string scalar(double v, DType d, const std::string& base);

 private:
  const Graph& g_;
  tensorflow::FunctionDef* out_;
  std::map<std::pair<int, int>, std::string> names_;
  std::set<std::string> used_;
};

/// "[A-Za-z0-9.][A-Za-z0-9_.\-/]*": a name TF takes for a node ("" -> "node").
std::string clean_node_name(const std::string& name);
/// "[a-z][a-z0-9_]*": a name TF takes for a function argument ("" -> fallback).
std::string clean_arg_name(const std::string& name, const std::string& fallback);

/// An error message without its leading "[tf::export] " (to nest it in a longer one).
std::string strip_export_prefix(const std::string& what);

void set_type(tensorflow::NodeDef* n, const std::string& attr, DType t);
void set_int(tensorflow::NodeDef* n, const std::string& attr, int64_t v);
void set_bool(tensorflow::NodeDef* n, const std::string& attr, bool v);
void set_float(tensorflow::NodeDef* n, const std::string& attr, double v);
void set_string(tensorflow::NodeDef* n, const std::string& attr, const std::string& v);
void set_ints(tensorflow::NodeDef* n, const std::string& attr, const std::vector<int64_t>& v);
void set_types(tensorflow::NodeDef* n, const std::string& attr, const std::vector<int>& tf_types);
/// A TensorShapeProto of a deepflow shape (-1 dims stay -1).
void set_shape_proto(tensorflow::TensorShapeProto* out, const Shape& s);
/// A TensorProto of a concrete tensor (tensor_content, or string_val for strings).
void set_tensor_proto(tensorflow::TensorProto* out, const Tensor& t);

/// One deepflow node to write: its inputs' TF names and its attributes with defaults.
struct NodeExport {
  const Node& node;
  FunctionWriter& w;
  std::vector<std::string> in;
  std::vector<std::string> out;  ///< filled by the table entry: one TF name per output

  const TensorType& in_type(int i) const { return w.graph().type(node.inputs.at(size_t(i))); }
  const TensorType& out_type(int i) const { return node.outputs.at(size_t(i)); }
  /// The value of input i when it is a const node.
  std::optional<Tensor> in_constant(int i) const;
  bool attr_bool(const char* n) const;
  int64_t attr_int(const char* n) const;
  double attr_float(const char* n) const;
  const std::string& attr_string(const char* n) const;
  DType attr_dtype(const char* n) const;
  const std::vector<int64_t>& attr_ints(const char* n) const;
  /// Adds a node named "<this node>/<op>"; sets attr "T" to `t` when given.
  tensorflow::NodeDef* add(const std::string& op, const std::vector<std::string>& inputs, std::optional<DType> t);
  /// "[tf::export] node 'name' (op)".
  std::string describe() const;
};

using ExportFn = void (*)(NodeExport& e);
/// The per-primitive table (export_ops_math.cpp, export_ops_array.cpp, export_ops_nn.cpp);
/// absent: unmapped.
const std::map<OpId, ExportFn>& export_table();
void add_math_ops(std::map<OpId, ExportFn>& t);
void add_array_ops(std::map<OpId, ExportFn>& t);
void add_nn_ops(std::map<OpId, ExportFn>& t);

/// Applies a fused activation ("relu", "relu6", "clip", "elu", "leaky_relu", "sigmoid",
/// "tanh", "gelu", "") to z; returns the result's TF name.
std::string emit_activation(NodeExport& e, const std::string& act, const std::string& z, DType t);

/// Writes graph `g` as the body of `fd` (its signature's input args already added for the
/// placeholders, in `arg_names` order of g.inputs; read_variable nodes become resource args
/// appended to `resources`, in first-use order). Returns the TF names of g.outputs.
std::vector<std::string> write_body(const Graph& g, const std::vector<std::string>& arg_names,
                                    tensorflow::FunctionDef* fd, std::vector<Variable>* resources);

}  // namespace deepflow::tf::detail
