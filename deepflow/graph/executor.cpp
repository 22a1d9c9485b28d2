// SPDX-License-Identifier: Apache-2.0
#include "deepflow/graph/executor.h"

#include <unordered_map>

namespace deepflow {
namespace {

int64_t value_key(ValueRef v) { return (int64_t(v.node) << 20) | v.index; }

}  // namespace

std::vector<int> prune(const Graph& g, const Feeds& feeds, const std::vector<ValueRef>& fetches,
                       const std::vector<int>& targets) {
  std::unordered_map<int64_t, bool> fed;
  for (const auto& [v, t] : feeds) fed[value_key(v)] = true;
  std::vector<char> needed(size_t(g.num_nodes()), 0);
  std::vector<int> stack;
  auto need = [&](int id) {
    if (!needed[size_t(id)]) {
      needed[size_t(id)] = 1;
      stack.push_back(id);
    }
  };
  for (const ValueRef& v : fetches)
    if (!fed.count(value_key(v))) need(v.node);
  for (int t : targets) need(t);
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    const Node& n = g.node(id);
    for (const ValueRef& v : n.inputs)
      if (!fed.count(value_key(v))) need(v.node);
    for (int c : n.control_inputs) need(c);
  }
  std::vector<int> order;
  for (int id : g.topological_order())
    if (needed[size_t(id)]) order.push_back(id);
  return order;
}

TensorList execute(const Graph& g, const Feeds& feeds, const std::vector<ValueRef>& fetches,
                   const std::vector<int>& targets) {
  std::unordered_map<int64_t, Tensor> values;
  for (const auto& [v, t] : feeds) {
    const TensorType& type = g.type(v);
    DF_CHECK(t.defined() && !t.is_symbolic(), "[Session.run] feed for '", g.value_name(v), "' is not a concrete tensor");
    DF_CHECK(t.dtype() == type.dtype && t.shape().compatible_with(type.shape), "[Session.run] feed for '",
             g.value_name(v), "' is ", dtype_name(t.dtype()), t.shape(), ", expected ", dtype_name(type.dtype),
             type.shape);
    values[value_key(v)] = t;
  }
  BuildScopeGuard eager(nullptr);  // nodes run eagerly even when called while a graph is built
  for (int id : prune(g, feeds, fetches, targets)) {
    const Node& n = g.node(id);
    TensorList ins;
    ins.reserve(n.inputs.size());
    for (const ValueRef& v : n.inputs) ins.push_back(values.at(value_key(v)));
    TensorList outs;
    try {
      outs = dispatch(n.op, ins, n.attrs);
    } catch (const Error& e) {
      fail("[graph] node '", n.name, "': ", e.what());
    }
    for (size_t i = 0; i < outs.size(); ++i) values[value_key({id, int(i)})] = std::move(outs[i]);
  }
  TensorList result;
  result.reserve(fetches.size());
  for (const ValueRef& v : fetches) result.push_back(values.at(value_key(v)));
  return result;
}

TensorList call_graph(const Graph& g, const TensorList& inputs) {
  DF_CHECK(inputs.size() == g.inputs.size(), "[call] the function takes ", g.inputs.size(), " inputs, got ",
           inputs.size());
  Feeds feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds.emplace_back(ValueRef{g.inputs[i], 0}, inputs[i]);
  return execute(g, feeds, g.outputs);
}

}  // namespace deepflow
