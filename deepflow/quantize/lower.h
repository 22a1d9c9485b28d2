// SPDX-License-Identifier: Apache-2.0
// Lowering a deepflow graph to a float32 TF Lite model (the converter's first step).
//
//   LiteModel m = lower_to_lite(fn.graph(), {.input_names = {"x"}, .output_names = {"y"}});
//
// The graph is prepared first (prepare_for_lite): every variable read becomes a constant of
// its current value, then the graph passes run with the fusions TFLite has builtins for
// (matmul + bias + activation, conv + bias + activation, batch norm folded into conv
// filters) and without the ones it does not (fused_elementwise, conv chains). Each node
// then maps to TFLite builtins: conv2d to CONV_2D / DEPTHWISE_CONV_2D (filters to OHWI /
// 1HWO), matmul with constant weights to FULLY_CONNECTED (weights [out, in]), the
// softmax and mean compositions to SOFTMAX and MEAN, and the elementwise, shape and
// reduction ops to their namesakes. Unknown dims are 1 in a tensor's shape and -1 in its
// shape_signature. Ops without a TFLite builtin are all listed, with their nodes, in one
// error: nothing falls back silently.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "deepflow/graph/graph.h"
#include "deepflow/quantize/lite_model.h"

namespace deepflow::quantize {

struct LowerOptions {
  /// Signature keys of the graph's inputs / outputs; empty: the placeholders' node names
  /// and "output_0", "output_1", ...
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
};

/// A copy of g with variables read into constants and the inference passes run.
std::shared_ptr<Graph> prepare_for_lite(const Graph& g);

/// The float32 TFLite model of g (prepared here; g is not changed).
LiteModel lower_to_lite(const Graph& g, const LowerOptions& options = {});

/// The deepflow ops (serialized names) the lowering maps, sorted.
std::vector<std::string> lowerable_ops();

}  // namespace deepflow::quantize
