// SPDX-License-Identifier: Apache-2.0
// fuse_conv_chain: groups of fused_conv2d nodes that feed only each other become one
// fused_conv_chain (ops/conv_chain.cpp), whose CPU kernel keeps the values between them in
// oneDNN's blocked layout; expand_conv_chains undoes it (the ONNX exporter writes convs).
//
// A group grows from a conv to the convs that read its result as input or summand, but only
// through results that nothing else reads: so each group has one result used outside (its
// last node) and, as checked below, one value from outside. With a single outside input and
// no result leaving early, the chain cannot sit on a cycle through other nodes.
#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "deepflow/graph/passes.h"
#include "deepflow/graph/passes/rewrite.h"
#include "deepflow/ops/conv_chain.h"

namespace deepflow {

using passes::Uses;
using passes::attr_or;

namespace {

bool chainable(const Graph& g, const Uses& uses, int id) {
  const Node& n = g.node(id);
  return n.op == OpId::FusedConv2D && n.outputs[0].dtype == DType::Float32 &&
         attr_or<bool>(n, "constant_filter", false) && n.control_inputs.empty() && uses.control[size_t(id)].empty();
}

FusedConvOptions options_of(const Node& n) {
  FusedConvOptions o;
  o.strides = attr_or<std::vector<int64_t>>(n, "strides", {1, 1});
  o.padding = attr_or<std::string>(n, "padding", "VALID");
  o.explicit_paddings = attr_or<std::vector<int64_t>>(n, "explicit_paddings", {});
  o.dilations = attr_or<std::vector<int64_t>>(n, "dilations", {1, 1});
  o.activation = attr_or<std::string>(n, "activation", "");
  o.alpha = attr_or<double>(n, "alpha", 0.2);
  o.clip_min = attr_or<double>(n, "clip_min", 0.0);
  o.clip_max = attr_or<double>(n, "clip_max", 6.0);
  return o;
}

// The values a fused_conv2d node reads as activations: its input, and its summand if any.
std::vector<ValueRef> activation_inputs(const Node& n) {
  std::vector<ValueRef> v{n.inputs[0]};
  if (attr_or<bool>(n, "has_summand", false)) v.push_back(n.inputs.back());
  return v;
}

int find_root(std::vector<int>& parent, int i) {
  while (parent[size_t(i)] != i) i = parent[size_t(i)] = parent[size_t(parent[size_t(i)])];
  return i;
}

}  // namespace

int fuse_conv_chain(Graph& g, std::vector<ValueRef>* keep) {
  Uses uses(g, keep);
  const int n = g.num_nodes();
  std::vector<char> ok(size_t(n), 0);
  for (int id = 0; id < n; ++id) ok[size_t(id)] = chainable(g, uses, id);
  // A producer joins its readers when every use of its result is a chainable conv's.
  auto feeds_only_chain = [&](int p) {
    if (!ok[size_t(p)] || uses.external[size_t(p)]) return false;
    return std::all_of(uses.data[size_t(p)].begin(), uses.data[size_t(p)].end(),
                       [&](int u) { return ok[size_t(u)] != 0; });
  };
  std::vector<int> parent(static_cast<size_t>(n));
  std::iota(parent.begin(), parent.end(), 0);
  for (int id = 0; id < n; ++id) {
    if (!ok[size_t(id)]) continue;
    for (ValueRef v : activation_inputs(g.node(id)))
      if (feeds_only_chain(v.node) && g.node(v.node).device == g.node(id).device)
        parent[size_t(find_root(parent, v.node))] = find_root(parent, id);
  }
  std::vector<std::vector<int>> groups(static_cast<size_t>(n));
  for (int id : g.topological_order())
    if (ok[size_t(id)]) groups[size_t(find_root(parent, id))].push_back(id);
  std::vector<char> dead(size_t(n), 0);
  std::vector<int> value_of(size_t(n), -1);  // a member of the group at hand -> its value index (1-based)
  int made = 0;
  for (const std::vector<int>& members : groups) {
    if (members.size() < 2) continue;
    for (size_t k = 0; k < members.size(); ++k) value_of[size_t(members[k])] = int(k) + 1;
    struct Reset {  // value_of is -1 again for the next group, however this one ends
      std::vector<int>& v;
      const std::vector<int>& members;
      ~Reset() {
        for (int m : members) v[size_t(m)] = -1;
      }
    } reset{value_of, members};
    // One value from outside; only the last member's result leaves the group.
    std::optional<ValueRef> outside;
    bool valid = true;
    for (size_t k = 0; k < members.size() && valid; ++k) {
      for (ValueRef v : activation_inputs(g.node(members[k])))
        if (value_of[size_t(v.node)] < 0) {
          valid = !outside || *outside == v;
          outside = v;
        }
      const int m = members[k];
      if (k + 1 < members.size())
        valid = valid && !uses.external[size_t(m)] &&
                std::all_of(uses.data[size_t(m)].begin(), uses.data[size_t(m)].end(),
                            [&](int u) { return value_of[size_t(u)] > 0; });
    }
    if (!valid || !outside) continue;
    // A transpose NCHW -> NHWC that only the chain reads is read through (data_format NCHW).
    ValueRef input = *outside;
    std::string data_format = "NHWC";
    int transpose = -1;
    const Node& t = g.node(input.node);
    if (t.op == OpId::Transpose && t.device == g.node(members[0]).device && t.control_inputs.empty() &&
        uses.control[size_t(input.node)].empty() &&
        !uses.external[size_t(input.node)] &&
        attr_or<std::vector<int64_t>>(t, "perm", {}) == std::vector<int64_t>{0, 2, 3, 1} &&
        std::all_of(uses.data[size_t(input.node)].begin(), uses.data[size_t(input.node)].end(),
                    [&](int u) { return value_of[size_t(u)] > 0; })) {
      transpose = input.node;
      input = t.inputs[0];
      data_format = "NCHW";
    }
    Node chain;
    chain.op = OpId::FusedConvChain;
    chain.inputs = {input};
    std::vector<int64_t> ints;
    std::vector<double> floats;
    auto index_of = [&](ValueRef v) { return value_of[size_t(v.node)] > 0 ? value_of[size_t(v.node)] : 0; };
    for (int m : members) {
      const Node& c = g.node(m);
      const bool has_bias = attr_or<bool>(c, "has_bias", false);
      const bool has_summand = attr_or<bool>(c, "has_summand", false);
      conv_chain::encode(index_of(c.inputs[0]), has_summand ? index_of(c.inputs.back()) : -1, has_bias, options_of(c),
                         ints, floats);
      chain.inputs.push_back(c.inputs[1]);
      if (has_bias) chain.inputs.push_back(c.inputs[2]);
    }
    // A transpose NHWC -> NCHW of the result, its only user, is written by the chain.
    const int tail = members.back();
    int root = tail;
    std::string output_format = "NHWC";
    if (uses.single_use(tail)) {
      const int u = uses.data[size_t(tail)][0];
      const Node& o = g.node(u);
      if (o.op == OpId::Transpose && o.control_inputs.empty() && o.device == g.node(tail).device &&
          attr_or<std::vector<int64_t>>(o, "perm", {}) == std::vector<int64_t>{0, 3, 1, 2}) {
        root = u;
        output_format = "NCHW";
      }
    }
    chain.attrs = Attrs{{"layers", ints}, {"layer_params", floats}, {"data_format", data_format},
                        {"output_format", output_format}};
    std::vector<int> parts(members.begin(), members.end());
    parts.push_back(transpose);
    passes::fuse_in_place(g, root, std::move(chain), parts, dead);
    ++made;
  }
  if (made) passes::remove_nodes(g, dead, keep);
  return made;
}

int expand_conv_chains(Graph& g) {
  std::vector<int> chains;
  for (int id = 0; id < g.num_nodes(); ++id)
    if (g.node(id).op == OpId::FusedConvChain) chains.push_back(id);
  if (chains.empty()) return 0;
  std::vector<char> dead(size_t(g.num_nodes()), 0);
  for (int id : chains) {
    const Node chain = g.node(id);  // a copy: add_node may move the node array
    const auto& ints = std::get<std::vector<int64_t>>(*chain.attrs.find("layers"));
    const auto& floats = std::get<std::vector<double>>(*chain.attrs.find("layer_params"));
    const std::vector<conv_chain::Layer> layers = conv_chain::decode(ints, floats, int(chain.inputs.size()));
    auto add = [&](Node n) {
      n.device = chain.device;
      n.control_inputs = chain.control_inputs;
      n.outputs = infer_node(g, n);
      return ValueRef{g.add_node(std::move(n)), 0};
    };
    std::vector<ValueRef> values{chain.inputs[0]};
    if (attr_or<std::string>(chain, "data_format", "NHWC") == "NCHW") {
      Node t;
      t.op = OpId::Transpose;
      t.name = chain.name + "/to_nhwc";
      t.inputs = {chain.inputs[0]};
      t.attrs = Attrs{{"perm", std::vector<int64_t>{0, 2, 3, 1}}};
      values[0] = add(std::move(t));
    }
    for (size_t i = 0; i < layers.size(); ++i) {
      const conv_chain::Layer& l = layers[i];
      Node c;
      c.op = OpId::FusedConv2D;
      c.name = chain.name + "/layer_" + std::to_string(i);
      c.inputs = {values[size_t(l.src)], chain.inputs[size_t(l.filters)]};
      if (l.bias >= 0) c.inputs.push_back(chain.inputs[size_t(l.bias)]);
      if (l.summand >= 0) c.inputs.push_back(values[size_t(l.summand)]);
      c.attrs = conv_chain::fused_attrs(l);
      values.push_back(add(std::move(c)));
    }
    if (attr_or<std::string>(chain, "output_format", "NHWC") == "NCHW") {
      Node t;
      t.op = OpId::Transpose;
      t.name = chain.name + "/to_nchw";
      t.inputs = {values.back()};
      t.attrs = Attrs{{"perm", std::vector<int64_t>{0, 3, 1, 2}}};
      values.push_back(add(std::move(t)));
    }
    passes::replace_uses(g, {id, 0}, values.back(), nullptr);
    passes::replace_control(g, id, values.back().node);
    dead.resize(size_t(g.num_nodes()), 0);
    dead[size_t(id)] = 1;
  }
  passes::remove_nodes(g, dead, nullptr);
  return int(chains.size());
}

}  // namespace deepflow
