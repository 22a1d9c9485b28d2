// SPDX-License-Identifier: Apache-2.0
// Raw binary tensor bodies for REST predict (docs/serving.md, "Binary tensor bodies"):
// tensors as little-endian bytes after a one-line JSON header, so large inputs and
// outputs skip JSON number formatting and parsing.
//
//   {"inputs": {"x": {"dtype": "DT_FLOAT", "shape": [2, 3], "offset": 0}}}\n<24 bytes>
//
// A request says `Content-Type: application/octet-stream`; a response comes in this
// format when the request's Accept header names application/octet-stream (otherwise
// JSON, unchanged). Offsets count from the first byte after the header's '\n'; each
// tensor occupies product(shape) * dtype size bytes; the payload must end where the
// last-ending tensor ends. Every malformed body is INVALID_ARGUMENT starting
// "[rest binary]" and naming the input and what is wrong.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "deepflow/core/tensor.h"
#include "deepflow/serving/status.h"

namespace deepflow::serving {

/// The media type of binary bodies, for Content-Type and Accept.
inline constexpr std::string_view kBinaryTensorMediaType = "application/octet-stream";

/// True when a Content-Type / Accept header value names kBinaryTensorMediaType
/// (parameters such as "; q=0.9" ignored, case-insensitive).
bool names_binary_media_type(std::string_view header);

struct PredictRequestBinary {
  std::string signature_name;  ///< as given (empty: default)
  std::map<std::string, Tensor> inputs;
};

/// Parses a binary predict body: header {"signature_name"?: string, "inputs": {name:
/// {"dtype": "DT_FLOAT" | "float32" | ..., "shape": [int, ...], "offset": int}}} and
/// the payload. Strings are not carried (use JSON with {"b64": ...}).
PredictRequestBinary parse_binary_predict_request(std::string_view body);

/// The response: header {"model_spec": {"name", "version", "signature_name"},
/// "outputs": {name: {"dtype", "shape", "offset"}}}, then the outputs in key order,
/// each starting at a multiple of 8 bytes. A DT_STRING output is INVALID_ARGUMENT.
std::string write_binary_predict_response(const std::string& model, int64_t version, const std::string& signature_name,
                                          const std::map<std::string, Tensor>& outputs);

}  // namespace deepflow::serving
