// SPDX-License-Identifier: Apache-2.0
// The element conversion of cast, shared by its reference and optimized kernels.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "deepflow/core/dtype.h"

namespace deepflow {

// One element from From to To. Floats to integers truncate toward zero like a
// C++ cast; where C++ leaves the result undefined we pick: NaN -> 0 and
// out-of-range values saturate (TensorFlow gives whatever the CPU gives).
// 16-bit floats go through float; double -> half rounds twice, like Eigen.
template <class To, class From>
inline To cast_value(From v) {
  using CF = compute_t<From>;
  const CF f = CF(v);
  if constexpr (std::is_same_v<To, bool>) {
    return f != CF(0);
  } else if constexpr (std::is_integral_v<To> && !std::is_integral_v<From>) {
    using L = std::numeric_limits<To>;
    // 2^digits is exact in every float type; lowest - 1 may round to lowest, which is fine.
    const CF upper = std::ldexp(CF(1), L::digits);
    if (std::isnan(f)) return To(0);
    if (f >= upper) return L::max();
    if (f <= CF(L::lowest()) - CF(1)) return L::lowest();
    return To(f);
  } else {
    return To(static_cast<compute_t<To>>(f));
  }
}

}  // namespace deepflow
