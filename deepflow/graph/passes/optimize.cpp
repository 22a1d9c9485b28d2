// SPDX-License-Identifier: Apache-2.0
// optimize(): the passes in order, on a copy of the graph.
#include "deepflow/graph/passes.h"

namespace deepflow {

std::shared_ptr<Graph> optimize(const Graph& g, const PassOptions& o, std::vector<ValueRef>* keep) {
  auto out = std::make_shared<Graph>(g);
  Graph& h = *out;
  if (o.dce) eliminate_dead_code(h, keep);
  // Folding exposes merges and simplifications and they expose folds: a few rounds reach a
  // fixed point on real graphs.
  for (int round = 0; round < 4; ++round) {
    int changes = 0;
    if (o.cse) changes += eliminate_common_subexpressions(h, keep);
    if (o.constant_folding) changes += fold_constants(h, keep, o.max_folded_elements);
    if (o.algebraic) changes += simplify_algebra(h, keep);
    if (o.sink_transposes) changes += sink_transposes(h, keep);
    if (o.dce) eliminate_dead_code(h, keep);
    if (!changes) break;
  }
  // Batch-norm folding needs constant filters and parameters (after folding); matmul fusion
  // goes before the elementwise chains so that a bias add and its activation join the matmul.
  if (o.fold_batch_norm && fold_batch_norm(h, keep) && o.cse) eliminate_common_subexpressions(h, keep);
  if (o.fuse_matmul) fuse_matmul(h, keep);
  if (o.fuse_conv) fuse_conv(h, keep);
  if (o.fuse_conv_chain) fuse_conv_chain(h, keep);
  if (o.fuse_elementwise) fuse_elementwise(h, keep);
  if (o.dce) eliminate_dead_code(h, keep);
  return out;
}

}  // namespace deepflow
