// SPDX-License-Identifier: Apache-2.0
// Layout: sinking transposes past the ops that commute with them, so that the NCHW <-> NHWC
// pairs ONNX import wraps around each conv and pool meet and cancel.
//
// A transpose t = transpose(x, p) moves when every user of t accepts it: each user u becomes
// u' on x (attributes renumbered, constant operands transposed by p's inverse) and u itself
// turns, in place, into transpose(u', p_out), so u's users, name and kept values stay as they
// are. The new transposes go back on the work list and keep sinking until they cancel against
// an inverse (a transpose user composes with t on the spot) or reach an op that does not
// commute. A move is made only when it does not add transposes: one new transpose per
// non-transpose user against t itself, the partner transposes it consumes and the pairs that
// cancel. Two transposes need no moving: one that moves only size-1 dims becomes a reshape (a
// view), and the only reader of a constant becomes the transposed constant, whatever its size
// (ONNX import transposes every conv's weights; constant folding caps the sizes it makes).
//
// Bit-identical results restrict which ops qualify: elementwise ops whose per-element result
// does not depend on where the element sits in memory (IEEE arithmetic, comparisons, selects,
// casts). The CPU kernels of exp, tanh, sigmoid, erf and pow take other code paths for
// vector tails and wide-range blocks, and reduce_sum / reduce_prod accumulate in an order that
// follows the memory layout, so those stay where they are.
#include <algorithm>
#include <optional>

#include "deepflow/graph/passes.h"
#include "deepflow/graph/passes/rewrite.h"
#include "deepflow/ops/ops.h"

namespace deepflow {

using passes::const_value;
using passes::Uses;

namespace {

Axes perm_of(const Node& n, int rank) {
  const AttrValue* a = n.attrs.find("perm");
  Axes p = a ? std::get<std::vector<int64_t>>(*a) : Axes{};
  if (p.empty())
    for (int i = rank - 1; i >= 0; --i) p.push_back(i);
  return p;
}

Axes inverse(const Axes& p) {
  Axes q(p.size());
  for (size_t i = 0; i < p.size(); ++i) q[size_t(p[i])] = int64_t(i);
  return q;
}

bool is_identity(const Axes& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != int64_t(i)) return false;
  return true;
}

Axes ints_attr(const Node& n, const char* name) {
  if (const AttrValue* a = n.attrs.find(name)) return std::get<std::vector<int64_t>>(*a);
  for (const AttrSpec& s : n.def().attrs)
    if (s.name == name && !s.required) return std::get<std::vector<int64_t>>(s.default_value);
  return {};
}

// Elementwise ops whose result for an element depends only on that element's operands.
bool layout_free_elementwise(OpId op) {
  switch (op) {
    case OpId::Neg: case OpId::Abs: case OpId::Sign: case OpId::Sqrt: case OpId::Rsqrt:
    case OpId::Square: case OpId::Relu: case OpId::Floor: case OpId::Ceil: case OpId::Round:
    case OpId::LogicalNot: case OpId::Cast: case OpId::Identity: case OpId::StopGradient:
    case OpId::Add: case OpId::Sub: case OpId::Mul: case OpId::Div: case OpId::Maximum:
    case OpId::Minimum: case OpId::Equal: case OpId::NotEqual: case OpId::Less:
    case OpId::LessEqual: case OpId::Greater: case OpId::GreaterEqual: case OpId::LogicalAnd:
    case OpId::LogicalOr: case OpId::Where:
      return true;
    default:
      return false;
  }
}

// A transpose that moves only size-1 dims keeps the elements in order: it is a reshape.
bool moves_only_unit_dims(const Shape& in, const Axes& p) {
  int64_t last = -1;
  for (int64_t d : p) {
    if (in[int(d)] == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

// How one user of t is rewritten onto t's input.
struct Plan {
  int user = -1;
  Node node;            // u' (inputs and attributes renumbered); unused for transpose users
  Axes out_perm;        // the transpose that restores u's layout (identity: none)
  std::vector<std::pair<size_t, Tensor>> consts;  // input slot -> constant to add for u'
  std::vector<int> partners;                       // transposes by p whose inputs u' takes
};

struct Sinker {
  Graph& g;
  std::vector<ValueRef>* keep;
  std::vector<char> consumed;  // nodes this pass emptied (removed at the end when unused)
  int changes = 0;

  // Where u = user of t's value tv, on t's input x with perm p: the plan, or nothing.
  std::optional<Plan> plan(int u, ValueRef tv, ValueRef x, const Axes& p) {
    const Node& n = g.node(u);
    if (passes::is_stateful(n) || n.outputs.size() != 1) return std::nullopt;
    const int r = int(p.size());
    Plan pl{u, n, p, {}, {}};
    if (n.op == OpId::Transpose) {
      const Axes p2 = perm_of(n, r);
      Axes q(size_t(r), 0);
      for (int i = 0; i < r; ++i) q[size_t(i)] = p[size_t(p2[size_t(i)])];
      pl.out_perm = q;
      return pl;
    }
    // Every input: t itself, a partner transpose by p, a rank-0 value, or a constant.
    auto map_inputs = [&](bool allow_scalars) {
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const ValueRef v = n.inputs[k];
        if (v == tv) {
          pl.node.inputs[k] = x;
          continue;
        }
        const Node& src = g.node(v.node);
        const TensorType& vt = g.type(v);
        if (src.op == OpId::Transpose && src.control_inputs.empty() && vt.shape.rank() == r &&
            perm_of(src, r) == p) {
          pl.node.inputs[k] = src.inputs[0];
          if (std::find(pl.partners.begin(), pl.partners.end(), v.node) == pl.partners.end())
            pl.partners.push_back(v.node);
          continue;
        }
        if (allow_scalars && vt.shape.rank() == 0) continue;
        const Tensor* c = const_value(g, v);
        if (!c || c->rank() > r || (!allow_scalars && c->rank() != r)) return false;
        Shape full(std::vector<int64_t>(size_t(r - c->rank()), 1));
        for (int d = 0; d < c->rank(); ++d) full.push_back(c->dim(d));
        pl.consts.emplace_back(k, transpose(reshape(*c, full), inverse(p)));
      }
      return true;
    };
    if (layout_free_elementwise(n.op)) {
      if (n.outputs[0].shape.rank() != r || !map_inputs(true)) return std::nullopt;
      return pl;
    }
    switch (n.op) {
      case OpId::Concat: {
        const AttrValue* a = n.attrs.find("axis");
        int64_t axis = a ? std::get<int64_t>(*a) : 0;
        if (axis < 0) axis += r;
        if (axis < 0 || axis >= r || !map_inputs(false)) return std::nullopt;
        pl.node.attrs.set("axis", p[size_t(axis)]);
        return pl;
      }
      case OpId::Pad: {
        const Axes pads = ints_attr(n, "paddings");
        if (int(pads.size()) != 2 * r) return std::nullopt;
        Axes q(pads.size());
        for (int k = 0; k < r; ++k) {
          q[size_t(2 * p[size_t(k)])] = pads[size_t(2 * k)];
          q[size_t(2 * p[size_t(k)] + 1)] = pads[size_t(2 * k + 1)];
        }
        pl.node.inputs[0] = x;
        pl.node.attrs.set("paddings", q);
        return pl;
      }
      case OpId::Slice: {
        const Axes begin = ints_attr(n, "begin"), size = ints_attr(n, "size");
        if (int(begin.size()) != r || int(size.size()) != r) return std::nullopt;
        Axes b(p.size()), s(p.size());
        for (int k = 0; k < r; ++k) {
          b[size_t(p[size_t(k)])] = begin[size_t(k)];
          s[size_t(p[size_t(k)])] = size[size_t(k)];
        }
        pl.node.inputs[0] = x;
        pl.node.attrs.set("begin", b);
        pl.node.attrs.set("size", s);
        return pl;
      }
      case OpId::ReduceMax:
      case OpId::ReduceMin: {  // exact in any order (NaN propagates either way)
        Axes axes = ints_attr(n, "axes");
        if (axes.empty())
          for (int k = 0; k < r; ++k) axes.push_back(k);
        std::vector<char> reduced(size_t(r), 0);  // over x's dims
        Axes mapped;
        for (int64_t a : axes) {
          const int64_t k = a < 0 ? a + r : a;
          if (k < 0 || k >= r) return std::nullopt;
          reduced[size_t(p[size_t(k)])] = 1;
        }
        for (int d = 0; d < r; ++d)
          if (reduced[size_t(d)]) mapped.push_back(d);
        const AttrValue* kd = n.attrs.find("keepdims");
        const bool keepdims = kd && std::get<bool>(*kd);
        pl.node.inputs[0] = x;
        pl.node.attrs.set("axes", mapped);
        if (!keepdims) {
          // Kept dims of u' in x's order; u's in t's order.
          std::vector<int64_t> pos(size_t(r), -1);
          int64_t next = 0;
          for (int d = 0; d < r; ++d)
            if (!reduced[size_t(d)]) pos[size_t(d)] = next++;
          Axes q;
          for (int k = 0; k < r; ++k)
            if (!reduced[size_t(p[size_t(k)])]) q.push_back(pos[size_t(p[size_t(k)])]);
          pl.out_perm = q;
        }
        return pl;
      }
      default:
        return std::nullopt;
    }
  }

  // The type u' produces: u's type with the dims put back through out_perm.
  static TensorType unpermuted(const TensorType& t, const Axes& out_perm) {
    TensorType r = t;
    for (size_t k = 0; k < out_perm.size(); ++k) r.shape[int(out_perm[k])] = t.shape[int(k)];
    return r;
  }

  // Tries to move transpose t below all its users; returns the new transposes to follow.
  std::vector<int> sink(int t) {
    BuildScopeGuard eager(nullptr);  // transposed constants are computed now, even while tracing
    const Node& tn = g.node(t);
    if (tn.op != OpId::Transpose || !tn.control_inputs.empty() || passes::is_stateful(tn)) return {};
    Uses uses(g, keep);
    if (uses.data[size_t(t)].empty() || !uses.control[size_t(t)].empty()) return {};
    const ValueRef x = tn.inputs[0];
    const Shape& xs = g.type(x).shape;
    const int r = xs.rank();
    const Axes p = perm_of(tn, r);
    if (int(p.size()) != r) return {};
    if (is_identity(p)) {
      passes::replace_uses(g, {t, 0}, x, keep);
      consumed[size_t(t)] = 1;
      ++changes;
      return {};
    }
    // Only size-1 dims move: a reshape (a view) does the same.
    const Shape& ys = tn.outputs[0].shape;
    int unknown = 0, empty = 0;
    for (int d = 0; d < r; ++d) unknown += ys[d] < 0, empty += ys[d] == 0;
    if (moves_only_unit_dims(xs, p) && (unknown == 0 || (unknown == 1 && !empty))) {
      Node& m = g.mutable_node(t);
      m.op = OpId::Reshape;
      m.attrs = Attrs{{"shape", ys.to_vector()}};
      ++changes;
      return {};
    }
    // A constant's only reader: transpose it once, now. Constant folding leaves big ones
    // alone (its cap is about memory), but this replaces the constant rather than adding one,
    // and runs where ONNX import transposes every conv's weights.
    if (const Tensor* c = const_value(g, x);
        c && uses.data[size_t(x.node)].size() == 1 && !uses.external[size_t(x.node)] && uses.control[size_t(x.node)].empty()) {
      Tensor folded = transpose(*c, p);
      Node& m = g.mutable_node(t);
      m.op = OpId::Const;
      m.inputs.clear();
      m.attrs = Attrs{{"value", folded}};
      consumed[size_t(x.node)] = 1;
      ++changes;
      return {};
    }
    if (uses.external[size_t(t)]) return {};
    std::vector<int> users = uses.data[size_t(t)];
    std::sort(users.begin(), users.end());
    users.erase(std::unique(users.begin(), users.end()), users.end());
    std::vector<Plan> plans;
    for (int u : users) {
      std::optional<Plan> pl = plan(u, {t, 0}, x, p);
      if (!pl) return {};
      plans.push_back(std::move(*pl));
    }
    // Transposes added against transposes removed: t, partners left without users, and
    // transpose users that cancel.
    int added = 0, removed = 1;
    std::vector<int> partner_uses(size_t(g.num_nodes()), 0);
    for (const Plan& pl : plans) {
      const bool is_transpose = g.node(pl.user).op == OpId::Transpose;
      if (is_transpose && is_identity(pl.out_perm)) ++removed;
      if (!is_transpose && !is_identity(pl.out_perm)) ++added;
      for (int s : pl.partners)
        for (const ValueRef& v : g.node(pl.user).inputs) partner_uses[size_t(s)] += v.node == s;
    }
    for (int s = 0; s < g.num_nodes(); ++s)
      if (partner_uses[size_t(s)] && partner_uses[size_t(s)] == int(uses.data[size_t(s)].size()) &&
          !uses.external[size_t(s)] && uses.control[size_t(s)].empty())
        ++removed;
    if (added > removed) return {};

    std::vector<int> next;
    for (Plan& pl : plans) {
      const int u = pl.user;
      if (g.node(u).op == OpId::Transpose) {
        if (is_identity(pl.out_perm)) {
          passes::replace_uses(g, {u, 0}, x, keep);
          passes::replace_control(g, u, x.node);
          consumed[size_t(u)] = 1;
        } else {
          Node& m = g.mutable_node(u);
          m.inputs[0] = x;
          m.attrs.set("perm", pl.out_perm);
          next.push_back(u);
        }
        continue;
      }
      for (auto& [slot, c] : pl.consts)
        pl.node.inputs[slot] = passes::add_const(g, c, g.node(u).name + "/transposed", g.node(u).device);
      pl.node.name = g.unique_name(g.node(u).name + "/sunk");
      pl.node.outputs = {unpermuted(g.node(u).outputs[0], pl.out_perm)};
      const ValueRef moved{g.add_node(std::move(pl.node)), 0};
      consumed.resize(size_t(g.num_nodes()), 0);
      if (is_identity(pl.out_perm)) {
        passes::replace_uses(g, {u, 0}, moved, keep);
        passes::replace_control(g, u, moved.node);
        consumed[size_t(u)] = 1;
        continue;
      }
      // u becomes the transpose in place; its control inputs went to u' with the node copy.
      Node& m = g.mutable_node(u);
      m.op = OpId::Transpose;
      m.inputs = {moved};
      m.attrs = Attrs{{"perm", pl.out_perm}};
      m.control_inputs.clear();
      next.push_back(u);
    }
    consumed.resize(size_t(g.num_nodes()), 0);
    consumed[size_t(t)] = 1;
    for (const Plan& pl : plans)
      for (int s : pl.partners) consumed[size_t(s)] = 1;
    ++changes;
    return next;
  }
};

}  // namespace

int sink_transposes(Graph& g, std::vector<ValueRef>* keep) {
  Sinker s{g, keep, std::vector<char>(size_t(g.num_nodes()), 0)};
  std::vector<int> work;
  for (int id : g.topological_order())
    if (g.node(id).op == OpId::Transpose) work.push_back(id);
  // Front to back: an upstream transpose sinks first and meets the ones below it.
  for (size_t i = 0; i < work.size(); ++i) {
    std::vector<int> next = s.sink(work[i]);
    work.insert(work.end(), next.begin(), next.end());
  }
  if (!s.changes) return 0;
  // Consumed nodes (moved transposes, emptied partners, users turned into u') go once unused.
  // Users first, so that a chain of them goes at once.
  passes::Uses uses(g, keep);
  std::vector<char> dead(size_t(g.num_nodes()), 0);
  std::vector<int> order = g.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const size_t i = size_t(*it);
    if (!s.consumed[i] || uses.external[i] || !uses.control[i].empty()) continue;
    dead[i] = std::all_of(uses.data[i].begin(), uses.data[i].end(), [&](int u) { return dead[size_t(u)] != 0; });
  }
  passes::remove_nodes(g, dead, keep);
  return s.changes;
}

}  // namespace deepflow
