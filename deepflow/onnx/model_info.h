// SPDX-License-Identifier: Apache-2.0
// What `deepflow onnx info` prints: a model's header, graph inputs and outputs, and op
// counts, read from the ModelProto without importing it (so it works on models the
// importer refuses).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace deepflow::onnx {

/// A graph input or output as written in the file: dims as numbers, symbols ("batch") or "?".
struct ValueSummary {
  std::string name;
  std::string elem_type;  ///< "FLOAT", "INT64", ...
  std::vector<std::string> dims;
};

struct ModelSummary {
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  ///< by domain ("" is ai.onnx)
  std::string producer_name, producer_version, graph_name;
  std::vector<ValueSummary> inputs;   ///< not counting initializers
  std::vector<ValueSummary> outputs;
  int64_t num_initializers = 0;
  int64_t num_parameters = 0;  ///< elements of all initializers
  std::map<std::string, int64_t> op_histogram;  ///< op_type (domain-qualified when not default) -> count
  std::vector<std::string> unsupported;          ///< as onnx::unsupported_ops
};

/// Reads `path`; "[onnx::info]" errors for unreadable or malformed files.
ModelSummary summarize_model(const std::string& path);

}  // namespace deepflow::onnx
