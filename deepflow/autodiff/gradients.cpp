// SPDX-License-Identifier: Apache-2.0
#include "deepflow/autodiff/gradients.h"

#include <optional>
#include <unordered_map>

#include "deepflow/graph/builder.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

int64_t key_of(ValueRef v) { return (int64_t(v.node) << 20) | v.index; }

// The variable a read_variable node reads, or nullptr.
const Variable* read_of(const Graph& g, int node) {
  const Node& n = g.node(node);
  if (n.op != OpId::ReadVariable) return nullptr;
  const AttrValue* a = n.attrs.find("variable");
  return a ? &std::get<Variable>(*a) : nullptr;
}

// One source: a value, or a variable (every read of it in the graph).
struct Source {
  ValueRef value;
  uint64_t variable_id = 0;  // nonzero: all reads of this variable
};

std::vector<Tensor> graph_gradients(Graph& g, const std::vector<Tensor>& ys, const std::vector<Source>& sources,
                                    const std::vector<Tensor>& grad_ys, const std::vector<Tensor>& like,
                                    UnconnectedGradients unconnected) {
  // Snapshot: the vjps append nodes, which are not part of the walk (and invalidate Node&).
  const int n0 = g.num_nodes();
  std::vector<int> order = g.topological_order();

  auto source_keys = [&](const Source& s) {
    std::vector<int64_t> keys;
    if (!s.variable_id) return std::vector<int64_t>{key_of(s.value)};
    for (int id = 0; id < n0; ++id)
      if (const Variable* v = read_of(g, id); v && v->id() == s.variable_id) keys.push_back(key_of({id, 0}));
    return keys;
  };

  // Values that depend on a source.
  std::unordered_map<int64_t, bool> reach;
  for (const Source& s : sources)
    for (int64_t k : source_keys(s)) reach[k] = true;
  std::vector<char> reached(size_t(n0), 0);
  for (int id : order) {
    const Node& n = g.node(id);
    for (const ValueRef& v : n.inputs) reached[size_t(id)] |= char(reach.count(key_of(v)));
    if (reached[size_t(id)])
      for (int i = 0; i < int(n.outputs.size()); ++i) reach[key_of({id, i})] = true;
  }
  // Nodes some y depends on.
  std::vector<char> needed(size_t(n0), 0);
  for (const Tensor& y : ys) needed[size_t(g.value_of(y).node)] = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (needed[size_t(*it)])
      for (const ValueRef& v : g.node(*it).inputs) needed[size_t(v.node)] = 1;

  std::unordered_map<int64_t, Tensor> grads;
  auto accumulate = [&](int64_t k, const Tensor& t) {
    auto it = grads.find(k);
    if (it == grads.end()) grads.emplace(k, t);
    else it->second = add(it->second, t);
  };
  for (size_t i = 0; i < ys.size(); ++i) {
    const ValueRef v = g.value_of(ys[i]);
    if (!reach.count(key_of(v))) continue;
    accumulate(key_of(v), i < grad_ys.size() && grad_ys[i].defined() ? grad_ys[i] : ones_like(ys[i]));
  }

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int id = *it;
    if (!reached[size_t(id)] || !needed[size_t(id)]) continue;
    const Node n = g.node(id);  // a copy: vjps add nodes
    const OpDef& def = n.def();
    TensorList out_grads(n.outputs.size());
    bool any = false;
    for (int i = 0; i < int(n.outputs.size()); ++i)
      if (auto git = grads.find(key_of({id, i})); git != grads.end()) out_grads[size_t(i)] = git->second, any = true;
    if (!any || def.non_differentiable) continue;
    DF_CHECK(def.vjp, "[gradients] node '", n.name, "' (op '", def.name, "') has no gradient");
    TensorList ins, outs;
    for (const ValueRef& v : n.inputs) ins.push_back(g.symbolic(v));
    for (int i = 0; i < int(n.outputs.size()); ++i) outs.push_back(g.symbolic({id, i}));
    for (size_t i = 0; i < outs.size(); ++i)
      if (!out_grads[i].defined() && outs[i].dtype() != DType::String) out_grads[i] = zeros_like(outs[i]);
    OpCall call{&def, ins, &n.attrs, outs};
    TensorList in_grads;
    try {
      in_grads = def.vjp(call, out_grads);
    } catch (const Error& e) {
      fail("[gradients] node '", n.name, "': ", e.what());
    }
    DF_CHECK(in_grads.size() == n.inputs.size(), "[gradients] vjp of '", def.name, "' returned ", in_grads.size(),
             " gradients for ", n.inputs.size(), " inputs");
    for (size_t j = 0; j < n.inputs.size(); ++j)
      if (in_grads[j].defined() && reach.count(key_of(n.inputs[j]))) accumulate(key_of(n.inputs[j]), in_grads[j]);
  }

  std::vector<Tensor> result;
  for (size_t i = 0; i < sources.size(); ++i) {
    Tensor sum;
    for (int64_t k : source_keys(sources[i]))
      if (auto git = grads.find(k); git != grads.end()) sum = sum.defined() ? add(sum, git->second) : git->second;
    if (!sum.defined() && unconnected == UnconnectedGradients::Zero) sum = zeros_like(like[i]);
    result.push_back(sum);
  }
  return result;
}

std::shared_ptr<Graph> graph_of(const Tensor& t, const char* what, size_t i) {
  DF_CHECK(t.defined() && t.is_symbolic() && t.impl()->symbol, "[gradients] ", what, "[", i,
           "] is not a symbolic tensor of a graph (use GradientTape in eager mode)");
  return std::static_pointer_cast<Graph>(t.impl()->symbol);
}

// Runs f with a GraphScope on g current: the active one when it builds g, else a new one.
template <class F> auto in_scope(const std::shared_ptr<Graph>& g, F f) {
  if (GraphScope* s = GraphScope::current(); s && s->graph_ptr() == g && current_build_scope() == s) return f();
  GraphScope scope(g);
  return f();
}

}  // namespace

std::vector<Tensor> gradients(const std::vector<Tensor>& ys, const std::vector<Tensor>& xs,
                              const std::vector<Tensor>& grad_ys, UnconnectedGradients unconnected) {
  DF_CHECK(!ys.empty(), "[gradients] needs at least one y");
  DF_CHECK(grad_ys.empty() || grad_ys.size() == ys.size(), "[gradients] ", grad_ys.size(), " grad_ys for ",
           ys.size(), " ys");
  std::shared_ptr<Graph> g = graph_of(ys[0], "ys", 0);
  for (size_t i = 0; i < ys.size(); ++i)
    DF_CHECK(graph_of(ys[i], "ys", i) == g, "[gradients] ys[", i, "] belongs to another graph than ys[0]");
  std::vector<Source> sources;
  for (size_t i = 0; i < xs.size(); ++i) {
    DF_CHECK(graph_of(xs[i], "xs", i) == g, "[gradients] xs[", i, "] belongs to another graph than ys");
    Source s{g->value_of(xs[i])};
    if (const Variable* v = read_of(*g, s.value.node)) s.variable_id = v->id();
    sources.push_back(s);
  }
  for (size_t i = 0; i < grad_ys.size(); ++i)
    DF_CHECK(!grad_ys[i].defined() || (grad_ys[i].dtype() == ys[i].dtype() &&
                                       grad_ys[i].shape().compatible_with(ys[i].shape())),
             "[gradients] grad_ys[", i, "] is ", dtype_name(grad_ys[i].dtype()), grad_ys[i].shape(), ", ys[", i,
             "] is ", dtype_name(ys[i].dtype()), ys[i].shape());
  return in_scope(g, [&] { return graph_gradients(*g, ys, sources, grad_ys, xs, unconnected); });
}

Tensor gradients(const Tensor& y, const Tensor& x, UnconnectedGradients unconnected) {
  return gradients(std::vector<Tensor>{y}, std::vector<Tensor>{x}, {}, unconnected)[0];
}

std::vector<Tensor> gradients(const Tensor& y, const std::vector<Variable>& xs, UnconnectedGradients unconnected) {
  std::shared_ptr<Graph> g = graph_of(y, "ys", 0);
  return in_scope(g, [&] {
    std::vector<Source> sources;
    std::vector<Tensor> like;
    for (const Variable& v : xs) {
      DF_CHECK(v.defined(), "[gradients] undefined variable");
      sources.push_back({ValueRef{}, v.id()});
      like.push_back(Tensor());
    }
    std::vector<Tensor> out = graph_gradients(*g, {y}, sources, {}, like, UnconnectedGradients::None);
    for (size_t i = 0; i < out.size(); ++i)
      if (!out[i].defined() && unconnected == UnconnectedGradients::Zero) out[i] = zeros_like(xs[i].value());
    return out;
  });
}

}  // namespace deepflow
