// SPDX-License-Identifier: Apache-2.0
// Constant folding and algebraic simplification.
#include <numeric>

#include "deepflow/graph/passes.h"
#include "deepflow/graph/passes/rewrite.h"

namespace deepflow {

using passes::const_value;
using passes::is_stateful;

int fold_constants(Graph& g, std::vector<ValueRef>* keep, int64_t max_elements) {
  int folded = 0;
  for (int id : g.topological_order()) {
    const Node& n = g.node(id);
    if (n.op == OpId::Const || n.inputs.empty() || is_stateful(n)) continue;
    TensorList ins;
    for (const ValueRef& v : n.inputs) {
      const Tensor* t = const_value(g, v);
      if (!t) break;
      ins.push_back(*t);
    }
    if (ins.size() != n.inputs.size()) continue;
    int64_t total = 0;
    for (const TensorType& t : n.outputs) total += t.shape.is_fully_defined() ? t.shape.num_elements() : max_elements + 1;
    if (total > max_elements) continue;
    TensorList outs;
    try {
      BuildScopeGuard eager(nullptr);  // computes now, even while some graph is being built
      outs = dispatch(n.op, ins, n.attrs);
    } catch (const Error&) {
      continue;  // an op that fails on these constants fails at run time, as before folding
    }
    if (outs.empty()) continue;
    // Output 0 replaces the node in place (same id and name, so its users stay as they are);
    // further outputs become new const nodes.
    const int num_outputs = int(outs.size());
    for (int k = 1; k < num_outputs; ++k) {
      ValueRef c = passes::add_const(g, outs[size_t(k)], g.node(id).name + "/folded_" + std::to_string(k),
                                     g.node(id).device);
      g.mutable_node(c.node).control_inputs = g.node(id).control_inputs;
      passes::replace_uses(g, {id, k}, c, keep);
    }
    Node& m = g.mutable_node(id);
    m.op = OpId::Const;
    m.inputs.clear();
    m.attrs = Attrs{{"value", outs[0]}};
    m.outputs = {{outs[0].dtype(), outs[0].shape()}};
    ++folded;
  }
  return folded;
}

namespace {

// True when every element of t equals v.
bool all_equal(const Tensor& t, double v) {
  if (t.size() > (1 << 16)) return false;
  for (int64_t i = 0; i < t.size(); ++i)
    if (t.flat(i) != v) return false;
  return true;
}

// The permutation a transpose node applies (empty attr: reverse).
std::vector<int64_t> full_perm(const Node& n, int rank) {
  const AttrValue* a = n.attrs.find("perm");
  std::vector<int64_t> p = a ? std::get<std::vector<int64_t>>(*a) : std::vector<int64_t>{};
  if (p.empty())
    for (int i = rank - 1; i >= 0; --i) p.push_back(i);
  return p;
}

struct Simplifier {
  Graph& g;
  std::vector<ValueRef>* keep;
  std::vector<char> dead;

  // x op c -> x when c is the identity element and nothing about the result's type changes.
  bool identity_operand(const Node& n, int x_slot, double unit) {
    const ValueRef x = n.inputs[size_t(x_slot)];
    const Tensor* c = const_value(g, n.inputs[size_t(1 - x_slot)]);
    if (!c || !all_equal(*c, unit)) return false;
    const TensorType& xt = g.type(x);
    return n.outputs[0] == xt && (c->size() == 1 || xt.shape.is_fully_defined());
  }

  // What value node n reduces to, or {-1, 0}; may instead rewrite n in place (returns true).
  ValueRef reduce(int id, bool& rewritten) {
    Node& n = g.mutable_node(id);
    const ValueRef none{-1, 0};
    auto producer = [&](int slot) -> const Node& { return g.node(n.inputs[size_t(slot)].node); };
    switch (n.op) {
      case OpId::Add:
        if (identity_operand(n, 0, 0)) return n.inputs[0];
        if (identity_operand(n, 1, 0)) return n.inputs[1];
        return none;
      case OpId::Sub:
        return identity_operand(n, 0, 0) ? n.inputs[0] : none;
      case OpId::Mul:
        if (identity_operand(n, 0, 1)) return n.inputs[0];
        if (identity_operand(n, 1, 1)) return n.inputs[1];
        return none;
      case OpId::Div:
        return identity_operand(n, 0, 1) ? n.inputs[0] : none;
      case OpId::Neg:
        return producer(0).op == OpId::Neg ? producer(0).inputs[0] : none;
      case OpId::Cast:
        return g.type(n.inputs[0]).dtype == n.outputs[0].dtype ? n.inputs[0] : none;
      case OpId::Identity: {
        for (const ValueRef& v : g.outputs)
          if (v.node == id) return none;
        if (keep)
          for (const ValueRef& v : *keep)
            if (v.node == id) return none;
        return n.inputs[0];
      }
      case OpId::Reshape: {
        const ValueRef src = producer(0).op == OpId::Reshape ? producer(0).inputs[0] : n.inputs[0];
        const Shape& from = g.type(src).shape;
        if (from.is_fully_defined() && from == n.outputs[0].shape) return src;
        if (src != n.inputs[0]) {
          n.inputs[0] = src;  // reshape(reshape(x, s1), s2) = reshape(x, s2)
          rewritten = true;
        }
        return none;
      }
      case OpId::Transpose: {
        if (producer(0).op != OpId::Transpose) return none;
        const Node& inner = producer(0);
        const ValueRef x = inner.inputs[0];
        const int r = g.type(x).shape.rank();
        const std::vector<int64_t> p1 = full_perm(inner, r), p2 = full_perm(n, r);
        std::vector<int64_t> q(static_cast<size_t>(r));
        for (int i = 0; i < r; ++i) q[size_t(i)] = p1[size_t(p2[size_t(i)])];
        std::vector<int64_t> id_perm(static_cast<size_t>(r));
        std::iota(id_perm.begin(), id_perm.end(), 0);
        if (q == id_perm) return x;
        n.inputs[0] = x;
        n.attrs.set("perm", q);
        rewritten = true;
        return none;
      }
      default:
        return none;
    }
  }
};

}  // namespace

int simplify_algebra(Graph& g, std::vector<ValueRef>* keep) {
  Simplifier s{g, keep, std::vector<char>(size_t(g.num_nodes()), 0)};
  int count = 0;
  for (int id : g.topological_order()) {
    const Node& n = g.node(id);
    // A node with control inputs stays: something may run it to force those first.
    if (is_stateful(n) || !n.control_inputs.empty() || n.outputs.size() != 1) continue;
    bool rewritten = false;
    ValueRef to = s.reduce(id, rewritten);
    if (rewritten) ++count;
    if (to.node < 0) continue;
    passes::replace_uses(g, {id, 0}, to, keep);
    passes::replace_control(g, id, to.node);
    s.dead[size_t(id)] = 1;
    ++count;
  }
  if (count) {
    // Nodes simplified away may still feed others that were simplified later; they are dead
    // only once nothing uses them.
    passes::Uses uses(g, keep);
    for (int i = 0; i < g.num_nodes(); ++i)
      if (s.dead[size_t(i)] && (!uses.data[size_t(i)].empty() || uses.external[size_t(i)] || !uses.control[size_t(i)].empty()))
        s.dead[size_t(i)] = 0;
    passes::remove_nodes(g, s.dead, keep);
  }
  return count;
}

}  // namespace deepflow
