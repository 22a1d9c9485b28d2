// SPDX-License-Identifier: Apache-2.0
// ONNX import (and, later, export): models from PyTorch and other frameworks run here.
//
//   onnx::OnnxModel m = onnx::import_model("resnet18.onnx");
//   std::map<std::string, Tensor> out = m.run({{"input", images}});
//   ConcreteFunction f = m.concrete_function();       // a deepflow graph, -1 for dynamic dims
//
// Import reads the ModelProto (IR versions up to 8; Debian's libonnx-dev onnx.proto;
// opsets 1 to 17: a model older than opset 7 imports when every node has an importer for
// its version), checks every node's op against the importer table for its opset and lists
// all unsupported ops by name in one error, then builds a traced Function whose callable
// evaluates the ONNX graph with deepflow's public ops (so the same code runs eagerly and
// traced, and gradients work). Initializers become constants (or Variables with
// ImportOptions::variables); values computable at import time (initializers, Constant
// nodes, shapes of fully known tensors and ops on those) are folded, which is how
// shape-carrying inputs (Reshape's shape, Slice's starts, ...) become attributes. Dynamic
// dims (dim_param or no dim_value) stay -1. If, Loop and Scan map onto cond and
// while_loop. Every error is a deepflow::Error starting "[onnx::import]" and naming the
// file, the node (name, or op type and index) and the op.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "deepflow/function/function.h"
#include "deepflow/ops/variable.h"

namespace deepflow::onnx {

inline constexpr int64_t kMinOpset = 1;  ///< per node: the importer table decides
inline constexpr int64_t kMaxOpset = 17;
inline constexpr int64_t kMaxIrVersion = 8;

struct ImportOptions {
  /// Initializers become Variables (named as in the file) instead of constants.
  bool variables = false;
  /// Run the graph passes on the traced function.
  bool optimize = true;
};

/// A graph input or output: its name and type (-1 for dynamic dims).
struct ValueInfo {
  std::string name;
  TensorType type;
};

class OnnxModel {
 public:
  /// Graph inputs that are not initializers, in file order; and the graph outputs.
  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  int64_t ir_version() const;
  /// The default-domain ("ai.onnx") opset the model imports.
  int64_t opset() const;
  const std::string& producer() const;  ///< "pytorch 1.13.1"
  /// Runs the traced function: every input by name, outputs by name. Inputs are checked
  /// (missing, unknown, dtype, shape vs the declared shape) with "[onnx::run]" errors.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) const;
  /// The traced function (input order = inputs(), output order = outputs()).
  const Function& function() const;
  /// Traced for the declared input types.
  ConcreteFunction concrete_function() const;
  /// ImportOptions::variables: the initializers as Variables, by name.
  const std::map<std::string, Variable>& variables() const;

  struct State;
  explicit OnnxModel(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

OnnxModel import_model(const std::string& path, const ImportOptions& options = {});
/// `source` names the bytes in messages.
OnnxModel import_model_from_bytes(std::string_view bytes, const ImportOptions& options = {},
                                  const std::string& source = "<bytes>");

/// The ops of a model (op_type, with the domain when not the default) that the importer
/// cannot handle at the model's opset; empty when all are supported.
std::vector<std::string> unsupported_ops(const std::string& path);

/// Reads a TensorProto file (the conformance tests' input_N.pb / output_N.pb), raw_data or
/// typed fields, external data not supported.
Tensor read_tensor_file(const std::string& path);

}  // namespace deepflow::onnx
