// SPDX-License-Identifier: Apache-2.0
// The export table: one function per deepflow primitive that turns a node into ONNX nodes
// of the default domain, valid at opsets 13 to 17 (ops whose signature changed in that
// range branch on cx.opset()).
#include <cmath>
#include <limits>
#include <numbers>

#include "deepflow/core/error.h"
#include "deepflow/ops/fused_program.h"
#include "deepflow/onnx/export_internal.h"
#include "deepflow/onnx/op_importer.h"
#include "deepflow/ops/ops.h"

namespace deepflow::onnx::detail {
namespace {

using ::onnx::NodeProto;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// The ONNX op of each deepflow elementwise primitive that maps one to one.
const std::map<OpId, const char*>& simple_elementwise() {
  static const std::map<OpId, const char*> m = {
      {OpId::Neg, "Neg"},       {OpId::Abs, "Abs"},         {OpId::Sign, "Sign"},
      {OpId::Exp, "Exp"},       {OpId::Log, "Log"},         {OpId::Sqrt, "Sqrt"},
      {OpId::Sin, "Sin"},       {OpId::Cos, "Cos"},         {OpId::Tanh, "Tanh"},
      {OpId::Sigmoid, "Sigmoid"}, {OpId::Relu, "Relu"},     {OpId::Erf, "Erf"},
      {OpId::Floor, "Floor"},   {OpId::Ceil, "Ceil"},       {OpId::Round, "Round"},
      {OpId::LogicalNot, "Not"}, {OpId::Add, "Add"},        {OpId::Sub, "Sub"},
      {OpId::Mul, "Mul"},       {OpId::Div, "Div"},         {OpId::Pow, "Pow"},
      {OpId::Maximum, "Max"},   {OpId::Minimum, "Min"},     {OpId::Equal, "Equal"},
      {OpId::Less, "Less"},     {OpId::LessEqual, "LessOrEqual"}, {OpId::Greater, "Greater"},
      {OpId::GreaterEqual, "GreaterOrEqual"}, {OpId::LogicalAnd, "And"}, {OpId::LogicalOr, "Or"},
      {OpId::Where, "Where"},
  };
  return m;
}

// Emits one elementwise primitive on ONNX values `args` of float/numeric dtype `t`;
// writes `out` when given, else a fresh name. Shared by the table and fused_elementwise.
std::string emit_elementwise(ExportContext& cx, OpId op, const std::vector<std::string>& args, DType t,
                             std::string out) {
  if (out.empty()) out = cx.fresh(std::string(op_def(op).name));
  auto& simple = simple_elementwise();
  if (auto it = simple.find(op); it != simple.end()) {
    cx.add(it->second, args, {out});
    return out;
  }
  const std::string base = op_def(op).name;
  switch (op) {
    case OpId::Log1p:
      cx.add("Log", {cx.add1("Add", {args[0], cx.scalar(1, t)}, base)}, {out});
      break;
    case OpId::Expm1:
      cx.add("Sub", {cx.add1("Exp", {args[0]}, base), cx.scalar(1, t)}, {out});
      break;
    case OpId::Rsqrt:
      cx.add("Reciprocal", {cx.add1("Sqrt", {args[0]}, base)}, {out});
      break;
    case OpId::Square:
      cx.add("Mul", {args[0], args[0]}, {out});
      break;
    case OpId::NotEqual:
      cx.add("Not", {cx.add1("Equal", args, base)}, {out});
      break;
    case OpId::ReluGrad:  // (gradients, features): gradients where features > 0
      cx.add("Where", {cx.add1("Greater", {args[1], cx.scalar(0, t)}, base), args[0], cx.scalar(0, t)}, {out});
      break;
    default:
      fail("[onnx::export] ", base, " is not an elementwise op with an ONNX mapping");
  }
  return out;
}

void elementwise(NodeExport& e) {
  emit_elementwise(e.cx, e.node.op, e.in, e.in_type(e.node.op == OpId::Where ? 1 : 0).dtype, e.out_name(0));
}

// A program of postfix tokens over the inputs, replayed node by node.
void fused_elementwise(NodeExport& e) {
  const fused::Program p = fused::parse(e.attr_string("program"), int(e.in.size()));
  const DType t = e.out_type(0).dtype;
  std::vector<std::string> stack;
  for (size_t i = 0; i < p.code.size(); ++i) {
    const fused::Instr& ins = p.code[i];
    if (ins.kind == fused::Instr::Input) {
      stack.push_back(e.in.at(size_t(ins.index)));
    } else if (ins.kind == fused::Instr::Immediate) {
      stack.push_back(e.cx.scalar(ins.value, t));
    } else {
      std::vector<std::string> args(stack.end() - ins.arity, stack.end());
      stack.resize(stack.size() - size_t(ins.arity));
      const bool last = i + 1 == p.code.size();
      stack.push_back(emit_elementwise(e.cx, ins.op, args, t, last ? e.out_name(0) : ""));
    }
  }
  // A program that is a lone input or immediate still needs the output value.
  if (stack.back() != e.out[0]) e.cx.add("Identity", {stack.back()}, {e.out_name(0)});
}

void identity(NodeExport& e) { e.cx.add("Identity", {e.in[0]}, {e.out_name(0)}); }

void cast(NodeExport& e) {
  set_attr(e.cx.add("Cast", {e.in[0]}, {e.out_name(0)}), "to", int64_t(dtype_to_onnx(e.attr_dtype("dtype"))));
}

std::string cast_to(ExportContext& cx, const std::string& x, DType from, DType to) {
  if (from == to) return x;
  NodeProto* n = nullptr;
  std::string out = cx.add1("Cast", {x}, x + "_cast", &n);
  set_attr(n, "to", int64_t(dtype_to_onnx(to)));
  return out;
}

// Constants (weights) are transposed at export time, outside any trace.
Tensor transposed(const Tensor& t, const std::vector<int64_t>& perm) {
  BuildScopeGuard eager(nullptr);
  return transpose(t, perm);
}

// --- reductions ---

void reduce(NodeExport& e) {
  static const std::map<OpId, const char*> names = {{OpId::ReduceSum, "ReduceSum"},
                                                    {OpId::ReduceMax, "ReduceMax"},
                                                    {OpId::ReduceMin, "ReduceMin"},
                                                    {OpId::ReduceProd, "ReduceProd"}};
  const auto& axes = e.attr_ints("axes");
  std::vector<std::string> ins{e.in[0]};
  // ReduceSum takes its axes as an input from opset 13; the others until opset 18.
  const bool axes_input = e.node.op == OpId::ReduceSum;
  if (axes_input && !axes.empty()) ins.push_back(e.cx.ints(axes, "axes"));
  NodeProto* n = e.cx.add(names.at(e.node.op), ins, {e.out_name(0)});
  set_attr(n, "keepdims", int64_t(e.attr_bool("keepdims")));
  if (!axes_input && !axes.empty()) set_attr(n, "axes", axes);
}

void arg_reduce(NodeExport& e) {
  const DType want = e.attr_dtype("output_type");
  std::string idx = want == DType::Int64 ? e.out_name(0) : e.cx.fresh(e.node.name + "_i64");
  NodeProto* n = e.cx.add(e.node.op == OpId::ArgMax ? "ArgMax" : "ArgMin", {e.in[0]}, {idx});
  set_attr(n, "axis", e.attr_int("axis"));
  set_attr(n, "keepdims", int64_t(0));
  if (want != DType::Int64) set_attr(e.cx.add("Cast", {idx}, {e.out_name(0)}), "to", int64_t(dtype_to_onnx(want)));
}

void cumsum(NodeExport& e) {
  NodeProto* n = e.cx.add("CumSum", {e.in[0], e.cx.initializer(scalar(double(e.attr_int("axis")), DType::Int64), "axis")},
                          {e.out_name(0)});
  set_attr(n, "exclusive", int64_t(e.attr_bool("exclusive")));
  set_attr(n, "reverse", int64_t(e.attr_bool("reverse")));
}

void top_k(NodeExport& e) {
  std::string idx = e.cx.fresh(e.node.name + "_i64");
  NodeProto* n = e.cx.add("TopK", {e.in[0], e.cx.ints({e.attr_int("k")}, "k")}, {e.out_name(0), idx});
  set_attr(n, "axis", int64_t(-1));
  set_attr(n, "largest", int64_t(1));
  set_attr(n, "sorted", int64_t(e.attr_bool("sorted")));
  if (!e.out[1].empty()) set_attr(e.cx.add("Cast", {idx}, {e.out[1]}), "to", int64_t(dtype_to_onnx(e.out_type(1).dtype)));
}

// --- matrix products ---

// x with its last two dims swapped: a transposed initializer for constants, else a Transpose.
std::string swap_last_two(NodeExport& e, int i) {
  const int r = e.in_type(i).shape.rank();
  std::vector<int64_t> perm;
  for (int k = 0; k < r; ++k) perm.push_back(k);
  std::swap(perm[size_t(r - 2)], perm[size_t(r - 1)]);
  if (auto c = e.in_constant(i)) return e.cx.initializer(transposed(*c, perm), e.in[size_t(i)] + "_t");
  NodeProto* n = nullptr;
  std::string out = e.cx.add1("Transpose", {e.in[size_t(i)]}, e.in[size_t(i)] + "_t", &n);
  set_attr(n, "perm", perm);
  return out;
}

void matmul(NodeExport& e) {
  std::string a = e.attr_bool("transpose_a") ? swap_last_two(e, 0) : e.in[0];
  std::string b = e.attr_bool("transpose_b") ? swap_last_two(e, 1) : e.in[1];
  e.cx.add("MatMul", {a, b}, {e.out_name(0)});
}

void activation(ExportContext& cx, const std::string& act, const std::string& z, DType t, const std::string& out) {
  if (act.empty()) {
    cx.add("Identity", {z}, {out});
  } else if (act == "relu") {
    cx.add("Relu", {z}, {out});
  } else if (act == "tanh") {
    cx.add("Tanh", {z}, {out});
  } else if (act == "sigmoid") {
    cx.add("Sigmoid", {z}, {out});
  } else if (act == "gelu") {  // z * 0.5 * (1 + erf(z / sqrt 2)): Gelu is opset 20
    std::string erf = cx.add1("Erf", {cx.add1("Mul", {z, cx.scalar(1.0 / std::numbers::sqrt2, t)}, "gelu")}, "gelu");
    std::string half = cx.add1("Mul", {cx.add1("Add", {erf, cx.scalar(1, t)}, "gelu"), cx.scalar(0.5, t)}, "gelu");
    cx.add("Mul", {z, half}, {out});
  } else {
    fail("[onnx::export] unknown activation \"", act, "\"");
  }
}

// act(op(a) op(b) + bias): Gemm for matrices, else MatMul and Add.
void fused_matmul(NodeExport& e) {
  const std::string act = e.attr_string("activation");
  const bool has_bias = e.attr_bool("has_bias");
  const DType t = e.out_type(0).dtype;
  const std::string z = act.empty() ? e.out_name(0) : e.cx.fresh(e.node.name + "_z");
  if (e.in_type(0).shape.rank() == 2 && e.in_type(1).shape.rank() == 2) {
    std::vector<std::string> ins{e.in[0], e.in[1]};
    if (has_bias) ins.push_back(e.in[2]);
    NodeProto* n = e.cx.add("Gemm", ins, {z});
    if (e.attr_bool("transpose_a")) set_attr(n, "transA", int64_t(1));
    if (e.attr_bool("transpose_b")) set_attr(n, "transB", int64_t(1));
  } else {
    std::string a = e.attr_bool("transpose_a") ? swap_last_two(e, 0) : e.in[0];
    std::string b = e.attr_bool("transpose_b") ? swap_last_two(e, 1) : e.in[1];
    if (has_bias) e.cx.add("Add", {e.cx.add1("MatMul", {a, b}, e.node.name + "_mm"), e.in[2]}, {z});
    else e.cx.add("MatMul", {a, b}, {z});
  }
  if (!act.empty()) activation(e.cx, act, z, t, e.out_name(0));
}

// --- shape and layout ---

void reshape(NodeExport& e) {
  const auto& shape = e.attr_ints("shape");
  NodeProto* n = e.cx.add("Reshape", {e.in[0], e.cx.ints(shape, "shape")}, {e.out_name(0)});
  // ONNX reads 0 as "copy this dim" unless allowzero (opset 14).
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    DF_CHECK(e.cx.opset() >= 14, e.describe(), ": a reshape to a shape with 0 dims (", attr_to_string(shape),
             ") needs opset 14 or later (allowzero)");
    set_attr(n, "allowzero", int64_t(1));
  }
}

void transpose_op(NodeExport& e) {
  std::vector<int64_t> perm = e.attr_ints("perm");
  if (perm.empty())
    for (int k = e.in_type(0).shape.rank() - 1; k >= 0; --k) perm.push_back(k);
  set_attr(e.cx.add("Transpose", {e.in[0]}, {e.out_name(0)}), "perm", perm);
}

void concat_op(NodeExport& e) { set_attr(e.cx.add("Concat", e.in, {e.out_name(0)}), "axis", e.attr_int("axis")); }

void slice_op(NodeExport& e) {
  const auto& begin = e.attr_ints("begin");
  const auto& size = e.attr_ints("size");
  std::vector<int64_t> ends, axes;
  for (size_t k = 0; k < begin.size(); ++k) {
    ends.push_back(size[k] < 0 ? kInt64Max : begin[k] + size[k]);
    axes.push_back(int64_t(k));
  }
  e.cx.add("Slice", {e.in[0], e.cx.ints(begin, "starts"), e.cx.ints(ends, "ends"), e.cx.ints(axes, "axes")},
           {e.out_name(0)});
}

// tf.strided_slice: masks expanded against the input's rank into one Slice, then Squeeze
// (shrink_axis_mask) and Unsqueeze (new_axis_mask).
void strided_slice(NodeExport& e) {
  const auto& begin = e.attr_ints("begin");
  const auto& end = e.attr_ints("end");
  std::vector<int64_t> strides = e.attr_ints("strides");
  if (strides.empty()) strides.assign(begin.size(), 1);
  const int64_t bm = e.attr_int("begin_mask"), em = e.attr_int("end_mask"), elm = e.attr_int("ellipsis_mask"),
                nm = e.attr_int("new_axis_mask"), sm = e.attr_int("shrink_axis_mask");
  const int rank = e.in_type(0).shape.rank();
  const int n = int(begin.size());
  int spec_dims = 0;
  for (int i = 0; i < n; ++i)
    if (!((nm >> i) & 1) && !((elm >> i) & 1)) ++spec_dims;
  std::vector<int64_t> starts, ends, axes, steps, squeeze, unsqueeze;
  int dim = 0, out_dim = 0;  // input dim, output dim (after squeeze and unsqueeze)
  for (int i = 0; i < n; ++i) {
    if ((elm >> i) & 1) {
      const int skip = rank - spec_dims;
      dim += skip, out_dim += skip;
      continue;
    }
    if ((nm >> i) & 1) {
      unsqueeze.push_back(out_dim++);
      continue;
    }
    const int64_t s = strides[size_t(i)];
    int64_t b = begin[size_t(i)], en = end[size_t(i)];
    if ((sm >> i) & 1) {
      en = b == -1 ? kInt64Max : b + 1;
      squeeze.push_back(dim);
    } else {
      if ((bm >> i) & 1) b = s > 0 ? 0 : kInt64Max;
      if ((em >> i) & 1) en = s > 0 ? kInt64Max : kInt64Min;
      ++out_dim;
    }
    starts.push_back(b), ends.push_back(en), axes.push_back(dim), steps.push_back((sm >> i) & 1 ? 1 : s);
    ++dim;
  }
  std::string x = e.in[0];
  const bool more = !squeeze.empty() || !unsqueeze.empty();
  if (!axes.empty()) {
    std::string out = more ? e.cx.fresh(e.node.name + "_slice") : e.out_name(0);
    e.cx.add("Slice", {x, e.cx.ints(starts, "starts"), e.cx.ints(ends, "ends"), e.cx.ints(axes, "axes"),
                       e.cx.ints(steps, "steps")},
             {out});
    x = out;
  }
  if (!squeeze.empty()) {
    std::string out = unsqueeze.empty() ? e.out_name(0) : e.cx.fresh(e.node.name + "_squeeze");
    e.cx.add("Squeeze", {x, e.cx.ints(squeeze, "axes")}, {out});
    x = out;
  }
  if (!unsqueeze.empty()) {
    e.cx.add("Unsqueeze", {x, e.cx.ints(unsqueeze, "axes")}, {e.out_name(0)});
    x = e.out[0];
  }
  if (x != e.out_name(0)) e.cx.add("Identity", {x}, {e.out[0]});
}

void pad_op(NodeExport& e) {
  const auto& p = e.attr_ints("paddings");
  std::vector<int64_t> pads(p.size());
  const size_t r = p.size() / 2;
  for (size_t d = 0; d < r; ++d) pads[d] = p[2 * d], pads[r + d] = p[2 * d + 1];
  const DType t = e.in_type(0).dtype;
  e.cx.add("Pad", {e.in[0], e.cx.ints(pads, "pads"), e.cx.scalar(e.attr_float("constant_value"), t, "pad_value")},
           {e.out_name(0)});
}

void tile_op(NodeExport& e) {
  e.cx.add("Tile", {e.in[0], e.cx.ints(e.attr_ints("multiples"), "repeats")}, {e.out_name(0)});
}

void broadcast_to(NodeExport& e) {
  e.cx.add("Expand", {e.in[0], e.cx.ints(e.attr_ints("shape"), "shape")}, {e.out_name(0)});
}

void reverse_op(NodeExport& e) {
  const auto& axes = e.attr_ints("axes");
  std::vector<int64_t> starts(axes.size(), -1), ends(axes.size(), kInt64Min), steps(axes.size(), -1);
  e.cx.add("Slice", {e.in[0], e.cx.ints(starts, "starts"), e.cx.ints(ends, "ends"), e.cx.ints(axes, "axes"),
                     e.cx.ints(steps, "steps")},
           {e.out_name(0)});
}

// --- indexing ---

void gather(NodeExport& e) {
  DF_CHECK(e.attr_int("batch_dims") == 0, e.describe(), ": batch_dims ", e.attr_int("batch_dims"),
           " has no ONNX Gather equivalent (only 0)");
  set_attr(e.cx.add("Gather", {e.in[0], e.in[1]}, {e.out_name(0)}), "axis", e.attr_int("axis"));
}

void gather_nd(NodeExport& e) {
  e.cx.add("GatherND", {e.in[0], cast_to(e.cx, e.in[1], e.in_type(1).dtype, DType::Int64)}, {e.out_name(0)});
}

std::string zeros_of_shape(ExportContext& cx, const std::string& shape, DType t) {
  NodeProto* n = nullptr;
  std::string out = cx.add1("ConstantOfShape", {shape}, "zeros", &n);
  set_attr(n, "value", tensor_to_proto(zeros(Shape{1}, t), "value"));
  return out;
}

// tf.scatter_nd adds duplicate indices: ScatterND with reduction "add" (opset 16) into zeros.
void scatter_nd(NodeExport& e) {
  DF_CHECK(e.cx.opset() >= 16, e.describe(), ": scatter_nd sums duplicate indices, which needs ScatterND's "
                                             "reduction=\"add\" (opset 16 or later; exporting at opset ",
           e.cx.opset(), ")");
  const DType t = e.in_type(1).dtype;
  std::string zero = zeros_of_shape(e.cx, e.cx.ints(e.attr_ints("shape"), "shape"), t);
  NodeProto* n = e.cx.add("ScatterND", {zero, cast_to(e.cx, e.in[0], e.in_type(0).dtype, DType::Int64), e.in[1]},
                          {e.out_name(0)});
  set_attr(n, "reduction", std::string("add"));
}

void unsorted_segment_sum(NodeExport& e) {
  DF_CHECK(e.cx.opset() >= 16, e.describe(), ": needs ScatterND's reduction=\"add\" (opset 16 or later)");
  const Shape& data = e.in_type(0).shape;
  const int ids_rank = e.in_type(1).shape.rank();
  std::vector<int64_t> shape{e.attr_int("num_segments")};
  for (int k = ids_rank; k < data.rank(); ++k) {
    DF_CHECK(data[k] >= 0, e.describe(), ": the data's trailing dims must be known, got ", data);
    shape.push_back(data[k]);
  }
  std::string zero = zeros_of_shape(e.cx, e.cx.ints(shape, "shape"), e.in_type(0).dtype);
  std::string ids = cast_to(e.cx, e.in[1], e.in_type(1).dtype, DType::Int64);
  std::string idx = e.cx.add1("Unsqueeze", {ids, e.cx.ints({-1}, "axes")}, e.node.name + "_idx");
  set_attr(e.cx.add("ScatterND", {zero, idx, e.in[0]}, {e.out_name(0)}), "reduction", std::string("add"));
}

// --- convolution and pooling: NHWC <-> NCHW around the ONNX op ---

std::string to_nchw(ExportContext& cx, const std::string& x) {
  NodeProto* n = nullptr;
  std::string out = cx.add1("Transpose", {x}, x + "_nchw", &n);
  set_attr(n, "perm", std::vector<int64_t>{0, 3, 1, 2});
  return out;
}
void to_nhwc(ExportContext& cx, const std::string& x, const std::string& out) {
  set_attr(cx.add("Transpose", {x}, {out}), "perm", std::vector<int64_t>{0, 2, 3, 1});
}

// HWIO filters as OIHW: transposed at export time when constant.
std::string oihw(NodeExport& e, int i) {
  const std::vector<int64_t> perm{3, 2, 0, 1};
  if (auto c = e.in_constant(i)) return e.cx.initializer(transposed(*c, perm), e.in[size_t(i)] + "_oihw");
  NodeProto* n = nullptr;
  std::string out = e.cx.add1("Transpose", {e.in[size_t(i)]}, e.in[size_t(i)] + "_oihw", &n);
  set_attr(n, "perm", perm);
  return out;
}

// TensorFlow's SAME (extra padding at the end) as explicit pads when the spatial dims are
// known, else as auto_pad SAME_UPPER; VALID as no padding.
void set_padding(NodeProto* n, const std::string& padding, const Shape& x, const std::vector<int64_t>& k,
                 const std::vector<int64_t>& s, const std::vector<int64_t>& d) {
  if (padding == "VALID") return;
  if (x[1] < 0 || x[2] < 0) {
    set_attr(n, "auto_pad", std::string("SAME_UPPER"));
    return;
  }
  std::vector<int64_t> pads(4);
  for (int i = 0; i < 2; ++i) {
    const int64_t in = x[i + 1], out = (in + s[size_t(i)] - 1) / s[size_t(i)];
    const int64_t total = std::max<int64_t>((out - 1) * s[size_t(i)] + (k[size_t(i)] - 1) * d[size_t(i)] + 1 - in, 0);
    pads[size_t(i)] = total / 2, pads[size_t(i) + 2] = total - total / 2;
  }
  set_attr(n, "pads", pads);
}

// The NCHW Conv of a conv2d or fused_conv2d node (inputs 0 and 1 of e, plus the bias when
// has_bias): its output name, before the transpose back to NHWC.
std::string conv_nchw(NodeExport& e, bool has_bias) {
  const Shape& x = e.in_type(0).shape;
  const Shape& w = e.in_type(1).shape;
  DF_CHECK(x[3] >= 0 && w[2] > 0 && w[0] >= 0 && w[1] >= 0, e.describe(),
           ": needs the input channels and the filter shape known, got input ", x, ", filters ", w);
  const auto& s = e.attr_ints("strides");
  const auto& d = e.attr_ints("dilations");
  const std::vector<int64_t> k{w[0], w[1]};
  std::vector<std::string> ins{to_nchw(e.cx, e.in[0]), oihw(e, 1)};
  if (has_bias) ins.push_back(e.in[2]);
  std::string y = e.cx.fresh(e.node.name + "_nchw");
  NodeProto* n = e.cx.add("Conv", ins, {y});
  set_attr(n, "kernel_shape", k);
  set_attr(n, "strides", s);
  set_attr(n, "dilations", d);
  set_attr(n, "group", x[3] / w[2]);
  if (e.attr_string("padding") == "EXPLICIT") {
    const auto& p = e.attr_ints("explicit_paddings");  // {top, bottom, left, right}
    set_attr(n, "pads", std::vector<int64_t>{p[0], p[2], p[1], p[3]});
  } else {
    set_padding(n, e.attr_string("padding"), x, k, s, d);
  }
  return y;
}

void conv2d(NodeExport& e) { to_nhwc(e.cx, conv_nchw(e, false), e.out_name(0)); }

// act(conv2d(x, w) + bias + summand): one Conv (the bias as its B input, EXPLICIT padding as
// pads), an Add of the summand (transposed to NCHW) and the activation on the NCHW result,
// before the transpose back.
void fused_conv2d(NodeExport& e) {
  const DType t = e.out_type(0).dtype;
  std::string y = conv_nchw(e, e.attr_bool("has_bias"));
  if (e.attr_bool("has_summand")) {
    std::string z = y;
    y = e.cx.fresh(e.node.name + "_sum");
    e.cx.add("Add", {z, to_nchw(e.cx, e.in.back())}, {y});
  }
  const std::string act = e.attr_string("activation");
  if (!act.empty()) {
    std::string z = y;
    y = e.cx.fresh(e.node.name + "_act");
    if (act == "relu6" || act == "clip") {
      const bool clip = act == "clip";
      e.cx.add("Clip", {z, e.cx.scalar(clip ? e.attr_float("clip_min") : 0.0, t),
                        e.cx.scalar(clip ? e.attr_float("clip_max") : 6.0, t)}, {y});
    } else if (act == "elu") {
      set_attr(e.cx.add("Elu", {z}, {y}), "alpha", 1.f);
    } else if (act == "leaky_relu") {
      set_attr(e.cx.add("LeakyRelu", {z}, {y}), "alpha", float(e.attr_float("alpha")));
    } else {
      activation(e.cx, act, z, t, y);  // relu, sigmoid, tanh
    }
  }
  to_nhwc(e.cx, y, e.out_name(0));
}

// conv2d_backprop_input(filters, dy) with input_sizes: ConvTranspose with explicit pads and
// output_padding so that its output is exactly input_sizes.
void conv2d_backprop_input(NodeExport& e) {
  const Shape& w = e.in_type(0).shape;
  const Shape& dy = e.in_type(1).shape;
  const auto& sizes = e.attr_ints("input_sizes");
  const auto& s = e.attr_ints("strides");
  const auto& d = e.attr_ints("dilations");
  DF_CHECK(w.is_fully_defined() && dy[1] >= 0 && dy[2] >= 0 && sizes[1] >= 0 && sizes[2] >= 0, e.describe(),
           ": needs known filters ", w, ", gradient spatial dims ", dy, " and input_sizes");
  DF_CHECK(w[2] == sizes[3], e.describe(), ": grouped transposed convolutions are not exported (filters ", w,
           ", input_sizes ", attr_to_string(sizes), ")");
  const bool same = e.attr_string("padding") == "SAME";
  std::vector<int64_t> pads(4), out_pad(2);
  for (size_t i = 0; i < 2; ++i) {
    const int64_t in = sizes[i + 1], k_eff = (w[int(i)] - 1) * d[i] + 1;
    const int64_t total = same ? std::max<int64_t>((dy[int(i) + 1] - 1) * s[i] + k_eff - in, 0) : 0;
    pads[i] = total / 2, pads[i + 2] = total - total / 2;
    out_pad[i] = in - ((dy[int(i) + 1] - 1) * s[i] + k_eff - total);
    DF_CHECK(out_pad[i] >= 0 && out_pad[i] < std::max(s[i], d[i]), e.describe(), ": input_sizes ",
             attr_to_string(sizes), " do not fit the gradient ", dy, " and filters ", w);
  }
  std::string y = e.cx.fresh(e.node.name + "_nchw");
  NodeProto* n = e.cx.add("ConvTranspose", {to_nchw(e.cx, e.in[1]), oihw(e, 0)}, {y});
  set_attr(n, "kernel_shape", std::vector<int64_t>{w[0], w[1]});
  set_attr(n, "strides", s);
  set_attr(n, "dilations", d);
  set_attr(n, "pads", pads);
  if (out_pad[0] || out_pad[1]) set_attr(n, "output_padding", out_pad);
  to_nhwc(e.cx, y, e.out_name(0));
}

void pool(NodeExport& e) {
  const auto& k = e.attr_ints("ksize");
  const auto& s = e.attr_ints("strides");
  std::string y = e.cx.fresh(e.node.name + "_nchw");
  const bool max = e.node.op == OpId::MaxPool;
  NodeProto* n = e.cx.add(max ? "MaxPool" : "AveragePool", {to_nchw(e.cx, e.in[0])}, {y});
  set_attr(n, "kernel_shape", k);
  set_attr(n, "strides", s);
  // TensorFlow's SAME average divides by the window's valid elements: count_include_pad 0.
  // max_pool's EXPLICIT padding is MaxPool's pads (padded cells never win in either).
  if (max && e.attr_string("padding") == "EXPLICIT") {
    const auto& p = e.attr_ints("explicit_paddings");  // {top, bottom, left, right}
    set_attr(n, "pads", std::vector<int64_t>{p[0], p[2], p[1], p[3]});
  } else {
    set_padding(n, e.attr_string("padding"), e.in_type(0).shape, k, s, {1, 1});
  }
  to_nhwc(e.cx, y, e.out_name(0));
}

// --- normalization ---

// Inference batch norm over the last (channel) axis: (x - mean) * scale / sqrt(var + eps) + offset,
// folded into x * a + b when the statistics are constants.
void fused_batch_norm(NodeExport& e) {
  DF_CHECK(!e.attr_bool("is_training"), e.describe(),
           ": training-mode batch norm (batch statistics) is not exported; export the model for inference");
  const DType t = e.in_type(0).dtype;
  const double eps = e.attr_float("epsilon");
  auto scale = e.in_constant(1), offset = e.in_constant(2), mean = e.in_constant(3), var = e.in_constant(4);
  std::string a, b;
  if (scale && offset && mean && var) {
    BuildScopeGuard eager(nullptr);
    Tensor ta = *scale * rsqrt(*var + eps);
    Tensor tb = *offset - *mean * ta;
    a = e.cx.initializer(cast(ta, t), e.node.name + "_scale");
    b = e.cx.initializer(cast(tb, t), e.node.name + "_offset");
  } else {
    const DType u = e.in_type(1).dtype;
    std::string inv = e.cx.add1("Reciprocal", {e.cx.add1("Sqrt", {e.cx.add1("Add", {e.in[4], e.cx.scalar(eps, u)}, "bn")}, "bn")}, "bn");
    a = e.cx.add1("Mul", {e.in[1], inv}, "bn_scale");
    b = e.cx.add1("Sub", {e.in[2], e.cx.add1("Mul", {e.in[3], a}, "bn")}, "bn_offset");
    a = cast_to(e.cx, a, u, t), b = cast_to(e.cx, b, u, t);
  }
  e.cx.add("Add", {e.cx.add1("Mul", {e.in[0], a}, e.node.name + "_mul"), b}, {e.out_name(0)});
  // The statistics outputs are copies of the inputs in inference mode.
  if (!e.out[1].empty()) e.cx.add("Identity", {e.in[3]}, {e.out[1]});
  if (!e.out[2].empty()) e.cx.add("Identity", {e.in[4]}, {e.out[2]});
  if (!e.out[3].empty()) e.cx.add("Identity", {e.in[4]}, {e.out[3]});
}

// Over the last axis; outputs y, mean and 1/std (rows, without the last axis).
void layer_norm(NodeExport& e) {
  const DType t = e.in_type(0).dtype;
  const double eps = e.attr_float("epsilon");
  ExportContext& cx = e.cx;
  if (cx.opset() >= 17 && e.out[1].empty() && e.out[2].empty()) {
    NodeProto* n = cx.add("LayerNormalization", {e.in[0], e.in[1], e.in[2]}, {e.out_name(0)});
    set_attr(n, "axis", int64_t(-1));
    set_attr(n, "epsilon", float(eps));
    return;
  }
  std::string axes = cx.ints({-1}, "axes");
  NodeProto* n = nullptr;
  std::string mean = cx.add1("ReduceMean", {e.in[0]}, "ln_mean", &n);
  set_attr(n, "axes", std::vector<int64_t>{-1});
  std::string xc = cx.add1("Sub", {e.in[0], mean}, "ln_centered");
  std::string var = cx.add1("ReduceMean", {cx.add1("Mul", {xc, xc}, "ln_sq")}, "ln_var", &n);
  set_attr(n, "axes", std::vector<int64_t>{-1});
  std::string inv = cx.add1("Reciprocal", {cx.add1("Sqrt", {cx.add1("Add", {var, cx.scalar(eps, t)}, "ln")}, "ln")}, "ln_inv");
  std::string y = cx.add1("Mul", {cx.add1("Mul", {xc, inv}, "ln"), e.in[1]}, "ln");
  cx.add("Add", {y, e.in[2]}, {e.out_name(0)});
  if (!e.out[1].empty()) cx.add("Squeeze", {mean, axes}, {e.out[1]});
  if (!e.out[2].empty()) cx.add("Squeeze", {inv, axes}, {e.out[2]});
}

// --- run-time shapes and fills ---

void fill_like(NodeExport& e) {
  const DType t = e.out_type(0).dtype;
  std::string shape = e.cx.add1("Shape", {e.in[0]}, e.node.name + "_shape");
  NodeProto* n = e.cx.add("ConstantOfShape", {shape}, {e.out_name(0)});
  set_attr(n, "value", tensor_to_proto(fill(Shape{1}, e.node.op == OpId::OnesLike ? 1 : 0, t), "value"));
}

void broadcast_like(NodeExport& e) {
  e.cx.add("Expand", {e.in[0], e.cx.add1("Shape", {e.in[1]}, e.node.name + "_shape")}, {e.out_name(0)});
}

void reshape_like(NodeExport& e) {
  e.cx.add("Reshape", {e.in[0], e.cx.add1("Shape", {e.in[1]}, e.node.name + "_shape")}, {e.out_name(0)});
}

void size_op(NodeExport& e) {
  const DType t = e.attr_dtype("out_type");
  if (t == DType::Int64) {
    e.cx.add("Size", {e.in[0]}, {e.out_name(0)});
  } else {
    std::string s = e.cx.add1("Size", {e.in[0]}, e.node.name + "_i64");
    set_attr(e.cx.add("Cast", {s}, {e.out_name(0)}), "to", int64_t(dtype_to_onnx(t)));
  }
}

// Sums x down to like's shape: the axes come from the static shapes.
void sum_to_like(NodeExport& e) {
  const Shape& x = e.in_type(0).shape;
  const Shape& like = e.in_type(1).shape;
  std::vector<int64_t> axes;
  const int lead = x.rank() - like.rank();
  for (int k = 0; k < x.rank(); ++k) {
    if (k < lead) {
      axes.push_back(k);
      continue;
    }
    const int64_t l = like[k - lead], xd = x[k];
    DF_CHECK(l >= 0 || xd == 1, e.describe(), ": cannot tell which axes to sum from ", x, " to ", like);
    if (l == 1 && xd != 1) axes.push_back(k);
  }
  std::string summed = e.in[0];
  if (!axes.empty()) {
    NodeProto* n = nullptr;
    summed = e.cx.add1("ReduceSum", {e.in[0], e.cx.ints(axes, "axes")}, e.node.name + "_sum", &n);
    set_attr(n, "keepdims", int64_t(1));
  }
  e.cx.add("Reshape", {summed, e.cx.add1("Shape", {e.in[1]}, e.node.name + "_shape")}, {e.out_name(0)});
}

void random_op(NodeExport& e) {
  DF_CHECK(e.in.empty(), e.describe(), ": random ops with run-time shapes are not exported");
  const bool uniform = e.node.op == OpId::RandomUniform;
  NodeProto* n = e.cx.add(uniform ? "RandomUniform" : "RandomNormal", {}, {e.out_name(0)});
  set_attr(n, "dtype", int64_t(dtype_to_onnx(e.attr_dtype("dtype"))));
  set_attr(n, "shape", e.attr_ints("shape"));
  if (uniform) {
    set_attr(n, "low", float(e.attr_float("minval")));
    set_attr(n, "high", float(e.attr_float("maxval")));
  } else {
    set_attr(n, "mean", float(e.attr_float("mean")));
    set_attr(n, "scale", float(e.attr_float("stddev")));
  }
  if (e.attr_int("seed") != 0) set_attr(n, "seed", float(e.attr_int("seed")));
}

}  // namespace

const std::map<OpId, ExportFn>& export_table() {
  static const std::map<OpId, ExportFn> table = [] {
    std::map<OpId, ExportFn> t;
    for (const auto& [op, name] : simple_elementwise()) t[op] = elementwise;
    for (OpId op : {OpId::Log1p, OpId::Expm1, OpId::Rsqrt, OpId::Square, OpId::NotEqual, OpId::ReluGrad})
      t[op] = elementwise;
    t[OpId::FusedElementwise] = fused_elementwise;
    t[OpId::Identity] = identity;
    t[OpId::StopGradient] = identity;
    t[OpId::Cast] = cast;
    for (OpId op : {OpId::ReduceSum, OpId::ReduceMax, OpId::ReduceMin, OpId::ReduceProd}) t[op] = reduce;
    t[OpId::ArgMax] = arg_reduce;
    t[OpId::ArgMin] = arg_reduce;
    t[OpId::Cumsum] = cumsum;
    t[OpId::TopK] = top_k;
    t[OpId::MatMul] = matmul;
    t[OpId::FusedMatMul] = fused_matmul;
    t[OpId::Reshape] = reshape;
    t[OpId::Transpose] = transpose_op;
    t[OpId::Concat] = concat_op;
    t[OpId::Slice] = slice_op;
    t[OpId::StridedSlice] = strided_slice;
    t[OpId::Pad] = pad_op;
    t[OpId::Tile] = tile_op;
    t[OpId::BroadcastTo] = broadcast_to;
    t[OpId::Reverse] = reverse_op;
    t[OpId::Gather] = gather;
    t[OpId::GatherNd] = gather_nd;
    t[OpId::ScatterNd] = scatter_nd;
    t[OpId::UnsortedSegmentSum] = unsorted_segment_sum;
    t[OpId::Conv2D] = conv2d;
    t[OpId::FusedConv2D] = fused_conv2d;
    t[OpId::Conv2DBackpropInput] = conv2d_backprop_input;
    t[OpId::MaxPool] = pool;
    t[OpId::AvgPool] = pool;
    t[OpId::FusedBatchNorm] = fused_batch_norm;
    t[OpId::LayerNorm] = layer_norm;
    t[OpId::ZerosLike] = fill_like;
    t[OpId::OnesLike] = fill_like;
    t[OpId::BroadcastLike] = broadcast_like;
    t[OpId::ReshapeLike] = reshape_like;
    t[OpId::Size] = size_op;
    t[OpId::SumToLike] = sum_to_like;
    t[OpId::RandomUniform] = random_op;
    t[OpId::RandomNormal] = random_op;
    return t;
  }();
  return table;
}

}  // namespace deepflow::onnx::detail
