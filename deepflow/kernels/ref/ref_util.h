// SPDX-License-Identifier: Apache-2.0
// Helpers for reference kernels: plain index arithmetic, no tricks. The
// reference kernels are the test oracle, so clarity beats speed here.
#pragma once

#include <cstdint>

#include "deepflow/core/shape.h"
#include "deepflow/ops/op.h"

namespace deepflow::ref {

/// The flat offset in an input of shape `in` (numpy-broadcast against `out`)
/// of the output element at flat index `flat`.
inline int64_t broadcast_offset(const Shape& out, const Shape& in, int64_t flat) {
  int64_t off = 0, in_stride = 1;
  for (int i = out.rank() - 1; i >= 0; --i) {
    int64_t idx = flat % out[i];
    flat /= out[i];
    int j = i - (out.rank() - in.rank());
    if (j < 0) break;
    if (in[j] != 1) off += idx * in_stride;
    in_stride *= in[j];
  }
  return off;
}

/// Row-major multi-index of `flat` in `s`.
inline void unravel(const Shape& s, int64_t flat, int64_t* idx) {
  for (int i = s.rank() - 1; i >= 0; --i) {
    idx[i] = flat % s[i];
    flat /= s[i];
  }
}

/// Row-major flat offset of a multi-index in `s`.
inline int64_t ravel(const Shape& s, const int64_t* idx) {
  int64_t off = 0;
  for (int i = 0; i < s.rank(); ++i) off = off * s[i] + idx[i];
  return off;
}

/// fused_conv_chain run layer by layer as fused_conv2d calls (and a transpose for an NCHW
/// input): on the reference kernels (`reference`), or on the kernels dispatch picks (the CPU
/// fallback when oneDNN cannot plan the whole chain).
void conv_chain_by_layers(const OpCall& c, TensorList& out, bool reference);

}  // namespace deepflow::ref
