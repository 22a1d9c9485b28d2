// SPDX-License-Identifier: Apache-2.0
// The executor: runs the part of a graph that some fetches and targets need.
//
// Each node runs through the same kernels as eager code (its op is dispatched on
// concrete inputs, so shapes unknown when the graph was built are resolved then).
// Values that are fed replace their producers, which then do not run unless
// something else needs them. An Executor prepares a graph once (pruning, order,
// the last use of every value) and then runs it many times.
//
//   Executor ex(graph, /*feeds=*/{x}, /*fetches=*/{y});
//   TensorList out = ex.run({batch});
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "deepflow/graph/graph.h"

namespace deepflow {

using Feeds = std::vector<std::pair<ValueRef, Tensor>>;

struct ExecutorOptions {
  /// Run independent nodes at once on the inter-op thread pool.
  bool parallel = true;
  /// Release each value after its last use (memory planning).
  bool free_at_last_use = true;
};

class Executor {
 public:
  Executor(std::shared_ptr<const Graph> graph, std::vector<ValueRef> feeds, std::vector<ValueRef> fetches,
           std::vector<int> targets = {}, ExecutorOptions options = {});
  ~Executor();
  Executor(Executor&&) noexcept;
  Executor& operator=(Executor&&) noexcept;

  /// Runs with one value per feed (checked against the feed's dtype and shape);
  /// returns the fetches.
  TensorList run(const TensorList& feed_values) const;
  /// The node ids that run, in a valid order.
  const std::vector<int>& schedule() const;

  struct Plan;

 private:
  std::unique_ptr<Plan> plan_;
};

/// The nodes that must run to produce `fetches` and run `targets`, given `feeds`,
/// in an executable order.
std::vector<int> prune(const Graph& g, const Feeds& feeds, const std::vector<ValueRef>& fetches,
                       const std::vector<int>& targets);

/// One-shot convenience over Executor.
TensorList execute(const Graph& g, const Feeds& feeds, const std::vector<ValueRef>& fetches,
                   const std::vector<int>& targets = {});

/// Runs g as a function: inputs feed g.inputs in order; returns g.outputs.
TensorList call_graph(const Graph& g, const TensorList& inputs);

}  // namespace deepflow
