// SPDX-License-Identifier: Apache-2.0
// Loading and unloading models at run time through an API call: gRPC's
// HandleReloadConfigRequest (a whole new ModelServerConfig) and REST's
// `POST /v1/models/<name>:load` / `:unload` (one model; docs/serving.md, "Model
// management") go through one ModelAdmin, so concurrent calls from either front end
// apply one after the other to the config they read.
//
//   ModelAdmin admin(manager);
//   admin.load(ModelConfig{.name = "mnist", .base_path = "/models/mnist"});  // waits
//   admin.unload("mnist");
//
// A load that fails never disturbs the other models, nor a version of the same model
// that was already serving (ModelManager's availability-preserving rules); the call
// reports the failure with the version's load error.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "deepflow/serving/model_manager.h"

namespace deepflow::serving {

class ModelAdmin {
 public:
  explicit ModelAdmin(ModelManager& manager);

  /// HandleReloadConfigRequest: replaces the config (ModelManager::reload_config) and
  /// waits for the loads. Then, as TF Serving's ReloadConfig, fails when a model that is
  /// new or whose base path or policy changed has a version that failed to load or no
  /// version at all; the new config stays in force (the server retries when the
  /// directory changes).
  void reload(const ServerConfig& config);

  /// REST `:load`: adds the model to the config, or replaces its entry, and waits. On
  /// failure (no version loads, or a version fails) the previous config is restored, so
  /// a failed load changes nothing, and the error names the model, path and cause.
  /// Returns the model's version status after a success.
  std::vector<VersionStatus> load(const ModelConfig& model);

  /// REST `:unload`: removes the model from the config; its versions unload once the
  /// requests in flight finish. NOT_FOUND naming the configured models if it is not one.
  void unload(const std::string& name);

 private:
  ModelManager& manager_;
  std::mutex mu_;  ///< one config change at a time
};

/// The body of `POST /v1/models/<name>:load`: a ModelConfig in proto3 JSON
/// ({"base_path": "/models/x", "model_platform": "tensorflow", "model_version_policy":
/// {"latest": {"num_versions": 2}}, "version_labels": {"stable": "1"}}); "name" may be
/// left out, and must equal `name` when given. INVALID_ARGUMENT naming the problem.
ModelConfig parse_load_request(std::string_view body, const std::string& name);

}  // namespace deepflow::serving
