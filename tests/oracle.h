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

#include <cstdlib>
#include <filesystem>
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

}  // namespace deepflow::testing

/// Skips (fails under CI) the current test with `why`, a stream expression. Returns from
/// the enclosing function, like GTEST_SKIP.
#define DEEPFLOW_ORACLE_MISSING(why)                                             \
  do {                                                                           \
    if (::deepflow::testing::in_ci()) GTEST_FAIL() << "[oracle missing in CI] " << why; \
    GTEST_SKIP() << why;                                                         \
  } while (0)
