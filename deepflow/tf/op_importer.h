// SPDX-License-Identifier: Apache-2.0
// The TensorFlow importer table: one function per TF op type that turns a NodeDef into
// deepflow ops. Families live in deepflow/tf/ops_<family>.cpp and register with DF_TF_OP;
// the evaluator (graph_eval.cpp) walks a GraphDef or FunctionDef body and calls them.
//
//   // ops_math.cpp
//   Values import_relu(NodeContext& c) { return {relu(c.input(0))}; }
//   DF_TF_OP("Relu", import_relu)
//
// Attributes come with TensorFlow's defaults filled in (op_defs.pbtxt), so an importer
// reads `c.attr_int("axis")` without a fallback. Inputs that TensorFlow passes as tensors
// but deepflow needs as attributes (Reshape's shape, ConcatV2's axis, Pad's paddings, ...)
// come from `c.constant_input(i)` (known at import time) or `c.shape_input(i)` (a shape
// vector whose unknown elements are -1, from Shape of a tensor with dynamic dims and the
// integer ops on it). Errors from an importer are prefixed with the node by the caller.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "deepflow/core/tensor.h"
#include "deepflow/ops/ops.h"
#include "deepflow/ops/variable.h"

namespace tensorflow {
class NodeDef;
class AttrValue;
class TensorProto;
}  // namespace tensorflow

namespace deepflow::tf {

/// A TensorFlow lookup table (HashTableV2), filled by its initializer when the model loads
/// (the __saved_model_init_op): keys and values as concrete tensors.
struct LookupTable {
  std::string name;
  DType key_dtype = DType::String, value_dtype = DType::Int64;
  Tensor keys, values;
};

/// What one output of a TF node stands for while importing.
struct Value {
  /// A dense tensor: concrete (known at import time) or symbolic (traced).
  Tensor tensor;
  /// DT_RESOURCE: the variable a VarHandleOp (or a captured argument) names.
  std::shared_ptr<Variable> variable;
  /// DT_RESOURCE: the lookup table a HashTableV2 names.
  std::shared_ptr<LookupTable> table;
  /// An integer shape vector partly known at import time: its elements, -1 where unknown
  /// (tensor then holds the traced value). Set by Shape and the integer ops on it.
  std::optional<std::vector<int64_t>> partial;
  /// With partial: a scalar (one element), not a vector, and the dtype of its tensor form.
  bool scalar = false;
  DType partial_dtype = DType::Int32;
  /// With partial: per element, the tensor and dim whose run-time size it is (Shape of a
  /// tensor with dynamic dims), or an undefined tensor. Lets Fill and TensorListReserve
  /// make tensors with those dims.
  std::vector<std::pair<Tensor, int>> sources;
  /// A TensorList reserved with element dims known only at run time, before any element is
  /// set: its [n, element dims...] (-1 unknown) and dtype. The first TensorListSetItem
  /// makes the dense tensor from the element it sets (a While peels one iteration for it).
  struct PendingList {
    std::vector<int64_t> dims;
    std::vector<std::pair<Tensor, int>> sources;  ///< as Value::sources, per dim
    DType dtype = DType::Float32;
  };
  std::shared_ptr<const PendingList> pending_list;

  Value() = default;
  Value(Tensor t) : tensor(std::move(t)) {}  // NOLINT: most importers return tensors
  bool defined() const {
    return tensor.defined() || variable != nullptr || table != nullptr || partial.has_value() ||
           pending_list != nullptr;
  }
};
using Values = std::vector<Value>;

/// A function attribute (If's branches, While's cond and body) as a callable over Values.
using FunctionValue = std::function<Values(const Values&)>;

class NodeContext {
 public:
  virtual ~NodeContext() = default;
  virtual const tensorflow::NodeDef& node() const = 0;
  /// "dense/MatMul (MatMul)": for messages.
  virtual std::string describe() const = 0;

  virtual size_t num_inputs() const = 0;  ///< data inputs (control inputs excluded)
  virtual const Value& value(size_t i) const = 0;
  /// The dense tensor of input i; throws naming the node when it is a resource. A partly
  /// known shape value is computed from the tensors its unknown dims come from.
  Tensor input(size_t i) const;
  /// The variable of a DT_RESOURCE input i; throws when it is not one.
  Variable& variable(size_t i) const;
  /// The value of variable input i: a read (a node when traced), or, when the import
  /// freezes variables, the value itself (a constant).
  virtual Tensor read_variable(size_t i) const { return variable(i).value(); }
  /// Input i when known at import time, else a clear error: "input 1 (shape) of Reshape
  /// must be known at import time".
  Tensor constant_input(size_t i) const;
  /// Input i as integers (known at import time).
  std::vector<int64_t> constant_ints(size_t i) const;
  /// Input i as a shape vector (or scalar): known values, or -1 for each element only
  /// known when the graph runs (Value::partial). nullopt when neither.
  std::optional<std::vector<int64_t>> shape_input(size_t i) const;

  /// The attr after defaults; null when neither the node nor its OpDef has it.
  virtual const tensorflow::AttrValue* attr(const std::string& name) const = 0;
  bool has_attr(const std::string& name) const { return attr(name) != nullptr; }
  int64_t attr_int(const std::string& name) const;
  float attr_float(const std::string& name) const;
  bool attr_bool(const std::string& name) const;
  std::string attr_string(const std::string& name) const;
  DType attr_type(const std::string& name) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;
  std::vector<DType> attr_types(const std::string& name) const;
  std::vector<std::string> attr_strings(const std::string& name) const;
  /// A shape attr: -1 for unknown dims; nullopt for unknown rank.
  std::optional<Shape> attr_shape(const std::string& name) const;
  Tensor attr_tensor(const std::string& name) const;
  /// A func attr (or one element of a list(func) attr) as a callable.
  virtual FunctionValue attr_func(const std::string& name, int index = -1) const = 0;
  /// Number of flat outputs this node has (after number_attr / type_list_attr).
  virtual size_t num_outputs() const = 0;
};

using OpImporter = std::function<Values(NodeContext& ctx)>;

struct OpImporterRegistrar {
  OpImporterRegistrar(const char* op_type, OpImporter fn);
};

/// The importer for op_type, or null.
const OpImporter* find_op_importer(const std::string& op_type);
/// Every registered op type (sorted).
std::vector<std::string> registered_op_types();

/// The deepflow dtype of a TensorFlow DataType number (dtype.h), the *_REF twins of TF1
/// graphs included; throws naming the type ("DT_COMPLEX64") when deepflow has none.
DType require_dtype(int tf_type);

/// A TensorProto as a concrete tensor (tensor_content or the typed fields, with TF's
/// last-value fill). `where` names it in errors.
Tensor tensor_from_tf(const tensorflow::TensorProto& proto, const std::string& where);

/// Zeros of shape `dims` where dims[i] < 0 is the run-time size of sources[i] (a tensor and
/// dim, from Value::sources): built by broadcasting, so the dims need not be known now.
Tensor dynamic_zeros(const NodeContext& ctx, const std::vector<int64_t>& dims,
                     const std::vector<std::pair<Tensor, int>>& sources, DType dtype);

/// A tensor of `like_dims` (-1: the run-time size of sources[i]) holding x, for reshapes
/// whose target has several dims known only at run time: reshape_like onto zeros of that
/// shape made by dynamic_zeros.
Tensor dynamic_reshape(const NodeContext& ctx, const Tensor& x, const std::vector<int64_t>& dims,
                       const std::vector<std::pair<Tensor, int>>& sources);

/// A non-negative axis for `rank` from a TF axis in [-rank, rank).
int64_t tf_axis(const NodeContext& ctx, int64_t axis, int64_t rank);

}  // namespace deepflow::tf

#define DF_TF_CONCAT_(a, b) a##b
#define DF_TF_CONCAT(a, b) DF_TF_CONCAT_(a, b)
#define DF_TF_OP(op_type, fn) \
  static ::deepflow::tf::OpImporterRegistrar DF_TF_CONCAT(df_tf_op_, __LINE__)(op_type, fn);
