// SPDX-License-Identifier: Apache-2.0
#include "deepflow/graph/passes/rewrite.h"

#include <algorithm>

namespace deepflow::passes {

bool is_stateful(const Node& n) {
  const OpDef& d = n.def();
  if (d.stateful || n.op == OpId::Send || n.op == OpId::Recv) return true;
  for (const auto& [name, v] : n.attrs.items()) {
    const AttrKind k = attr_kind(v);
    if (k == AttrKind::Func || k == AttrKind::Variable) return true;
  }
  return false;
}

namespace {
const AttrValue* effective(const OpDef& def, const Attrs& a, const std::string& name) {
  if (const AttrValue* v = a.find(name)) return v;
  for (const AttrSpec& s : def.attrs)
    if (s.name == name && !s.required) return &s.default_value;
  return nullptr;
}
}  // namespace

bool attrs_equal(const OpDef& def, const Attrs& a, const Attrs& b) {
  for (const Attrs* x : {&a, &b})
    for (const auto& [name, v] : x->items()) {
      const AttrValue *va = effective(def, a, name), *vb = effective(def, b, name);
      if (!va || !vb || !attr_equal(*va, *vb)) return false;
    }
  return true;
}

const Tensor* const_value(const Graph& g, ValueRef v) {
  const Node& n = g.node(v.node);
  if (n.op != OpId::Const) return nullptr;
  const AttrValue* a = n.attrs.find("value");
  return a ? &std::get<Tensor>(*a) : nullptr;
}

Uses::Uses(const Graph& g, const std::vector<ValueRef>* keep)
    : data(size_t(g.num_nodes())), control(size_t(g.num_nodes())), external(size_t(g.num_nodes()), 0) {
  for (int i = 0; i < g.num_nodes(); ++i) {
    for (const ValueRef& v : g.node(i).inputs) data[size_t(v.node)].push_back(i);
    for (int c : g.node(i).control_inputs) control[size_t(c)].push_back(i);
  }
  for (const ValueRef& v : g.outputs) ++external[size_t(v.node)];
  if (keep)
    for (const ValueRef& v : *keep) ++external[size_t(v.node)];
}

void replace_uses(Graph& g, ValueRef from, ValueRef to, std::vector<ValueRef>* keep) {
  for (int i = 0; i < g.num_nodes(); ++i)
    for (ValueRef& v : g.mutable_node(i).inputs)
      if (v == from) v = to;
  for (ValueRef& v : g.outputs)
    if (v == from) v = to;
  if (keep)
    for (ValueRef& v : *keep)
      if (v == from) v = to;
}

void merge_control(std::vector<int>& a, const std::vector<int>& b) {
  for (int c : b)
    if (std::find(a.begin(), a.end(), c) == a.end()) a.push_back(c);
}

void fuse_in_place(Graph& g, int root, Node fused, const std::vector<int>& parts, std::vector<char>& dead) {
  fused.outputs = g.node(root).outputs;
  fused.device = g.node(root).device;
  fused.control_inputs = g.node(root).control_inputs;
  for (int part : parts)
    if (part >= 0 && part != root) {
      merge_control(fused.control_inputs, g.node(part).control_inputs);
      replace_control(g, part, root);
      dead[size_t(part)] = 1;
    }
  fused.name = g.node(root).name;
  g.mutable_node(root) = std::move(fused);
}

void replace_control(Graph& g, int from, int to) {
  for (int i = 0; i < g.num_nodes(); ++i) {
    auto& ci = g.mutable_node(i).control_inputs;
    if (std::find(ci.begin(), ci.end(), from) == ci.end()) continue;
    std::vector<int> next;
    for (int c : ci) {
      const int r = c == from ? to : c;
      if (r != i && r >= 0 && std::find(next.begin(), next.end(), r) == next.end()) next.push_back(r);
    }
    ci = std::move(next);
  }
}

void remove_nodes(Graph& g, const std::vector<char>& dead, std::vector<ValueRef>* keep) {
  std::vector<int> order = g.topological_order();
  std::vector<int> remap(size_t(g.num_nodes()), -1);
  Graph out;
  int next = 0;
  for (int id : order)
    if (!dead[size_t(id)]) remap[size_t(id)] = next++;
  for (int id : order) {
    if (dead[size_t(id)]) continue;
    Node n = g.node(id);
    for (ValueRef& v : n.inputs) {
      DF_CHECK(remap[size_t(v.node)] >= 0, "[passes] node '", n.name, "' uses removed node '", g.node(v.node).name,
               "'");
      v.node = remap[size_t(v.node)];
    }
    std::vector<int> ci;
    for (int c : n.control_inputs)
      if (remap[size_t(c)] >= 0) ci.push_back(remap[size_t(c)]);
    n.control_inputs = std::move(ci);
    out.add_node(std::move(n));
  }
  auto map_value = [&](ValueRef& v) {
    DF_CHECK(remap[size_t(v.node)] >= 0, "[passes] a kept value of removed node '", g.node(v.node).name, "'");
    v.node = remap[size_t(v.node)];
  };
  for (int& i : g.inputs) {
    DF_CHECK(remap[size_t(i)] >= 0, "[passes] graph input '", g.node(i).name, "' was removed");
    out.inputs.push_back(remap[size_t(i)]);
  }
  for (ValueRef v : g.outputs) {
    map_value(v);
    out.outputs.push_back(v);
  }
  if (keep)
    for (ValueRef& v : *keep) map_value(v);
  g = std::move(out);
}

ValueRef add_const(Graph& g, const Tensor& t, const std::string& name, const std::string& device) {
  Node n;
  n.name = g.unique_name(name);
  n.op = OpId::Const;
  n.attrs.set("value", t);
  n.outputs = {{t.dtype(), t.shape()}};
  n.device = device;
  return {g.add_node(std::move(n)), 0};
}

}  // namespace deepflow::passes
