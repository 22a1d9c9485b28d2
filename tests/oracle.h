// SPDX-License-Identifier: Apache-2.0
// Test helpers for what a test cannot control: whether the build is sanitized, and
// cross-checks against an oracle (TensorFlow, ONNX Runtime, a Node package, a Python
// client, test data fetched at install time) that is missing: on a developer's machine
// the test skips, saying why; with CI set in the environment it fails instead, so a green
// CI run means every cross-check ran.
//
//   if (!have_ort) DEEPFLOW_ORACLE_MISSING("ONNX Runtime is not in " << dir);
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

// DEEPFLOW_TEST_SANITIZED: 1 in an ASan build, by gcc's macro or clang's feature test
// (clang 14 does not define __SANITIZE_ADDRESS__). Speed and memory figures mean nothing there.
#if defined(__SANITIZE_ADDRESS__)
#define DEEPFLOW_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DEEPFLOW_TEST_SANITIZED 1
#endif
#endif
#ifndef DEEPFLOW_TEST_SANITIZED
#define DEEPFLOW_TEST_SANITIZED 0
#endif

namespace deepflow::testing {

/// True when the CI variable is set and not empty (what CI services export).
inline bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0';
}

/// The interpreter of the peers environment (`make peers`: TensorFlow 2.21 and the other
/// oracles): $DEEPFLOW_PEERS_PYTHON, else <checkout>/.venv-peers/bin/python; "" when absent.
inline std::string peers_python() {
  if (const char* p = std::getenv("DEEPFLOW_PEERS_PYTHON"); p && *p) return p;
#ifdef DEEPFLOW_TESTS_SOURCE_ROOT
  const std::string p = std::string(DEEPFLOW_TESTS_SOURCE_ROOT) + "/.venv-peers/bin/python";
  if (std::filesystem::exists(p)) return p;
#endif
  return "";
}

#ifdef DEEPFLOW_TESTS_SOURCE_ROOT
/// What an oracle script writes, made once and kept: runs `<peers python> <script> [args]
/// <dir>` (script relative to the checkout, OPENBLAS_* unset as for every peer) into a new
/// directory `<cache_root>/<prefix><hash of the script's text>` and returns it; returns at
/// once when that directory already holds `done` (a file the script writes last). "" when
/// the peers are missing or the script fails (its log is then <dir>.tmp-<pid>.log). ctest
/// runs each test in its own process, so two may race: the first rename wins.
inline std::string oracle_output_dir(const std::string& script, const std::string& cache_root,
                                     const std::string& prefix, const std::string& done = "cases.json",
                                     const std::string& args = "") {
  namespace fs = std::filesystem;
  const std::string py = peers_python();
  if (py.empty()) return "";
  const std::string path = std::string(DEEPFLOW_TESTS_SOURCE_ROOT) + "/" + script;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const fs::path out = fs::path(cache_root) / (prefix + std::to_string(std::hash<std::string>()(text.str())));
  if (fs::exists(out / done)) return out.string();
  const fs::path tmp = out.string() + ".tmp-" + std::to_string(::getpid());
  fs::create_directories(tmp);
  const std::string cmd = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE " + py + " " + path + " " +
                          (args.empty() ? "" : args + " ") + tmp.string() + " > " + tmp.string() + ".log 2>&1";
  if (std::system(cmd.c_str()) != 0) return "";
  std::error_code ec;
  fs::rename(tmp, out, ec);  // another test process may have finished first: keep its copy
  if (ec) fs::remove_all(tmp, ec);
  fs::remove(tmp.string() + ".log", ec);
  return fs::exists(out / done) ? out.string() : "";
}
#endif

}  // namespace deepflow::testing

/// Skips (fails under CI) the current test with `why`, a stream expression. Returns from
/// the enclosing function, like GTEST_SKIP.
#define DEEPFLOW_ORACLE_MISSING(why)                                             \
  do {                                                                           \
    if (::deepflow::testing::in_ci()) GTEST_FAIL() << "[oracle missing in CI] " << why; \
    GTEST_SKIP() << why;                                                         \
  } while (0)
