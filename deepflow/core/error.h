// SPDX-License-Identifier: Apache-2.0
// deepflow::Error and the checking macros every op and function uses.
//
// Every user-facing error is a deepflow::Error whose message starts with the op
// or function in brackets and shows the shapes, dtypes or values at fault:
//
//   DF_CHECK(a.dim(-1) == b.dim(-2), "[matmul] inner dimensions differ: a is ",
//            a.shape(), ", b is ", b.shape());
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace deepflow {

/// The one exception type thrown for bad input: shapes, dtypes, attributes, files.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
/// Concatenates anything with an operator<< into one string.
template <class... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

/// Throws deepflow::Error built from the arguments.
template <class... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(detail::cat(std::forward<Args>(args)...));
}

}  // namespace deepflow

/// Throws deepflow::Error with the concatenated message when cond is false.
#define DF_CHECK(cond, ...)                            \
  do {                                                 \
    if (!(cond)) [[unlikely]] ::deepflow::fail(__VA_ARGS__); \
  } while (0)
