// SPDX-License-Identifier: Apache-2.0
// OpDef, the op registry and dispatch(): the one entry point of every op call.
//
// What a primitive *means* is one OpDef: its attribute schema, `infer` (shape and
// dtype rule, and every error message about its inputs), and `vjp` (its
// gradient, written with public ops). Kernels are registered separately, per
// backend (deepflow/ops/kernel.h). A primitive is defined in one block:
//
//   // a: [..., m, k], b: [..., k, n] -> [..., m, n]
//   static void infer_matmul(const OpCall& c, TypeList& out) { ... }
//   static TensorList vjp_matmul(const OpCall& c, const TensorList& g) { ... }
//   DF_DEFINE_OP(MatMul, {.attrs = {{"transpose_a", false}, {"transpose_b", false}},
//                         .infer = infer_matmul, .vjp = vjp_matmul});
//
// dispatch(op, inputs, attrs) runs `infer` first, always; then, in a graph or
// tracing scope, appends a node; otherwise it picks a kernel by (op, device,
// dtype), allocates outputs and runs it; then records the call on every
// recording GradientTape that watches an input.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "deepflow/core/tensor.h"
#include "deepflow/ops/op_list.h"
#include "deepflow/ops/variable.h"

namespace deepflow {

/// Identifies an op: the primitives of op_list.h first, then ops registered at run time.
enum class OpId : uint16_t {
#define DF_OP_ENUM_(name, str) name,
  DEEPFLOW_PRIMITIVES(DF_OP_ENUM_)
#undef DF_OP_ENUM_
  kNumPrimitives
};
inline constexpr int kNumPrimitives = int(OpId::kNumPrimitives);

// --- attributes ---

class Graph;
/// A function-valued attribute (the branches of cond, the body of while): a graph with
/// designated inputs and outputs (deepflow/graph/graph.h).
using GraphRef = std::shared_ptr<const Graph>;

/// The value of one attribute. Integer lists carry axes, shapes, strides and perms;
/// a Tensor is a constant's value; a Variable is the state read_variable and
/// assign_variable name; a GraphRef is a function body.
using AttrValue = std::variant<bool, int64_t, double, std::string, DType, std::vector<int64_t>,
                               std::vector<double>, Tensor, Variable, GraphRef>;
enum class AttrKind : uint8_t { Bool, Int, Float, String, DType, Ints, Floats, Tensor, Variable, Func };
AttrKind attr_kind(const AttrValue& v);
const char* attr_kind_name(AttrKind k);
/// Short text used in error messages: true, 3, 0.5, "SAME", f32, [1,2], [0.5],
/// tensor<f32[2]>, var<"w">, func<3 nodes>. (The graph text form writes tensors in full.)
std::string attr_to_string(const AttrValue& v);
/// Equality for CSE and round-trip tests: tensors by dtype, shape and contents,
/// variables by identity, functions by identity.
bool attr_equal(const AttrValue& a, const AttrValue& b);

/// Named attribute values of one call. Small and flat: most ops have 0 to 4.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items) : items_(items) {}
  void set(const std::string& name, AttrValue v);
  const AttrValue* find(const std::string& name) const;
  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

/// One entry of an op's attribute schema: a name, a kind and an optional default.
struct AttrSpec {
  std::string name;
  AttrKind kind;
  bool required = false;
  AttrValue default_value = false;
  AttrSpec(std::string n, bool d) : name(std::move(n)), kind(AttrKind::Bool), default_value(d) {}
  AttrSpec(std::string n, int d) : name(std::move(n)), kind(AttrKind::Int), default_value(int64_t(d)) {}
  AttrSpec(std::string n, int64_t d) : name(std::move(n)), kind(AttrKind::Int), default_value(d) {}
  AttrSpec(std::string n, double d) : name(std::move(n)), kind(AttrKind::Float), default_value(d) {}
  AttrSpec(std::string n, const char* d) : name(std::move(n)), kind(AttrKind::String), default_value(std::string(d)) {}
  AttrSpec(std::string n, DType d) : name(std::move(n)), kind(AttrKind::DType), default_value(d) {}
  AttrSpec(std::string n, std::vector<int64_t> d) : name(std::move(n)), kind(AttrKind::Ints), default_value(std::move(d)) {}
  AttrSpec(std::string n, std::vector<double> d) : name(std::move(n)), kind(AttrKind::Floats), default_value(std::move(d)) {}
  /// A required attribute without default.
  static AttrSpec required_of(std::string n, AttrKind k);
};

struct OpDef;
using TensorList = std::vector<Tensor>;
using TypeList = std::vector<TensorType>;

/// One call of an op as `infer`, `vjp` and kernels see it.
struct OpCall {
  const OpDef* def = nullptr;
  std::span<const Tensor> inputs;
  const Attrs* attrs = nullptr;
  std::span<const Tensor> outputs;  ///< set for vjp (the forward outputs); empty for infer

  const Tensor& in(int i) const { return inputs[size_t(i)]; }
  const Tensor& out(int i) const { return outputs[size_t(i)]; }
  int num_inputs() const { return int(inputs.size()); }
  const char* name() const;
  /// The attribute value, or the schema default; throws when absent and required.
  bool attr_bool(const char* n) const;
  int64_t attr_int(const char* n) const;
  double attr_float(const char* n) const;
  const std::string& attr_string(const char* n) const;
  DType attr_dtype(const char* n) const;
  const std::vector<int64_t>& attr_ints(const char* n) const;
  const std::vector<double>& attr_floats(const char* n) const;
  const Tensor& attr_tensor(const char* n) const;
  const Variable& attr_variable(const char* n) const;
  const GraphRef& attr_func(const char* n) const;
  const AttrValue& attr(const char* n) const;
};

/// Computes the dtype and shape of every output, and throws deepflow::Error on bad input.
/// Inputs may be symbolic with unknown (-1) dims; the rule must then keep what it knows.
using InferFn = void (*)(const OpCall& call, TypeList& out);
/// Given the gradient of every output (zeros where an output got none), returns the
/// gradient of every input (an undefined Tensor where there is none). Public ops only.
using VjpFn = TensorList (*)(const OpCall& call, const TensorList& grads);

/// What a primitive means. One per op, in deepflow/ops/<family>.cpp.
struct OpDef {
  std::string name;                 ///< stable serialized name: "matmul"
  int num_inputs = 1;               ///< -1: variadic (concat)
  std::vector<AttrSpec> attrs;      ///< the typed schema; calls are checked against it
  InferFn infer = nullptr;
  VjpFn vjp = nullptr;
  bool non_differentiable = false;  ///< explicit mark: no gradient flows through
  bool stateful = false;            ///< random or side-effecting: never folded or merged
  bool view_output = false;         ///< kernels may return a view of input 0 (reshape)
  /// Takes or makes string tensors (DType::String). Without it, dispatch and infer_types
  /// refuse any string input or output with "[op] unsupported dtype string", so kernels
  /// that memcpy elements never see a std::string.
  bool strings = false;
  OpId id = OpId::kNumPrimitives;   ///< set by the registry
};

/// Registers a primitive's OpDef; called by DF_DEFINE_OP at start-up.
void register_op(OpId id, OpDef def);
/// Registers a user op (the custom-op path) under def.name; returns its new id.
OpId register_custom_op(OpDef def);
/// The OpDef of an op; throws when none is registered.
const OpDef& op_def(OpId id);
/// nullptr when the op id has no OpDef (used by the registry test).
const OpDef* find_op_def(OpId id);
/// Looks an op up by its serialized name; throws "[op] unknown op 'x'" when absent.
OpId op_id_from_name(const std::string& name);
/// The name in op_list.h, even when no OpDef is registered.
const char* primitive_name(OpId id);
/// Number of registered ops (primitives and custom ops).
int num_ops();

// --- dispatch ---

/// Runs `infer`, then builds a node (graph scope) or runs a kernel, then records on tapes.
TensorList dispatch(OpId op, std::span<const Tensor> inputs, const Attrs& attrs = {});
/// Single-output convenience.
Tensor dispatch1(OpId op, std::span<const Tensor> inputs, const Attrs& attrs = {});
inline Tensor dispatch1(OpId op, std::initializer_list<Tensor> inputs, const Attrs& attrs = {}) {
  return dispatch1(op, std::span<const Tensor>(inputs.begin(), inputs.size()), attrs);
}
inline TensorList dispatch(OpId op, std::initializer_list<Tensor> inputs, const Attrs& attrs = {}) {
  return dispatch(op, std::span<const Tensor>(inputs.begin(), inputs.size()), attrs);
}

/// Runs only `infer` (with the schema check) and returns the output types.
TypeList infer_types(OpId op, std::span<const Tensor> inputs, const Attrs& attrs);

/// Where graph building and tracing plug into dispatch (deepflow/graph implements it).
class BuildScope {
 public:
  virtual ~BuildScope() = default;
  /// Appends a node and returns symbolic outputs of the given types.
  virtual TensorList add_node(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
                              const TypeList& types) = 0;
  /// True when a concrete tensor would be captured by this scope (so dispatch must build a node).
  virtual bool captures(std::span<const Tensor> inputs) const = 0;
};
/// The innermost active scope of this thread, or nullptr in eager mode.
BuildScope* current_build_scope();
namespace detail {
/// Sets this thread's scope (for scope objects that restore the previous one themselves).
void set_build_scope(BuildScope* scope);
}  // namespace detail
/// Makes `scope` current for the lifetime of this object.
class BuildScopeGuard {
 public:
  explicit BuildScopeGuard(BuildScope* scope);
  ~BuildScopeGuard();
  BuildScopeGuard(const BuildScopeGuard&) = delete;
  BuildScopeGuard& operator=(const BuildScopeGuard&) = delete;

 private:
  BuildScope* prev_;
};

/// Where autodiff plugs into dispatch (deepflow/autodiff implements it).
namespace detail {
extern thread_local int g_active_tapes;
void record_on_tapes(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
                     const TensorList& outputs);
/// True while some GradientTape of this thread records (so a vjp's ops may be differentiated again).
bool any_tape_recording();
/// Checks attrs against the schema: unknown names and wrong kinds are errors.
void check_attrs(const OpDef& def, const Attrs& attrs);
}  // namespace detail

namespace detail {
struct OpRegistrar {
  OpRegistrar(OpId id, OpDef def) { register_op(id, std::move(def)); }
};
}  // namespace detail

}  // namespace deepflow

/// Defines primitive `Name` of op_list.h with the given OpDef fields (name is filled in).
#define DF_DEFINE_OP(Name, ...)                                                      \
  static ::deepflow::detail::OpRegistrar df_op_registrar_##Name(::deepflow::OpId::Name, \
                                                                 ::deepflow::OpDef __VA_ARGS__)
