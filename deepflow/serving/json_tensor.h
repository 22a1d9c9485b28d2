// SPDX-License-Identifier: Apache-2.0
// TF Serving's REST bodies (specs.md 1.3-1.6): JSON <-> tensors and tf.Examples.
//
//   auto req = parse_predict_request(body, [&](const std::string& sig) {
//     return find_signature(*servable, sig).inputs(); });
//   auto out = run_predict(servable, req.signature_name, req.inputs);
//   std::string reply = write_predict_response(out, req.row_format);
//
// Parsing is a streaming (SAX) pass that writes numbers straight into the tensors, so
// a large request is not first built as a DOM. Errors are INVALID_ARGUMENT with TF
// Serving's texts where tests or clients rely on them ("Missing 'inputs' or
// 'instances' key", "Encountered list at unexpected size ...", "Expected JSON object
// with a single 'b64' key ...") and otherwise "[predict] ..." with the input name, the
// element index and the expected dtype and shape. Dtypes without a JSON mapping are
// UNIMPLEMENTED.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "deepflow/serving/model_manager.h"
#include "deepflow/serving/predict.h"

namespace deepflow::serving {

/// Input key -> its dtype and shape (dim 0 is the batch for row format).
using InputTypes = std::map<std::string, TensorType>;

struct PredictRequestJson {
  std::string signature_name;  ///< as given (empty: default)
  std::map<std::string, Tensor> inputs;
  bool row_format = true;      ///< "instances" (true) or "inputs" (false)
};

/// Parses a predict body. `input_types` is called once with the signature name the body
/// names (empty when it names none) and returns that signature's inputs; it may throw
/// (unknown signature). Accepts NaN / Infinity / -Infinity number tokens, ignores unknown
/// top-level keys and bytes after the first JSON value, as TF Serving.
PredictRequestJson parse_predict_request(std::string_view body,
                                         const std::function<InputTypes(const std::string&)>& input_types);

/// {"predictions": ...} (row) or {"outputs": ...} (columnar); floats in shortest
/// round-trip form with ".0" on whole numbers, NaN/Infinity bare; string outputs whose
/// key ends in "_bytes" as {"b64": ...}.
std::string write_predict_response(const std::map<std::string, Tensor>& outputs, bool row_format);

struct ExamplesRequestJson {
  std::string signature_name;
  std::vector<std::string> examples;  ///< serialized tensorflow.Example
  std::string context;                ///< serialized Example, empty if none
};

/// Classify and Regress bodies: {"signature_name", "context", "examples": [{feature:
/// value|list|{"b64":..}}, ...]}.
ExamplesRequestJson parse_examples_request(std::string_view body);
std::string write_classify_response(const std::vector<std::vector<ClassScore>>& results);
std::string write_regress_response(const std::vector<float>& results);

/// {"model_version_status": [...]} as specs.md 1.6.
std::string write_status_response(const std::vector<VersionStatus>& statuses);
/// {"model_spec": ..., "metadata": {"signature_def": {"signature_def": {...}}}}.
std::string write_metadata_response(const Servable& servable);
/// {"error": "<message>"} with the message JSON-escaped.
std::string write_error(std::string_view message);

/// Standard base64 (padding accepted on decode; INVALID_ARGUMENT on bad characters).
std::string base64_encode(std::string_view bytes);
std::string base64_decode(std::string_view text);

}  // namespace deepflow::serving
