// SPDX-License-Identifier: Apache-2.0
// The importer table: one function per ONNX op type (and opset range) that turns a node
// into deepflow ops. Families live in deepflow/onnx/ops_<family>.cpp and register with
// DF_ONNX_OP; the importer (import.cpp) walks the graph and calls them.
//
//   // ops_elementwise.cpp
//   TensorList import_relu(NodeContext& ctx) { return {relu(ctx.input(0))}; }
//   DF_ONNX_OP("Relu", 6, import_relu)
//
// An importer reads inputs (an omitted optional input is an undefined Tensor), attributes
// with their ONNX defaults, and, for inputs that ONNX passes as tensors but deepflow
// needs as attributes (Reshape's shape, Slice's starts/ends, Pad's pads, TopK's k, ...),
// `constant_input(i)`, which is the concrete value when the importer could fold it and
// otherwise fails with "[onnx::import] <node>: input i (<name>) of <Op> must be known at
// import time". Errors from an importer are prefixed with the node by the caller.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "deepflow/core/tensor.h"
#include "deepflow/ops/op.h"
#include "deepflow/ops/ops.h"

namespace onnx {
class NodeProto;
class GraphProto;
class AttributeProto;
}  // namespace onnx

namespace deepflow::onnx {

class NodeContext {
 public:
  virtual ~NodeContext() = default;
  virtual const ::onnx::NodeProto& node() const = 0;
  /// The model's default-domain opset.
  virtual int64_t opset() const = 0;
  /// "Conv_3 (Conv)": for messages.
  virtual std::string describe() const = 0;

  virtual size_t num_inputs() const = 0;
  /// Undefined when the input is omitted (empty name) or i >= num_inputs().
  virtual Tensor input(size_t i) const = 0;
  bool has_input(size_t i) const { return input(i).defined(); }
  /// The value of input i if it is known at import time (see file comment), else nullopt.
  virtual std::optional<Tensor> known_input(size_t i) const = 0;
  /// known_input or a clear error.
  Tensor constant_input(size_t i) const;
  /// Input i as a 1-D integer shape vector with -1 for each element not known at import
  /// time: what Shape of a tensor with dynamic dims and the integer ops on it fold to
  /// (Shape -> Gather -> Unsqueeze -> Concat). A fully known input gives its values (so a
  /// literal -1 reads the same as an unknown element: count them together); nullopt when
  /// the input is neither known nor such a partial vector.
  virtual std::optional<std::vector<int64_t>> partial_shape_input(size_t i) const;
  virtual size_t num_outputs() const = 0;  ///< outputs the node names (trailing optional ones may be absent)

  virtual const ::onnx::AttributeProto* attr(const std::string& name) const = 0;
  bool has_attr(const std::string& name) const { return attr(name) != nullptr; }
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name, const std::vector<int64_t>& fallback = {}) const;
  std::vector<float> attr_floats(const std::string& name, const std::vector<float>& fallback = {}) const;
  /// A tensor attribute (Constant's value); throws if absent.
  Tensor attr_tensor(const std::string& name) const;
  /// A graph attribute (If's branches, Loop's body) as a callable: its inputs are the
  /// subgraph's declared inputs; names from enclosing scopes resolve as in ONNX.
  virtual std::function<TensorList(const TensorList&)> attr_graph(const std::string& name) const = 0;
  /// Number of declared inputs/outputs of a graph attribute.
  virtual size_t graph_num_inputs(const std::string& name) const = 0;
};

// --- helpers the importer families share (op_importer.cpp) ---

/// An ONNX axis in [-rank, rank) as a non-negative one; rank 0 accepts axis 0 and -1 (a
/// scalar's only axis). Out of range: "[onnx::import] <node>: axis 3 out of range for rank 2".
int64_t onnx_axis(const NodeContext& ctx, int64_t axis, int64_t rank);
/// x's shape when every dim is known, else "[onnx::import] <node>: <what> needs a known
/// shape, got [?,3]".
Shape known_shape(const NodeContext& ctx, const Tensor& x, const char* what);
/// Shape's dims [start, end) for an input of this rank: the node's start / end attributes
/// (opset 15; defaults 0 and rank), negative from the end, clamped to [0, rank].
std::pair<int64_t, int64_t> shape_range(const NodeContext& ctx, int64_t rank);
/// Slice's start and end on a dim of size d for a non-zero step, ONNX's rules: negative
/// from the end (ends below -d, as INT64_MIN, mean before the first element), clamped to
/// [0, d] for positive steps and [-1, d - 1] for negative ones.
std::pair<int64_t, int64_t> slice_bounds(int64_t start, int64_t end, int64_t step, int64_t d);

using OpImporter = std::function<TensorList(NodeContext& ctx)>;

/// Registers `fn` for op_type (default domain) from opset `since` until the next
/// registration of the same op with a higher `since`.
struct OpImporterRegistrar {
  OpImporterRegistrar(const char* op_type, int64_t since, OpImporter fn);
};

/// The importer for op_type at `opset`, or null.
const OpImporter* find_op_importer(const std::string& op_type, int64_t opset);
/// Every registered op type (sorted), for `deepflow onnx info` and the conformance table.
std::vector<std::string> registered_op_types();

/// ONNX TensorProto.DataType number -> deepflow dtype; throws for unsupported ones
/// (naming the ONNX type, e.g. "COMPLEX64").
DType dtype_from_onnx(int32_t onnx_type);
int32_t dtype_to_onnx(DType dtype);
const char* onnx_type_name(int32_t onnx_type);

}  // namespace deepflow::onnx

#define DF_ONNX_CONCAT_(a, b) a##b
#define DF_ONNX_CONCAT(a, b) DF_ONNX_CONCAT_(a, b)
#define DF_ONNX_OP(op_type, since, fn) \
  static ::deepflow::onnx::OpImporterRegistrar DF_ONNX_CONCAT(df_onnx_op_, __LINE__)(op_type, since, fn);
