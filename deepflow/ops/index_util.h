// SPDX-License-Identifier: Apache-2.0
// Index-family helpers shared by the op definitions and their kernels.
#pragma once

#include <cstdint>

#include "deepflow/ops/op.h"

namespace deepflow::detail {

/// Product of dims [from, to) of s.
inline int64_t dims_product(const Shape& s, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; ++i) p *= s[i];
  return p;
}

/// A gather call viewed as params [B, O, N, I] and indices [B, K] -> [B, O, K, I]:
/// B = batch dims, O = params dims between the batch dims and the axis, N = params.dim(axis),
/// I = trailing params dims, K = index count per batch.
struct GatherGeometry {
  int64_t B, O, N, I, K;
  int axis;
};

inline GatherGeometry gather_geometry(const OpCall& c) {
  const Shape& ps = c.in(0).shape();
  const Tensor& indices = c.in(1);
  int64_t bd = c.attr_int("batch_dims");
  if (bd < 0) bd += indices.rank();
  const int axis = normalize_axis("gather", c.attr_int("axis"), ps.rank());
  return {dims_product(ps, 0, int(bd)), dims_product(ps, int(bd), axis), ps[axis],
          dims_product(ps, axis + 1, ps.rank()), dims_product(indices.shape(), int(bd), indices.rank()), axis};
}

}  // namespace deepflow::detail
