// SPDX-License-Identifier: Apache-2.0
// Predict, Classify and Regress on a loaded servable, independent of the protocol: the
// REST and gRPC front ends decode a request into these calls and encode the result.
//
//   ServableHandle m = manager.get(spec);
//   std::map<std::string, Tensor> out = run_predict(*m, "serving_default", inputs, {}, runner);
//
// Every function validates against the signature before running: an unknown signature
// (TF Serving's "Serving signature name: \"x\" not found in signature def"), a missing,
// unknown or mistyped input, or an output_filter naming an unknown output is an
// INVALID_ARGUMENT listing what the signature expects (keys, dtypes and shapes).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "deepflow/serving/model_manager.h"

namespace deepflow::serving {

/// Runs one signature of a servable on validated inputs. The default calls the
/// signature directly; the server passes its batcher (deepflow/serving/batching.h).
using SignatureRunner = std::function<std::map<std::string, Tensor>(
    const ServableHandle& servable, const std::string& signature_key,
    const std::map<std::string, Tensor>& inputs)>;

/// Calls servable->model.signature(key)(inputs); a one-row request to a signature in
/// servable->threads runs on the calling thread alone (an OpenMP team of one).
std::map<std::string, Tensor> run_signature_directly(const ServableHandle& servable, const std::string& key,
                                                     const std::map<std::string, Tensor>& inputs);

/// The rows of a request: the largest leading dim of its inputs (1 for scalars only).
int64_t request_rows(const std::map<std::string, Tensor>& inputs);

/// The signature to use: `name`, or "serving_default" when empty. Throws
/// INVALID_ARGUMENT "[predict] Serving signature name: \"k\" not found in signature def"
/// (TF Serving's text after the bracket).
const io::LoadedSignature& find_signature(const Servable& servable, const std::string& name);

/// Predict: checks inputs (every signature input once, dtype equal, shape compatible),
/// runs, and returns the outputs (only those in output_filter when it is not empty).
std::map<std::string, Tensor> run_predict(const ServableHandle& servable, const std::string& signature_name,
                                          const std::map<std::string, Tensor>& inputs,
                                          const std::vector<std::string>& output_filter = {},
                                          const SignatureRunner& runner = run_signature_directly);

/// One class and its score (TF Serving's Class).
struct ClassScore {
  std::string label;
  float score = 0;
};

/// Classify/Regress take tf.train.Example protos, serialized. `context` (may be empty) is
/// merged into every example (ExampleListWithContext); a feature present in both is
/// INVALID_ARGUMENT.
///
/// How examples reach the signature (documented choice, docs/serving.md):
/// - a signature with one DT_STRING input (TF's "inputs" key) gets the serialized
///   examples as a [n] string tensor, as in TensorFlow;
/// - otherwise the server parses each example into the signature's inputs by name: the
///   feature named like the input, of the input's dtype (float32 from float_list, int64
///   from int64_list, string from bytes_list), with the input's shape minus the batch dim;
///   a missing feature or a wrong element count is INVALID_ARGUMENT naming the feature.
/// Classify outputs: "scores" [n, k] (float) and optional "classes" [n, k] (string); a
/// signature with a single float output of shape [n, k] is read as scores with empty
/// labels. Regress outputs: "outputs" [n] or [n, 1], or the single float output.
std::vector<std::vector<ClassScore>> run_classify(const ServableHandle& servable, const std::string& signature_name,
                                                  const std::vector<std::string>& examples,
                                                  const std::string& context = {},
                                                  const SignatureRunner& runner = run_signature_directly);
std::vector<float> run_regress(const ServableHandle& servable, const std::string& signature_name,
                               const std::vector<std::string>& examples, const std::string& context = {},
                               const SignatureRunner& runner = run_signature_directly);

}  // namespace deepflow::serving
