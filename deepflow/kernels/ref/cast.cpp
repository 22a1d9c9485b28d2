// SPDX-License-Identifier: Apache-2.0
// Reference kernels of cast, identity and stop_gradient.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "deepflow/kernels/kernel.h"

namespace deepflow {
namespace {

// One element from From to To. Floats to integers truncate toward zero like a
// C++ cast; where C++ leaves the result undefined we pick: NaN -> 0 and
// out-of-range values saturate (TensorFlow gives whatever the CPU gives).
// 16-bit floats go through float; double -> half rounds twice, like Eigen.
template <class To, class From>
To cast_value(From v) {
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

void ref_cast(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  const int64_t n = o.size();
  DF_DISPATCH_ALL(x.dtype(), "cast", [&] {
    using From = scalar_t;
    const From* px = x.data<From>();
    DF_DISPATCH_ALL(o.dtype(), "cast", [&] {
      scalar_t* po = o.data<scalar_t>();
      for (int64_t i = 0; i < n; ++i) po[i] = cast_value<scalar_t, From>(px[i]);
    });
  });
}

void ref_copy(const OpCall& c, TensorList& out) {
  if (out[0].nbytes() > 0) std::memcpy(out[0].raw_data(), c.in(0).raw_data(), out[0].nbytes());
}

}  // namespace

DF_REGISTER_KERNEL(Cast, {.run = ref_cast});
DF_REGISTER_KERNEL(Identity, {.run = ref_copy});
DF_REGISTER_KERNEL(StopGradient, {.run = ref_copy});

}  // namespace deepflow
