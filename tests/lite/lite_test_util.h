// SPDX-License-Identifier: Apache-2.0
// Shared by the lite tests: the .tflite files TensorFlow's converter wrote with LiteRT's
// answers (tests/lite/lite_models.py, made once per version of the script and cached in
// the build tree), and raw array files.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "oracle.h"

namespace deepflow::lite::testing {

/// The directory of LiteRT's cases, or "" when the peers are missing.
inline const std::string& litert_cases_dir() {
  static const std::string dir = deepflow::testing::oracle_output_dir("tests/lite/lite_models.py",
                                                                     DEEPFLOW_LITE_TEST_CACHE, "litert_", "cases.json");
  return dir;
}

inline nlohmann::json litert_cases() {
  std::ifstream in(litert_cases_dir() + "/cases.json");
  return nlohmann::json::parse(in);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace deepflow::lite::testing

/// Skips (fails in CI) when the LiteRT cases could not be made.
#define DEEPFLOW_NEED_LITERT_CASES()                                                              \
  do {                                                                                           \
    if (::deepflow::lite::testing::litert_cases_dir().empty())                                   \
      DEEPFLOW_ORACLE_MISSING("the peers environment (TensorFlow 2.21, ai-edge-litert) is missing " \
                              "or tests/lite/lite_models.py failed (make peers)");                 \
  } while (0)
