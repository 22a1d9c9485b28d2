// SPDX-License-Identifier: Apache-2.0
// ModelManager: TF Serving's file-system source, version policy, AspiredVersionsManager
// and AvailabilityPreservingPolicy in one class (model_manager.h).
//
// Locks, outermost first:
// - scan_mu: one scan (poll, start, reload) at a time; held while its loads run.
// - mu: the models, their versions and states, the config.
// - snap_mu: the snapshot get() reads (an immutable map of available servables and
//   labels, replaced whole on every change), so requests never wait on mu or a load.
// - event_mu: serializes on_event calls and lets the destructor stop them.
// Dropping a servable may run its deleter, which takes mu, and events call user code, so
// both happen only after mu is released (see Deferred).
//
// The unload rule is AvailabilityPreservingPolicy::GetNextAction, applied until it
// says nothing: unload the lowest-numbered un-aspired AVAILABLE version when the model
// has no aspired version, or some aspired version is AVAILABLE, or more than one
// un-aspired version is AVAILABLE. So v1 keeps serving while v2 loads; if v2 fails, v1
// keeps serving (as in TF Serving: a failed aspired version still counts as aspired);
// and a model whose versions all left the disk (or the config) is unloaded.
//
// Labels resolve at request time from the config. At construction a label may name a
// version that is not loaded yet (get() answers NOT_FOUND "Specific(name, v)" until it
// loads); reload_config, as TF Serving, wants every new or moved label to point at an
// AVAILABLE version, but does not re-check a label that stays as it was.
//
// Loads run inside the scan that found them, on num_load_threads threads; each load
// publishes as soon as it is AVAILABLE, so get(latest) moves to it atomically and the
// versions it replaces are unloaded right after.
#include "deepflow/serving/model_manager.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "deepflow/core/allocator.h"

namespace deepflow::serving {
namespace detail {
// server_config.cpp
using LocateFn = std::function<std::string(size_t model, const std::string& field)>;
void validate_config(const ServerConfig& config, const std::string& source, const std::string& fn,
                     const LocateFn& locate);
}  // namespace detail

namespace {

using Clock = std::chrono::steady_clock;

// The file times a failed load saw: a change means the version was rewritten, so it is
// worth another try (saved_model.pb too, since overwriting it in place leaves the
// directory's mtime alone).
struct Stamp {
  int64_t dir_ns = -1;
  int64_t pb_ns = -1;
  bool operator==(const Stamp&) const = default;
};

int64_t mtime_ns(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

Stamp stamp_of(const std::string& dir) { return {mtime_ns(dir), mtime_ns(dir + "/saved_model.pb")}; }

// Decimal digits only ("1", "0002"); TF Serving's versions are non-negative int64.
std::optional<int64_t> parse_version(const std::string& name) {
  if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
  if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  return v;
}

struct Version {
  VersionState state = VersionState::Start;
  std::string path;
  Code error_code = Code::Ok;
  std::string error_message;
  ServableHandle servable;  // the manager's own reference, while AVAILABLE
  uint64_t generation = 0;  // which load this entry belongs to (a late deleter of an older one is ignored)
  std::optional<Stamp> failed;
};

struct Model {
  ModelConfig config;
  bool configured = true;
  std::map<int64_t, Version> versions;  // every version ever aspired (status)
  std::set<int64_t> aspired;            // from the last successful scan
  std::string warning;                  // last scan warning printed, to print each once
};

struct Snapshot {
  struct Entry {
    std::map<int64_t, ServableHandle> available;
    std::map<std::string, int64_t> labels;
  };
  std::unordered_map<std::string, Entry> models;
};

struct LoadJob {
  std::string model;
  int64_t version = 0;
  std::string path;
  uint64_t generation = 0;
  Stamp stamp;
};

struct Deferred {
  std::vector<ServableHandle> handles;
  std::shared_ptr<const Snapshot> snapshot;
  std::vector<ManagerEvent> events;
};

struct Listing {
  std::string model;
  bool ok = false;
  std::string warning;
  std::map<int64_t, std::pair<std::string, Stamp>> aspired;
};

Listing list_versions(const ModelConfig& config) {
  namespace fs = std::filesystem;
  Listing out;
  out.model = config.name;
  std::error_code ec;
  fs::directory_iterator it(config.base_path, ec);
  if (ec) {
    // TF Serving: a base path that cannot be listed fails that poll only; the versions
    // loaded stay, so a transient outage unloads nothing.
    out.warning = "[ModelManager] warning: model " + config.name + ": cannot list base path " + config.base_path +
                  ": " + ec.message() + "; its versions are left as they are";
    return out;
  }
  std::vector<std::string> names;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    std::error_code dir_ec;
    if (it->is_directory(dir_ec)) names.push_back(it->path().filename().string());
  }
  if (ec) {
    out.warning = "[ModelManager] warning: model " + config.name + ": listing " + config.base_path +
                  " failed: " + ec.message() + "; its versions are left as they are";
    return out;
  }
  std::sort(names.begin(), names.end());  // "1" and "001": the later name wins, as in TF Serving
  std::map<int64_t, std::string> found;
  for (const auto& n : names) {
    if (auto v = parse_version(n)) found[*v] = config.base_path + "/" + n;
  }
  std::map<int64_t, std::string> chosen;
  const VersionPolicy& p = config.policy;
  switch (p.kind) {
    case VersionPolicy::Kind::Latest: {
      int64_t n = 0;
      for (auto r = found.rbegin(); r != found.rend() && n < p.num_versions; ++r, ++n) chosen.insert(*r);
      break;
    }
    case VersionPolicy::Kind::All: chosen = found; break;
    case VersionPolicy::Kind::Specific:
      for (int64_t v : p.versions) {
        if (auto f = found.find(v); f != found.end()) chosen.insert(*f);
      }
      break;
  }
  for (auto& [v, path] : chosen) out.aspired[v] = {path, stamp_of(path)};
  out.ok = true;
  return out;
}

std::string version_text(const std::string& model, int64_t version) {
  return model + " version " + std::to_string(version);
}

struct Core : std::enable_shared_from_this<Core> {
  ManagerOptions options;
  std::mutex scan_mu;
  mutable std::mutex mu;
  ServerConfig config;
  std::map<std::string, Model> models;
  uint64_t next_generation = 0;
  mutable std::shared_mutex snap_mu;
  std::shared_ptr<const Snapshot> snapshot = std::make_shared<Snapshot>();
  std::mutex event_mu;
  bool closed = false;

  // Runs where the last handle of a servable goes: frees it, then records the END.
  struct Release {
    std::weak_ptr<Core> core;
    std::string model;
    int64_t version;
    uint64_t generation;
    void operator()(const Servable* s) const {
      delete s;
      // The caching allocator would keep the model's freed blocks; unloading is when
      // the memory is meant to go back.
      cpu_release_cached();
      if (auto c = core.lock()) c->on_released(model, version, generation);
    }
  };

  void emit(const ManagerEvent& event) {
    std::lock_guard<std::mutex> lock(event_mu);
    if (closed || !options.on_event) return;
    try {
      options.on_event(event);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[ModelManager] on_event threw: %s\n", e.what());
    }
  }

  // Events first: a dropped handle may report its version's Unloaded at once, and that
  // comes after the Loaded of the version that replaced it.
  void finish(Deferred& d) {
    for (const auto& e : d.events) emit(e);
    d.events.clear();
    d.snapshot.reset();
    d.handles.clear();
  }

  void on_released(const std::string& model, int64_t version, uint64_t generation) {
    {
      std::lock_guard<std::mutex> lock(mu);
      auto m = models.find(model);
      if (m != models.end()) {
        auto v = m->second.versions.find(version);
        if (v != m->second.versions.end() && v->second.generation == generation &&
            v->second.state == VersionState::Unloading) {
          v->second.state = VersionState::End;
        }
      }
    }
    emit({.kind = ManagerEvent::Kind::Unloaded, .model = model, .version = version});
  }

  // mu held. Returns the previous snapshot, to be dropped after mu is released.
  std::shared_ptr<const Snapshot> publish_locked() {
    auto snap = std::make_shared<Snapshot>();
    for (const auto& [name, m] : models) {
      if (!m.configured) continue;
      Snapshot::Entry& e = snap->models[name];
      e.labels = m.config.version_labels;
      for (const auto& [v, ver] : m.versions) {
        if (ver.state == VersionState::Available) e.available[v] = ver.servable;
      }
    }
    std::unique_lock<std::shared_mutex> w(snap_mu);
    return std::exchange(snapshot, std::move(snap));
  }

  // mu held. AvailabilityPreservingPolicy's unload half (see the file comment).
  void unload_unaspired_locked(Model& m, Deferred& d) {
    for (;;) {
      bool aspired_ready = false;
      std::vector<int64_t> unaspired_ready;
      for (const auto& [v, ver] : m.versions) {
        if (ver.state != VersionState::Available) continue;
        if (m.aspired.count(v)) {
          aspired_ready = true;
        } else {
          unaspired_ready.push_back(v);
        }
      }
      if (unaspired_ready.empty()) return;
      if (!m.aspired.empty() && !aspired_ready && unaspired_ready.size() == 1) return;
      Version& ver = m.versions[unaspired_ready.front()];
      ver.state = VersionState::Unloading;
      d.handles.push_back(std::move(ver.servable));
    }
  }

  void load_one(const LoadJob& job) {
    {
      std::lock_guard<std::mutex> lock(mu);
      auto m = models.find(job.model);
      if (m == models.end()) return;
      Version& ver = m->second.versions[job.version];
      if (ver.generation != job.generation) return;
      ver.state = VersionState::Loading;
    }
    emit({.kind = ManagerEvent::Kind::LoadStarted, .model = job.model, .version = job.version});
    const auto t0 = Clock::now();
    std::unique_ptr<Servable> loaded;
    Code code = Code::Ok;
    std::string error;
    const std::string what = "[ModelManager] failed to load " + version_text(job.model, job.version) + " from " +
                             job.path + ": ";
    try {
      loaded.reset(new Servable{job.model, job.version, job.path,
                                io::load_saved_model(job.path, options.tags, options.load)});
      if (options.warmup) {
        try {
          options.warmup(*loaded);
        } catch (const std::exception& e) {
          code = code_of(e);
          error = what + "warmup failed: " + e.what();
        } catch (...) {
          code = Code::Unknown;
          error = what + "warmup failed with a non-standard exception";
        }
      }
    } catch (const std::exception& e) {
      code = code_of(e);
      error = what + e.what();
    } catch (...) {
      code = Code::Unknown;
      error = what + "non-standard exception";
    }
    if (!error.empty()) loaded.reset();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

    ServableHandle handle;
    if (loaded) {
      handle = ServableHandle(loaded.release(), Release{weak_from_this(), job.model, job.version, job.generation});
    } else {
      cpu_release_cached();  // whatever the failed load allocated
      std::fprintf(stderr, "%s\n", error.c_str());
    }
    Deferred d;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto m = models.find(job.model);
      Version* ver = nullptr;
      if (m != models.end()) {
        auto v = m->second.versions.find(job.version);
        if (v != m->second.versions.end() && v->second.generation == job.generation) ver = &v->second;
      }
      if (ver && handle) {
        ver->state = VersionState::Available;
        ver->servable = handle;
        unload_unaspired_locked(m->second, d);
        d.snapshot = publish_locked();
        d.events.push_back(
            {.kind = ManagerEvent::Kind::Loaded, .model = job.model, .version = job.version, .seconds = seconds});
      } else if (ver) {
        ver->state = VersionState::End;
        ver->error_code = code;
        ver->error_message = error;
        ver->failed = job.stamp;
        d.events.push_back({.kind = ManagerEvent::Kind::LoadFailed,
                            .model = job.model,
                            .version = job.version,
                            .seconds = seconds,
                            .error = error});
      }
      d.handles.push_back(std::move(handle));
    }
    finish(d);
  }

  void run_loads(std::vector<LoadJob> jobs) {
    if (jobs.empty()) return;
    // TF Serving loads the highest aspired version first.
    std::sort(jobs.begin(), jobs.end(), [](const LoadJob& a, const LoadJob& b) { return a.version > b.version; });
    size_t n = size_t(std::max(1, options.num_load_threads));
    n = std::min(n, jobs.size());
    if (n == 1) {
      for (const auto& j : jobs) load_one(j);
      return;
    }
    std::atomic<size_t> next{0};
    std::vector<std::thread> threads;
    threads.reserve(n);
    for (size_t t = 0; t < n; ++t) {
      threads.emplace_back([&] {
        for (size_t i = next.fetch_add(1); i < jobs.size(); i = next.fetch_add(1)) load_one(jobs[i]);
      });
    }
    for (auto& t : threads) t.join();
  }

  // scan_mu held.
  void scan_locked() {
    std::vector<ModelConfig> targets;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [name, m] : models) {
        if (m.configured) targets.push_back(m.config);
      }
    }
    std::vector<Listing> listings;
    for (const auto& c : targets) listings.push_back(list_versions(c));

    std::vector<LoadJob> jobs;
    Deferred d;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& l : listings) {
        auto it = models.find(l.model);
        if (it == models.end() || !it->second.configured) continue;
        Model& m = it->second;
        if (l.warning != m.warning && !l.warning.empty()) std::fprintf(stderr, "%s\n", l.warning.c_str());
        m.warning = l.warning;
        if (!l.ok) continue;
        m.aspired.clear();
        for (const auto& [v, entry] : l.aspired) {
          m.aspired.insert(v);
          Version& ver = m.versions[v];
          bool load = ver.state == VersionState::Start || ver.state == VersionState::Unloading ||
                      (ver.state == VersionState::End && (!ver.failed || !(*ver.failed == entry.second)));
          if (!load) continue;
          ver = Version{.path = entry.first, .generation = ++next_generation};
          jobs.push_back({m.config.name, v, entry.first, ver.generation, entry.second});
        }
      }
      for (auto& [name, m] : models) unload_unaspired_locked(m, d);
      d.snapshot = publish_locked();
    }
    finish(d);
    run_loads(std::move(jobs));
  }
};

}  // namespace

struct ModelManager::Impl {
  std::shared_ptr<Core> core = std::make_shared<Core>();
  std::mutex poll_mu;
  std::condition_variable poll_cv;
  bool stop = false;
  bool started = false;
  std::thread poller;

  void poll_loop(double seconds) {
    const auto period = std::chrono::duration<double>(seconds);
    std::unique_lock<std::mutex> lock(poll_mu);
    while (!poll_cv.wait_for(lock, period, [&] { return stop; })) {
      lock.unlock();
      try {
        std::lock_guard<std::mutex> scan(core->scan_mu);
        core->scan_locked();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "[ModelManager] poll failed: %s\n", e.what());
      }
      lock.lock();
    }
  }
};

ModelManager::ModelManager(ServerConfig config, ManagerOptions options) : impl_(std::make_unique<Impl>()) {
  detail::validate_config(config, "ModelManager config", "ModelManager", {});
  Core& c = *impl_->core;
  c.options = std::move(options);
  for (const auto& m : config.models) c.models[m.name].config = m;
  c.config = std::move(config);
  c.publish_locked();  // the models exist (NOT_FOUND Latest(name)) before anything loads
}

ModelManager::~ModelManager() {
  {
    std::lock_guard<std::mutex> lock(impl_->poll_mu);
    impl_->stop = true;
  }
  impl_->poll_cv.notify_all();
  if (impl_->poller.joinable()) impl_->poller.join();
  Core& c = *impl_->core;
  std::lock_guard<std::mutex> scan(c.scan_mu);
  Deferred d;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    for (auto& [name, m] : c.models) {
      m.configured = false;
      for (auto& [v, ver] : m.versions) {
        if (ver.state != VersionState::Available) continue;
        ver.state = VersionState::Unloading;
        d.handles.push_back(std::move(ver.servable));
      }
    }
    d.snapshot = c.publish_locked();
  }
  c.finish(d);
  std::lock_guard<std::mutex> lock(c.event_mu);
  c.closed = true;  // handles still held by requests free their servables silently
}

void ModelManager::start() {
  {
    std::lock_guard<std::mutex> lock(impl_->poll_mu);
    if (impl_->started) return;
    impl_->started = true;
  }
  poll_now();
  const double seconds = impl_->core->options.poll_seconds;
  if (seconds > 0) impl_->poller = std::thread([this, seconds] { impl_->poll_loop(seconds); });
}

void ModelManager::poll_now() {
  std::lock_guard<std::mutex> scan(impl_->core->scan_mu);
  impl_->core->scan_locked();
}

void ModelManager::reload_config(ServerConfig config) {
  const std::string fn = "ModelManager::reload_config";
  detail::validate_config(config, "new config", fn, {});
  Core& c = *impl_->core;
  std::lock_guard<std::mutex> scan(c.scan_mu);
  Deferred d;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    // Every check first: a rejected config changes nothing.
    for (const auto& mc : config.models) {
      auto it = c.models.find(mc.name);
      const Model* old = it != c.models.end() && it->second.configured ? &it->second : nullptr;
      if (old && old->config.model_platform != mc.model_platform) {
        throw ServingError(Code::InvalidArgument, "[" + fn + "] Illegal to change a model's platform. For model " +
                                                      mc.name + " platform was " + old->config.model_platform +
                                                      " and new platform requested is " + mc.model_platform);
      }
      for (const auto& [label, version] : mc.version_labels) {
        // A label that stays as it is needs no check (so the same config can be sent
        // again while the labelled version is reloading).
        if (old) {
          auto same = old->config.version_labels.find(label);
          if (same != old->config.version_labels.end() && same->second == version) continue;
        }
        bool available = false;
        if (it != c.models.end()) {
          auto v = it->second.versions.find(version);
          available = v != it->second.versions.end() && v->second.state == VersionState::Available;
        }
        if (!available) {
          throw ServingError(Code::FailedPrecondition,
                             "[" + fn + "] Request to assign label to version " + std::to_string(version) +
                                 " of model " + mc.name + ", which is not currently available for inference");
        }
      }
    }
    std::set<std::string> names;
    for (const auto& mc : config.models) {
      names.insert(mc.name);
      Model& m = c.models[mc.name];
      m.config = mc;
      m.configured = true;
      for (auto& [v, ver] : m.versions) ver.failed.reset();  // a reload retries failed versions
    }
    for (auto& [name, m] : c.models) {
      if (names.count(name)) continue;
      m.configured = false;
      m.aspired.clear();  // nothing will replace its versions: they all unload
    }
    for (auto& [name, m] : c.models) c.unload_unaspired_locked(m, d);
    c.config = std::move(config);
    d.snapshot = c.publish_locked();
  }
  c.finish(d);
  c.scan_locked();
}

ServableHandle ModelManager::get(const ModelSpec& spec) const {
  if (spec.name.empty()) throw ServingError(Code::InvalidArgument, "ModelSpec has no name specified.");
  if (spec.version && !spec.label.empty()) {
    throw ServingError(Code::InvalidArgument, "[ModelManager::get] model " + spec.name + ": both version " +
                                                  std::to_string(*spec.version) + " and label \"" + spec.label +
                                                  "\" given; give one");
  }
  const Core& c = *impl_->core;
  std::shared_lock<std::shared_mutex> r(c.snap_mu);
  const auto it = c.snapshot->models.find(spec.name);
  const Snapshot::Entry* e = it != c.snapshot->models.end() ? &it->second : nullptr;
  std::optional<int64_t> version = spec.version;
  if (!spec.label.empty()) {
    auto l = e ? e->labels.find(spec.label) : std::map<std::string, int64_t>::const_iterator{};
    // TF Serving's ServerCore::GetModelVersionForLabel: INVALID_ARGUMENT.
    if (!e || l == e->labels.end()) {
      throw ServingError(Code::InvalidArgument, "Unrecognized servable version label: " + spec.label);
    }
    version = l->second;
  }
  if (version) {
    if (e) {
      if (auto a = e->available.find(*version); a != e->available.end()) return a->second;
    }
    throw ServingError(Code::NotFound, "Servable not found for request: Specific(" + spec.name + ", " +
                                           std::to_string(*version) + ")");
  }
  if (e && !e->available.empty()) return e->available.rbegin()->second;
  throw ServingError(Code::NotFound, "Servable not found for request: Latest(" + spec.name + ")");
}

std::vector<VersionStatus> ModelManager::status(const ModelSpec& spec) const {
  if (spec.name.empty()) throw ServingError(Code::InvalidArgument, "ModelSpec has no name specified.");
  if (spec.version && !spec.label.empty()) {
    throw ServingError(Code::InvalidArgument, "[ModelManager::status] model " + spec.name + ": both version " +
                                                  std::to_string(*spec.version) + " and label \"" + spec.label +
                                                  "\" given; give one");
  }
  const Core& c = *impl_->core;
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.models.find(spec.name);
  const Model* m = it != c.models.end() ? &it->second : nullptr;
  std::optional<int64_t> version = spec.version;
  if (!spec.label.empty()) {
    if (!m || !m->configured || !m->config.version_labels.count(spec.label)) {
      throw ServingError(Code::InvalidArgument, "Unrecognized servable version label: " + spec.label);
    }
    version = m->config.version_labels.at(spec.label);
  }
  auto status_of = [](int64_t v, const Version& ver) {
    return VersionStatus{
        .version = v, .state = ver.state, .error_code = ver.error_code, .error_message = ver.error_message};
  };
  if (version) {
    auto v = m ? m->versions.find(*version) : std::map<int64_t, Version>::const_iterator{};
    if (!m || v == m->versions.end()) {
      throw ServingError(Code::NotFound, "Could not find version " + std::to_string(*version) + " of model " +
                                             spec.name);
    }
    return {status_of(v->first, v->second)};
  }
  if (!m || m->versions.empty()) {
    throw ServingError(Code::NotFound, "Could not find any versions of model " + spec.name);
  }
  std::vector<VersionStatus> out;
  for (auto v = m->versions.rbegin(); v != m->versions.rend(); ++v) out.push_back(status_of(v->first, v->second));
  return out;
}

std::vector<std::string> ModelManager::model_names() const {
  const Core& c = *impl_->core;
  std::lock_guard<std::mutex> lock(c.mu);
  std::vector<std::string> out;
  for (const auto& m : c.config.models) out.push_back(m.name);
  return out;
}

ServerConfig ModelManager::config() const {
  const Core& c = *impl_->core;
  std::lock_guard<std::mutex> lock(c.mu);
  return c.config;
}

}  // namespace deepflow::serving
