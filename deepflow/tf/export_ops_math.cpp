// SPDX-License-Identifier: Apache-2.0
// The TensorFlow export table, part 1: elementwise ops, casts, constants, reductions and
// scans. One function per deepflow primitive; each writes TF nodes with
// TF's attrs (T and the index types) and names its outputs by TF's output-arg names.
#include "deepflow/core/error.h"
#include "deepflow/ops/fused_program.h"
#include "deepflow/tf/dtype.h"
#include "deepflow/tf/export_internal.h"

namespace deepflow::tf::detail {
namespace {

namespace pb = ::tensorflow;

struct TfOp {
  const char* op;
  const char* out;  // the output-arg name
  bool typed = true;
};

// Elementwise primitives that are one TF op.
const std::map<OpId, TfOp>& simple_ops() {
  static const std::map<OpId, TfOp> m = {
      {OpId::Neg, {"Neg", "y"}},          {OpId::Abs, {"Abs", "y"}},
      {OpId::Sign, {"Sign", "y"}},        {OpId::Exp, {"Exp", "y"}},
      {OpId::Log, {"Log", "y"}},          {OpId::Log1p, {"Log1p", "y"}},
      {OpId::Expm1, {"Expm1", "y"}},      {OpId::Sqrt, {"Sqrt", "y"}},
      {OpId::Rsqrt, {"Rsqrt", "y"}},      {OpId::Square, {"Square", "y"}},
      {OpId::Sin, {"Sin", "y"}},          {OpId::Cos, {"Cos", "y"}},
      {OpId::Tanh, {"Tanh", "y"}},        {OpId::Sigmoid, {"Sigmoid", "y"}},
      {OpId::Relu, {"Relu", "activations"}}, {OpId::Erf, {"Erf", "y"}},
      {OpId::Floor, {"Floor", "y"}},      {OpId::Ceil, {"Ceil", "y"}},
      {OpId::Round, {"Round", "y"}},      {OpId::LogicalNot, {"LogicalNot", "y", false}},
      {OpId::ReluGrad, {"ReluGrad", "backprops"}},
      {OpId::Add, {"AddV2", "z"}},        {OpId::Sub, {"Sub", "z"}},
      {OpId::Mul, {"Mul", "z"}},          {OpId::Pow, {"Pow", "z"}},
      {OpId::Maximum, {"Maximum", "z"}},  {OpId::Minimum, {"Minimum", "z"}},
      {OpId::Equal, {"Equal", "z"}},      {OpId::NotEqual, {"NotEqual", "z"}},
      {OpId::Less, {"Less", "z"}},        {OpId::LessEqual, {"LessEqual", "z"}},
      {OpId::Greater, {"Greater", "z"}},  {OpId::GreaterEqual, {"GreaterEqual", "z"}},
      {OpId::LogicalAnd, {"LogicalAnd", "z", false}}, {OpId::LogicalOr, {"LogicalOr", "z", false}},
  };
  return m;
}

bool is_float(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
}

// One elementwise primitive on TF values `args` whose (first data) dtype is t.
std::string emit_elementwise(NodeExport& e, OpId op, const std::vector<std::string>& args, DType t) {
  if (op == OpId::Div) {
    return e.add(is_float(t) ? "RealDiv" : "Div", args, t)->name() + ":z:0";
  }
  if (op == OpId::Where) return e.add("SelectV2", args, t)->name() + ":output:0";
  auto it = simple_ops().find(op);
  DF_CHECK(it != simple_ops().end(), e.describe(), ": ", op_def(op).name, " has no TensorFlow op");
  const TfOp& m = it->second;
  pb::NodeDef* n = e.add(m.op, args, m.typed ? std::optional<DType>(t) : std::nullopt);
  if (op == OpId::Equal || op == OpId::NotEqual) set_bool(n, "incompatible_shape_error", true);
  return n->name() + ":" + m.out + ":0";
}

void elementwise(NodeExport& e) {
  const DType t = e.in_type(e.node.op == OpId::Where ? 1 : 0).dtype;
  e.out = {emit_elementwise(e, e.node.op, e.in, t)};
}

// A fused_elementwise program of postfix tokens, replayed op by op.
void fused_elementwise(NodeExport& e) {
  const fused::Program p = fused::parse(e.attr_string("program"), int(e.in.size()));
  const DType t = e.out_type(0).dtype;
  std::vector<std::string> stack;
  for (const fused::Instr& ins : p.code) {
    if (ins.kind == fused::Instr::Input) {
      stack.push_back(e.in.at(size_t(ins.index)));
    } else if (ins.kind == fused::Instr::Immediate) {
      stack.push_back(e.w.scalar(ins.value, t, e.node.name + "/const"));
    } else {
      std::vector<std::string> args(stack.end() - ins.arity, stack.end());
      stack.resize(stack.size() - size_t(ins.arity));
      stack.push_back(emit_elementwise(e, ins.op, args, t));
    }
  }
  e.out = {stack.back()};
}

void identity(NodeExport& e) {
  const bool stop = e.node.op == OpId::StopGradient;
  e.out = {e.add(stop ? "StopGradient" : "Identity", {e.in[0]}, e.in_type(0).dtype)->name() + ":output:0"};
}

void cast(NodeExport& e) {
  pb::NodeDef* n = e.add("Cast", {e.in[0]}, std::nullopt);
  set_type(n, "SrcT", e.in_type(0).dtype);
  set_type(n, "DstT", e.attr_dtype("dtype"));
  set_bool(n, "Truncate", false);
  e.out = {n->name() + ":y:0"};
}

// --- reductions and scans ---

std::vector<int64_t> reduce_axes(NodeExport& e) {
  std::vector<int64_t> axes = e.attr_ints("axes");
  if (axes.empty()) {
    const int r = e.in_type(0).shape.rank();
    DF_CHECK(r >= 0, e.describe(), ": a reduction over all axes needs the input's rank");
    for (int k = 0; k < r; ++k) axes.push_back(k);
  }
  return axes;
}

void reduce(NodeExport& e) {
  static const std::map<OpId, const char*> names = {
      {OpId::ReduceSum, "Sum"}, {OpId::ReduceMax, "Max"}, {OpId::ReduceMin, "Min"}, {OpId::ReduceProd, "Prod"}};
  const std::string axes = e.w.ints(reduce_axes(e), e.node.name + "/reduction_indices");
  pb::NodeDef* n = e.add(names.at(e.node.op), {e.in[0], axes}, e.in_type(0).dtype);
  set_bool(n, "keep_dims", e.attr_bool("keepdims"));
  set_type(n, "Tidx", DType::Int32);
  e.out = {n->name() + ":output:0"};
}

void arg_reduce(NodeExport& e) {
  const std::string dim = e.w.scalar(double(e.attr_int("axis")), DType::Int32, e.node.name + "/dimension");
  pb::NodeDef* n = e.add(e.node.op == OpId::ArgMax ? "ArgMax" : "ArgMin", {e.in[0], dim}, e.in_type(0).dtype);
  set_type(n, "Tidx", DType::Int32);
  set_type(n, "output_type", e.attr_dtype("output_type"));
  e.out = {n->name() + ":output:0"};
}

void cumsum(NodeExport& e) {
  const std::string axis = e.w.scalar(double(e.attr_int("axis")), DType::Int32, e.node.name + "/axis");
  pb::NodeDef* n = e.add("Cumsum", {e.in[0], axis}, e.in_type(0).dtype);
  set_type(n, "Tidx", DType::Int32);
  set_bool(n, "exclusive", e.attr_bool("exclusive"));
  set_bool(n, "reverse", e.attr_bool("reverse"));
  e.out = {n->name() + ":out:0"};
}

void top_k(NodeExport& e) {
  const std::string k = e.w.scalar(double(e.attr_int("k")), DType::Int32, e.node.name + "/k");
  pb::NodeDef* n = e.add("TopKV2", {e.in[0], k}, e.in_type(0).dtype);
  set_bool(n, "sorted", e.attr_bool("sorted"));
  std::string idx = n->name() + ":indices:0";
  if (e.out_type(1).dtype != DType::Int32) {
    pb::NodeDef* c = e.add("Cast", {idx}, std::nullopt);
    set_type(c, "SrcT", DType::Int32);
    set_type(c, "DstT", e.out_type(1).dtype);
    idx = c->name() + ":y:0";
  }
  e.out = {n->name() + ":values:0", idx};
}

void const_op(NodeExport& e) {
  e.out = {e.w.constant(std::get<Tensor>(*e.node.attrs.find("value")), e.node.name)};
}

}  // namespace

void add_math_ops(std::map<OpId, ExportFn>& t) {
  for (const auto& [op, m] : simple_ops()) t[op] = elementwise;
  t[OpId::Div] = elementwise;
  t[OpId::Where] = elementwise;
  t[OpId::FusedElementwise] = fused_elementwise;
  t[OpId::Identity] = identity;
  t[OpId::StopGradient] = identity;
  t[OpId::Cast] = cast;
  for (OpId op : {OpId::ReduceSum, OpId::ReduceMax, OpId::ReduceMin, OpId::ReduceProd}) t[op] = reduce;
  t[OpId::ArgMax] = arg_reduce;
  t[OpId::ArgMin] = arg_reduce;
  t[OpId::Cumsum] = cumsum;
  t[OpId::TopK] = top_k;
  t[OpId::Const] = const_op;
}

}  // namespace deepflow::tf::detail
