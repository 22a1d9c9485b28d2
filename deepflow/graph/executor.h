// SPDX-License-Identifier: Apache-2.0
// The executor: runs the part of a graph that some fetches and targets need.
//
// Each node runs through the same kernels as eager code (its op is dispatched on
// concrete inputs, so shapes unknown when the graph was built are resolved then).
// Values that are fed replace their producers, which then do not run unless
// something else needs them.
#pragma once

#include <utility>
#include <vector>

#include "deepflow/graph/graph.h"

namespace deepflow {

using Feeds = std::vector<std::pair<ValueRef, Tensor>>;

/// The nodes that must run to produce `fetches` and run `targets`, given `feeds`,
/// in an executable order.
std::vector<int> prune(const Graph& g, const Feeds& feeds, const std::vector<ValueRef>& fetches,
                       const std::vector<int>& targets);

/// Runs the pruned graph and returns the fetched values. Feeds must match the
/// dtype of their value and be compatible with its (partly known) shape.
TensorList execute(const Graph& g, const Feeds& feeds, const std::vector<ValueRef>& fetches,
                   const std::vector<int>& targets = {});

/// Runs g as a function: inputs feed g.inputs in order; returns g.outputs.
TensorList call_graph(const Graph& g, const TensorList& inputs);

}  // namespace deepflow
