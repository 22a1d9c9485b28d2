// SPDX-License-Identifier: Apache-2.0
// fuse_conv: a float32 conv2d with a constant filter, with the zero pad in front of it, the
// bias add and the activation behind it, becomes one fused_conv2d (ops/fused.cpp) that the
// CPU kernel runs as one oneDNN primitive with its filter reordered once (constant_filter).
//
// A conv2d with nothing to fuse becomes a fused_conv2d too: the cached filter alone is worth
// it (the per-call reorder was 19% of resnet18). The activations are matched as the public
// composites and the ONNX importer build them: relu, min(relu(z), hi) (relu6 when hi = 6),
// min(max(z, lo), hi) and max(z, 0) with scalar constants, sigmoid, tanh, and the where(...)
// forms of leaky_relu and elu (alpha 1).
//
// A second sweep fuses residual blocks: add(fused_conv2d(...), shortcut) and the activation
// after it become one fused_conv2d with the shortcut as its summand (oneDNN's sum post-op), so
// the add no longer reads two tensors and writes a third.
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "deepflow/graph/passes.h"
#include "deepflow/ops/fused_program.h"
#include "deepflow/graph/passes/rewrite.h"

namespace deepflow {

using passes::attr_or;
using passes::const_value;
using passes::Uses;

namespace {

// The single user of `node` when it is an `op` node that keeps `node`'s type: its other input
// is then the scalar constant returned (nullopt otherwise). Used for max(z, lo) and min(z, hi).
std::optional<double> scalar_operand(const Graph& g, const Uses& uses, int node, OpId op, int* user) {
  if (!uses.single_use(node)) return std::nullopt;
  const int u = uses.data[size_t(node)][0];
  const Node& n = g.node(u);
  if (n.op != op || n.outputs[0] != g.node(node).outputs[0] || n.inputs[0] == n.inputs[1]) return std::nullopt;
  const ValueRef other = n.inputs[0].node == node ? n.inputs[1] : n.inputs[0];
  const Tensor* c = const_value(g, other);
  if (!c || c->size() != 1 || c->dtype() != n.outputs[0].dtype) return std::nullopt;
  *user = u;
  return c->flat(0);
}

struct Activation {
  std::string name;
  double lo = 0, hi = 6;
  std::vector<int> nodes;  // in order; the last is the fused node's root
  double alpha = 0.2;
};

// The scalar constant operand of a binary node whose other operand is v, or nullopt.
std::optional<double> scalar_beside(const Graph& g, const Node& n, ValueRef v) {
  if (n.inputs.size() != 2 || (n.inputs[0] != v && n.inputs[1] != v) || n.inputs[0] == n.inputs[1])
    return std::nullopt;
  const Tensor* c = const_value(g, n.inputs[0] == v ? n.inputs[1] : n.inputs[0]);
  if (!c || c->size() != 1) return std::nullopt;
  return c->flat(0);
}

// leaky_relu and elu as where(cond(z), ...) over z's value, which every node of the pattern
// and nothing else uses: where(z > 0, z, z * a) (the composite), where(z < 0, z * a, z) (the
// importer's LeakyRelu); where(z < 0, expm1(min(z, 0)), z) and where(z < 0, exp(z) - 1, z)
// (elu with alpha 1: the composite and the importer's Elu; a "* 1" may follow).
Activation match_where(const Graph& g, const Uses& uses, int z) {
  const ValueRef zv{z, 0};
  const auto& users = uses.data[size_t(z)];
  if (users.size() != 3 || uses.external[size_t(z)] || !uses.control[size_t(z)].empty()) return {};
  int w = -1;
  for (int u : users)
    if (g.node(u).op == OpId::Where) w = u;
  if (w < 0) return {};
  const Node& wn = g.node(w);
  const int c = wn.inputs[0].node;
  const Node& cn = g.node(c);
  const bool less = cn.op == OpId::Less, greater = cn.op == OpId::Greater;
  if (wn.outputs[0] != g.node(z).outputs[0] || !uses.single_use(c) || (!less && !greater) || cn.inputs[0] != zv ||
      scalar_beside(g, cn, zv) != 0.0)
    return {};
  if (wn.inputs[greater ? 1 : 2] != zv) return {};
  const ValueRef other = wn.inputs[greater ? 2 : 1];
  const int o = other.node;
  if (!uses.single_use(o) || g.type(other) != g.type(zv)) return {};
  std::vector<int> parts{c};
  auto uses_z_once_more = [&](int node) {
    parts.push_back(node);
    std::vector<int> want = parts;
    want.push_back(w);
    std::vector<int> have = users;
    std::sort(want.begin(), want.end());
    std::sort(have.begin(), have.end());
    return want == have;
  };
  const Node& on = g.node(o);
  if (on.op == OpId::Mul) {
    if (auto a = scalar_beside(g, on, zv); a && uses_z_once_more(o)) return {"leaky_relu", 0, 6, {c, o, w}, *a};
  }
  if (!less) return {};
  // elu: an optional "* 1", then expm1(min(z, 0)) or exp(z) - 1.
  int e = o;
  std::vector<int> tail;
  if (on.op == OpId::Mul) {
    const ValueRef in = g.node(o).inputs[0];
    if (scalar_beside(g, on, in) != 1.0 || !uses.single_use(in.node)) return {};
    tail.push_back(o);
    e = in.node;
  }
  const Node& en = g.node(e);
  int inner = -1;
  if (en.op == OpId::Expm1) {
    inner = en.inputs[0].node;
    if (g.node(inner).op != OpId::Minimum || scalar_beside(g, g.node(inner), zv) != 0.0) return {};
  } else if (en.op == OpId::Sub && en.inputs[1] != zv && scalar_beside(g, en, en.inputs[0]) == 1.0) {
    inner = en.inputs[0].node;
    if (g.node(inner).op != OpId::Exp || g.node(inner).inputs[0] != zv) return {};
  } else {
    return {};
  }
  if (!uses.single_use(inner) || !uses.single_use(e) || !uses_z_once_more(inner)) return {};
  std::vector<int> nodes{c, inner, e};
  nodes.insert(nodes.end(), tail.begin(), tail.end());
  nodes.push_back(w);
  return {"elu", 0, 6, nodes, 1.0};
}

// The activation applied to node `z`'s single output, if one fits.
Activation match_activation(const Graph& g, const Uses& uses, int z) {
  Activation a = match_where(g, uses, z);
  if (!a.nodes.empty() || !uses.single_use(z)) return a;
  const int u = uses.data[size_t(z)][0];
  const Node& n = g.node(u);
  if (n.outputs[0] != g.node(z).outputs[0]) return a;
  if (n.op == OpId::Sigmoid || n.op == OpId::Tanh) return {std::string(n.def().name), 0, 6, {u}};
  int m = -1;
  if (n.op == OpId::Relu) {
    a = {"relu", 0, 6, {u}};
  } else if (auto lo = scalar_operand(g, uses, z, OpId::Maximum, &m)) {
    a = {"clip", *lo, 0, {m}};  // max(z, 0) alone is relu (both keep NaN and -0)
  } else {
    return a;
  }
  if (auto hi = scalar_operand(g, uses, a.nodes.back(), OpId::Minimum, &m); hi && *hi >= a.lo) {
    a.hi = *hi;
    a.nodes.push_back(m);
    if (a.name == "relu") a.name = a.hi == 6 ? "relu6" : "clip";
    return a;
  }
  if (a.name == "clip" && a.lo != 0) return {};
  a.name = "relu";
  return a;
}

// A zero pad of dims h_dim and h_dim + 1 only, used by one node: its paddings {top, bottom,
// left, right}, or nothing.
std::optional<std::vector<int64_t>> zero_pad_of(const Graph& g, const Uses& uses, int node, int h_dim) {
  const Node& p = g.node(node);
  if (p.op != OpId::Pad || !uses.single_use(node) || attr_or<double>(p, "constant_value", 0.0) != 0.0)
    return std::nullopt;
  const AttrValue* a = p.attrs.find("paddings");
  if (!a) return std::nullopt;
  const auto& q = std::get<std::vector<int64_t>>(*a);
  if (q.size() != 8) return std::nullopt;
  for (int d = 0; d < 4; ++d)
    if (d != h_dim && d != h_dim + 1 && (q[size_t(2 * d)] || q[size_t(2 * d + 1)])) return std::nullopt;
  const size_t h = size_t(2 * h_dim);
  return std::vector<int64_t>{q[h], q[h + 1], q[h + 2], q[h + 3]};
}

// The zero pad of the spatial dims in front of a conv's input `v`: either pad(x) itself, or
// transpose(pad(x_nchw), {0, 2, 3, 1}) as the ONNX importer writes a padded Conv, which becomes
// transpose(x_nchw) (rewritten in place). Fills `pad` (the node to remove) and `input`.
std::optional<std::vector<int64_t>> spatial_zero_pad(Graph& g, const Uses& uses, ValueRef v, int* pad,
                                                     ValueRef* input) {
  if (auto p = zero_pad_of(g, uses, v.node, 1)) {
    *pad = v.node;
    *input = g.node(v.node).inputs[0];
    return p;
  }
  const Node& t = g.node(v.node);
  if (t.op != OpId::Transpose || !uses.single_use(v.node) || !t.control_inputs.empty() ||
      attr_or<std::vector<int64_t>>(t, "perm", {}) != std::vector<int64_t>{0, 2, 3, 1})
    return std::nullopt;
  const int pn = t.inputs[0].node;
  auto p = zero_pad_of(g, uses, pn, 2);
  if (!p) return std::nullopt;
  const ValueRef x = g.node(pn).inputs[0];
  const Shape& xs = g.type(x).shape;
  Node& tm = g.mutable_node(v.node);
  tm.inputs[0] = x;
  tm.outputs[0].shape = Shape{xs[0], xs[2], xs[3], xs[1]};
  *pad = pn;
  *input = v;
  return p;
}

void set_activation(Attrs& a, const Activation& act) {
  a.set("activation", act.name);
  a.set("alpha", act.name == "leaky_relu" ? act.alpha : 0.2);
  a.set("clip_min", act.name == "clip" ? act.lo : 0.0);
  a.set("clip_max", act.name == "clip" ? act.hi : 6.0);
}

// [1, .., 1, c]: a per-channel vector as broadcasting against an NHWC value of `rank` dims.
bool channel_vector(const Shape& s, int64_t c, int rank) {
  if (s.rank() < 2 || s.rank() > rank || s[s.rank() - 1] != c) return false;
  for (int d = 0; d + 1 < s.rank(); ++d)
    if (s[d] != 1) return false;
  return true;
}

// conv2d [+ pad] [+ bias] [+ activation] -> fused_conv2d.
int fuse_conv_chains(Graph& g, std::vector<ValueRef>* keep) {
  Uses uses(g, keep);
  std::vector<char> dead(size_t(g.num_nodes()), 0);
  int fused = 0;
  for (int cv : g.topological_order()) {
    if (g.node(cv).op != OpId::Conv2D || dead[size_t(cv)] || g.node(cv).outputs[0].dtype != DType::Float32) continue;
    const Tensor* w = const_value(g, g.node(cv).inputs[1]);
    if (!w || w->rank() != 4) continue;
    const int64_t co = w->dim(3);
    const Node conv = g.node(cv);  // a copy: a bias reshaped below adds a node to g
    const TensorType& ct = conv.outputs[0];
    std::string padding = attr_or<std::string>(conv, "padding", "VALID");
    ValueRef input = conv.inputs[0];
    std::vector<int64_t> explicit_paddings;
    int pad = -1;
    if (padding == "VALID") {
      if (auto p = spatial_zero_pad(g, uses, input, &pad, &input)) {
        padding = "EXPLICIT";
        explicit_paddings = *p;
      }
    }
    // conv -> add(bias [c_out]) with the conv's type unchanged. A constant [1, .., 1, c_out]
    // (what a batch norm folded from Keras 3's decomposed arithmetic leaves) becomes [c_out].
    int add = -1, last = cv;
    ValueRef bias{-1, 0};
    if (uses.single_use(cv)) {
      const int u = uses.data[size_t(cv)][0];
      const Node& a = g.node(u);
      if (a.op == OpId::Add && a.outputs[0] == ct && a.inputs[0] != a.inputs[1]) {
        const ValueRef other = a.inputs[0].node == cv ? a.inputs[1] : a.inputs[0];  // `a` dies below
        const TensorType& bt = g.type(other);
        if (bt.dtype == ct.dtype && bt.shape.rank() == 1 && bt.shape[0] == co) {
          add = u;
          bias = other;
          last = u;
        } else if (const Tensor* b = const_value(g, other);
                   b && bt.dtype == ct.dtype && channel_vector(bt.shape, co, ct.shape.rank())) {
          add = u;
          const std::string name = a.name + "/bias", device = a.device;
          bias = passes::add_const(g, b->view(Shape{co}), name, device);
          dead.resize(size_t(g.num_nodes()), 0);
          last = u;
        }
      }
    }
    const Activation act = match_activation(g, uses, last);
    const int root = act.nodes.empty() ? last : act.nodes.back();
    Node f;
    f.op = OpId::FusedConv2D;
    f.inputs = {input, conv.inputs[1]};
    if (add >= 0) f.inputs.push_back(bias);
    f.attrs = Attrs{{"strides", attr_or<std::vector<int64_t>>(conv, "strides", {1, 1})},
                    {"padding", padding},
                    {"explicit_paddings", explicit_paddings},
                    {"dilations", attr_or<std::vector<int64_t>>(conv, "dilations", {1, 1})},
                    {"has_bias", add >= 0},
                    {"constant_filter", true}};
    set_activation(f.attrs, act);
    std::vector<int> parts{pad, cv, add};
    parts.insert(parts.end(), act.nodes.begin(), act.nodes.end());
    passes::fuse_in_place(g, root, std::move(f), parts, dead);
    ++fused;
  }
  if (fused) passes::remove_nodes(g, dead, keep);
  return fused;
}

// [?, a, b] -> [-1, c, d] with a * b = c * d, all known, keeps dim 0.
bool reshape_keeps_batch(const Shape& in, const std::vector<int64_t>& to) {
  if (in.rank() == 0 || in[0] >= 0 || to.empty() || to[0] != -1) return false;
  int64_t a = 1, b = 1;
  for (int d = 1; d < in.rank(); ++d) {
    if (in[d] < 0) return false;
    a *= in[d];
  }
  for (size_t d = 1; d < to.size(); ++d) {
    if (to[d] < 0) return false;
    b *= to[d];
  }
  return a == b && a > 0;
}

// The value whose (unknown) dim 0 v's dim 0 is known to equal: v's own, or that of the data
// input it is carried from, by ops that keep their input's batch (convs, pools, transposes,
// pads, reductions and reshapes to [-1, known dims] that leave dim 0 alone, and elementwise
// ops whose unknown-batch inputs of the output's rank all share one origin: the others are 1
// or of lower rank, and broadcast).
class BatchOrigin {
 public:
  explicit BatchOrigin(const Graph& g) : g_(g) {}

  ValueRef of(ValueRef v) {
    if (auto it = memo_.find(key(v)); it != memo_.end()) return it->second;
    ValueRef o = v;
    const Node& n = g_.node(v.node);
    const Shape& s = g_.type(v).shape;
    auto carries = [&](ValueRef in) {
      const Shape& t = g_.type(in).shape;
      return t.rank() == s.rank() && t.rank() > 0 && t[0] < 0;
    };
    switch (n.op) {
      case OpId::Conv2D: case OpId::FusedConv2D: case OpId::MaxPool: case OpId::AvgPool:
      case OpId::FusedBatchNorm: case OpId::Identity: case OpId::Cast: case OpId::StopGradient:
        if (v.index == 0 && carries(n.inputs[0])) o = of(n.inputs[0]);
        break;
      case OpId::Transpose: {
        const auto perm = attr_or<std::vector<int64_t>>(n, "perm", {});
        if (!perm.empty() && perm[0] == 0 && carries(n.inputs[0])) o = of(n.inputs[0]);
        break;
      }
      case OpId::ReduceSum: case OpId::ReduceMax: case OpId::ReduceMin: case OpId::ReduceProd: {
        const Shape& t = g_.type(n.inputs[0]).shape;
        const auto axes = attr_or<std::vector<int64_t>>(n, "axes", {});
        const bool keeps_0 = !axes.empty() && std::none_of(axes.begin(), axes.end(), [&](int64_t a) {
          return a == 0 || a == -t.rank();
        });
        if (keeps_0 && t.rank() > 0 && t[0] < 0 && s.rank() > 0) o = of(n.inputs[0]);
        break;
      }
      case OpId::Reshape:
        if (reshape_keeps_batch(g_.type(n.inputs[0]).shape, attr_or<std::vector<int64_t>>(n, "shape", {})))
          o = of(n.inputs[0]);
        break;
      case OpId::Pad: {
        const auto q = attr_or<std::vector<int64_t>>(n, "paddings", {});
        if (q.size() >= 2 && q[0] == 0 && q[1] == 0 && carries(n.inputs[0])) o = of(n.inputs[0]);
        break;
      }
      default:
        if (fused::arity(n.op) || n.op == OpId::FusedElementwise || n.op == OpId::Where) {
          std::optional<ValueRef> common;
          bool same = true;
          for (ValueRef in : n.inputs)
            if (carries(in)) {
              const ValueRef r = of(in);
              same = same && (!common || *common == r);
              common = r;
            }
          if (common && same) o = *common;
        }
    }
    memo_[key(v)] = o;
    return o;
  }

 private:
  static int64_t key(ValueRef v) { return int64_t(v.node) << 16 | v.index; }
  const Graph& g_;
  std::unordered_map<int64_t, ValueRef> memo_;
};

// a and b have one type and, at run time, one shape: dims known and equal, except dim 0,
// which may be unknown in both when it comes from one origin (the batch of an ONNX model).
bool same_shape_at_run_time(const Graph& g, BatchOrigin& origin, ValueRef a, ValueRef b) {
  const TensorType &ta = g.type(a), &tb = g.type(b);
  if (ta != tb) return false;
  for (int d = 1; d < ta.shape.rank(); ++d)
    if (ta.shape[d] < 0) return false;
  return ta.shape.rank() == 0 || ta.shape[0] >= 0 || origin.of(a) == origin.of(b);
}

// add(fused_conv2d without activation or summand, s) [+ activation] -> fused_conv2d with
// summand s, where the conv's result has no other user and s has its shape (no broadcast).
int fuse_residual_adds(Graph& g, std::vector<ValueRef>* keep) {
  Uses uses(g, keep);
  BatchOrigin origin(g);
  std::vector<char> dead(size_t(g.num_nodes()), 0);
  int fused = 0;
  for (int fc : g.topological_order()) {
    const Node& conv = g.node(fc);
    if (conv.op != OpId::FusedConv2D || dead[size_t(fc)] || !uses.single_use(fc) ||
        attr_or<bool>(conv, "has_summand", false) || !attr_or<std::string>(conv, "activation", "").empty())
      continue;
    const int a = uses.data[size_t(fc)][0];
    const Node& add = g.node(a);  // a fused node that took it over earlier has another op
    if (add.op != OpId::Add || dead[size_t(a)] || add.inputs[0] == add.inputs[1] ||
        add.outputs[0] != conv.outputs[0])
      continue;
    const ValueRef self{fc, 0}, summand = add.inputs[0] == self ? add.inputs[1] : add.inputs[0];
    // The summand cannot depend on the conv: the add is the conv's only user, data or control.
    if (!same_shape_at_run_time(g, origin, self, summand)) continue;
    const Activation act = match_activation(g, uses, a);
    const int root = act.nodes.empty() ? a : act.nodes.back();
    Node f;
    f.op = OpId::FusedConv2D;
    f.inputs = conv.inputs;
    f.inputs.push_back(summand);
    f.attrs = conv.attrs;
    f.attrs.set("has_summand", true);
    set_activation(f.attrs, act);
    std::vector<int> parts{fc, a};
    parts.insert(parts.end(), act.nodes.begin(), act.nodes.end());
    passes::fuse_in_place(g, root, std::move(f), parts, dead);
    ++fused;
  }
  if (fused) passes::remove_nodes(g, dead, keep);
  return fused;
}

}  // namespace

int fuse_conv(Graph& g, std::vector<ValueRef>* keep) {
  const int chains = fuse_conv_chains(g, keep);
  return chains + fuse_residual_adds(g, keep);
}

}  // namespace deepflow
