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

struct Executor::Plan {
  std::shared_ptr<const Graph> graph;
  std::vector<ValueRef> feeds, fetches;
  std::vector<int> order;
  ExecutorOptions options;
};

Executor::Executor(std::shared_ptr<const Graph> graph, std::vector<ValueRef> feeds, std::vector<ValueRef> fetches,
                   std::vector<int> targets, ExecutorOptions options)
    : plan_(std::make_unique<Plan>()) {
  DF_CHECK(graph, "[Executor] needs a graph");
  Feeds keys;
  for (const ValueRef& v : feeds) keys.emplace_back(v, Tensor());
  plan_->order = prune(*graph, keys, fetches, targets);
  plan_->graph = std::move(graph);
  plan_->feeds = std::move(feeds);
  plan_->fetches = std::move(fetches);
  plan_->options = options;
}
Executor::~Executor() = default;
Executor::Executor(Executor&&) noexcept = default;
Executor& Executor::operator=(Executor&&) noexcept = default;

const std::vector<int>& Executor::schedule() const { return plan_->order; }

TensorList Executor::run(const TensorList& feed_values) const {
  const Graph& g = *plan_->graph;
  DF_CHECK(feed_values.size() == plan_->feeds.size(), "[Session.run] ", plan_->feeds.size(), " feeds expected, got ",
           feed_values.size());
  std::unordered_map<int64_t, Tensor> values;
  for (size_t i = 0; i < feed_values.size(); ++i) {
    const ValueRef v = plan_->feeds[i];
    const Tensor& t = feed_values[i];
    const TensorType& type = g.type(v);
    DF_CHECK(t.defined() && !t.is_symbolic(), "[Session.run] feed for '", g.value_name(v), "' is not a concrete tensor");
    DF_CHECK(t.dtype() == type.dtype && t.shape().compatible_with(type.shape), "[Session.run] feed for '",
             g.value_name(v), "' is ", dtype_name(t.dtype()), t.shape(), ", expected ", dtype_name(type.dtype),
             type.shape);
    values[value_key(v)] = t;
  }
  BuildScopeGuard eager(nullptr);  // nodes run eagerly even when called while a graph is built
  for (int id : plan_->order) {
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
  result.reserve(plan_->fetches.size());
  for (const ValueRef& v : plan_->fetches) result.push_back(values.at(value_key(v)));
  return result;
}

TensorList execute(const Graph& g, const Feeds& feeds, const std::vector<ValueRef>& fetches,
                   const std::vector<int>& targets) {
  std::vector<ValueRef> keys;
  TensorList vals;
  for (const auto& [v, t] : feeds) {
    keys.push_back(v);
    vals.push_back(t);
  }
  // A non-owning pointer: the caller's graph outlives this call.
  Executor ex(std::shared_ptr<const Graph>(&g, [](const Graph*) {}), keys, fetches, targets);
  return ex.run(vals);
}

TensorList call_graph(const Graph& g, const TensorList& inputs) {
  DF_CHECK(inputs.size() == g.inputs.size(), "[call] the function takes ", g.inputs.size(), " inputs, got ",
           inputs.size());
  Feeds feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds.emplace_back(ValueRef{g.inputs[i], 0}, inputs[i]);
  return execute(g, feeds, g.outputs);
}

}  // namespace deepflow
