// SPDX-License-Identifier: Apache-2.0
// Identity, Constant and the control-flow ops: If -> cond, Loop -> while_loop (or an
// unrolled loop), Scan -> an unrolled loop over the scan axis.
#include <algorithm>

#include "deepflow/core/error.h"
#include "deepflow/function/control_flow.h"
#include "deepflow/onnx/import_internal.h"

namespace deepflow::onnx {
namespace {

using detail::GraphNodeContext;
using detail::is_known;

// A loop run eagerly (everything known at import time) that has not ended after this many
// iterations is taken as a model error rather than left to hang the import.
constexpr int64_t kMaxEagerIterations = int64_t(1) << 20;
// A Loop with scan outputs is unrolled in the traced graph; beyond this trip count the
// graph would be too large.
constexpr int64_t kMaxUnroll = 4096;

GraphNodeContext& graph_ctx(NodeContext& ctx) {
  auto* g = dynamic_cast<GraphNodeContext*>(&ctx);
  DF_CHECK(g != nullptr, "[onnx::import] ", ctx.describe(), ": needs the graph importer's context");
  return *g;
}

Tensor to_scalar(const Tensor& t, const NodeContext& ctx, const char* what) {
  DF_CHECK(t.shape().num_elements() == 1 || t.shape().num_elements() < 0, "[onnx::import] ", ctx.describe(), ": ",
           what, " must hold one element, got shape ", t.shape());
  return t.rank() == 0 ? t : reshape(t, Shape{});
}

// A scan output of zero iterations: [0, ...elem] from the body's declared output type.
Tensor empty_scan_output(const GraphNodeContext& ctx, const char* graph, size_t k, int64_t axis) {
  const auto& vi = ctx.graph_proto(graph).output(int(k));
  DF_CHECK(vi.type().has_tensor_type() && vi.type().tensor_type().has_shape(), "[onnx::import] ", ctx.describe(),
           ": zero iterations, and the body does not declare the shape of scan output ", k);
  Shape s;
  for (const auto& d : vi.type().tensor_type().shape().dim()) {
    DF_CHECK(d.has_dim_value(), "[onnx::import] ", ctx.describe(), ": zero iterations, and scan output ", k,
             " has a dynamic dim");
    s.push_back(d.dim_value());
  }
  s.insert(normalize_axis("onnx::import", axis, s.rank() + 1), 0);
  return zeros(s, dtype_from_onnx(vi.type().tensor_type().elem_type()));
}

TensorList import_identity(NodeContext& ctx) {
  DF_CHECK(ctx.has_input(0), "[onnx::import] ", ctx.describe(), ": missing input");
  return {ctx.input(0)};
}

TensorList import_constant(NodeContext& ctx) {
  DF_CHECK(!ctx.has_attr("sparse_value"), "[onnx::import] ", ctx.describe(), ": sparse_value is not supported");
  if (ctx.has_attr("value")) return {ctx.attr_tensor("value")};
  if (ctx.has_attr("value_float")) return {scalar(ctx.attr_float("value_float", 0), DType::Float32)};
  if (ctx.has_attr("value_int")) return {scalar(double(ctx.attr_int("value_int", 0)), DType::Int64)};
  if (ctx.has_attr("value_floats")) return {constant(ctx.attr_floats("value_floats"))};
  if (ctx.has_attr("value_ints")) return {constant(ctx.attr_ints("value_ints"))};
  if (ctx.has_attr("value_string")) return {string_scalar(ctx.attr_string("value_string", ""))};
  if (const auto* a = ctx.attr("value_strings")) {
    std::vector<std::string> v(a->strings().begin(), a->strings().end());
    return {constant(v)};
  }
  fail("[onnx::import] ", ctx.describe(), ": Constant has none of value, value_float(s), value_int(s), value_string(s)");
}

TensorList import_if(NodeContext& base) {
  auto& ctx = graph_ctx(base);
  DF_CHECK(ctx.has_input(0), "[onnx::import] ", ctx.describe(), ": missing input cond");
  Tensor c = ctx.input(0);
  DF_CHECK(c.dtype() == DType::Bool, "[onnx::import] ", ctx.describe(), ": cond must be bool, got ", c.dtype());
  auto then_fn = ctx.attr_graph("then_branch");
  auto else_fn = ctx.attr_graph("else_branch");
  DF_CHECK(ctx.graph_num_inputs("then_branch") == 0 && ctx.graph_num_inputs("else_branch") == 0,
           "[onnx::import] ", ctx.describe(), ": If branches take no inputs");
  DF_CHECK(ctx.graph_num_outputs("then_branch") == ctx.graph_num_outputs("else_branch"), "[onnx::import] ",
           ctx.describe(), ": then_branch has ", ctx.graph_num_outputs("then_branch"), " outputs, else_branch ",
           ctx.graph_num_outputs("else_branch"));
  if (is_known(c)) {
    // Only the taken branch is imported: the other may use ops or shapes that do not fit.
    DF_CHECK(c.size() == 1, "[onnx::import] ", ctx.describe(), ": cond must hold one element, got shape ", c.shape());
    return c.flat(0) != 0 ? then_fn({}) : else_fn({});
  }
  return cond(to_scalar(c, ctx, "cond"), [&] { return then_fn({}); }, [&] { return else_fn({}); });
}

TensorList import_loop(NodeContext& base) {
  auto& ctx = graph_ctx(base);
  DF_CHECK(ctx.num_inputs() >= 2, "[onnx::import] ", ctx.describe(), ": Loop takes M, cond and the loop-carried values");
  const size_t n_carried = ctx.num_inputs() - 2;
  auto body = ctx.attr_graph("body");
  const size_t body_in = ctx.graph_num_inputs("body"), body_out = ctx.graph_num_outputs("body");
  DF_CHECK(body_in == 2 + n_carried, "[onnx::import] ", ctx.describe(), ": the body takes ", body_in,
           " inputs, expected 2 + ", n_carried, " loop-carried");
  DF_CHECK(body_out >= 1 + n_carried, "[onnx::import] ", ctx.describe(), ": the body returns ", body_out,
           " outputs, expected at least 1 + ", n_carried);
  const size_t n_scan = body_out - 1 - n_carried;

  Tensor m = ctx.input(0), c0 = ctx.input(1);
  if (m.defined()) {
    DF_CHECK(m.dtype() == DType::Int64, "[onnx::import] ", ctx.describe(), ": M must be int64, got ", m.dtype());
    m = to_scalar(m, ctx, "M");
  }
  if (c0.defined()) {
    DF_CHECK(c0.dtype() == DType::Bool, "[onnx::import] ", ctx.describe(), ": cond must be bool, got ", c0.dtype());
    c0 = to_scalar(c0, ctx, "cond");
  }
  TensorList v;
  for (size_t i = 0; i < n_carried; ++i) {
    DF_CHECK(ctx.has_input(2 + i), "[onnx::import] ", ctx.describe(), ": loop-carried input ", i, " is missing");
    v.push_back(ctx.input(2 + i));
  }
  std::optional<int64_t> trip;
  if (m.defined() && is_known(m)) trip = m.item<int64_t>();
  const bool eager = current_build_scope() == nullptr;

  // Eagerly (everything known) or with scan outputs and a known trip count: a C++ loop,
  // run now or unrolled into the traced graph. The scan outputs are collected per iteration.
  if (eager || (n_scan > 0 && trip)) {
    DF_CHECK(eager || *trip <= kMaxUnroll, "[onnx::import] ", ctx.describe(), ": a Loop with scan outputs is unrolled; ",
             *trip, " iterations is more than ", kMaxUnroll);
    std::vector<TensorList> scans(n_scan);
    Tensor c = c0.defined() ? c0 : scalar(1, DType::Bool);
    for (int64_t i = 0; !trip || i < *trip; ++i) {
      if (!is_known(c)) {
        fail("[onnx::import] ", ctx.describe(), ": the loop condition must be known at import time (a Loop with scan "
             "outputs is unrolled)");
      }
      if (c.flat(0) == 0) break;
      DF_CHECK(i < kMaxEagerIterations, "[onnx::import] ", ctx.describe(), ": the loop did not end after ", i,
               " iterations");
      TensorList args{scalar(double(i), DType::Int64), c};
      args.insert(args.end(), v.begin(), v.end());
      TensorList out = body(args);
      c = to_scalar(out[0], ctx, "the body's cond output");
      DF_CHECK(c.dtype() == DType::Bool, "[onnx::import] ", ctx.describe(), ": the body's cond output must be bool");
      for (size_t k = 0; k < n_carried; ++k) v[k] = out[1 + k];
      for (size_t k = 0; k < n_scan; ++k) scans[k].push_back(out[1 + n_carried + k]);
    }
    TensorList result = v;
    for (size_t k = 0; k < n_scan; ++k) {
      result.push_back(scans[k].empty() ? empty_scan_output(ctx, "body", 1 + n_carried + k, 0) : stack(scans[k], 0));
    }
    return result;
  }
  DF_CHECK(n_scan == 0, "[onnx::import] ", ctx.describe(), ": input 0 (M) of Loop must be known at import time "
           "(a Loop with scan outputs is unrolled)");

  TensorList vars{scalar(0, DType::Int64), c0.defined() ? c0 : scalar(1, DType::Bool)};
  vars.insert(vars.end(), v.begin(), v.end());
  auto cond_fn = [&](const TensorList& s) {
    return m.defined() ? logical_and(s[1], less(s[0], m)) : s[1];
  };
  auto body_fn = [&](const TensorList& s) {
    TensorList out = body(s);
    TensorList next{s[0] + 1.0, to_scalar(out[0], ctx, "the body's cond output")};
    next.insert(next.end(), out.begin() + 1, out.end());
    return next;
  };
  TensorList final_vars = while_loop(cond_fn, body_fn, vars, trip);
  return TensorList(final_vars.begin() + 2, final_vars.end());
}

TensorList import_scan(NodeContext& base) {
  auto& ctx = graph_ctx(base);
  const int64_t n_in = ctx.attr_int("num_scan_inputs", -1);
  DF_CHECK(n_in >= 1 && size_t(n_in) <= ctx.num_inputs(), "[onnx::import] ", ctx.describe(),
           ": num_scan_inputs is ", n_in, " with ", ctx.num_inputs(), " inputs");
  const size_t n_state = ctx.num_inputs() - size_t(n_in);
  auto body = ctx.attr_graph("body");
  DF_CHECK(ctx.graph_num_inputs("body") == n_state + size_t(n_in), "[onnx::import] ", ctx.describe(),
           ": the body takes ", ctx.graph_num_inputs("body"), " inputs, expected ", n_state + size_t(n_in));
  const size_t body_out = ctx.graph_num_outputs("body");
  DF_CHECK(body_out >= n_state, "[onnx::import] ", ctx.describe(), ": the body returns ", body_out,
           " outputs, fewer than the ", n_state, " states");
  const size_t n_out = body_out - n_state;
  auto in_axes = ctx.attr_ints("scan_input_axes", std::vector<int64_t>(size_t(n_in), 0));
  auto in_dirs = ctx.attr_ints("scan_input_directions", std::vector<int64_t>(size_t(n_in), 0));
  auto out_axes = ctx.attr_ints("scan_output_axes", std::vector<int64_t>(n_out, 0));
  auto out_dirs = ctx.attr_ints("scan_output_directions", std::vector<int64_t>(n_out, 0));
  DF_CHECK(in_axes.size() == size_t(n_in) && in_dirs.size() == size_t(n_in) && out_axes.size() == n_out &&
               out_dirs.size() == n_out,
           "[onnx::import] ", ctx.describe(), ": scan axes/directions attributes have the wrong length");

  TensorList states, xs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    DF_CHECK(ctx.has_input(i), "[onnx::import] ", ctx.describe(), ": input ", i, " is missing");
    (i < n_state ? states : xs).push_back(ctx.input(i));
  }
  int64_t len = -1;
  std::vector<int> axes;
  for (size_t j = 0; j < xs.size(); ++j) {
    int axis = normalize_axis("onnx::import", in_axes[j], xs[j].rank());
    axes.push_back(axis);
    int64_t d = xs[j].shape()[axis];
    DF_CHECK(d >= 0, "[onnx::import] ", ctx.describe(), ": scan input ", j, " has a dynamic length ", xs[j].shape(),
             " (the scan is unrolled, so its length must be known at import time)");
    DF_CHECK(len < 0 || d == len, "[onnx::import] ", ctx.describe(), ": scan inputs have lengths ", len, " and ", d);
    len = d;
  }
  DF_CHECK(current_build_scope() == nullptr || len <= kMaxUnroll, "[onnx::import] ", ctx.describe(),
           ": the scan is unrolled; length ", len, " is more than ", kMaxUnroll);

  std::vector<TensorList> scans(n_out);
  for (int64_t t = 0; t < len; ++t) {
    TensorList args = states;
    for (size_t j = 0; j < xs.size(); ++j) {
      Axes begin(size_t(xs[j].rank()), 0), size(size_t(xs[j].rank()), -1);
      begin[size_t(axes[j])] = in_dirs[j] ? len - 1 - t : t;
      size[size_t(axes[j])] = 1;
      args.push_back(squeeze(slice(xs[j], begin, size), {axes[j]}));
    }
    TensorList out = body(args);
    for (size_t k = 0; k < n_state; ++k) states[k] = out[k];
    for (size_t k = 0; k < n_out; ++k) scans[k].push_back(out[n_state + k]);
  }
  TensorList result = states;
  for (size_t k = 0; k < n_out; ++k) {
    if (scans[k].empty()) {
      result.push_back(empty_scan_output(ctx, "body", n_state + k, out_axes[k]));
      continue;
    }
    if (out_dirs[k]) std::reverse(scans[k].begin(), scans[k].end());
    int axis = normalize_axis("onnx::import", out_axes[k], scans[k][0].rank() + 1);
    result.push_back(stack(scans[k], axis));
  }
  return result;
}

}  // namespace

DF_ONNX_OP("Identity", 1, import_identity)
DF_ONNX_OP("Constant", 1, import_constant)
DF_ONNX_OP("If", 1, import_if)
DF_ONNX_OP("Loop", 1, import_loop)
DF_ONNX_OP("Scan", 9, import_scan)

}  // namespace deepflow::onnx
