// SPDX-License-Identifier: Apache-2.0
// The executor: runs the part of a graph that some fetches and targets need.
//
// Each node runs through the same kernels as eager code (its op is dispatched on
// concrete inputs, so shapes unknown when the graph was built are resolved then).
// Values that are fed replace their producers, which then do not run unless
// something else needs them. An Executor prepares a graph once (pruning, order,
// input slots, the last use of every value, placement and partitioning) and then
// runs it many times.
//
// Running: small or chain-like graphs run sequentially on the caller's thread, in scratch
// kept per thread and reused by the next run (so a run of a small graph allocates little
// beyond its outputs, and one Executor may run on several threads at once); graphs
// with independent nodes run them at once on the inter-op ThreadPool (ready-queue
// scheduling by dependency counts; the calling thread works too, so nested runs never
// deadlock). Kernels keep their OpenMP intra-op threads (see thread_pool.h for how
// oversubscription is avoided). An error in any node stops the run and is rethrown as
// "[graph] node 'name': <error>". While a GradientTape records on the calling thread,
// the run stays on that thread (and unpartitioned) so the tape sees every op.
//
// Memory planning: each value is released right after its last consumer runs (unless
// fetched), so its buffer goes back to the caching allocator at once; an elementwise
// float op (unary, or binary without broadcasting into that input) whose input has no
// other user and is owned by this run (not a feed, constant or variable) writes its
// output into the input's buffer.
//
// Devices: nodes are placed on /cpu:0 .. /cpu:N-1 (placement.h); when a run spans
// several devices the graph is partitioned with send/recv pairs (partition.h) and each
// device's part runs on its own thread.
//
//   Executor ex(graph, /*feeds=*/{x}, /*fetches=*/{y});
//   TensorList out = ex.run({batch});
#pragma once

#include <memory>
#include <string>
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
  /// Let elementwise ops write into a dying input's buffer (needs free_at_last_use).
  bool reuse_in_place = true;
  /// Threads of the inter-op pool (ThreadPool::shared(n)); 1 runs everything sequentially.
  int inter_op_threads = 2;
  /// Use the parallel path when some stage of the graph has at least this many
  /// independent compute nodes (1 forces it; for benchmarks and tests).
  int parallel_min_width = 2;
  /// Logical devices /cpu:0 .. /cpu:<num_devices-1>.
  int num_devices = 2;
  /// Where nodes without a device (and without placed neighbours) go.
  std::string default_device = "/cpu:0";
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
  /// The devices the run spans (one part each), e.g. {"/cpu:0", "/cpu:1"}.
  std::vector<std::string> devices() const;
  /// The graph actually run: the given one, or its partitioned copy with send/recv nodes.
  const Graph& executed_graph() const;
  /// True when the parallel path is used (for tests and benchmarks).
  bool runs_parallel() const;

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
