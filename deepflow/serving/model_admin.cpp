// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/model_admin.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>

#include "serving_config.pb.h"

namespace deepflow::serving {
namespace detail {
// server_config.cpp
using LocateFn = std::function<std::string(size_t model, const std::string& field)>;
void validate_config(const ServerConfig& config, const std::string& source, const std::string& fn,
                     const LocateFn& locate);
}  // namespace detail

namespace {

bool same_source(const ModelConfig& a, const ModelConfig& b) {
  return a.base_path == b.base_path && a.model_platform == b.model_platform && a.policy.kind == b.policy.kind &&
         a.policy.num_versions == b.policy.num_versions && a.policy.versions == b.policy.versions;
}

const ModelConfig* find_model(const ServerConfig& config, const std::string& name) {
  for (const auto& m : config.models)
    if (m.name == name) return &m;
  return nullptr;
}

std::string model_names(const ServerConfig& config) {
  std::string out;
  for (const auto& m : config.models) out += (out.empty() ? "" : ", ") + m.name;
  return out.empty() ? "none" : out;
}

// Whether a failed version matters for `model`'s policy: with latest, only when it is
// newer than every available version (an older failure, e.g. left from an earlier base
// path, would not be served anyway); with specific, when it is one of them; with all,
// always.
bool failure_matters(const ModelConfig& model, int64_t failed, int64_t newest_available) {
  switch (model.policy.kind) {
    case VersionPolicy::Kind::Latest: return failed > newest_available;
    case VersionPolicy::Kind::Specific:
      return std::find(model.policy.versions.begin(), model.policy.versions.end(), failed) != model.policy.versions.end();
    case VersionPolicy::Kind::All: return true;
  }
  return true;
}

// Throws unless `model` loaded: a version is AVAILABLE and no version its policy wants
// failed.
void check_loaded(const ModelManager& manager, const ModelConfig& model, const char* where) {
  std::vector<VersionStatus> statuses;
  try {
    statuses = manager.status({.name = model.name});
  } catch (const ServingError&) {  // no versions known at all
  }
  const VersionStatus* available = nullptr;  // statuses are newest first
  for (const auto& s : statuses)
    if (s.state == VersionState::Available && !available) available = &s;
  const VersionStatus* failed = nullptr;
  for (const auto& s : statuses)
    if (s.state == VersionState::End && s.error_code != Code::Ok && !failed &&
        (!available || failure_matters(model, s.version, available->version)))
      failed = &s;
  const std::string what = std::string(where) + " model '" + model.name + "' (base_path " + model.base_path + ")";
  if (failed) {
    std::string serving = available ? "; version " + std::to_string(available->version) + " keeps serving" : "";
    throw ServingError(failed->error_code, what + ": version " + std::to_string(failed->version) +
                                               " failed to load: " + failed->error_message + serving);
  }
  if (!available)
    throw ServingError(Code::NotFound, what + ": no version to serve (no numeric version directory matches the "
                                              "version policy under the base path)");
}

}  // namespace

ModelAdmin::ModelAdmin(ModelManager& manager) : manager_(manager) {}

void ModelAdmin::reload(const ServerConfig& config) {
  std::lock_guard lock(mu_);
  ServerConfig old = manager_.config();
  manager_.reload_config(config);
  for (const auto& m : config.models) {
    const ModelConfig* before = find_model(old, m.name);
    if (!before || !same_source(*before, m)) check_loaded(manager_, m, "[HandleReloadConfigRequest]");
  }
}

std::vector<VersionStatus> ModelAdmin::load(const ModelConfig& model) {
  std::lock_guard lock(mu_);
  ServerConfig old = manager_.config();
  ServerConfig next = old;
  auto it = std::find_if(next.models.begin(), next.models.end(), [&](const auto& m) { return m.name == model.name; });
  if (it != next.models.end()) *it = model;
  else next.models.push_back(model);
  manager_.reload_config(next);  // a bad config throws here and changes nothing
  try {
    check_loaded(manager_, model, "[rest :load]");
  } catch (...) {
    manager_.reload_config(old);
    throw;
  }
  return manager_.status({.name = model.name});
}

void ModelAdmin::unload(const std::string& name) {
  std::lock_guard lock(mu_);
  ServerConfig config = manager_.config();
  auto it = std::find_if(config.models.begin(), config.models.end(), [&](const auto& m) { return m.name == name; });
  if (it == config.models.end())
    throw ServingError(Code::NotFound, "[rest :unload] model '" + name +
                                           "' is not in the server's config (models: " + model_names(config) + ")");
  config.models.erase(it);
  manager_.reload_config(config);
}

ModelConfig parse_load_request(std::string_view body, const std::string& name) {
  tensorflow::serving::ModelServerConfig proto;
  auto* entry = proto.mutable_model_config_list()->add_config();
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(std::string(body), entry, options);
  if (!status.ok())
    throw ServingError(Code::InvalidArgument, "[rest :load] the body must be a ModelConfig in JSON, e.g. "
                                              "{\"base_path\": \"/models/" + name + "\"}: " +
                                                  std::string(status.message()));
  if (!entry->name().empty() && entry->name() != name)
    throw ServingError(Code::InvalidArgument, "[rest :load] the body names model '" + entry->name() +
                                                  "' but the path names '" + name + "'");
  entry->set_name(name);
  if (entry->model_platform().empty()) entry->set_model_platform("tensorflow");
  ServerConfig config = server_config_from_proto(proto);
  detail::validate_config(config, "the :load body", "rest :load", {});
  return config.models.at(0);
}

}  // namespace deepflow::serving
