// SPDX-License-Identifier: Apache-2.0
// Dead-code and common-subexpression elimination.
#include <algorithm>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "deepflow/graph/passes.h"
#include "deepflow/graph/passes/rewrite.h"

namespace deepflow {

using passes::is_stateful;

int eliminate_dead_code(Graph& g, std::vector<ValueRef>* keep) {
  std::vector<char> needed(size_t(g.num_nodes()), 0);
  std::vector<int> stack;
  auto need = [&](int id) {
    if (!needed[size_t(id)]) {
      needed[size_t(id)] = 1;
      stack.push_back(id);
    }
  };
  for (const ValueRef& v : g.outputs) need(v.node);
  if (keep)
    for (const ValueRef& v : *keep) need(v.node);
  for (int i : g.inputs) need(i);
  for (int i = 0; i < g.num_nodes(); ++i)
    if (is_stateful(g.node(i))) need(i);
  while (!stack.empty()) {
    const Node& n = g.node(stack.back());
    stack.pop_back();
    for (const ValueRef& v : n.inputs) need(v.node);
    for (int c : n.control_inputs) need(c);
  }
  std::vector<char> dead(needed.size());
  int removed = 0;
  for (size_t i = 0; i < needed.size(); ++i) removed += dead[i] = !needed[i];
  if (removed) passes::remove_nodes(g, dead, keep);
  return removed;
}

namespace {

// A hash of what CSE compares; equal nodes hash equal (tensors by dtype, shape and a prefix).
size_t node_hash(const Node& n) {
  size_t h = std::hash<int>{}(int(n.op));
  auto mix = [&](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  for (const ValueRef& v : n.inputs) mix(size_t(v.node) * 31 + size_t(v.index));
  for (int c : n.control_inputs) mix(size_t(c) * 17);
  mix(std::hash<std::string>{}(n.device));
  if (n.op == OpId::Const) {
    const Tensor& t = std::get<Tensor>(*n.attrs.find("value"));
    mix(size_t(t.dtype()));
    for (int64_t d : t.shape()) mix(size_t(d));
    if (t.dtype() == DType::String) {  // the elements, not the std::string objects' bytes
      for (int64_t i = 0; i < std::min<int64_t>(t.size(), 4); ++i)
        mix(std::hash<std::string>{}(t.data<std::string>()[i]));
    } else {
      const size_t bytes = std::min<size_t>(t.nbytes(), 64);
      std::string prefix(static_cast<const char*>(t.raw_data()), bytes);
      mix(std::hash<std::string>{}(prefix));
    }
  }
  return h;
}

bool same_node(const Node& a, const Node& b) {
  if (a.op != b.op || a.inputs != b.inputs || a.device != b.device || a.outputs != b.outputs) return false;
  std::vector<int> ca = a.control_inputs, cb = b.control_inputs;
  std::sort(ca.begin(), ca.end());
  std::sort(cb.begin(), cb.end());
  return ca == cb && passes::attrs_equal(a.def(), a.attrs, b.attrs);
}

}  // namespace

int eliminate_common_subexpressions(Graph& g, std::vector<ValueRef>* keep) {
  std::vector<char> dead(size_t(g.num_nodes()), 0);
  std::vector<int> canon(size_t(g.num_nodes()));
  for (int i = 0; i < g.num_nodes(); ++i) canon[size_t(i)] = i;
  std::unordered_multimap<size_t, int> seen;
  int merged = 0;
  for (int id : g.topological_order()) {
    Node& n = g.mutable_node(id);
    // Inputs first point at their representatives, so chains of equal nodes merge in one sweep.
    for (ValueRef& v : n.inputs) v.node = canon[size_t(v.node)];
    for (int& c : n.control_inputs) c = canon[size_t(c)];
    if (is_stateful(n)) continue;
    const size_t h = node_hash(n);
    int match = -1;
    for (auto [it, end] = seen.equal_range(h); it != end && match < 0; ++it)
      if (same_node(g.node(it->second), n)) match = it->second;
    if (match < 0) {
      seen.emplace(h, id);
      continue;
    }
    canon[size_t(id)] = match;
    dead[size_t(id)] = 1;
    ++merged;
  }
  if (!merged) return 0;
  for (int i = 0; i < g.num_nodes(); ++i) {
    if (!dead[size_t(i)]) continue;
    for (int k = 0; k < int(g.node(i).outputs.size()); ++k)
      passes::replace_uses(g, {i, k}, {canon[size_t(i)], k}, keep);
    passes::replace_control(g, i, canon[size_t(i)]);
  }
  passes::remove_nodes(g, dead, keep);
  return merged;
}

}  // namespace deepflow
