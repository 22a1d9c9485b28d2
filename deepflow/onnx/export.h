// SPDX-License-Identifier: Apache-2.0
// ONNX export: traced functions, graphs and Keras models to an ONNX ModelProto.
//
//   Function f = function([&](const Tensor& x) { return relu(matmul(x, w.value())); },
//                         {.input_signature = Signature{{DType::Float32, {-1, 4}}}});
//   onnx::export_model(f.get_concrete_function(), "model.onnx", {.input_names = {"x"}});
//
// Every node of the function's graph (after the graph passes, so fused and folded ops
// export as what actually runs) maps to ONNX nodes of the default domain at
// ExportOptions::opset (13 to 17); variables are read at export time and become
// initializers; -1 dims become symbolic dims ("batch" for dim 0, "d<i>_<k>" otherwise).
// An op without an ONNX mapping is an error listing every such op with its node name.
// The result is checked with onnx::checker (full check) and onnx::shape_inference
// before it is written (atomically); a failing check is an error with the checker's
// message. Writes the ModelProto with ir_version 8 and producer "deepflow".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "deepflow/function/function.h"
#include "deepflow/graph/graph.h"

namespace deepflow::keras {
class Model;
}

namespace deepflow::onnx {

struct ExportOptions {
  int64_t opset = 17;
  /// One per function input / output; empty: "input_0".. / "output_0"...
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  std::string graph_name = "deepflow";
  /// Export the optimized graph (passes applied); false: the traced graph as is.
  bool optimized = true;
};

/// Serialized ModelProto bytes.
std::string export_to_bytes(const ConcreteFunction& fn, const ExportOptions& options = {});
/// Writes `path` atomically (temp + rename).
void export_model(const ConcreteFunction& fn, const std::string& path, const ExportOptions& options = {});

/// A graph with designated inputs (placeholders) and outputs, exported as is (no passes
/// run; ExportOptions::optimized is ignored): a SavedModel signature's graph, say.
std::string export_graph_to_bytes(const Graph& graph, const ExportOptions& options = {});
void export_graph(const Graph& graph, const std::string& path, const ExportOptions& options = {});

/// A Keras model traced as `model(xs, /*training=*/false)` for its input signature (the
/// functional inputs' shapes, or the shapes it was built for, batch dim -1), as
/// keras::save_model does.
void export_keras_model(keras::Model& model, const std::string& path, const ExportOptions& options = {});

/// The deepflow ops (serialized names) that have an ONNX mapping, sorted.
std::vector<std::string> exportable_ops();

}  // namespace deepflow::onnx
