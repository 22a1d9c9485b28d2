// SPDX-License-Identifier: Apache-2.0
// deepflow::lite's one exception type. The interpreter is its own library (no core), so it
// has its own copy of the core's convention: every message starts with the op or function
// in brackets and shows the shapes, types, indices or paths at fault.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace deepflow::lite {

/// Thrown for a bad model file, a bad input or an unsupported op; the interpreter keeps
/// its last good state.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// Throws lite::Error built from the arguments (anything with an operator<<).
template <class... Args>
[[noreturn]] void fail(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  throw Error(os.str());
}

}  // namespace deepflow::lite

/// Throws lite::Error with the remaining arguments when `cond` is false.
#define DF_LITE_CHECK(cond, ...)                      \
  do {                                                \
    if (!(cond)) ::deepflow::lite::fail(__VA_ARGS__); \
  } while (0)
