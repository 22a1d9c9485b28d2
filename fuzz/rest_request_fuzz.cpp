// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the REST request bodies (make fuzz): parse_predict_request with a
// fixed signature (x: float [-1,3], s: string [-1]), parse_examples_request and the raw
// binary predict body (parse_binary_predict_request) on arbitrary bytes. Any input may be rejected with a deepflow::Error (ServingError);
// anything else (a crash, a hang, a sanitizer report, another exception) is a bug.
// Invariants checked: an accepted predict body gives tensors of the signature's dtypes
// whose columnar response, read back as a request, has the same values; an accepted
// classify/regress body gives serialized tf.Examples that parse; an accepted binary body
// gives tensors that the binary response writer lays out in a payload of their sizes.
#include <google/protobuf/stubs/logging.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "deepflow/serving/binary_tensor.h"
#include "deepflow/serving/json_tensor.h"
#include "example.pb.h"

namespace {

using namespace deepflow;
using namespace deepflow::serving;

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

const InputTypes kTypes = {{"x", {DType::Float32, Shape({-1, 3})}}, {"s", {DType::String, Shape({-1})}}};

bool same_values(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.size() != b.size()) return false;
  if (a.dtype() == DType::String) return a.to_vector<std::string>() == b.to_vector<std::string>();
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  for (int64_t i = 0; i < a.size(); ++i)
    if (!(std::memcmp(&x[i], &y[i], sizeof(float)) == 0 || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
  return true;
}

void check_predict(const std::string& body) {
  PredictRequestJson req;
  try {
    req = parse_predict_request(body, [](const std::string& sig) {
      if (sig != "" && sig != "serving_default") throw ServingError(Code::InvalidArgument, "unknown signature");
      return kTypes;
    });
  } catch (const Error&) {
    return;
  }
  if (req.inputs.size() != 2) bug("accepted predict body without both inputs");
  for (const auto& [name, t] : req.inputs)
    if (t.dtype() != kTypes.at(name).dtype) bug("input " + name + " has the wrong dtype");
  if (req.row_format && req.inputs.at("x").dim(0) != req.inputs.at("s").dim(0))
    bug("row format inputs disagree on the batch size");
  // Response writer -> parser round trip (columnar keeps every shape).
  std::string json = write_predict_response(req.inputs, false);
  if (json.rfind("{\"outputs\":", 0) != 0) bug("unexpected response start: " + json.substr(0, 20));
  PredictRequestJson back;
  try {
    back = parse_predict_request("{\"inputs\":" + json.substr(11), [](const std::string&) { return kTypes; });
  } catch (const Error& e) {
    bug(std::string("written response does not read back: ") + e.what() + "\n" + json);
  }
  for (const auto& [name, t] : req.inputs)
    if (!same_values(t, back.inputs.at(name))) bug("round trip changed input " + name + ": " + json);
}

void check_examples(const std::string& body) {
  ExamplesRequestJson req;
  try {
    req = parse_examples_request(body);
  } catch (const Error&) {
    return;
  }
  if (req.examples.empty()) bug("accepted examples body without examples");
  tensorflow::Example ex;
  for (const auto& e : req.examples)
    if (!ex.ParseFromString(e)) bug("serialized example does not parse");
  if (!req.context.empty() && !ex.ParseFromString(req.context)) bug("serialized context does not parse");
}

void check_binary(const std::string& body) {
  PredictRequestBinary req;
  try {
    req = parse_binary_predict_request(body);
  } catch (const Error&) {
    return;
  }
  if (req.inputs.empty()) bug("accepted binary body without inputs");
  size_t bytes = 0;
  for (const auto& [name, t] : req.inputs) {
    if (t.dtype() == DType::String) bug("binary body gave a string tensor " + name);
    bytes += t.nbytes();
  }
  const size_t newline = body.find('\n');
  if (bytes > 0 && bytes > (body.size() - newline - 1) * req.inputs.size()) bug("tensors larger than the payload");
  std::string out = write_binary_predict_response("m", 1, "serving_default", req.inputs);
  if (out.find('\n') == std::string::npos || out.size() < bytes) bug("binary response too short");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 in feature names is logged
    return true;
  }();
  (void)quiet;
  const std::string body(reinterpret_cast<const char*>(data), size);
  check_predict(body);
  check_examples(body);
  check_binary(body);
  return 0;
}
