// SPDX-License-Identifier: Apache-2.0
// Models, versions and their life cycle: what TF Serving's file-system source, version
// policy, AspiredVersionsManager and availability-preserving policy do, in one class.
//
//   ServerConfig config = parse_model_config_file("models.config");   // or single_model()
//   ModelManager manager(config, {.poll_seconds = 1});
//   manager.start();                                  // first scan: loads, then polls
//   ServableHandle m = manager.get({.name = "mnist"});            // latest available
//   auto out = m->model.signature("serving_default")({{"x", batch}});
//
// A model has a base path whose numeric subdirectories (decimal int64, e.g. "1", "0002")
// are its versions; anything else in the base path is ignored. The version policy picks
// the versions to serve (latest N, all, or specific ones). On each scan:
// - an aspired version that is not loaded is loaded on a load thread: state LOADING,
//   then (after warmup) AVAILABLE. A failure leaves it in state END with the error in
//   its status; it is retried only when its directory changes (mtime) or the config is
//   reloaded, and nothing else is disturbed.
// - a version no longer aspired is unloaded only once a newer aspired version is
//   AVAILABLE, or when it was removed from disk or from the policy and some other version
//   remains available... (availability preserving: a model that was serving keeps
//   serving through a version change; see model_manager.cpp for the exact rule).
// - unloading waits for in-flight requests: handles are shared_ptrs, the memory goes
//   when the last handle goes (states UNLOADING, then END).
// Version labels map a name to a version; a label may only point at an AVAILABLE version
// (TF Serving's default, without --allow_version_labels_for_unavailable_models).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "deepflow/io/saved_model.h"
#include "deepflow/serving/status.h"

namespace tensorflow::serving {
class ModelServerConfig;
}  // namespace tensorflow::serving

namespace deepflow::serving {

// --- configuration (TF Serving's ModelServerConfig, text format) ---

/// Which versions of a model to serve (FileSystemStoragePathSourceConfig's
/// ServableVersionPolicy).
struct VersionPolicy {
  enum class Kind { Latest, All, Specific };
  Kind kind = Kind::Latest;
  int64_t num_versions = 1;        ///< Latest: the N highest
  std::vector<int64_t> versions;   ///< Specific: exactly these
};

struct ModelConfig {
  std::string name;
  std::string base_path;
  std::string model_platform = "tensorflow";  ///< accepted: "tensorflow", "deepflow"
  VersionPolicy policy;
  std::map<std::string, int64_t> version_labels;
};

struct ServerConfig {
  std::vector<ModelConfig> models;
};

/// Parses TF Serving's text-format ModelServerConfig (model_config_list { config {
/// name: ... base_path: ... model_platform: ... model_version_policy { latest {
/// num_versions: 2 } | all {} | specific { versions: 1 versions: 3 } } version_labels {
/// key: "stable" value: 1 } } }). Errors name the file (or "<text>"), line and field;
/// duplicate model names, empty names or base paths, and relative base paths are errors.
ServerConfig parse_model_config_text(const std::string& text, const std::string& source = "<text>");
ServerConfig parse_model_config_file(const std::string& path);
/// The proto form (HandleReloadConfigRequest's config): conversion only, no checks (the
/// text parser and ModelManager::reload_config check). A config that is not a
/// model_config_list gives an empty ServerConfig.
ServerConfig server_config_from_proto(const tensorflow::serving::ModelServerConfig& proto);
/// --model_name / --model_base_path: one model, latest version.
ServerConfig single_model(const std::string& name, const std::string& base_path);

// --- servables ---

/// Which signatures run one-row requests on the request's own thread (an OpenMP team of
/// one), decided by warm_up (deepflow/serving/warmup.h) before the version becomes
/// available and read-only after; other requests and signatures use the caller's team.
struct ThreadPlan {
  std::set<std::string> single_thread_signatures;
};

/// One loaded version. Shared by the manager and in-flight requests.
struct Servable {
  std::string name;
  int64_t version = 0;
  std::string path;        ///< the version directory
  io::SavedModel model;
  std::shared_ptr<ThreadPlan> threads = std::make_shared<ThreadPlan>();
};
using ServableHandle = std::shared_ptr<const Servable>;

/// TF Serving's ServableState::ManagerState names: START, LOADING, AVAILABLE,
/// UNLOADING, END.
enum class VersionState { Start, Loading, Available, Unloading, End };
const char* state_name(VersionState state);

struct VersionStatus {
  int64_t version = 0;
  VersionState state = VersionState::Start;
  Code error_code = Code::Ok;   ///< why a load failed (state END)
  std::string error_message;
};

/// What a request asks for (ModelSpec): a version, a label, or neither (latest
/// available). Both is INVALID_ARGUMENT.
struct ModelSpec {
  std::string name;
  std::optional<int64_t> version;
  std::string label;
};

/// Load and unload events, for metrics and logs.
struct ManagerEvent {
  enum class Kind { LoadStarted, Loaded, LoadFailed, Unloaded };
  Kind kind;
  std::string model;
  int64_t version = 0;
  double seconds = 0;         ///< Loaded: load + warmup time
  std::string error;          ///< LoadFailed
};

struct ManagerOptions {
  /// Period of the scans of every base path (--file_system_poll_wait_seconds); <= 0:
  /// only the first scan (and explicit poll_now()).
  double poll_seconds = 1;
  /// Threads that load versions (several versions of several models load in parallel).
  int num_load_threads = 2;
  io::LoadOptions load;
  std::vector<std::string> tags = {io::kServeTag};
  /// Runs after a version loaded and before it becomes AVAILABLE (the server installs
  /// the warmup here: deepflow/serving/warmup.h). An exception fails the load.
  std::function<void(const Servable&)> warmup;
  /// Called (from manager threads) on every load/unload event.
  std::function<void(const ManagerEvent&)> on_event;
};

class ModelManager {
 public:
  ModelManager(ServerConfig config, ManagerOptions options = {});
  /// Stops polling, waits for loads in progress, unloads everything.
  ~ModelManager();
  ModelManager(const ModelManager&) = delete;
  ModelManager& operator=(const ModelManager&) = delete;

  /// Runs the first scan and waits until every aspired version has finished loading
  /// (AVAILABLE or failed), then starts the background poller.
  void start();
  /// One scan of every base path now; waits for the loads and unloads it started.
  void poll_now();
  /// Replaces the config (HandleReloadConfigRequest): new models load, removed models
  /// unload, policies and labels change; waits like poll_now(). A bad config (e.g. a
  /// label pointing at a version that is not available) throws and changes nothing.
  void reload_config(ServerConfig config);

  /// The servable a request asks for. NOT_FOUND with TF Serving's wording when the model,
  /// version or label is unknown or not available ("Servable not found for request:
  /// Latest(mnist)" / "Specific(mnist, 3)"); INVALID_ARGUMENT for version and label both.
  ServableHandle get(const ModelSpec& spec) const;

  /// Status of every version the manager knows of the model (sorted by version, newest
  /// first as TF Serving), or of the one version/label in spec. NOT_FOUND for an unknown
  /// model ("Could not find any versions of model <name>").
  std::vector<VersionStatus> status(const ModelSpec& spec) const;

  std::vector<std::string> model_names() const;
  ServerConfig config() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace deepflow::serving
