// SPDX-License-Identifier: Apache-2.0
// Fusion: matmul + bias + activation, conv + batch-norm folding, elementwise chains.
#include <algorithm>
#include <map>

#include "deepflow/graph/passes.h"
#include "deepflow/ops/fused_program.h"
#include "deepflow/graph/passes/rewrite.h"
#include "deepflow/ops/ops.h"

namespace deepflow {

using passes::const_value;
using passes::Uses;

namespace {

bool fusable_float(DType t) { return t == DType::Float32 || t == DType::Float64; }

// float32 fuses only where the oneDNN kernel runs (b one matrix and a not transposed, or
// equal batch dims), so fusion never trades a fast matmul for the reference loop; float64
// matmuls run the reference loop either way.
bool fast_kernel_fits(const Graph& g, const Node& m) {
  if (m.outputs[0].dtype != DType::Float32) return true;
  const Shape &a = g.type(m.inputs[0]).shape, &b = g.type(m.inputs[1]).shape;
  const Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const AttrValue* ta = m.attrs.find("transpose_a");
  const bool transpose_a = ta && std::get<bool>(*ta);
  if (bb.is_fully_defined() && bb.num_elements() == 1 && !transpose_a) return true;
  return ba.is_fully_defined() && ba == bb;
}

}  // namespace

int fuse_matmul(Graph& g, std::vector<ValueRef>* keep) {
  Uses uses(g, keep);
  std::vector<char> dead(size_t(g.num_nodes()), 0);
  int fused = 0;
  for (int mm : g.topological_order()) {
    const Node& m = g.node(mm);
    if (m.op != OpId::MatMul || dead[size_t(mm)] || !fusable_float(m.outputs[0].dtype)) continue;
    const TensorType& mt = m.outputs[0];
    const int64_t n = mt.shape[mt.shape.rank() - 1];
    if (!fast_kernel_fits(g, m)) continue;
    int last = mm, add = -1, act = -1;
    ValueRef bias{-1, 0};
    // matmul -> add(bias [n]) with the matmul's type unchanged.
    if (uses.single_use(mm)) {
      const int u = uses.data[size_t(mm)][0];
      const Node& a = g.node(u);
      if (a.op == OpId::Add && a.outputs[0] == mt && a.inputs[0] != a.inputs[1]) {
        const ValueRef other = a.inputs[0].node == mm ? a.inputs[1] : a.inputs[0];
        const TensorType& bt = g.type(other);
        if (bt.dtype == mt.dtype && bt.shape.rank() == 1 && n >= 0 && bt.shape[0] == n) {
          add = u;
          bias = other;
          last = u;
        }
      }
    }
    // -> relu / tanh / sigmoid.
    if (uses.single_use(last)) {
      const int u = uses.data[size_t(last)][0];
      const OpId op = g.node(u).op;
      if (op == OpId::Relu || op == OpId::Tanh || op == OpId::Sigmoid) act = u;
    }
    if (add < 0 && act < 0) continue;
    const int root = act >= 0 ? act : add;
    Node f;
    f.op = OpId::FusedMatMul;
    f.inputs = {m.inputs[0], m.inputs[1]};
    if (add >= 0) f.inputs.push_back(bias);
    const AttrValue* ta = m.attrs.find("transpose_a");
    const AttrValue* tb = m.attrs.find("transpose_b");
    f.attrs = Attrs{{"transpose_a", ta ? std::get<bool>(*ta) : false},
                    {"transpose_b", tb ? std::get<bool>(*tb) : false},
                    {"activation", act >= 0 ? std::string(op_def(g.node(act).op).name) : std::string()},
                    {"has_bias", add >= 0}};
    passes::fuse_in_place(g, root, std::move(f), {mm, add, act}, dead);
    ++fused;
  }
  if (fused) passes::remove_nodes(g, dead, keep);
  return fused;
}

namespace {

// The constant operand of binary node n beside v as a float64 [cout] vector, when it is a
// per-output-channel (or scalar) constant of n's dtype; else undefined.
Tensor per_channel_operand(const Graph& g, const Node& n, int v, int64_t cout) {
  if (n.inputs.size() != 2 || n.inputs[0].node == n.inputs[1].node) return Tensor();
  const ValueRef other = n.inputs[0].node == v ? n.inputs[1] : n.inputs[0];
  const Tensor* c = const_value(g, other);
  if (!c || other.node == v || (c->size() != cout && c->size() != 1) || c->dtype() != n.outputs[0].dtype)
    return Tensor();
  for (int i = 0; i + 1 < c->rank(); ++i) {
    if (c->dim(i) != 1) return Tensor();
  }
  return broadcast_to(cast(reshape(*c, {c->size()}), DType::Float64), {cout});
}

}  // namespace

int fold_batch_norm(Graph& g, std::vector<ValueRef>* keep) {
  Uses uses(g, keep);
  std::vector<char> dead(size_t(g.num_nodes()), 0);
  int folded = 0;
  BuildScopeGuard eager(nullptr);  // the new constants are computed now
  for (int cv : g.topological_order()) {
    const Node& conv = g.node(cv);
    if (conv.op != OpId::Conv2D || dead[size_t(cv)] || !uses.single_use(cv)) continue;
    const DType dt = conv.outputs[0].dtype;
    const Tensor* w = const_value(g, conv.inputs[1]);
    if (!w || !fusable_float(dt)) continue;
    const int64_t cout = w->dim(3);
    const int user = uses.data[size_t(cv)][0];
    const Node& u = g.node(user);
    Tensor scale, bias;  // per output channel, float64
    int end = user;      // the node whose result the folded conv (+ bias) gives
    std::vector<int> absorbed;
    if (u.op == OpId::Add && u.outputs[0] == conv.outputs[0] && uses.single_use(user)) {
      // Keras 3's decomposed batch norm after a biased conv: (conv + b) * s (+ t) is
      // conv(filter * s) + (b * s + t).
      const Tensor b = per_channel_operand(g, u, cv, cout);
      const int m = uses.data[size_t(user)][0];
      const Node& mn = g.node(m);
      if (!b.defined() || mn.op != OpId::Mul || mn.outputs[0] != conv.outputs[0]) continue;
      const Tensor sc = per_channel_operand(g, mn, user, cout);
      if (!sc.defined()) continue;
      scale = sc;
      bias = b * sc;
      absorbed = {user};
      end = m;
      if (uses.single_use(m)) {
        const int a2 = uses.data[size_t(m)][0];
        const Node& an = g.node(a2);
        const Tensor t = an.op == OpId::Add && an.outputs[0] == conv.outputs[0] ? per_channel_operand(g, an, m, cout)
                                                                                : Tensor();
        if (t.defined()) {
          bias = bias + t;
          absorbed.push_back(m);
          end = a2;
        }
      }
    } else if (u.op == OpId::FusedBatchNorm && u.inputs[0].node == cv) {
      const AttrValue* tr = u.attrs.find("is_training");
      if (!tr || std::get<bool>(*tr)) continue;  // the default is training
      // The statistics outputs must be unused (they are copies of mean and variance).
      bool stats_used = uses.external[size_t(user)] > 0;
      for (int x : uses.data[size_t(user)])
        for (const ValueRef& v : g.node(x).inputs) stats_used |= v.node == user && v.index > 0;
      const Tensor *sc = const_value(g, u.inputs[1]), *off = const_value(g, u.inputs[2]),
                   *mean = const_value(g, u.inputs[3]), *var = const_value(g, u.inputs[4]);
      if (stats_used || !sc || !off || !mean || !var || sc->dtype() != dt) continue;
      const AttrValue* e = u.attrs.find("epsilon");
      const double eps = e ? std::get<double>(*e) : 1e-3;
      auto f64 = [](const Tensor& t) { return cast(t, DType::Float64); };
      scale = f64(*sc) * rsqrt(f64(*var) + eps);
      bias = f64(*off) - f64(*mean) * scale;
    } else if (u.op == OpId::Mul && u.outputs[0] == conv.outputs[0]) {
      // What batch_normalization becomes once folded: conv * inv (+ shift, left as an add).
      scale = per_channel_operand(g, u, cv, cout);
      if (!scale.defined()) continue;
    } else {
      continue;
    }
    Tensor new_w = cast(cast(*w, DType::Float64) * scale, dt);
    const std::string device = g.node(cv).device;
    ValueRef wv = passes::add_const(g, new_w, g.node(cv).name + "/folded_filter", device);
    dead.push_back(0);
    Node c2 = g.node(cv);
    c2.inputs[1] = wv;
    c2.name = g.node(user).name;
    passes::merge_control(c2.control_inputs, g.node(user).control_inputs);
    if (bias.defined()) {
      // conv2d stays (with the new filter); the batch norm becomes conv + bias in place.
      ValueRef bv = passes::add_const(g, cast(bias, dt), g.node(end).name + "/folded_bias", device);
      dead.push_back(0);
      g.mutable_node(cv).inputs[1] = wv;
      Node a;
      a.op = OpId::Add;
      a.inputs = {{cv, 0}, bv};
      a.name = g.node(end).name;
      a.outputs = {g.node(end).outputs[0]};
      a.device = g.node(end).device;
      a.control_inputs = g.node(end).control_inputs;
      for (int x : absorbed) {
        passes::merge_control(a.control_inputs, g.node(x).control_inputs);
        passes::replace_control(g, x, end);
        dead[size_t(x)] = 1;
      }
      g.mutable_node(end) = std::move(a);
    } else {
      // The multiply becomes the conv with the scaled filter; the old conv goes.
      g.mutable_node(user) = std::move(c2);
      passes::replace_control(g, cv, user);
      dead[size_t(cv)] = 1;
    }
    ++folded;
  }
  if (folded) passes::remove_nodes(g, dead, keep);
  return folded;
}

namespace {

// A float32 elementwise node over one fully known shape, scalars and last-dim rows.
bool elementwise_member(const Graph& g, const Node& n, const Shape& s) {
  if (fused::arity(n.op) == 0 || n.outputs.size() != 1 || n.outputs[0].dtype != DType::Float32 ||
      n.outputs[0].shape != s || passes::is_stateful(n))
    return false;
  for (const ValueRef& v : n.inputs) {
    const TensorType& t = g.type(v);
    if (t.dtype != DType::Float32) return false;
    const bool row = t.shape.rank() == 1 && s.rank() >= 1 && t.shape[0] == s[s.rank() - 1];
    if (t.shape != s && t.shape.rank() != 0 && !row) return false;
  }
  return true;
}

struct ChainBuilder {
  const Graph& g;
  const Uses& uses;
  const Shape& shape;
  std::vector<char>& absorbed;
  std::vector<ValueRef> inputs;
  std::vector<int> members;
  std::string program;

  void leaf(ValueRef v) {
    const Tensor* c = const_value(g, v);
    if (c && c->rank() == 0) {
      program += fused::immediate_token(c->flat(0)) + " ";
      return;
    }
    auto it = std::find(inputs.begin(), inputs.end(), v);
    const int k = int(it - inputs.begin());
    if (it == inputs.end()) inputs.push_back(v);
    program += fused::input_token(k) + " ";
  }

  // Emits node id's subtree in postfix, absorbing single-use elementwise producers.
  void emit(int id) {
    members.push_back(id);
    absorbed[size_t(id)] = 1;
    const Node& n = g.node(id);
    for (const ValueRef& v : n.inputs) {
      const Node& p = g.node(v.node);
      if (!absorbed[size_t(v.node)] && uses.single_use(v.node) && p.control_inputs.empty() &&
          g.type(v).shape == shape && elementwise_member(g, p, shape))
        emit(v.node);
      else
        leaf(v);
    }
    program += std::string(n.def().name) + " ";
  }
};

}  // namespace

int fuse_elementwise(Graph& g, std::vector<ValueRef>* keep) {
  Uses uses(g, keep);
  std::vector<char> absorbed(size_t(g.num_nodes()), 0), dead(size_t(g.num_nodes()), 0);
  std::vector<int> order = g.topological_order();
  int fused = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int root = *it;
    const Node& r = g.node(root);
    if (absorbed[size_t(root)] || r.outputs.size() != 1 || !r.outputs[0].shape.is_fully_defined() ||
        !elementwise_member(g, r, r.outputs[0].shape))
      continue;
    const Shape shape = r.outputs[0].shape;
    ChainBuilder b{g, uses, shape, absorbed, {}, {}, {}};
    b.emit(root);
    if (b.members.size() < 2) continue;  // one op: nothing to fuse
    b.program.pop_back();
    Node f;
    f.op = OpId::FusedElementwise;
    f.name = r.name;
    f.inputs = b.inputs;
    if (f.inputs.empty()) continue;  // all constants: constant folding's job
    f.attrs = Attrs{{"program", b.program}};
    f.outputs = r.outputs;
    f.device = r.device;
    f.control_inputs = r.control_inputs;
    for (int m : b.members)
      if (m != root) {
        passes::replace_control(g, m, root);
        dead[size_t(m)] = 1;
      }
    g.mutable_node(root) = std::move(f);
    ++fused;
  }
  if (fused) passes::remove_nodes(g, dead, keep);
  return fused;
}

}  // namespace deepflow
