// SPDX-License-Identifier: Apache-2.0
// Session: graph mode's way to run a graph (tf.compat.v1.Session).
//
//   auto g = std::make_shared<Graph>();
//   Variable w(random_normal({3, 1}), "w");        // holds its value from construction
//   Tensor x, loss;
//   {
//     GraphScope scope(g);
//     x = placeholder(DType::Float32, {-1, 3}, "x");
//     loss = reduce_mean(square(matmul(x, w.value())));
//   }
//   Session sess(g);
//   TensorList out = sess.run({{x, batch}}, {loss});     // or {{"x", batch}}, {"loss:0"}
//
// run() prunes the graph to what the fetches and targets need (nothing else runs),
// checks the feeds, and caches one prepared Executor per (feeds, fetches, targets)
// signature, so a training loop prepares once.
//
// Variables: unlike TF1, a deepflow Variable holds its value from the moment it is
// constructed (eager creation), so there is no global_variables_initializer to run.
// A Variable needs a concrete initial value: constructing one from a symbolic tensor
// inside a GraphScope is an error ("[Variable] 'w' needs a concrete initial value").
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "deepflow/graph/executor.h"

namespace deepflow {

struct SessionOptions {
  /// Threads of the inter-op pool that runs independent nodes at once (1: sequential).
  int inter_op_threads = 2;
  /// Logical devices /cpu:0 .. /cpu:<num_devices-1>.
  int num_devices = 2;
  /// Run independent nodes in parallel when the graph has any.
  bool parallel = true;
  /// Free each value after its last use and reuse dying buffers in place.
  bool memory_planning = true;
};

/// A value or node of the session's graph: a symbolic tensor of that graph, or a name
/// ("x" for output 0 of node x, "x:1" for output 1). As a target it names a node.
class SessionRef {
 public:
  SessionRef(const Tensor& t) : tensor_(t) {}              // NOLINT: implicit, like TF's fetch arguments
  SessionRef(std::string name) : name_(std::move(name)) {}  // NOLINT
  SessionRef(const char* name) : name_(name) {}             // NOLINT
  const Tensor& tensor() const { return tensor_; }
  const std::string& name() const { return name_; }
  bool is_name() const { return !tensor_.defined(); }

 private:
  Tensor tensor_;
  std::string name_;
};

class Session {
 public:
  explicit Session(std::shared_ptr<Graph> graph, SessionOptions options = {});

  /// Runs the subgraph the fetches and targets need, with `feeds` replacing values;
  /// returns one tensor per fetch. Errors name the node: an unfed placeholder, a feed
  /// of the wrong dtype or shape, an unknown name, a tensor of another graph.
  TensorList run(const std::vector<std::pair<SessionRef, Tensor>>& feeds, const std::vector<SessionRef>& fetches,
                 const std::vector<SessionRef>& targets = {});
  /// One fetch.
  Tensor run(const SessionRef& fetch, const std::vector<std::pair<SessionRef, Tensor>>& feeds = {});

  const Graph& graph() const { return *graph_; }
  const SessionOptions& options() const { return options_; }
  /// Prepared executors so far (one per distinct feeds/fetches/targets signature).
  int num_cached_executors() const;

 private:
  ValueRef resolve_value(const SessionRef& r, const char* what) const;
  int resolve_node(const SessionRef& r) const;

  std::shared_ptr<Graph> graph_;
  SessionOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Executor>> cache_;
};

}  // namespace deepflow
