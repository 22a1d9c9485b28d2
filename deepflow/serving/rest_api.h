// SPDX-License-Identifier: Apache-2.0
// TF Serving's REST API (specs.md 1.2-1.7) as a function of (method, path, body), so it
// is tested and fuzzed without sockets; server.cpp mounts it on cpp-httplib.
//
//   RestHandler rest(manager, runner, &metrics);
//   RestResponse r = rest.handle("POST", "/v1/models/mnist:predict", body);
//   // r.status == 200, r.body == "{\"predictions\": [...]}"
#pragma once

#include <string>
#include <string_view>

#include "deepflow/serving/metrics.h"
#include "deepflow/serving/model_manager.h"
#include "deepflow/serving/predict.h"

namespace deepflow::serving {

struct RestResponse {
  int status = 200;
  std::string body;  ///< always JSON (Content-Type: application/json)
};

class RestHandler {
 public:
  /// `metrics` may be null. `runner` runs signatures (directly or through a batcher).
  RestHandler(const ModelManager& manager, SignatureRunner runner, Metrics* metrics = nullptr);
  /// Routes with TF Serving's regexes; never throws: every error becomes {"error": ...}
  /// with the mapped HTTP status.
  RestResponse handle(std::string_view method, std::string_view path, std::string_view body) const;

 private:
  const ModelManager& manager_;
  SignatureRunner runner_;
  Metrics* metrics_;
};

}  // namespace deepflow::serving
