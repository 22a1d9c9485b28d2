// SPDX-License-Identifier: Apache-2.0
// Operators and small helpers built from primitives.
#include "deepflow/ops/ops.h"

namespace deepflow {

Tensor scalar_like(const Tensor& x, double value) { return scalar(value, x.dtype()); }

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  Axes axes;
  const int lead = g.rank() - shape.rank();
  for (int i = 0; i < g.rank(); ++i) {
    if (i < lead) axes.push_back(i);
    else if (shape[i - lead] == 1 && g.shape()[i] != 1) axes.push_back(i);
  }
  Tensor s = axes.empty() ? g : reduce_sum(g, axes, /*keepdims=*/true);
  return s.shape() == shape ? s : reshape(s, shape);
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, double b) { return add(a, scalar_like(a, b)); }
Tensor operator-(const Tensor& a, double b) { return sub(a, scalar_like(a, b)); }
Tensor operator*(const Tensor& a, double b) { return mul(a, scalar_like(a, b)); }
Tensor operator/(const Tensor& a, double b) { return div(a, scalar_like(a, b)); }
Tensor operator+(double a, const Tensor& b) { return add(scalar_like(b, a), b); }
Tensor operator-(double a, const Tensor& b) { return sub(scalar_like(b, a), b); }
Tensor operator*(double a, const Tensor& b) { return mul(scalar_like(b, a), b); }
Tensor operator/(double a, const Tensor& b) { return div(scalar_like(b, a), b); }

Tensor clip_by_value(const Tensor& x, const Tensor& lo, const Tensor& hi) { return minimum(maximum(x, lo), hi); }
Tensor clip_by_value(const Tensor& x, double lo, double hi) {
  return clip_by_value(x, scalar_like(x, lo), scalar_like(x, hi));
}

}  // namespace deepflow
