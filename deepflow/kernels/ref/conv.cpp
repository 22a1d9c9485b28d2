// SPDX-License-Identifier: Apache-2.0
// Reference kernels of convolution and pooling: direct loops over NHWC / HWIO,
// accumulating in double. Slow on purpose; they are the oracle.
#include <vector>

#include "deepflow/ops/kernel.h"
#include "deepflow/kernels/ref/conv_taps.h"
#include "deepflow/ops/conv.h"

namespace deepflow {
namespace {

using detail::ConvGeometry;

template <class T> double ld(T v) { return double(compute_t<T>(v)); }
template <class T> T st(double v) { return T(compute_t<T>(v)); }

ConvGeometry conv_geom(const OpCall& c, const Shape& x, const Shape& w) {
  return detail::conv_geometry(x, w, c.attr_ints("strides"), c.attr_string("padding"), c.attr_ints("dilations"));
}
ConvGeometry pool_geom(const OpCall& c, const Shape& x) {
  return detail::pool_geometry(x, c.attr_ints("ksize"), c.attr_ints("strides"), c.attr_string("padding"));
}
// max_pool's and max_pool_grad's geometry, whose padding may be EXPLICIT.
ConvGeometry max_pool_geom(const OpCall& c) {
  return detail::pool_geometry(c.in(0).shape(), c.attr_ints("ksize"), c.attr_ints("strides"), c.attr_string("padding"),
                               c.attr_ints("explicit_paddings"));
}

// --- conv2d --- x [n,h,w,c_in], w [kh,kw,c_in/g,c_out] -> y [n,oh,ow,c_out]
void ref_conv2d(const OpCall& c, TensorList& out) {
  const ConvGeometry g = conv_geom(c, c.in(0).shape(), c.in(1).shape());
  DF_DISPATCH_FLOAT(c.in(0).dtype(), c.name(), [&] {
    const scalar_t *x = c.in(0).data<scalar_t>(), *w = c.in(1).data<scalar_t>();
    std::vector<double> acc(size_t(out[0].size()), 0.0);
    for_each_tap(g, [&](int64_t xo, int64_t wo, int64_t yo) { acc[yo] += ld(x[xo]) * ld(w[wo]); });
    scalar_t* y = out[0].data<scalar_t>();
    for (size_t i = 0; i < acc.size(); ++i) y[i] = st<scalar_t>(acc[i]);
  });
}

// --- conv2d_backprop_input --- w, dy [n,oh,ow,c_out] -> dx input_sizes
void ref_conv2d_backprop_input(const OpCall& c, TensorList& out) {
  const ConvGeometry g = conv_geom(c, out[0].shape(), c.in(0).shape());
  DF_DISPATCH_FLOAT(c.in(0).dtype(), c.name(), [&] {
    const scalar_t *w = c.in(0).data<scalar_t>(), *dy = c.in(1).data<scalar_t>();
    std::vector<double> acc(size_t(out[0].size()), 0.0);
    for_each_tap(g, [&](int64_t xo, int64_t wo, int64_t yo) { acc[xo] += ld(dy[yo]) * ld(w[wo]); });
    scalar_t* dx = out[0].data<scalar_t>();
    for (size_t i = 0; i < acc.size(); ++i) dx[i] = st<scalar_t>(acc[i]);
  });
}

// --- conv2d_backprop_filter --- x, dy [n,oh,ow,c_out] -> dw filter_sizes
void ref_conv2d_backprop_filter(const OpCall& c, TensorList& out) {
  const ConvGeometry g = conv_geom(c, c.in(0).shape(), out[0].shape());
  DF_DISPATCH_FLOAT(c.in(0).dtype(), c.name(), [&] {
    const scalar_t *x = c.in(0).data<scalar_t>(), *dy = c.in(1).data<scalar_t>();
    std::vector<double> acc(size_t(out[0].size()), 0.0);
    for_each_tap(g, [&](int64_t xo, int64_t wo, int64_t yo) { acc[wo] += ld(x[xo]) * ld(dy[yo]); });
    scalar_t* dw = out[0].data<scalar_t>();
    for (size_t i = 0; i < acc.size(); ++i) dw[i] = st<scalar_t>(acc[i]);
  });
}

// Calls f(y_offset, x_offsets) for every pooling window, with the flat offsets of its
// valid input cells in row-major window order (padding cells are skipped).
template <class F>
void for_each_window(const ConvGeometry& g, F&& f) {
  std::vector<int64_t> cells;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.oh; ++oh)
      for (int64_t ow = 0; ow < g.ow; ++ow)
        for (int64_t ch = 0; ch < g.co; ++ch) {
          cells.clear();
          for (int64_t kh = 0; kh < g.kh; ++kh) {
            const int64_t ih = oh * g.sh - g.pad_top + kh;
            if (ih < 0 || ih >= g.h) continue;
            for (int64_t kw = 0; kw < g.kw; ++kw) {
              const int64_t iw = ow * g.sw - g.pad_left + kw;
              if (iw >= 0 && iw < g.w) cells.push_back(((n * g.h + ih) * g.w + iw) * g.ci + ch);
            }
          }
          f(((n * g.oh + oh) * g.ow + ow) * g.co + ch, cells);
        }
}

// The first maximum among the cells (strict > keeps the earliest on ties).
template <class T>
int64_t first_max(const T* x, const std::vector<int64_t>& cells) {
  int64_t best = cells[0];
  for (int64_t o : cells)
    if (compute_t<T>(x[o]) > compute_t<T>(x[best])) best = o;
  return best;
}

// --- max_pool --- x [n,h,w,c] -> [n,oh,ow,c]
void ref_max_pool(const OpCall& c, TensorList& out) {
  const ConvGeometry g = max_pool_geom(c);
  DF_DISPATCH_NUMERIC(c.in(0).dtype(), c.name(), [&] {
    const scalar_t* x = c.in(0).data<scalar_t>();
    scalar_t* y = out[0].data<scalar_t>();
    for_each_window(g, [&](int64_t yo, const std::vector<int64_t>& cells) { y[yo] = x[first_max(x, cells)]; });
  });
}

// --- max_pool_grad --- x, y, dy [n,oh,ow,c] -> dx [n,h,w,c]
void ref_max_pool_grad(const OpCall& c, TensorList& out) {
  const ConvGeometry g = max_pool_geom(c);
  DF_DISPATCH_FLOAT(c.in(0).dtype(), c.name(), [&] {
    const scalar_t *x = c.in(0).data<scalar_t>(), *dy = c.in(2).data<scalar_t>();
    std::vector<double> acc(size_t(out[0].size()), 0.0);
    for_each_window(g, [&](int64_t yo, const std::vector<int64_t>& cells) { acc[first_max(x, cells)] += ld(dy[yo]); });
    scalar_t* dx = out[0].data<scalar_t>();
    for (size_t i = 0; i < acc.size(); ++i) dx[i] = st<scalar_t>(acc[i]);
  });
}

// --- avg_pool --- x [n,h,w,c] -> [n,oh,ow,c]
void ref_avg_pool(const OpCall& c, TensorList& out) {
  const ConvGeometry g = pool_geom(c, c.in(0).shape());
  DF_DISPATCH_FLOAT(c.in(0).dtype(), c.name(), [&] {
    const scalar_t* x = c.in(0).data<scalar_t>();
    scalar_t* y = out[0].data<scalar_t>();
    for_each_window(g, [&](int64_t yo, const std::vector<int64_t>& cells) {
      double s = 0;
      for (int64_t o : cells) s += ld(x[o]);
      y[yo] = st<scalar_t>(s / double(cells.size()));
    });
  });
}

// --- avg_pool_grad --- dy [n,oh,ow,c] -> dx input_sizes
void ref_avg_pool_grad(const OpCall& c, TensorList& out) {
  const ConvGeometry g = pool_geom(c, out[0].shape());
  DF_DISPATCH_FLOAT(c.in(0).dtype(), c.name(), [&] {
    const scalar_t* dy = c.in(0).data<scalar_t>();
    std::vector<double> acc(size_t(out[0].size()), 0.0);
    for_each_window(g, [&](int64_t yo, const std::vector<int64_t>& cells) {
      for (int64_t o : cells) acc[o] += ld(dy[yo]) / double(cells.size());
    });
    scalar_t* dx = out[0].data<scalar_t>();
    for (size_t i = 0; i < acc.size(); ++i) dx[i] = st<scalar_t>(acc[i]);
  });
}

}  // namespace

DF_REGISTER_KERNEL(Conv2D, {.run = ref_conv2d});
DF_REGISTER_KERNEL(Conv2DBackpropInput, {.run = ref_conv2d_backprop_input});
DF_REGISTER_KERNEL(Conv2DBackpropFilter, {.run = ref_conv2d_backprop_filter});
DF_REGISTER_KERNEL(MaxPool, {.run = ref_max_pool});
DF_REGISTER_KERNEL(MaxPoolGrad, {.run = ref_max_pool_grad});
DF_REGISTER_KERNEL(AvgPool, {.run = ref_avg_pool});
DF_REGISTER_KERNEL(AvgPoolGrad, {.run = ref_avg_pool_grad});

}  // namespace deepflow
