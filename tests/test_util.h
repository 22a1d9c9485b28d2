// SPDX-License-Identifier: Apache-2.0
// Small helpers shared by the test files.
#pragma once

#include <functional>
#include <string>

#include "deepflow/core/error.h"

namespace deepflow::testing {

/// The message of the deepflow::Error that f throws, or "no error".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace deepflow::testing
