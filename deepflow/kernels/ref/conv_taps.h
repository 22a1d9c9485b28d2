// SPDX-License-Identifier: Apache-2.0
// The loop every reference convolution kernel shares (conv2d, its two gradients, fused_conv2d).
#pragma once

#include <cstdint>

#include "deepflow/ops/conv.h"

namespace deepflow {

// Calls f(x_offset, w_offset, y_offset) for every (input cell, filter tap, output cell)
// triple of a conv2d, where the offsets index x [n,h,w,c_in], w [kh,kw,c_in/g,c_out] and
// y [n,oh,ow,c_out]. All the reference conv kernels are this one loop with another body.
template <class F>
inline void for_each_tap(const detail::ConvGeometry& g, F&& f) {
  const int64_t cig = g.ci / g.groups, cog = g.co / g.groups;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.oh; ++oh)
      for (int64_t ow = 0; ow < g.ow; ++ow)
        for (int64_t co = 0; co < g.co; ++co) {
          const int64_t y_off = ((n * g.oh + oh) * g.ow + ow) * g.co + co;
          const int64_t grp = co / cog;
          for (int64_t kh = 0; kh < g.kh; ++kh) {
            const int64_t ih = oh * g.sh - g.pad_top + kh * g.dh;
            if (ih < 0 || ih >= g.h) continue;
            for (int64_t kw = 0; kw < g.kw; ++kw) {
              const int64_t iw = ow * g.sw - g.pad_left + kw * g.dw;
              if (iw < 0 || iw >= g.w) continue;
              for (int64_t ci = 0; ci < cig; ++ci)
                f(((n * g.h + ih) * g.w + iw) * g.ci + grp * cig + ci, ((kh * g.kw + kw) * cig + ci) * g.co + co, y_off);
            }
          }
        }
}

}  // namespace deepflow
