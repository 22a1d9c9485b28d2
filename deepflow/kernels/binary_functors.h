// SPDX-License-Identifier: Apache-2.0
// The scalar functions of the binary primitives, shared by the reference and
// the optimized kernels so both compute exactly the same thing per element.
// T is the compute type (float for the 16-bit types).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "deepflow/core/error.h"

namespace deepflow::fn {

struct Add { template <class T> static T f(T a, T b) { return a + b; } };
struct Sub { template <class T> static T f(T a, T b) { return a - b; } };
struct Mul { template <class T> static T f(T a, T b) { return a * b; } };
struct Div {
  template <class T> static T f(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      DF_CHECK(b != 0, "[div] integer division by zero");
      return T(a / b);
    } else {
      return a / b;
    }
  }
};
struct Pow {
  template <class T> static T f(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      DF_CHECK(b >= 0, "[pow] integers cannot be raised to the negative power ", int64_t(b));
      T r = 1;
      for (T i = 0; i < b; ++i) r = T(r * a);
      return r;
    } else {
      return std::pow(a, b);
    }
  }
};
// NaN propagates, as in TensorFlow.
struct Maximum { template <class T> static T f(T a, T b) { return (a >= b || a != a) ? a : b; } };
struct Minimum { template <class T> static T f(T a, T b) { return (a <= b || a != a) ? a : b; } };
struct Equal { template <class T> static bool f(T a, T b) { return a == b; } };
struct NotEqual { template <class T> static bool f(T a, T b) { return a != b; } };
struct Less { template <class T> static bool f(T a, T b) { return a < b; } };
struct LessEqual { template <class T> static bool f(T a, T b) { return a <= b; } };
struct Greater { template <class T> static bool f(T a, T b) { return a > b; } };
struct GreaterEqual { template <class T> static bool f(T a, T b) { return a >= b; } };
struct LogicalAnd { template <class T> static bool f(T a, T b) { return a && b; } };
struct LogicalOr { template <class T> static bool f(T a, T b) { return a || b; } };

}  // namespace deepflow::fn
