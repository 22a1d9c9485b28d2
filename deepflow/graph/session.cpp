// SPDX-License-Identifier: Apache-2.0
#include "deepflow/graph/session.h"

#include <algorithm>

namespace deepflow {

Session::Session(std::shared_ptr<Graph> graph, SessionOptions options)
    : graph_(std::move(graph)), options_(options) {
  DF_CHECK(graph_, "[Session] needs a graph");
  DF_CHECK(options_.inter_op_threads >= 1 && options_.num_devices >= 1, "[Session] inter_op_threads (",
           options_.inter_op_threads, ") and num_devices (", options_.num_devices, ") must be >= 1");
}

ValueRef Session::resolve_value(const SessionRef& r, const char* what) const {
  if (r.is_name()) {
    const std::string& s = r.name();
    const size_t colon = s.rfind(':');
    std::string node = s;
    int index = 0;
    if (colon != std::string::npos && colon + 1 < s.size() &&
        std::all_of(s.begin() + long(colon) + 1, s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      node = s.substr(0, colon);
      index = std::stoi(s.substr(colon + 1));
    }
    const int id = graph_->find(node);
    DF_CHECK(id >= 0, "[Session.run] no node named '", node, "'");
    const int outs = int(graph_->node(id).outputs.size());
    DF_CHECK(index < outs, "[Session.run] node '", node, "' has ", outs, " outputs; ", what, " '", s,
             "' asks for output ", index);
    return {id, index};
  }
  const Tensor& t = r.tensor();
  DF_CHECK(t.is_symbolic(), "[Session.run] a ", what, " must be a symbolic tensor of the session's graph or a name, got a concrete ",
           dtype_name(t.dtype()), t.shape(), " tensor");
  DF_CHECK(graph_->owns(t), "[Session.run] the ", what, " tensor ", dtype_name(t.dtype()), t.shape(),
           " belongs to another graph");
  return graph_->value_of(t);
}

int Session::resolve_node(const SessionRef& r) const {
  if (r.is_name()) {
    std::string name = r.name();
    if (!name.empty() && name[0] == '^') name = name.substr(1);  // TF's control-input spelling
    const int id = graph_->find(name);
    if (id >= 0) return id;
    return resolve_value(r, "target").node;  // "x:0" names the node x as well
  }
  return resolve_value(r, "target").node;
}

TensorList Session::run(const std::vector<std::pair<SessionRef, Tensor>>& feeds,
                        const std::vector<SessionRef>& fetches, const std::vector<SessionRef>& targets) {
  // Feeds are sorted by value so that the same set in another order shares an executor.
  std::vector<std::pair<ValueRef, const Tensor*>> fed;
  for (const auto& [ref, t] : feeds) fed.emplace_back(resolve_value(ref, "feed"), &t);
  std::sort(fed.begin(), fed.end(), [](const auto& a, const auto& b) {
    return a.first.node != b.first.node ? a.first.node < b.first.node : a.first.index < b.first.index;
  });
  for (size_t i = 1; i < fed.size(); ++i)
    DF_CHECK(!(fed[i].first == fed[i - 1].first), "[Session.run] '", graph_->value_name(fed[i].first),
             "' is fed twice");
  std::vector<ValueRef> fetch_values;
  for (const SessionRef& r : fetches) fetch_values.push_back(resolve_value(r, "fetch"));
  std::vector<int> target_nodes;
  for (const SessionRef& r : targets) target_nodes.push_back(resolve_node(r));

  std::string key = std::to_string(graph_->num_nodes()) + "|";
  for (const auto& [v, t] : fed) key += std::to_string(v.node) + ":" + std::to_string(v.index) + ",";
  key += "|";
  for (const ValueRef& v : fetch_values) key += std::to_string(v.node) + ":" + std::to_string(v.index) + ",";
  key += "|";
  for (int t : target_nodes) key += std::to_string(t) + ",";

  std::shared_ptr<Executor> ex;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) ex = it->second;
  }
  if (!ex) {
    std::vector<ValueRef> feed_values;
    for (const auto& [v, t] : fed) feed_values.push_back(v);
    ExecutorOptions opt;
    opt.parallel = options_.parallel && options_.inter_op_threads > 1;
    opt.inter_op_threads = options_.inter_op_threads;
    opt.free_at_last_use = options_.memory_planning;
    opt.reuse_in_place = options_.memory_planning;
    opt.num_devices = options_.num_devices;
    ex = std::make_shared<Executor>(graph_, feed_values, fetch_values, target_nodes, opt);
    // A placeholder the run needs must be fed (checked once, when preparing).
    for (int id : ex->schedule()) {
      const Node& n = graph_->node(id);
      DF_CHECK(n.op != OpId::Placeholder, "[Session.run] placeholder '", n.name, "' must be fed (",
               dtype_name(n.outputs[0].dtype), n.outputs[0].shape, ")");
    }
    std::lock_guard<std::mutex> lock(mu_);
    cache_.emplace(key, ex);
  }
  TensorList values;
  values.reserve(fed.size());
  for (const auto& [v, t] : fed) values.push_back(*t);
  return ex->run(values);
}

Tensor Session::run(const SessionRef& fetch, const std::vector<std::pair<SessionRef, Tensor>>& feeds) {
  return run(feeds, {fetch})[0];
}

int Session::num_cached_executors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return int(cache_.size());
}

}  // namespace deepflow
