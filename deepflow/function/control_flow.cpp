// SPDX-License-Identifier: Apache-2.0
// cond and while_loop: the public functions (eager loops, or tracing into one node),
// the Cond and While OpDefs (infer, vjp) and inline_graph. Kernels: control_flow_kernels.cpp.
#include "deepflow/function/control_flow.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "deepflow/autodiff/tape.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/executor.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

std::string type_string(DType d, const Shape& s) { return detail::cat(dtype_name(d), s); }
std::string type_string(const TensorType& t) { return type_string(t.dtype, t.shape); }

void check_pred(const char* op, const Tensor& pred) {
  DF_CHECK(pred.defined(), "[", op, "] pred is an undefined tensor");
  DF_CHECK(pred.dtype() == DType::Bool && pred.rank() == 0, "[", op, "] pred must be a bool scalar, got ",
           type_string(pred.dtype(), pred.shape()));
}

// Placeholders of sub-graphs are added directly, not through dispatch: a placeholder is
// a stateful op, and automatic control dependencies must not chain other nodes to one.
int add_placeholder(Graph& g, const TensorType& t, const std::string& name) {
  Node n;
  n.name = g.unique_name(name);
  n.op = OpId::Placeholder;
  n.attrs.set("dtype", t.dtype);
  n.attrs.set("shape", t.shape.to_vector());
  n.outputs = {t};
  return g.add_node(std::move(n));
}

// A callable traced into its own graph. Symbolic values of enclosing graphs it uses
// were captured: each got a placeholder (capture_nodes[i]) standing for captured[i].
struct Traced {
  std::shared_ptr<Graph> graph = std::make_shared<Graph>();
  std::vector<int> arg_nodes;
  TensorList captured;
  std::vector<int> capture_nodes;
};

// Variables assigned by a graph or by any sub-graph of its nodes.
void collect_assigned(const Graph& g, std::unordered_set<uint64_t>& out) {
  for (const Node& n : g.nodes()) {
    if (n.op == OpId::AssignVariable) out.insert(std::get<Variable>(*n.attrs.find("variable")).id());
    for (const auto& [name, value] : n.attrs.items())
      if (const GraphRef* sub = std::get_if<GraphRef>(&value); sub && *sub) collect_assigned(**sub, out);
  }
}

// Note [Variables in branches]: a read of a trainable variable inside a branch or body
// would hide the variable from tapes outside (the node's inputs would not show it). When
// the sub-graph never assigns the variable, its value cannot change while the node runs,
// so the read moves out: it becomes a read in the enclosing graph (carrying the
// variable's id), captured as an input, and gradients reach the variable through the
// node's vjp. Reads of variables the sub-graph assigns stay inside (no gradient).
void hoist_variable_reads(Traced& tr) {
  Graph& g = *tr.graph;
  std::unordered_set<uint64_t> assigned;
  collect_assigned(g, assigned);
  std::unordered_map<uint64_t, int> first;  // variable id -> its placeholder in g
  for (int id = 0; id < g.num_nodes(); ++id) {
    if (g.node(id).op != OpId::ReadVariable) continue;
    const Variable v = std::get<Variable>(*g.node(id).attrs.find("variable"));
    if (!v.trainable() || assigned.count(v.id())) continue;
    // Who waited for this read now waits for what the read waited for.
    const std::vector<int> before = g.node(id).control_inputs;
    for (int k = 0; k < g.num_nodes(); ++k) {
      Node& user = g.mutable_node(k);
      auto& ci = user.control_inputs;
      if (std::find(ci.begin(), ci.end(), id) == ci.end()) continue;
      ci.erase(std::remove(ci.begin(), ci.end(), id), ci.end());
      for (int b : before)
        if (std::find(ci.begin(), ci.end(), b) == ci.end()) ci.push_back(b);
    }
    g.mutable_node(id).control_inputs.clear();
    if (auto it = first.find(v.id()); it != first.end()) {
      // A second read of the same variable: its users take the first one's placeholder.
      for (int k = 0; k < g.num_nodes(); ++k)
        for (ValueRef& in : g.mutable_node(k).inputs)
          if (in.node == id) in.node = it->second;
      for (ValueRef& out : g.outputs)
        if (out.node == id) out.node = it->second;
      continue;
    }
    Node& n = g.mutable_node(id);
    n.op = OpId::Placeholder;
    n.attrs = Attrs{{"dtype", v.dtype()}, {"shape", v.shape().to_vector()}};
    first.emplace(v.id(), id);
    tr.captured.push_back(v.value());  // a read in the enclosing graph, with the variable's id
    tr.capture_nodes.push_back(id);
  }
}

Traced trace(const TypeList& arg_types, const std::function<TensorList(const TensorList&)>& fn,
             bool allow_captures = true) {
  Traced tr;
  GraphScopeOptions options;
  options.auto_control_dependencies = true;  // stateful ops in a branch or body keep program order
  if (allow_captures)
    options.capture_symbolic = [&tr](Graph& g, const Tensor& t) -> ValueRef {
      const int id = add_placeholder(g, {t.dtype(), t.shape()}, "capture");
      tr.captured.push_back(t);
      tr.capture_nodes.push_back(id);
      return {id, 0};
    };
  {
    GraphScope scope(tr.graph, options);
    TensorList args;
    for (size_t i = 0; i < arg_types.size(); ++i) {
      const int id = add_placeholder(*tr.graph, arg_types[i], "arg");
      tr.arg_nodes.push_back(id);
      args.push_back(tr.graph->symbolic({id, 0}));
    }
    TensorList outs = fn(args);
    for (size_t i = 0; i < outs.size(); ++i) {
      DF_CHECK(outs[i].defined(), "[trace] output ", i, " is an undefined tensor");
      tr.graph->outputs.push_back(scope.input_value(outs[i]));  // consts and captures as needed
    }
  }
  if (allow_captures && current_build_scope()) hoist_variable_reads(tr);
  return tr;
}

// The identity of a captured outer value: its graph, node and output.
using CaptureKey = std::tuple<const void*, int, int>;
CaptureKey capture_key(const Tensor& t) {
  // Reads of one variable (hoisted from several branches) are one input.
  if (t.impl()->flags & kTrainableVariable) return {nullptr, int(t.id() >> 32), int(t.id() & 0xffffffffu)};
  return {t.impl()->symbol.get(), t.impl()->symbol_node, t.impl()->symbol_output};
}

// The union of the captures of several traces, in first-seen order.
TensorList merge_captures(std::initializer_list<const Traced*> traces) {
  TensorList all;
  std::map<CaptureKey, size_t> seen;
  for (const Traced* t : traces)
    for (const Tensor& c : t->captured)
      if (seen.emplace(capture_key(c), all.size()).second) all.push_back(c);
  return all;
}

// Sets the function inputs: the arguments, then one placeholder per capture of the union
// (a new, unused one where this trace did not use that value), so every sub-graph of a
// node takes the node's inputs in the same order.
void finalize(Traced& tr, const TensorList& all_captures) {
  std::map<CaptureKey, int> mine;
  for (size_t i = 0; i < tr.captured.size(); ++i) mine.emplace(capture_key(tr.captured[i]), tr.capture_nodes[i]);
  tr.graph->inputs = tr.arg_nodes;
  for (const Tensor& c : all_captures) {
    auto it = mine.find(capture_key(c));
    tr.graph->inputs.push_back(it != mine.end() ? it->second
                                                : add_placeholder(*tr.graph, {c.dtype(), c.shape()}, "capture"));
  }
}

TypeList types_of(const TensorList& xs) {
  TypeList t;
  for (const Tensor& x : xs) t.push_back({x.dtype(), x.shape()});
  return t;
}

bool is_float(const Tensor& t) { return is_floating(t.dtype()); }

// True when t is a symbolic zeros_like (what the tape passes for outputs that got no gradient).
bool is_known_zero(const Tensor& t) {
  if (!t.defined() || !t.is_symbolic() || !t.impl()->symbol) return false;
  const Graph* g = static_cast<const Graph*>(t.impl()->symbol.get());
  return g->node(t.impl()->symbol_node).op == OpId::ZerosLike;
}

// d sum(outputs(g) * grads) / d inputs[i] for i in wrt, by replaying g under a tape
// (eagerly: computes; in a graph scope: adds the gradient nodes). Zeros where unconnected.
TensorList graph_vjp(const Graph& g, TensorList inputs, const TensorList& grads, const std::vector<int>& wrt) {
  // Two inputs naming one tensor would share one gradient: give repeats their own identity.
  std::unordered_set<uint64_t> ids;
  for (Tensor& x : inputs)
    if (!ids.insert(x.id()).second) x = identity(x);
  GradientTape tape;
  for (int i : wrt) tape.watch(inputs[size_t(i)]);
  TensorList outs = inline_graph(g, inputs, /*side_effects=*/false);
  TensorList targets, seeds;
  for (size_t j = 0; j < outs.size(); ++j) {
    if (!is_float(outs[j]) || j >= grads.size() || !grads[j].defined()) continue;
    Tensor target = outs[j], seed = grads[j];
    // A cond output merges both branches' shapes: make seed and target agree on the known one.
    if (seed.shape() != target.shape()) {
      if (seed.shape().is_fully_defined()) target = reshape(target, seed.shape());
      else if (target.shape().is_fully_defined()) seed = reshape(seed, target.shape());
    }
    targets.push_back(target);
    seeds.push_back(seed);
  }
  TensorList sources;
  for (int i : wrt) sources.push_back(inputs[size_t(i)]);
  if (targets.empty()) {
    TensorList z;
    for (const Tensor& s : sources) z.push_back(zeros_like(s));
    return z;
  }
  return tape.gradient(targets, sources, UnconnectedGradients::Zero, seeds);
}

// --- cond --- pred: bool[], captures... -> the branch outputs (types merged over both branches).
void infer_cond(const OpCall& c, TypeList& out) {
  const GraphRef& then_g = c.attr_func("then_branch");
  const GraphRef& else_g = c.attr_func("else_branch");
  DF_CHECK(then_g && else_g, "[cond] then_branch and else_branch must be set");
  DF_CHECK(c.num_inputs() >= 1, "[cond] needs a pred input");
  check_pred("cond", c.in(0));
  for (const auto* g : {then_g.get(), else_g.get()}) {
    const char* which = g == then_g.get() ? "then_branch" : "else_branch";
    DF_CHECK(int(g->inputs.size()) == c.num_inputs() - 1, "[cond] ", which, " takes ", g->inputs.size(),
             " inputs, the node gives ", c.num_inputs() - 1);
    for (size_t i = 0; i < g->inputs.size(); ++i) {
      const TensorType& want = g->type({g->inputs[i], 0});
      const Tensor& x = c.in(int(i) + 1);
      DF_CHECK(x.dtype() == want.dtype && x.shape().compatible_with(want.shape), "[cond] input ", i + 1, " is ",
               type_string(x.dtype(), x.shape()), ", ", which, " expects ", type_string(want));
    }
  }
  DF_CHECK(then_g->outputs.size() == else_g->outputs.size(), "[cond] true_fn returns ", then_g->outputs.size(),
           " tensors, false_fn returns ", else_g->outputs.size());
  for (size_t i = 0; i < then_g->outputs.size(); ++i) {
    const TensorType& a = then_g->type(then_g->outputs[i]);
    const TensorType& b = else_g->type(else_g->outputs[i]);
    DF_CHECK(a.dtype == b.dtype && a.shape.rank() == b.shape.rank(), "[cond] true_fn returns ", type_string(a),
             ", false_fn returns ", type_string(b), " (output ", i, ")");
    Shape s = a.shape;
    for (int d = 0; d < s.rank(); ++d) {
      if (a.shape[d] == b.shape[d]) continue;
      DF_CHECK(a.shape[d] < 0 || b.shape[d] < 0, "[cond] true_fn returns ", type_string(a), ", false_fn returns ",
               type_string(b), " (output ", i, ")");
      s[d] = kUnknownDim;
    }
    out.push_back({a.dtype, s});
  }
}

// The gradient is a cond on the same pred whose branches differentiate each branch.
TensorList vjp_cond(const OpCall& c, const TensorList& grads) {
  GraphRef then_g = c.attr_func("then_branch"), else_g = c.attr_func("else_branch");
  TensorList caps(c.inputs.begin() + 1, c.inputs.end());
  std::vector<int> wrt;
  for (size_t i = 0; i < caps.size(); ++i)
    if (is_float(caps[i])) wrt.push_back(int(i));
  TensorList result(static_cast<size_t>(c.num_inputs()));
  if (wrt.empty()) return result;
  auto branch = [&](GraphRef g) { return [&, g] { return graph_vjp(*g, caps, grads, wrt); }; };
  TensorList dcaps = cond(c.in(0), branch(then_g), branch(else_g));
  for (size_t k = 0; k < wrt.size(); ++k) result[size_t(wrt[k]) + 1] = dcaps[k];
  return result;
}

// --- while --- loop vars..., captures... -> final loop vars..., and with keep_history
// also history_i: [n_iter, ...shape_i] per loop var and n_iter: int64[].
void infer_while(const OpCall& c, TypeList& out) {
  const GraphRef& cond_g = c.attr_func("cond");
  const GraphRef& body_g = c.attr_func("body");
  DF_CHECK(cond_g && body_g, "[while] cond and body must be set");
  const size_t n = body_g->outputs.size();
  DF_CHECK(n >= 1 && n <= size_t(c.num_inputs()), "[while] body returns ", n, " loop variables, the node has ",
           c.num_inputs(), " inputs");
  for (const auto* g : {cond_g.get(), body_g.get()}) {
    const char* which = g == cond_g.get() ? "cond" : "body";
    DF_CHECK(int(g->inputs.size()) == c.num_inputs(), "[while] ", which, " takes ", g->inputs.size(),
             " inputs, the node gives ", c.num_inputs());
    for (size_t i = 0; i < g->inputs.size(); ++i) {
      const TensorType& want = g->type({g->inputs[i], 0});
      const Tensor& x = c.in(int(i));
      DF_CHECK(x.dtype() == want.dtype && x.shape().compatible_with(want.shape), "[while] input ", i, " is ",
               type_string(x.dtype(), x.shape()), ", ", which, " expects ", type_string(want));
    }
  }
  DF_CHECK(cond_g->outputs.size() == 1, "[while] cond returns ", cond_g->outputs.size(), " tensors, not 1");
  const TensorType& p = cond_g->type(cond_g->outputs[0]);
  DF_CHECK(p.dtype == DType::Bool && p.shape.rank() == 0, "[while] cond must return a bool scalar, got ",
           type_string(p));
  TypeList vars;
  for (size_t i = 0; i < n; ++i) {
    const TensorType& before = body_g->type({body_g->inputs[i], 0});
    const TensorType& after = body_g->type(body_g->outputs[i]);
    DF_CHECK(after.dtype == before.dtype, "[while] loop variable ", i, " has dtype ", dtype_name(before.dtype),
             " before the loop and ", dtype_name(after.dtype), " after one iteration");
    bool ok = after.shape.rank() == before.shape.rank();
    for (int d = 0; ok && d < before.shape.rank(); ++d) ok = before.shape[d] < 0 || before.shape[d] == after.shape[d];
    DF_CHECK(ok, "[while] loop variable ", i, " has shape ", before.shape, " before the loop and ", after.shape,
             " after one iteration");
    vars.push_back(before);
  }
  out = vars;
  if (c.attr_bool("keep_history")) {
    for (const TensorType& t : vars) {
      Shape h{kUnknownDim};
      for (int64_t d : t.shape) h.push_back(d);
      out.push_back({t.dtype, h});
    }
    out.push_back({DType::Int64, Shape{}});
  }
}

// Runs the body's gradient backwards over the history: with v_k the loop variables
// entering iteration k, g_k = vjp_body(v_k, g_{k+1}) + d/d history[k], g_n = the
// gradient of the final values; captures accumulate their gradient over all k.
TensorList vjp_while(const OpCall& c, const TensorList& grads) {
  GraphRef body_g = c.attr_func("body");
  const int n = int(body_g->outputs.size());
  const int m = c.num_inputs() - n;
  DF_CHECK(c.attr_bool("keep_history"),
           "[while] no gradient: this loop kept no history (keep_history is false; its loop variables had "
           "unknown dims when it was built)");
  TensorList caps(c.inputs.begin() + n, c.inputs.end());
  TensorList history(c.outputs.begin() + n, c.outputs.begin() + 2 * n);
  const Tensor& n_iter = c.out(2 * n);
  std::vector<int> fvars, fcaps, wrt;
  for (int i = 0; i < n; ++i)
    if (is_float(c.in(i))) fvars.push_back(i);
  for (int j = 0; j < m; ++j)
    if (is_float(caps[size_t(j)])) fcaps.push_back(j);
  TensorList result(static_cast<size_t>(c.num_inputs()));
  if (fvars.empty() && fcaps.empty()) return result;
  for (int i : fvars) wrt.push_back(i);
  for (int j : fcaps) wrt.push_back(n + j);
  // Gradients reaching the history outputs (a second-order gradient does that).
  TensorList ghist(static_cast<size_t>(n));
  for (int i : fvars)
    if (size_t(n + i) < grads.size() && !is_known_zero(grads[size_t(n + i)])) ghist[size_t(i)] = grads[size_t(n + i)];

  // State: k, then the gradient of each float loop var, then the accumulated gradient of each float capture.
  TensorList init{n_iter - 1.0};
  for (int i : fvars) init.push_back(grads[size_t(i)]);
  for (int j : fcaps) init.push_back(zeros_like(caps[size_t(j)]));
  auto back_cond = [](const TensorList& s) { return greater_equal(s[0], scalar_like(s[0], 0)); };
  auto back_body = [&](const TensorList& s) {
    const Tensor& k = s[0];
    TensorList inputs;
    for (int i = 0; i < n; ++i) inputs.push_back(gather(history[size_t(i)], k));
    for (const Tensor& x : caps) inputs.push_back(x);
    TensorList out_grads(static_cast<size_t>(n));
    for (size_t a = 0; a < fvars.size(); ++a) out_grads[size_t(fvars[a])] = s[1 + a];
    TensorList g = graph_vjp(*body_g, inputs, out_grads, wrt);
    TensorList next{k - 1.0};
    for (size_t a = 0; a < fvars.size(); ++a) {
      Tensor gv = g[a];
      const Tensor& h = ghist[size_t(fvars[a])];
      if (h.defined()) gv = gv + gather(h, k);
      if (gv.shape() != s[1 + a].shape() && s[1 + a].shape().is_fully_defined()) gv = reshape(gv, s[1 + a].shape());
      next.push_back(gv);
    }
    for (size_t b = 0; b < fcaps.size(); ++b) next.push_back(s[1 + fvars.size() + b] + g[fvars.size() + b]);
    return next;
  };
  TensorList fin = while_loop(back_cond, back_body, init);
  for (size_t a = 0; a < fvars.size(); ++a) result[size_t(fvars[a])] = fin[1 + a];
  for (size_t b = 0; b < fcaps.size(); ++b) result[size_t(n + fcaps[b])] = fin[1 + fvars.size() + b];
  return result;
}

void check_loop_step(const TensorList& before, const TensorList& after) {
  DF_CHECK(after.size() == before.size(), "[while_loop] body returns ", after.size(), " tensors for ",
           before.size(), " loop variables");
  for (size_t i = 0; i < before.size(); ++i) {
    DF_CHECK(after[i].defined(), "[while_loop] body returns an undefined tensor for loop variable ", i);
    DF_CHECK(after[i].dtype() == before[i].dtype(), "[while_loop] loop variable ", i, " has dtype ",
             dtype_name(before[i].dtype()), " before the loop and ", dtype_name(after[i].dtype()),
             " after one iteration");
    const Shape &a = before[i].shape(), &b = after[i].shape();
    bool ok = a.rank() == b.rank();
    for (int d = 0; ok && d < a.rank(); ++d) ok = a[d] < 0 || a[d] == b[d];
    DF_CHECK(ok, "[while_loop] loop variable ", i, " has shape ", a, " before the loop and ", b,
             " after one iteration");
  }
}

void check_loop_cond(const Tensor& p) {
  DF_CHECK(p.defined() && p.dtype() == DType::Bool && p.rank() == 0, "[while_loop] cond must return a bool scalar, got ",
           p.defined() ? type_string(p.dtype(), p.shape()) : std::string("an undefined tensor"));
}

}  // namespace

DF_DEFINE_OP(Cond, {.num_inputs = -1,
                    .attrs = {AttrSpec::required_of("then_branch", AttrKind::Func),
                              AttrSpec::required_of("else_branch", AttrKind::Func)},
                    .infer = infer_cond, .vjp = vjp_cond,
                    // Branches may hold side effects: never fold or merge. Outputs are set by the kernel.
                    .stateful = true, .view_output = true, .strings = true});
DF_DEFINE_OP(While, {.num_inputs = -1,
                     .attrs = {AttrSpec::required_of("cond", AttrKind::Func),
                               AttrSpec::required_of("body", AttrKind::Func),
                               AttrSpec("maximum_iterations", int64_t(-1)), AttrSpec("keep_history", false)},
                     .infer = infer_while, .vjp = vjp_while, .stateful = true, .view_output = true, .strings = true});

TensorList cond(const Tensor& pred, const std::function<TensorList()>& true_fn,
                const std::function<TensorList()>& false_fn) {
  check_pred("cond", pred);
  if (!current_build_scope()) {
    DF_CHECK(!pred.is_symbolic(), "[cond] got a symbolic pred outside a graph scope");
    return pred.item<bool>() ? true_fn() : false_fn();
  }
  Traced t = trace({}, [&](const TensorList&) { return true_fn(); });
  Traced f = trace({}, [&](const TensorList&) { return false_fn(); });
  TensorList caps = merge_captures({&t, &f});
  finalize(t, caps);
  finalize(f, caps);
  TensorList inputs{pred};
  inputs.insert(inputs.end(), caps.begin(), caps.end());
  return dispatch(OpId::Cond, inputs,
                  {{"then_branch", GraphRef(t.graph)}, {"else_branch", GraphRef(f.graph)}});
}

Tensor cond(const Tensor& pred, const std::function<Tensor()>& true_fn, const std::function<Tensor()>& false_fn) {
  TensorList out = cond(
      pred, [&] { return TensorList{true_fn()}; }, [&] { return TensorList{false_fn()}; });
  return out[0];
}

TensorList while_loop(const std::function<Tensor(const TensorList&)>& cond_fn,
                      const std::function<TensorList(const TensorList&)>& body, const TensorList& loop_vars,
                      std::optional<int64_t> maximum_iterations) {
  DF_CHECK(!loop_vars.empty(), "[while_loop] needs at least one loop variable");
  for (size_t i = 0; i < loop_vars.size(); ++i)
    DF_CHECK(loop_vars[i].defined(), "[while_loop] loop variable ", i, " is an undefined tensor");
  DF_CHECK(!maximum_iterations || *maximum_iterations >= 0, "[while_loop] maximum_iterations must be >= 0, got ",
           maximum_iterations.value_or(0));
  if (!current_build_scope()) {
    TensorList vars = loop_vars;
    for (int64_t it = 0; !maximum_iterations || it < *maximum_iterations; ++it) {
      Tensor p = cond_fn(vars);
      check_loop_cond(p);
      DF_CHECK(!p.is_symbolic(), "[while_loop] cond returned a symbolic tensor outside a graph scope");
      if (!p.item<bool>()) break;
      TensorList next = body(vars);
      check_loop_step(loop_vars, next);
      vars = std::move(next);
    }
    return vars;
  }
  const TypeList types = types_of(loop_vars);
  Traced c = trace(types, [&](const TensorList& v) { return TensorList{cond_fn(v)}; });
  {
    const TensorType& p = c.graph->type(c.graph->outputs[0]);
    DF_CHECK(p.dtype == DType::Bool && p.shape.rank() == 0, "[while_loop] cond must return a bool scalar, got ",
             type_string(p));
  }
  Traced b = trace(types, body);
  {
    TensorList before, after;
    for (size_t i = 0; i < b.arg_nodes.size(); ++i) before.push_back(b.graph->symbolic({b.arg_nodes[i], 0}));
    for (const ValueRef& v : b.graph->outputs) after.push_back(b.graph->symbolic(v));
    check_loop_step(before, after);
  }
  TensorList caps = merge_captures({&c, &b});
  finalize(c, caps);
  finalize(b, caps);
  TensorList inputs = loop_vars;
  inputs.insert(inputs.end(), caps.begin(), caps.end());
  // The history the gradient needs is kept when it can be stacked and something is differentiable.
  bool known = true, differentiable = false;
  for (const Tensor& v : loop_vars) known &= v.shape().is_fully_defined();
  for (const Tensor& v : inputs) differentiable |= is_float(v);
  TensorList out = dispatch(OpId::While, inputs,
                            {{"cond", GraphRef(c.graph)},
                             {"body", GraphRef(b.graph)},
                             {"maximum_iterations", maximum_iterations.value_or(-1)},
                             {"keep_history", known && differentiable}});
  out.resize(loop_vars.size());
  return out;
}

GraphRef trace_graph(const TypeList& arg_types, const std::function<TensorList(const TensorList&)>& fn) {
  Traced t = trace(arg_types, fn, /*allow_captures=*/false);
  t.graph->inputs = t.arg_nodes;
  return t.graph;
}

TensorList inline_graph(const Graph& g, const TensorList& inputs, bool side_effects) {
  DF_CHECK(inputs.size() == g.inputs.size(), "[inline_graph] the graph takes ", g.inputs.size(), " inputs, got ",
           inputs.size());
  Feeds feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds.emplace_back(ValueRef{g.inputs[i], 0}, inputs[i]);
  std::vector<int> targets;
  if (side_effects)
    for (int id = 0; id < g.num_nodes(); ++id)
      if (g.node(id).def().stateful && g.node(id).op != OpId::Placeholder &&
          g.node(id).op != OpId::ReadVariable) targets.push_back(id);
  auto key = [](ValueRef v) { return (int64_t(v.node) << 20) | v.index; };
  std::unordered_map<int64_t, Tensor> values;
  for (const auto& [v, t] : feeds) values[key(v)] = t;
  for (int id : prune(g, feeds, g.outputs, targets)) {
    const Node& n = g.node(id);
    TensorList ins;
    for (const ValueRef& v : n.inputs) ins.push_back(values.at(key(v)));
    TensorList outs;
    if (n.op == OpId::ReadVariable) {
      outs = {std::get<Variable>(*n.attrs.find("variable")).value()};
    } else if (n.op == OpId::AssignVariable) {
      Variable v = std::get<Variable>(*n.attrs.find("variable"));
      v.assign(ins[0]);
    } else {
      DF_CHECK(n.op != OpId::Placeholder, "[inline_graph] placeholder '", n.name, "' is not an input of the graph");
      outs = dispatch(n.op, ins, n.attrs);
    }
    for (size_t i = 0; i < outs.size(); ++i) values[key({id, int(i)})] = std::move(outs[i]);
  }
  TensorList result;
  for (const ValueRef& v : g.outputs) result.push_back(values.at(key(v)));
  return result;
}

}  // namespace deepflow
