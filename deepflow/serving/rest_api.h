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
#include "deepflow/serving/model_admin.h"
#include "deepflow/serving/model_manager.h"
#include "deepflow/serving/predict.h"

namespace deepflow::serving {

struct RestResponse {
  int status = 200;
  std::string body;  ///< JSON, except binary predict responses (binary_tensor.h)
  std::string content_type = "application/json";
};

/// The request headers the API reads: Content-Type selects a binary predict body,
/// Accept a binary predict response (deepflow/serving/binary_tensor.h).
struct RestHeaders {
  std::string_view content_type;
  std::string_view accept;
};

class RestHandler {
 public:
  /// `metrics` may be null. `runner` runs signatures (directly or through a batcher).
  /// `admin` serves `POST /v1/models/<name>:load` and `:unload`; null: UNIMPLEMENTED.
  RestHandler(const ModelManager& manager, SignatureRunner runner, Metrics* metrics = nullptr,
              ModelAdmin* admin = nullptr);
  /// Routes with TF Serving's regexes plus :load / :unload; never throws: every error
  /// becomes {"error": ...} (JSON) with the mapped HTTP status.
  RestResponse handle(std::string_view method, std::string_view path, std::string_view body,
                      const RestHeaders& headers = {}) const;

 private:
  const ModelManager& manager_;
  SignatureRunner runner_;
  Metrics* metrics_;
  ModelAdmin* admin_;
};

}  // namespace deepflow::serving
