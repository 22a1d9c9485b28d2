// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/model_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "deepflow/core/allocator.h"
#include "serving/serving_test_util.h"
#include "oracle.h"

namespace deepflow {
namespace {

namespace fs = std::filesystem;
using serving::Code;
using serving::ManagerEvent;
using serving::ManagerOptions;
using serving::ModelManager;
using serving::ModelSpec;
using serving::ServableHandle;
using serving::ServingError;
using serving::VersionState;
using ::testing::HasSubstr;

ManagerOptions manual(std::function<void(const ManagerEvent&)> on_event = {}) {
  ManagerOptions o;
  o.poll_seconds = 0;
  o.on_event = std::move(on_event);
  return o;
}

// y(2) of a half_plus servable: 1 + offset.
float half_at_2(const serving::Servable& s) {
  return s.model.signature("serving_default")({{"x", constant({2.f})}}).at("y").to_vector<float>()[0];
}
float half_at_2(const ServableHandle& h) { return half_at_2(*h); }

// A model base path (the fixtures write versions into an existing directory).
std::string make_base(const testing::TempDir& tmp, const std::string& name) {
  fs::create_directories(tmp / name);
  return tmp / name;
}

// Coarse kernel timestamps can give a rewrite the mtime of what it replaced; make sure
// the manager sees a change.
void touch_later(const std::string& path) {
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(2));
}

// Runs f, expects a ServingError with `code` whose message contains `text`.
template <class F>
void expect_error(F&& f, Code code, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "no error; expected " << serving::code_name(code) << ": " << text;
  } catch (const ServingError& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_THAT(e.what(), HasSubstr(text));
  }
}

std::string states(const ModelManager& m, const std::string& name) {
  std::string out;
  for (const auto& s : m.status({.name = name})) {
    if (!out.empty()) out += ' ';
    out += std::to_string(s.version);
    out += ':';
    out += serving::state_name(s.state);
  }
  return out;
}

// Records events; waits on a condition instead of sleeping.
struct Events {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> list;
  std::function<void(const ManagerEvent&)> callback() {
    return [this](const ManagerEvent& e) {
      static const char* kNames[] = {"LoadStarted", "Loaded", "LoadFailed", "Unloaded"};
      {
        std::lock_guard<std::mutex> lock(mu);
        list.push_back(std::string(kNames[int(e.kind)]) + " " + e.model + " " + std::to_string(e.version));
      }
      cv.notify_all();
    };
  }
  std::vector<std::string> take() {
    std::lock_guard<std::mutex> lock(mu);
    return std::exchange(list, {});
  }
  bool wait_for(const std::string& event, double seconds) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::duration<double>(seconds),
                       [&] { return std::find(list.begin(), list.end(), event) != list.end(); });
  }
};

// --- config ---

constexpr char kConfig[] = R"(model_config_list {
  config {
    name: "ranker"
    base_path: "/models/ranker"
    model_platform: "tensorflow"
    model_version_policy { specific { versions: 8 versions: 7 } }
    version_labels { key: "stable" value: 7 }
    version_labels { key: "canary" value: 8 }
  }
  config {
    name: "embedder"
    base_path: "/models/embedder"
    model_platform: "deepflow"
    model_version_policy { latest { num_versions: 2 } }
  }
  config { name: "all" base_path: "/models/all" model_version_policy { all {} } }
  config { name: "plain" base_path: "/models/plain" model_version_policy { latest {} } }
}
)";

TEST(ModelManagerConfig, ParsesEveryPolicyAndLabels) {
  testing::TempDir tmp;
  testing::write_bytes(tmp / "models.config", kConfig);
  serving::ServerConfig c = serving::parse_model_config_file(tmp / "models.config");
  ASSERT_EQ(c.models.size(), 4u);
  const auto& r = c.models[0];
  EXPECT_EQ(r.name, "ranker");
  EXPECT_EQ(r.base_path, "/models/ranker");
  EXPECT_EQ(r.policy.kind, serving::VersionPolicy::Kind::Specific);
  EXPECT_EQ(r.policy.versions, (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(r.version_labels, (std::map<std::string, int64_t>{{"canary", 8}, {"stable", 7}}));
  EXPECT_EQ(c.models[1].model_platform, "deepflow");
  EXPECT_EQ(c.models[1].policy.kind, serving::VersionPolicy::Kind::Latest);
  EXPECT_EQ(c.models[1].policy.num_versions, 2);
  EXPECT_EQ(c.models[2].policy.kind, serving::VersionPolicy::Kind::All);
  EXPECT_EQ(c.models[2].model_platform, "tensorflow");  // absent: tensorflow
  EXPECT_EQ(c.models[3].policy.num_versions, 1);        // latest {}: TF Serving's 0 -> 1
  EXPECT_TRUE(serving::parse_model_config_text("").models.empty());

  serving::ServerConfig one = serving::single_model("m", "/models/m");
  ASSERT_EQ(one.models.size(), 1u);
  EXPECT_EQ(one.models[0].policy.kind, serving::VersionPolicy::Kind::Latest);
  EXPECT_EQ(one.models[0].policy.num_versions, 1);
  EXPECT_STREQ(serving::state_name(VersionState::Available), "AVAILABLE");
  EXPECT_STREQ(serving::state_name(VersionState::End), "END");
}

TEST(ModelManagerConfig, ErrorsNameFileLineAndField) {
  const std::string syntax = "model_config_list {\n  config {\n    name: \"a\"\n    base_path /x\n  }\n}\n";
  expect_error([&] { serving::parse_model_config_text(syntax, "models.config"); }, Code::InvalidArgument,
               "models.config:4:15:");
  const std::string unknown = "model_config_list {\n  config {\n    nme: \"a\"\n  }\n}\n";
  expect_error([&] { serving::parse_model_config_text(unknown, "m.cfg"); }, Code::InvalidArgument, "m.cfg:3:");
  expect_error([&] { serving::parse_model_config_text(unknown, "m.cfg"); }, Code::InvalidArgument, "nme");

  const std::string dup =
      "model_config_list {\n"
      "  config { name: \"a\" base_path: \"/a\" }\n"
      "  config { name: \"b\" base_path: \"/b\" }\n"
      "  config {\n"
      "    name: \"a\" base_path: \"/c\" }\n"
      "}\n";
  expect_error([&] { serving::parse_model_config_text(dup, "d.cfg"); }, Code::InvalidArgument,
               "d.cfg:5:5: Illegal to list model a multiple times in config list (first at d.cfg:2:12)");
  expect_error(
      [] { serving::parse_model_config_text("model_config_list { config { name: \"a\" base_path: \"rel/a\" } }"); },
      Code::InvalidArgument, "<text>:1:40: Expected model a to have an absolute path; got base_path: \"rel/a\"");
  expect_error([] { serving::parse_model_config_text("model_config_list { config { base_path: \"/a\" } }"); },
               Code::InvalidArgument, "has no name");
  expect_error([] { serving::parse_model_config_text("model_config_list { config { name: \"a\" } }"); },
               Code::InvalidArgument, "model a has no base_path");
  expect_error(
      [] {
        serving::parse_model_config_text(
            "model_config_list { config { name: \"a\" base_path: \"/a\" model_version_policy { specific {} } } }");
      },
      Code::InvalidArgument, "model a: specific policy lists no versions");
  expect_error(
      [] {
        serving::parse_model_config_text(
            "model_config_list { config { name: \"a\" base_path: \"/a\" model_platform: \"onnx\" } }");
      },
      Code::InvalidArgument, "unsupported platform \"onnx\"");
  expect_error(
      [] {
        serving::parse_model_config_text(
            "model_config_list { config { name: \"a\" base_path: \"/a\" version_labels { key: \"x/y\" value: 1 } } }");
      },
      Code::InvalidArgument, "invalid version label \"x/y\"");
  expect_error([] { serving::parse_model_config_file("/nonexistent/models.config"); }, Code::NotFound,
               "/nonexistent/models.config");
  serving::ServerConfig twice = serving::single_model("a", "/a");
  twice.models.push_back(twice.models[0]);
  expect_error([&] { ModelManager m(twice, manual()); }, Code::InvalidArgument, "Illegal to list model a multiple times");
}

// --- scanning and policies ---

serving::ServerConfig config_with(const std::string& base, serving::VersionPolicy policy,
                                  std::map<std::string, int64_t> labels = {}) {
  serving::ServerConfig c = serving::single_model("half", base);
  c.models[0].policy = std::move(policy);
  c.models[0].version_labels = std::move(labels);
  return c;
}

TEST(ModelManagerPolicy, LatestAllSpecific) {
  testing::TempDir tmp;
  const std::string base = make_base(tmp, "half");
  for (int v = 1; v <= 3; ++v) testing::save_half_plus(base, v, float(v));
  // Not versions: names that are not decimal numbers, a plain file, a saver's temp dir.
  fs::create_directories(base + "/tmp");
  fs::create_directories(base + "/9.tmp-abc");
  fs::create_directories(base + "/-4");
  testing::write_bytes(base + "/7", "not a directory");

  {
    ModelManager m(serving::single_model("half", base), manual());
    expect_error([&] { m.get({.name = "half"}); }, Code::NotFound, "Servable not found for request: Latest(half)");
    m.start();
    EXPECT_EQ(states(m, "half"), "3:AVAILABLE");
    EXPECT_EQ(half_at_2(m.get({.name = "half"})), 4.f);
    expect_error([&] { m.get({.name = "half", .version = 1}); }, Code::NotFound,
                 "Servable not found for request: Specific(half, 1)");
    expect_error([&] { m.get({.name = "other"}); }, Code::NotFound, "Servable not found for request: Latest(other)");
  }
  {
    ModelManager m(config_with(base, {.kind = serving::VersionPolicy::Kind::Latest, .num_versions = 2}), manual());
    m.start();
    EXPECT_EQ(states(m, "half"), "3:AVAILABLE 2:AVAILABLE");
    EXPECT_EQ(half_at_2(m.get({.name = "half", .version = 2})), 3.f);
  }
  {
    ModelManager m(config_with(base, {.kind = serving::VersionPolicy::Kind::All}), manual());
    m.start();
    EXPECT_EQ(states(m, "half"), "3:AVAILABLE 2:AVAILABLE 1:AVAILABLE");
    EXPECT_EQ(m.get({.name = "half"})->version, 3);
    EXPECT_EQ(m.get({.name = "half", .version = 1})->path, base + "/1");
  }
  {
    // Version 5 is listed but not on disk (yet); "0005" below makes it appear.
    ModelManager m(config_with(base, {.kind = serving::VersionPolicy::Kind::Specific, .versions = {1, 3, 5}}),
                   manual());
    m.start();
    EXPECT_EQ(states(m, "half"), "3:AVAILABLE 1:AVAILABLE");
    testing::save_half_plus(base, 5, 5.f);
    fs::rename(base + "/5", base + "/0005");
    m.poll_now();
    EXPECT_EQ(states(m, "half"), "5:AVAILABLE 3:AVAILABLE 1:AVAILABLE");
    EXPECT_EQ(m.get({.name = "half"})->path, base + "/0005");
  }
}

TEST(ModelManagerVersions, NewVersionServesBeforeOldUnloads) {
  testing::TempDir tmp;
  const std::string base = make_base(tmp, "half");
  testing::save_half_plus(base, 1, 1.f);
  Events events;
  ModelManager m(serving::single_model("half", base), manual(events.callback()));
  m.start();
  EXPECT_EQ(events.take(), (std::vector<std::string>{"LoadStarted half 1", "Loaded half 1"}));
  EXPECT_EQ(half_at_2(m.get({.name = "half"})), 2.f);
  m.poll_now();  // nothing changed: nothing happens
  EXPECT_TRUE(events.take().empty());

  testing::save_half_plus(base, 2, 2.f);
  m.poll_now();
  // v2 was AVAILABLE before v1 was unloaded.
  EXPECT_EQ(events.take(),
            (std::vector<std::string>{"LoadStarted half 2", "Loaded half 2", "Unloaded half 1"}));
  EXPECT_EQ(states(m, "half"), "2:AVAILABLE 1:END");
  EXPECT_EQ(half_at_2(m.get({.name = "half"})), 3.f);

  // Every version gone from disk: nothing will replace v2, so it unloads.
  fs::remove_all(base + "/1");
  fs::remove_all(base + "/2");
  m.poll_now();
  EXPECT_EQ(states(m, "half"), "2:END 1:END");
  expect_error([&] { m.get({.name = "half"}); }, Code::NotFound, "Latest(half)");
  // Back on disk: loads again.
  testing::save_half_plus(base, 2, 2.f);
  m.poll_now();
  EXPECT_EQ(states(m, "half"), "2:AVAILABLE 1:END");
}

TEST(ModelManagerVersions, HandleKeepsUnloadedVersionAlive) {
  testing::TempDir tmp;
  const std::string base = make_base(tmp, "half");
  testing::save_half_plus(base, 1, 1.f);
  Events events;
  ModelManager m(serving::single_model("half", base), manual(events.callback()));
  m.start();
  ServableHandle v1 = m.get({.name = "half"});
  testing::save_half_plus(base, 2, 2.f);
  fs::remove_all(base + "/1");
  m.poll_now();
  EXPECT_EQ(states(m, "half"), "2:AVAILABLE 1:UNLOADING");
  EXPECT_EQ(half_at_2(v1), 2.f);  // the request in flight still runs on v1
  EXPECT_EQ(half_at_2(m.get({.name = "half"})), 3.f);
  EXPECT_EQ(events.take(), (std::vector<std::string>{"LoadStarted half 1", "Loaded half 1", "LoadStarted half 2",
                                                     "Loaded half 2"}));
  v1.reset();
  EXPECT_EQ(states(m, "half"), "2:AVAILABLE 1:END");
  EXPECT_EQ(events.take(), (std::vector<std::string>{"Unloaded half 1"}));
}

TEST(ModelManagerVersions, CorruptVersionNextToGoodOne) {
  testing::TempDir tmp;
  const std::string base = make_base(tmp, "half");
  testing::save_half_plus(base, 1, 1.f);
  fs::create_directories(base + "/2");
  testing::write_bytes(base + "/2/saved_model.pb", "this is not a SavedModel");
  Events events;
  ModelManager m(config_with(base, {.kind = serving::VersionPolicy::Kind::All}), manual(events.callback()));
  m.start();
  EXPECT_EQ(half_at_2(m.get({.name = "half"})), 2.f);
  auto bad = m.status({.name = "half", .version = 2});
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].state, VersionState::End);
  EXPECT_NE(bad[0].error_code, Code::Ok);
  EXPECT_THAT(bad[0].error_message, HasSubstr("[ModelManager] failed to load half version 2 from " + base + "/2: "));
  EXPECT_EQ(m.status({.name = "half", .version = 1})[0].error_code, Code::Ok);
  events.take();

  m.poll_now();  // unchanged on disk: not retried
  EXPECT_TRUE(events.take().empty());
  fs::remove_all(base + "/2");
  testing::save_half_plus(base, 2, 2.f);  // fixed: a new directory, so a new mtime
  touch_later(base + "/2");
  m.poll_now();
  EXPECT_EQ(events.take(), (std::vector<std::string>{"LoadStarted half 2", "Loaded half 2"}));
  EXPECT_EQ(states(m, "half"), "2:AVAILABLE 1:AVAILABLE");
  EXPECT_EQ(m.status({.name = "half", .version = 2})[0].error_message, "");
}

TEST(ModelManagerVersions, FailedNewVersionKeepsOldServing) {
  testing::TempDir tmp;
  const std::string base = make_base(tmp, "half");
  testing::save_half_plus(base, 1, 1.f);
  ModelManager m(serving::single_model("half", base), manual());
  m.start();
  // Version 2: a good SavedModel except for saved_model.pb.
  testing::save_half_plus(make_base(tmp, "staging"), 2, 2.f);
  fs::copy(tmp / "staging/2", base + "/2", fs::copy_options::recursive);
  testing::write_bytes(base + "/2/saved_model.pb", "garbage");
  m.poll_now();
  // v2 is the aspired one but failed; v1 keeps serving (TF Serving's availability preserving).
  EXPECT_EQ(states(m, "half"), "2:END 1:AVAILABLE");
  EXPECT_EQ(half_at_2(m.get({.name = "half"})), 2.f);
  // saved_model.pb rewritten in place (the directory's mtime stays): retried.
  const auto dir_time = fs::last_write_time(base + "/2");
  testing::write_bytes(base + "/2/saved_model.pb", testing::read_bytes(tmp / "staging/2/saved_model.pb"));
  touch_later(base + "/2/saved_model.pb");
  ASSERT_EQ(fs::last_write_time(base + "/2"), dir_time);
  m.poll_now();
  EXPECT_EQ(states(m, "half"), "2:AVAILABLE 1:END");
  EXPECT_EQ(half_at_2(m.get({.name = "half"})), 3.f);
}

TEST(ModelManagerVersions, ThrowingWarmupFailsTheLoad) {
  testing::TempDir tmp;
  const std::string base = make_base(tmp, "half");
  testing::save_half_plus(base, 1, 1.f);
  testing::save_half_plus(base, 2, 2.f);
  std::atomic<int> warmed{0};
  ManagerOptions o = manual();
  o.warmup = [&](const serving::Servable& s) {
    if (s.version == 2) throw Error("[warm_up] boom");
    EXPECT_EQ(half_at_2(s), 2.f);
    ++warmed;
  };
  ModelManager m(config_with(base, {.kind = serving::VersionPolicy::Kind::All}), o);
  m.start();
  EXPECT_EQ(warmed.load(), 1);
  EXPECT_EQ(m.get({.name = "half"})->version, 1);
  auto s = m.status({.name = "half", .version = 2})[0];
  EXPECT_EQ(s.state, VersionState::End);
  EXPECT_EQ(s.error_code, Code::InvalidArgument);
  EXPECT_THAT(s.error_message, HasSubstr("failed to load half version 2 from " + base + "/2: warmup failed: [warm_up] boom"));
}

TEST(ModelManagerVersions, MissingBasePathIsNotFatal) {
  testing::TempDir tmp;
  const std::string base = tmp / "later";
  ModelManager m(serving::single_model("later", base), manual());
  m.start();  // a warning, no exception
  expect_error([&] { m.status({.name = "later"}); }, Code::NotFound, "Could not find any versions of model later");
  fs::create_directories(base);
  testing::save_half_plus(base, 1, 1.f);
  m.poll_now();
  EXPECT_EQ(states(m, "later"), "1:AVAILABLE");
  // The base path vanishing for a poll (an unmounted volume) unloads nothing.
  fs::rename(base, tmp / "moved");
  m.poll_now();
  EXPECT_EQ(states(m, "later"), "1:AVAILABLE");
  EXPECT_EQ(half_at_2(m.get({.name = "later"})), 2.f);
}

TEST(ModelManagerVersions, StatusErrors) {
  testing::TempDir tmp;
  const std::string base = make_base(tmp, "half");
  testing::save_half_plus(base, 1, 1.f);
  ModelManager m(serving::single_model("half", base), manual());
  m.start();
  auto one = m.status({.name = "half", .version = 1});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].state, VersionState::Available);
  expect_error([&] { m.status({.name = "nope"}); }, Code::NotFound, "Could not find any versions of model nope");
  expect_error([&] { m.status({.name = "half", .version = 9}); }, Code::NotFound, "Could not find version 9 of model half");
  expect_error([&] { m.status({.name = ""}); }, Code::InvalidArgument, "ModelSpec has no name specified.");
  expect_error([&] { m.get({.name = ""}); }, Code::InvalidArgument, "ModelSpec has no name specified.");
}

TEST(ModelManagerVersions, GetIsCheap) {
  testing::TempDir tmp;
  const std::string base = make_base(tmp, "half");
  testing::save_half_plus(base, 1, 1.f);
  ModelManager m(serving::single_model("half", base), manual());
  m.start();
  constexpr int kCalls = 200000;
  int64_t sum = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) sum += m.get({.name = "half"})->version;
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kCalls;
  std::printf("[ModelManager] get(latest): %.0f ns per call (one thread)\n", ns);
  EXPECT_EQ(sum, kCalls);
  EXPECT_LT(ns, 20000.0);
}

// --- hot reload under load ---

TEST(ModelManagerVersions, HotReloadUnderLoadHasNoFailures) {
  testing::TempDir tmp;
  const std::string base = make_base(tmp, "half");
  testing::save_half_plus(base, 1, 1.f);  // y(2) = 2
  ModelManager m(serving::single_model("half", base), manual());
  m.start();

  std::atomic<bool> done{false};
  std::atomic<int64_t> calls{0}, failures{0}, went_back{0}, on_v2{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&] {
      int64_t last = 0;
      while (!done.load()) {
        try {
          ServableHandle h = m.get({.name = "half"});
          const float y = half_at_2(h);
          if (y != (h->version == 1 ? 2.f : 3.f)) ++failures;
          if (h->version < last) ++went_back;  // get(latest) must never move back to v1
          if (h->version == 2) ++on_v2;
          last = h->version;
        } catch (const std::exception& e) {
          std::fprintf(stderr, "client failure: %s\n", e.what());
          ++failures;
        }
        ++calls;
      }
    });
  }
  auto await_calls = [&](int64_t n) {
    while (calls.load() < n) std::this_thread::yield();
  };
  await_calls(100);
  // Version 2 added and version 1 removed in the same poll: v1 serves until v2 is AVAILABLE.
  testing::save_half_plus(base, 2, 2.f);
  fs::remove_all(base + "/1");
  const int64_t before = calls.load();
  m.poll_now();
  await_calls(calls.load() + 100);
  done = true;
  for (auto& c : clients) c.join();
  std::printf("[ModelManager] hot reload under load: %lld requests on 4 threads (%lld before the poll, %lld on v2), "
              "%lld failed\n",
              (long long)calls.load(), (long long)before, (long long)on_v2.load(), (long long)failures.load());
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(went_back.load(), 0);
  EXPECT_GT(before, 0);
  EXPECT_GE(on_v2.load(), 100);
  EXPECT_EQ(states(m, "half"), "2:AVAILABLE 1:END");
  EXPECT_EQ(half_at_2(m.get({.name = "half"})), 3.f);
}

// --- labels and config reload ---

TEST(ModelManagerLabels, ResolveAndReload) {
  testing::TempDir tmp;
  const std::string base = make_base(tmp, "half");
  for (int v = 1; v <= 3; ++v) testing::save_half_plus(base, v, float(v));
  ModelManager m(config_with(base, {.kind = serving::VersionPolicy::Kind::Specific, .versions = {1, 2}},
                             {{"stable", 1}, {"canary", 2}}),
                 manual());
  // At construction, labels may name versions that are not loaded yet; they resolve once loaded.
  expect_error([&] { m.get({.name = "half", .label = "stable"}); }, Code::NotFound,
               "Servable not found for request: Specific(half, 1)");
  m.start();
  EXPECT_EQ(half_at_2(m.get({.name = "half", .label = "stable"})), 2.f);
  EXPECT_EQ(half_at_2(m.get({.name = "half", .label = "canary"})), 3.f);
  EXPECT_EQ(m.status({.name = "half", .label = "canary"})[0].version, 2);
  expect_error([&] { m.get({.name = "half", .label = "nope"}); }, Code::InvalidArgument,
               "Unrecognized servable version label: nope");
  expect_error([&] { m.status({.name = "half", .label = "nope"}); }, Code::InvalidArgument,
               "Unrecognized servable version label: nope");
  expect_error([&] { m.get({.name = "other", .label = "stable"}); }, Code::InvalidArgument,
               "Unrecognized servable version label: stable");
  expect_error([&] { m.get({.name = "half", .version = 1, .label = "stable"}); }, Code::InvalidArgument,
               "both version 1 and label \"stable\"");

  // Version 3 exists on disk but is not loaded: the label may not point at it.
  expect_error(
      [&] {
        m.reload_config(config_with(base, {.kind = serving::VersionPolicy::Kind::Specific, .versions = {1, 2, 3}},
                                    {{"stable", 1}, {"canary", 3}}));
      },
      Code::FailedPrecondition,
      "Request to assign label to version 3 of model half, which is not currently available for inference");
  // ... and nothing changed: same policy, same labels, version 3 not loaded.
  EXPECT_EQ(m.config().models[0].version_labels.at("canary"), 2);
  EXPECT_EQ(states(m, "half"), "2:AVAILABLE 1:AVAILABLE");

  // The recommended flow: load 3 first, then move the label.
  m.reload_config(config_with(base, {.kind = serving::VersionPolicy::Kind::Specific, .versions = {1, 2, 3}},
                              {{"stable", 1}, {"canary", 2}}));
  EXPECT_EQ(states(m, "half"), "3:AVAILABLE 2:AVAILABLE 1:AVAILABLE");
  m.reload_config(config_with(base, {.kind = serving::VersionPolicy::Kind::Specific, .versions = {2, 3}},
                              {{"stable", 2}, {"canary", 3}}));
  EXPECT_EQ(states(m, "half"), "3:AVAILABLE 2:AVAILABLE 1:END");
  EXPECT_EQ(half_at_2(m.get({.name = "half", .label = "stable"})), 3.f);
  EXPECT_EQ(half_at_2(m.get({.name = "half", .label = "canary"})), 4.f);
}

TEST(ModelManagerLabels, ReloadAddsAndRemovesModels) {
  testing::TempDir tmp;
  testing::save_half_plus(make_base(tmp, "a"), 1, 1.f);
  testing::save_dense(make_base(tmp, "b"), 4, 3, 2);
  Events events;
  ModelManager m(serving::single_model("a", tmp / "a"), manual(events.callback()));
  m.start();
  serving::ServerConfig both = serving::single_model("a", tmp / "a");
  both.models.push_back(serving::single_model("b", tmp / "b").models[0]);
  m.reload_config(both);
  EXPECT_EQ(m.model_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(m.get({.name = "b"})->version, 4);
  EXPECT_EQ(half_at_2(m.get({.name = "a"})), 2.f);

  events.take();
  m.reload_config(serving::single_model("b", tmp / "b"));
  EXPECT_EQ(events.take(), (std::vector<std::string>{"Unloaded a 1"}));
  EXPECT_EQ(m.model_names(), (std::vector<std::string>{"b"}));
  expect_error([&] { m.get({.name = "a"}); }, Code::NotFound, "Servable not found for request: Latest(a)");
  EXPECT_EQ(states(m, "a"), "1:END");  // remembered, as TF Serving's state monitor does
  EXPECT_EQ(m.get({.name = "b"})->version, 4);

  serving::ServerConfig other_platform = serving::single_model("b", tmp / "b");
  other_platform.models[0].model_platform = "deepflow";
  expect_error([&] { m.reload_config(other_platform); }, Code::InvalidArgument,
               "Illegal to change a model's platform. For model b platform was tensorflow");

  m.reload_config(both);  // back again
  EXPECT_EQ(half_at_2(m.get({.name = "a"})), 2.f);
}

// --- background polling and shutdown ---

TEST(ModelManagerPolling, PollerPicksUpVersionsAndStopsPromptly) {
  testing::TempDir tmp;
  const std::string base = make_base(tmp, "half");
  testing::save_half_plus(base, 1, 1.f);
  Events events;
  {
    ManagerOptions o = manual(events.callback());
    o.poll_seconds = 0.02;
    ModelManager m(serving::single_model("half", base), o);
    m.start();
    EXPECT_EQ(m.get({.name = "half"})->version, 1);
    testing::save_half_plus(base, 2, 2.f);
    ASSERT_TRUE(events.wait_for("Unloaded half 1", 60));
    EXPECT_EQ(half_at_2(m.get({.name = "half"})), 3.f);
  }
  ManagerOptions slow = manual();
  slow.poll_seconds = 3600;
  auto m = std::make_unique<ModelManager>(serving::single_model("half", base), slow);
  m->start();
  const auto t0 = std::chrono::steady_clock::now();
  m.reset();  // wakes the poller from its hour-long wait
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

// --- memory ---

int64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * int64_t(::sysconf(_SC_PAGESIZE));
}

#if DEEPFLOW_TEST_SANITIZED
constexpr bool kSanitized = true;  // ASan's quarantine keeps freed memory: RSS says nothing
#else
constexpr bool kSanitized = false;
#endif

TEST(ModelManagerMemory, LoadUnloadCyclesReturnMemory) {
  testing::TempDir tmp;
  const std::string base = make_base(tmp, "dense");
  testing::save_dense(base, 1, 10000, 1000);  // 40 MB of weights
  fs::rename(base + "/1", base + "/parked");   // not a version until renamed back
  const Tensor x = ones({1, 10000});
  for (bool mmap : {true, false}) {
    cpu_release_cached();
    ManagerOptions o = manual();
    o.load.mmap = mmap;
    ModelManager m(serving::single_model("dense", base), o);
    m.start();
    int64_t loaded = 0;
    auto cycle = [&] {
      fs::rename(base + "/parked", base + "/1");
      m.poll_now();
      auto y = m.get({.name = "dense"})->model.signature("serving_default")({{"x", x}}).at("y");
      EXPECT_EQ(y.shape(), Shape({1, 1000}));
      loaded = std::max(loaded, rss_bytes());
      fs::rename(base + "/1", base + "/parked");
      m.poll_now();
      EXPECT_EQ(states(m, "dense"), "1:END");
    };
    const int64_t start = rss_bytes();
    cycle();  // the first run also sets up what stays (kernel caches, thread pools)
    const int64_t before = rss_bytes();
    for (int i = 0; i < 10; ++i) cycle();
    const int64_t after = rss_bytes();
    const double mb = 1 << 20;
    std::printf("[ModelManagerMemory] mmap=%s: RSS %.1f MB at start, %.1f MB after the first cycle, peak loaded "
                "%.1f MB, %.1f MB after 10 more load/unload cycles: growth %+.2f MB (%+.2f MB since start)\n",
                mmap ? "on" : "off", start / mb, before / mb, loaded / mb, after / mb, (after - before) / mb,
                (after - start) / mb);
    EXPECT_GT(loaded - before, int64_t(30) << 20) << "the model was never resident";
    if (!kSanitized) {
      EXPECT_LT(after - before, int64_t(10) << 20);
      EXPECT_LT(after - start, int64_t(10) << 20);
    }
  }
}

}  // namespace
}  // namespace deepflow
