// SPDX-License-Identifier: Apache-2.0
// ONNX neural-network ops: Conv, ConvTranspose, pools, normalizations, Gemm, MatMul,
// Softmax and friends, Dropout (inference), LRN and the losses.
//
// ONNX is channels-first (NCHW) and deepflow's convolutions and pools are channels-last
// (NHWC, TensorFlow's layout), so each conv and pool is wrapped in a pair of transposes.
// Weights are constants, so their transposes fold at import. Explicit or asymmetric
// padding becomes a pad() followed by a VALID window op; SAME_UPPER is TensorFlow's SAME
// and maps onto it directly.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "deepflow/core/error.h"
#include "deepflow/onnx/op_importer.h"
#include "deepflow/ops/conv.h"
#include "deepflow/ops/op.h"

namespace deepflow::onnx {
namespace {

constexpr const char* kPrefix = "[onnx::import] ";

Tensor to_channels_last(const Tensor& x) {
  Axes perm{0};
  for (int i = 2; i < x.rank(); ++i) perm.push_back(i);
  perm.push_back(1);
  return transpose(x, perm);
}
Tensor to_channels_first(const Tensor& x) {
  Axes perm{0, x.rank() - 1};
  for (int i = 1; i < x.rank() - 1; ++i) perm.push_back(i);
  return transpose(x, perm);
}

// --- window geometry (conv and pools) ---

struct Window {
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end, out;
  int spatial() const { return int(in.size()); }
  bool no_padding() const {
    for (int i = 0; i < spatial(); ++i)
      if (pad_begin[size_t(i)] || pad_end[size_t(i)]) return false;
    return true;
  }
  // TensorFlow's SAME puts the odd cell at the end, as ONNX's SAME_UPPER does.
  bool tf_same() const {
    for (int i = 0; i < spatial(); ++i) {
      auto w = detail::window_dim(in[size_t(i)], kernel[size_t(i)], strides[size_t(i)], dilations[size_t(i)], true);
      if (w.out != out[size_t(i)] || w.pad_before != pad_begin[size_t(i)] || w.pad_after != pad_end[size_t(i)])
        return false;
    }
    return true;
  }
};

// ONNX's output size and padding rules. ceil_mode adds padding at the end (ceil_extra,
// kept in pad_end) so that the last partial window exists; `extra` reports how much.
Window window_of(NodeContext& c, const Shape& x_shape, const std::vector<int64_t>& kernel, bool ceil_mode,
                 std::vector<int64_t>* extra = nullptr) {
  Window w;
  const int n = int(kernel.size());
  DF_CHECK(x_shape.rank() == n + 2, kPrefix, c.describe(), ": input rank ", x_shape.rank(), " does not match a ",
           n, "-D kernel");
  for (int i = 0; i < n; ++i) {
    DF_CHECK(x_shape[i + 2] >= 0, kPrefix, c.describe(), ": spatial dims must be known, got ", x_shape.to_string());
    w.in.push_back(x_shape[i + 2]);
  }
  w.kernel = kernel;
  w.strides = c.attr_ints("strides", std::vector<int64_t>(size_t(n), 1));
  w.dilations = c.attr_ints("dilations", std::vector<int64_t>(size_t(n), 1));
  DF_CHECK(int(w.strides.size()) == n && int(w.dilations.size()) == n, kPrefix, c.describe(),
           ": strides and dilations need ", n, " values");
  for (int i = 0; i < n; ++i)
    DF_CHECK(kernel[size_t(i)] > 0 && w.strides[size_t(i)] > 0 && w.dilations[size_t(i)] > 0, kPrefix,
             c.describe(), ": kernel, strides and dilations must be positive, got kernel ", kernel[size_t(i)],
             ", stride ", w.strides[size_t(i)], ", dilation ", w.dilations[size_t(i)], " on spatial axis ", i);
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(size_t(2 * n), 0));
  DF_CHECK(int(pads.size()) == 2 * n, kPrefix, c.describe(), ": pads needs ", 2 * n, " values, got ", pads.size());
  if (extra) extra->assign(size_t(n), 0);
  for (int i = 0; i < n; ++i) {
    const size_t k = size_t(i);
    const int64_t eff = (kernel[k] - 1) * w.dilations[k] + 1, s = w.strides[k], in = w.in[k];
    int64_t pb = 0, pe = 0, out = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>((out - 1) * s + eff - in, 0);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else if (auto_pad == "VALID") {
      out = std::max<int64_t>(in - eff + s, 0) / s;
    } else {
      DF_CHECK(auto_pad == "NOTSET", kPrefix, c.describe(), ": unknown auto_pad '", auto_pad, "'");
      pb = pads[k];
      pe = pads[k + size_t(n)];
      const int64_t span = in + pb + pe - eff;
      DF_CHECK(span >= 0, kPrefix, c.describe(), ": kernel larger than the padded input");
      out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
      if (ceil_mode && (out - 1) * s >= in + pb) --out;  // the last window must start inside
      const int64_t need = (out - 1) * s + eff - (in + pb + pe);
      if (need > 0) {
        pe += need;
        if (extra) (*extra)[k] = need;
      }
    }
    w.pad_begin.push_back(pb);
    w.pad_end.push_back(pe);
    w.out.push_back(out);
  }
  return w;
}

// Pads the spatial dims of a channels-first tensor.
Tensor pad_spatial(const Tensor& x, const Window& w, double value) {
  if (w.no_padding()) return x;
  std::vector<std::pair<int64_t, int64_t>> p(size_t(x.rank()), {0, 0});
  for (int i = 0; i < w.spatial(); ++i) p[size_t(i + 2)] = {w.pad_begin[size_t(i)], w.pad_end[size_t(i)]};
  return pad(x, p, "CONSTANT", value);
}

std::vector<int64_t> kernel_of(NodeContext& c, const Shape& w_shape) {
  std::vector<int64_t> k;
  for (int i = 2; i < w_shape.rank(); ++i) k.push_back(w_shape[i]);
  if (c.has_attr("kernel_shape")) {
    auto a = c.attr_ints("kernel_shape");
    DF_CHECK(a == k, kPrefix, c.describe(), ": kernel_shape attribute does not match the weight shape ",
             w_shape.to_string());
  }
  return k;
}

// 1-D windows run as 2-D ones with a height of 1.
Tensor lift_1d(const Tensor& x) { return expand_dims(x, 2); }

// --- Conv ---

}  // namespace

// Shared with the quantized convolutions (ops_quantize.cpp): ONNX Conv's attributes on an
// NCHW input and MCHW weight; `bias` may be undefined.
Tensor conv_nchw(NodeContext& c, Tensor x, Tensor w, const Tensor& bias) {
  const int64_t group = c.attr_int("group", 1);
  Shape ws = known_shape(c, w, "Conv's weight");
  const int nsp = ws.rank() - 2;
  DF_CHECK(nsp == 1 || nsp == 2, kPrefix, c.describe(), ": only 1-D and 2-D convolutions are supported, got weight ",
           ws.to_string());
  DF_CHECK(x.rank() == ws.rank(), kPrefix, c.describe(), ": input ", x.shape().to_string(), " and weight ",
           ws.to_string(), " ranks differ");
  if (nsp == 1) {
    x = lift_1d(x);
    w = lift_1d(w);
    ws = w.shape();
  }
  std::vector<int64_t> kernel = kernel_of(c, ws);
  // The 1-D attributes get the height dim (1) in front.
  Window win;
  {
    std::vector<int64_t> k1 = nsp == 1 ? std::vector<int64_t>{kernel[1]} : kernel;
    Shape xs = nsp == 1 ? Shape{x.shape()[0], x.shape()[1], x.shape()[3]} : x.shape();
    win = window_of(c, xs, k1, false);
    if (nsp == 1) {
      win.in.insert(win.in.begin(), 1);
      win.kernel.insert(win.kernel.begin(), 1);
      win.strides.insert(win.strides.begin(), 1);
      win.dilations.insert(win.dilations.begin(), 1);
      win.pad_begin.insert(win.pad_begin.begin(), 0);
      win.pad_end.insert(win.pad_end.begin(), 0);
      win.out.insert(win.out.begin(), 1);
    }
  }
  const int64_t cin = x.shape()[1], cout = ws[0];
  DF_CHECK(cin < 0 || cin == ws[1] * group, kPrefix, c.describe(), ": input channels ", cin, " != weight ",
           ws.to_string(), " dim 1 times group ", group);
  DF_CHECK(cout % group == 0, kPrefix, c.describe(), ": output channels ", cout, " not divisible by group ", group);
  const bool same = !win.no_padding() && win.tf_same();
  Tensor xp = same ? x : pad_spatial(x, win, 0.0);
  Tensor xl = to_channels_last(xp);
  const std::string padding = same ? "SAME" : "VALID";
  Tensor y;
  if (group > 1 && group == cin && ws[1] == 1) {
    // Depthwise: ONNX output channel o = c * mult + j, as depthwise_conv2d orders them.
    const int64_t mult = cout / group;
    Tensor f = transpose(reshape(w, {group, mult, ws[2], ws[3]}), {2, 3, 0, 1});
    y = depthwise_conv2d(xl, f, win.strides, padding, win.dilations);
  } else {
    // [M, C/g, kh, kw] -> [kh, kw, C/g, M]; groups follow from C / (C/g) as in tf.nn.conv2d.
    y = conv2d(xl, transpose(w, {2, 3, 1, 0}), win.strides, padding, win.dilations);
  }
  if (bias.defined()) y = y + bias;
  y = to_channels_first(y);
  if (nsp == 1) y = squeeze(y, {2});
  return y;
}

namespace {

TensorList import_conv(NodeContext& c) { return {conv_nchw(c, c.input(0), c.input(1), c.input(2))}; }

// --- ConvTranspose ---

TensorList import_conv_transpose(NodeContext& c) {
  Tensor x = c.input(0), w = c.input(1);
  const int64_t group = c.attr_int("group", 1);
  Shape ws = known_shape(c, w, "ConvTranspose's weight");
  Shape xs = known_shape(c, x, "ConvTranspose's input");
  const int nsp = ws.rank() - 2;
  DF_CHECK(nsp == 1 || nsp == 2, kPrefix, c.describe(), ": only 1-D and 2-D transposed convolutions are supported");
  std::vector<int64_t> kernel = kernel_of(c, ws);
  auto strides = c.attr_ints("strides", std::vector<int64_t>(size_t(nsp), 1));
  auto dil = c.attr_ints("dilations", std::vector<int64_t>(size_t(nsp), 1));
  auto out_pad = c.attr_ints("output_padding", std::vector<int64_t>(size_t(nsp), 0));
  auto pads = c.attr_ints("pads", std::vector<int64_t>(size_t(2 * nsp), 0));
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> out_shape = c.attr_ints("output_shape");
  if (out_shape.size() == size_t(nsp + 2)) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  const size_t un = size_t(nsp);
  std::vector<int64_t> full(un, 0), pb(un, 0), size(un, 0);
  for (int i = 0; i < nsp; ++i) {
    const size_t k = size_t(i);
    const int64_t eff = (kernel[k] - 1) * dil[k] + 1, in = xs[i + 2];
    full[k] = (in - 1) * strides[k] + eff;
    int64_t begin = pads[k], end = pads[k + size_t(nsp)];
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t target = !out_shape.empty() ? out_shape[k] : in * strides[k];
      const int64_t total = full[k] + out_pad[k] - target;
      // The smaller half goes first except for SAME_LOWER (negative totals extend the end,
      // as the onnx reference does for an output_shape beyond the full output).
      begin = auto_pad == "SAME_LOWER" ? total - total / 2 : total / 2;
      end = total - begin;
    } else if (auto_pad == "VALID") {
      begin = end = 0;
    }
    pb[k] = begin;
    size[k] = full[k] - begin - end + out_pad[k];
  }
  if (nsp == 1) {
    x = lift_1d(x);
    w = lift_1d(w);
    strides.insert(strides.begin(), 1);
    dil.insert(dil.begin(), 1);
    full.insert(full.begin(), 1);
  }
  const int64_t cin = xs[1], cout_g = ws[1];
  DF_CHECK(cin == ws[0] && cin % group == 0, kPrefix, c.describe(), ": input channels ", cin, " do not match weight ",
           ws.to_string(), " with group ", group);
  Tensor xl = to_channels_last(x);
  // [C_in, C_out/g, kh, kw] -> [kh, kw, C_out/g, C_in]
  Tensor f = transpose(w, {2, 3, 1, 0});
  std::vector<Tensor> xs_g = group == 1 ? std::vector<Tensor>{xl} : split(xl, group, 3);
  std::vector<Tensor> fs_g = group == 1 ? std::vector<Tensor>{f} : split(f, group, 3);
  std::vector<Tensor> ys;
  for (int64_t g = 0; g < group; ++g) {
    Shape os{xs[0], full[0], full[1], cout_g};
    ys.push_back(conv2d_transpose(xs_g[size_t(g)], fs_g[size_t(g)], os, strides, "VALID", dil));
  }
  Tensor y = group == 1 ? ys[0] : concat(ys, 3);
  if (c.has_input(2)) y = y + c.input(2);
  y = to_channels_first(y);
  if (nsp == 1) y = squeeze(y, {2});
  // Crop the padding, then zero-extend where output_padding reaches past the full output.
  Axes begin(size_t(y.rank()), 0), sz(size_t(y.rank()), -1);
  std::vector<std::pair<int64_t, int64_t>> tail(size_t(y.rank()), {0, 0});
  bool need_slice = false, need_pad = false;
  for (int i = 0; i < nsp; ++i) {
    const size_t k = size_t(i), d = size_t(i + 2);
    const int64_t full_k = y.shape()[i + 2];
    int64_t b = pb[k], s = size[k];
    if (b < 0) {
      tail[d].first = -b;
      s += b;
      b = 0;
      need_pad = true;
    }
    const int64_t avail = full_k - b;
    begin[d] = b;
    sz[d] = std::min(s, avail);
    if (b != 0 || sz[d] != full_k) need_slice = true;
    if (s > avail) {
      tail[d].second = s - avail;
      need_pad = true;
    }
  }
  if (need_slice) y = slice(y, begin, sz);
  if (need_pad) y = pad(y, tail);
  return {y};
}

// --- pools ---

// The generic window reduction over any number of spatial dims: one strided slice per
// kernel offset, combined with `max` or `add`. Used where deepflow's 2-D pools do not
// apply (1-D and 3-D, dilations).
Tensor pool_by_slices(const Tensor& xp, const Window& w, bool is_max) {
  const int n = w.spatial(), r = xp.rank();
  std::vector<int64_t> idx(size_t(n), 0);
  Tensor acc;
  while (true) {
    Axes begin(size_t(r), 0), end(size_t(r), 0), strides(size_t(r), 1);
    for (int i = 0; i < 2; ++i) end[size_t(i)] = xp.shape()[i];
    for (int i = 0; i < n; ++i) {
      const size_t k = size_t(i), d = size_t(i + 2);
      begin[d] = idx[k] * w.dilations[k];
      end[d] = begin[d] + (w.out[k] - 1) * w.strides[k] + 1;
      strides[d] = w.strides[k];
    }
    Tensor s = strided_slice(xp, begin, end, strides);
    acc = !acc.defined() ? s : (is_max ? maximum(acc, s) : acc + s);
    int i = n - 1;
    for (; i >= 0; --i) {
      if (++idx[size_t(i)] < w.kernel[size_t(i)]) break;
      idx[size_t(i)] = 0;
    }
    if (i < 0) break;
  }
  return acc;
}

double lowest_of(DType t) {
  switch (t) {
    case DType::Int8: return -128;
    case DType::UInt8: return 0;
    case DType::Int32: return double(std::numeric_limits<int32_t>::min());
    case DType::Int64: return double(std::numeric_limits<int64_t>::min());
    default: return -std::numeric_limits<double>::infinity();
  }
}

// MaxPool with its Indices output: the same slices over the values and over a constant
// tensor of flat input indices (row-major, or column-major spatial dims for
// storage_order=1); a later offset wins only when strictly greater, so ties keep the first.
TensorList max_pool_with_indices(NodeContext& c, const Tensor& x, const Window& w) {
  const Shape xs = known_shape(c, x, "MaxPool with Indices");
  const bool col_major = c.attr_int("storage_order", 0) != 0;
  const int n = w.spatial(), r = xs.rank();
  std::vector<double> flat(size_t(xs.num_elements()));
  for (int64_t i = 0; i < int64_t(flat.size()); ++i) {
    if (!col_major) {
      flat[size_t(i)] = double(i);
      continue;
    }
    // Spatial coordinates of i, re-linearized with the first spatial dim fastest.
    int64_t rem = i, lin = 0, mul = 1;
    std::vector<int64_t> coord(static_cast<size_t>(r));
    for (int d = r - 1; d >= 0; --d) {
      coord[size_t(d)] = rem % xs[d];
      rem /= xs[d];
    }
    for (int d = 2; d < r; ++d) {
      lin += coord[size_t(d)] * mul;
      mul *= xs[d];
    }
    flat[size_t(i)] = double((coord[0] * xs[1] + coord[1]) * mul + lin);
  }
  const Tensor xp = pad_spatial(x, w, lowest_of(x.dtype()));
  const Tensor ip = pad_spatial(constant(flat, xs, DType::Float64), w, -1.0);
  std::vector<int64_t> idx(size_t(n), 0);
  Tensor acc, arg;
  while (true) {
    Axes begin(size_t(r), 0), end(size_t(r), 0), strides(size_t(r), 1);
    for (int i = 0; i < 2; ++i) end[size_t(i)] = xp.shape()[i];
    for (int i = 0; i < n; ++i) {
      const size_t k = size_t(i), d = size_t(i + 2);
      begin[d] = idx[k] * w.dilations[k];
      end[d] = begin[d] + (w.out[k] - 1) * w.strides[k] + 1;
      strides[d] = w.strides[k];
    }
    const Tensor s = strided_slice(xp, begin, end, strides), si = strided_slice(ip, begin, end, strides);
    if (!acc.defined()) {
      acc = s;
      arg = si;
    } else {
      const Tensor better = greater(s, acc);
      acc = where(better, s, acc);
      arg = where(better, si, arg);
    }
    int i = n - 1;
    for (; i >= 0; --i) {
      if (++idx[size_t(i)] < w.kernel[size_t(i)]) break;
      idx[size_t(i)] = 0;
    }
    if (i < 0) break;
  }
  return {acc, cast(arg, DType::Int64)};
}

TensorList import_max_pool(NodeContext& c) {
  Tensor x = c.input(0);
  auto kernel = c.attr_ints("kernel_shape");
  DF_CHECK(!kernel.empty(), kPrefix, c.describe(), ": kernel_shape is required");
  Window w = window_of(c, x.shape(), kernel, c.attr_int("ceil_mode", 0) != 0);
  if (c.num_outputs() > 1 && !c.node().output(1).empty()) return max_pool_with_indices(c, x, w);
  DF_CHECK(c.attr_int("storage_order", 0) == 0, kPrefix, c.describe(), ": storage_order=1 is not supported");
  const bool dilated = std::any_of(w.dilations.begin(), w.dilations.end(), [](int64_t d) { return d != 1; });
  if (w.spatial() == 2 && !dilated) {
    const Tensor xl = to_channels_last(x);
    if (w.no_padding()) return {to_channels_first(max_pool2d(xl, w.kernel, w.strides, "VALID"))};
    if (w.tf_same()) return {to_channels_first(max_pool2d(xl, w.kernel, w.strides, "SAME"))};
    // Other pads (resnet's 1 on each side, ceil_mode's extension) as max_pool's EXPLICIT
    // padding, whose padded cells never win, as the lowest value's would; pads as large as
    // the window (windows of padding only) keep the padded tensor.
    bool fits = true;
    for (size_t i = 0; i < 2; ++i) fits = fits && w.pad_begin[i] < w.kernel[i] && w.pad_end[i] < w.kernel[i];
    if (fits)
      return {to_channels_first(max_pool2d(xl, w.kernel, w.strides, "EXPLICIT",
                                           {w.pad_begin[0], w.pad_end[0], w.pad_begin[1], w.pad_end[1]}))};
    Tensor xp = to_channels_last(pad_spatial(x, w, lowest_of(x.dtype())));
    return {to_channels_first(max_pool2d(xp, w.kernel, w.strides, "VALID"))};
  }
  return {pool_by_slices(pad_spatial(x, w, lowest_of(x.dtype())), w, true)};
}

TensorList import_average_pool(NodeContext& c) {
  Tensor x = c.input(0);
  auto kernel = c.attr_ints("kernel_shape");
  DF_CHECK(!kernel.empty(), kPrefix, c.describe(), ": kernel_shape is required");
  std::vector<int64_t> extra;
  Window w = window_of(c, x.shape(), kernel, c.attr_int("ceil_mode", 0) != 0, &extra);
  const bool include_pad = c.attr_int("count_include_pad", 0) != 0;
  const bool dilated = std::any_of(w.dilations.begin(), w.dilations.end(), [](int64_t d) { return d != 1; });
  const bool has_extra = std::any_of(extra.begin(), extra.end(), [](int64_t e) { return e != 0; });
  int64_t window_cells = 1;
  for (int64_t k : w.kernel) window_cells *= k;
  if (w.spatial() == 2 && !dilated && !has_extra) {
    if (w.no_padding() || include_pad) {
      Tensor xl = to_channels_last(pad_spatial(x, w, 0.0));
      return {to_channels_first(avg_pool2d(xl, w.kernel, w.strides, "VALID"))};
    }
    if (w.tf_same()) {  // TensorFlow's SAME divides by the valid cells, like count_include_pad=0
      return {to_channels_first(avg_pool2d(to_channels_last(x), w.kernel, w.strides, "SAME"))};
    }
  }
  // The divisor per output cell: cells inside the input, plus the explicit padding when
  // count_include_pad, never the ceil_mode extension. Computed now, from shapes only.
  Tensor divisor;
  {
    BuildScopeGuard eager(nullptr);
    Shape ones_shape{1, 1};
    for (int64_t d : w.in) ones_shape.push_back(d);
    Tensor cells = ones(ones_shape, x.dtype());
    Window wc = w;
    if (include_pad) {
      std::vector<std::pair<int64_t, int64_t>> p(size_t(cells.rank()), {0, 0});
      for (int i = 0; i < w.spatial(); ++i) {
        p[size_t(i + 2)] = {w.pad_begin[size_t(i)], w.pad_end[size_t(i)] - extra[size_t(i)]};
        wc.pad_begin[size_t(i)] = 0;
        wc.pad_end[size_t(i)] = extra[size_t(i)];
      }
      cells = pad(cells, p, "CONSTANT", 1.0);
    }
    divisor = pool_by_slices(pad_spatial(cells, wc, 0.0), w, false);
  }
  Tensor xp = pad_spatial(x, w, 0.0);
  Tensor sum;
  if (w.spatial() == 2 && !dilated) {
    sum = to_channels_first(avg_pool2d(to_channels_last(xp), w.kernel, w.strides, "VALID")) *
          double(window_cells);
  } else {
    sum = pool_by_slices(xp, w, false);
  }
  return {sum / divisor};
}

Axes spatial_axes(const Tensor& x) {
  Axes a;
  for (int i = 2; i < x.rank(); ++i) a.push_back(i);
  return a;
}
TensorList import_global_average_pool(NodeContext& c) {
  Tensor x = c.input(0);
  return {reduce_mean(x, spatial_axes(x), true)};
}
TensorList import_global_max_pool(NodeContext& c) {
  Tensor x = c.input(0);
  return {reduce_max(x, spatial_axes(x), true)};
}

TensorList import_lp_pool(NodeContext& c) {
  Tensor x = c.input(0);
  const double p = double(c.attr_int("p", 2));
  auto kernel = c.attr_ints("kernel_shape");
  Window w = window_of(c, x.shape(), kernel, false);
  Tensor s = pool_by_slices(pad_spatial(pow(abs(x), scalar_like(x, p)), w, 0.0), w, false);
  return {pow(s, scalar_like(s, 1.0 / p))};
}
TensorList import_global_lp_pool(NodeContext& c) {
  Tensor x = c.input(0);
  const double p = double(c.attr_int("p", 2));
  Tensor s = reduce_sum(pow(abs(x), scalar_like(x, p)), spatial_axes(x), true);
  return {pow(s, scalar_like(s, 1.0 / p))};
}

// --- normalization ---

// [C] -> [C, 1, ..., 1] to broadcast against [N, C, ...].
Tensor per_channel(const Tensor& v, int rank) {
  Shape s{-1};
  for (int i = 2; i < rank; ++i) s.push_back(1);
  return rank <= 2 ? v : reshape(v, s);
}

TensorList import_batch_norm(NodeContext& c) {
  Tensor x = c.input(0), scale = c.input(1), bias = c.input(2), mean = c.input(3), var = c.input(4);
  const double eps = c.attr_float("epsilon", 1e-5f);
  const double momentum = c.attr_float("momentum", 0.9f);
  const bool training = c.attr_int("training_mode", 0) != 0;
  const int r = x.rank();
  if (!training) {
    // One multiply-add: a and b fold to constants when the statistics are initializers.
    Tensor a = scale * rsqrt(var + scalar_like(var, eps));
    Tensor b = bias - mean * a;
    TensorList out{x * per_channel(a, r) + per_channel(b, r)};
    return out;
  }
  Axes axes{0};
  for (int i = 2; i < r; ++i) axes.push_back(i);
  Tensor bm = reduce_mean(x, axes);
  Tensor bv = reduce_mean(square(x - per_channel(bm, r)), axes);
  Tensor y = (x - per_channel(bm, r)) * per_channel(rsqrt(bv + scalar_like(bv, eps)) * scale, r) + per_channel(bias, r);
  TensorList out{y};
  out.push_back(mean * momentum + bm * (1.0 - momentum));
  out.push_back(var * momentum + bv * (1.0 - momentum));
  return out;
}

TensorList import_instance_norm(NodeContext& c) {
  Tensor x = c.input(0), scale = c.input(1), bias = c.input(2);
  const double eps = c.attr_float("epsilon", 1e-5f);
  Axes axes = spatial_axes(x);
  Tensor m = reduce_mean(x, axes, true);
  Tensor d = x - m;
  Tensor v = reduce_mean(square(d), axes, true);
  return {d * rsqrt(v + scalar_like(v, eps)) * per_channel(scale, x.rank()) + per_channel(bias, x.rank())};
}

TensorList import_layer_norm(NodeContext& c) {
  Tensor x = c.input(0), scale = c.input(1), bias = c.input(2);
  const int r = x.rank();
  const int64_t axis = onnx_axis(c, c.attr_int("axis", -1), r);
  const double eps = c.attr_float("epsilon", 1e-5f);
  const DType in_dt = x.dtype();
  // stash_type=1: statistics in float32 (matters for half inputs).
  const bool stash = c.attr_int("stash_type", 1) == 1 && (in_dt == DType::Float16 || in_dt == DType::BFloat16);
  Tensor xs = stash ? cast(x, DType::Float32) : x;
  Axes axes;
  for (int64_t i = axis; i < r; ++i) axes.push_back(i);
  Tensor m = reduce_mean(xs, axes, true);
  Tensor d = xs - m;
  Tensor v = reduce_mean(square(d), axes, true);
  Tensor inv = rsqrt(v + scalar_like(v, eps));
  Tensor y = d * inv;
  if (stash) y = cast(y, in_dt);
  y = y * scale;
  if (c.has_input(2)) y = y + bias;
  return {y, m, inv};
}

TensorList import_lrn(NodeContext& c) {
  Tensor x = c.input(0);
  const double alpha = c.attr_float("alpha", 1e-4f), beta = c.attr_float("beta", 0.75f),
               bias = c.attr_float("bias", 1.0f);
  const int64_t size = c.attr_int("size", 0);
  DF_CHECK(size > 0, kPrefix, c.describe(), ": size is required");
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  Tensor sq = square(x);
  std::vector<std::pair<int64_t, int64_t>> p(size_t(x.rank()), {0, 0});
  p[1] = {before, after};
  Tensor sp = pad(sq, p);
  const int64_t ch = known_shape(c, x, "LRN's input")[1];
  Tensor sum;
  for (int64_t i = 0; i < size; ++i) {
    Axes b(size_t(x.rank()), 0), s(size_t(x.rank()), -1);
    b[1] = i;
    s[1] = ch;
    Tensor t = slice(sp, b, s);
    sum = sum.defined() ? sum + t : t;
  }
  return {x / pow(sum * (alpha / double(size)) + bias, scalar_like(x, beta))};
}

TensorList import_mvn(NodeContext& c) {
  Tensor x = c.input(0);
  Axes axes = c.attr_ints("axes", {0, 2, 3});
  Tensor m = reduce_mean(x, axes, true);
  Tensor d = x - m;
  Tensor v = reduce_mean(square(d), axes, true);
  return {d / (sqrt(v) + 1e-9)};
}

// --- matrix products ---

TensorList import_matmul(NodeContext& c) {
  Tensor a = c.input(0), b = c.input(1);
  // numpy semantics for 1-D operands: a vector is a row (a) or a column (b), removed after.
  const bool a1 = a.rank() == 1, b1 = b.rank() == 1;
  if (a1) a = expand_dims(a, 0);
  if (b1) b = expand_dims(b, 1);
  Tensor y = matmul(a, b);
  if (a1) y = squeeze(y, {-2});
  if (b1) y = squeeze(y, {-1});
  return {y};
}

TensorList import_gemm(NodeContext& c) {
  Tensor a = c.input(0), b = c.input(1);
  const double alpha = c.attr_float("alpha", 1.0f), beta = c.attr_float("beta", 1.0f);
  Tensor y = matmul(a, b, c.attr_int("transA", 0) != 0, c.attr_int("transB", 0) != 0);
  if (alpha != 1.0) y = y * alpha;
  if (c.has_input(2) && beta != 0.0) y = y + (beta == 1.0 ? c.input(2) : c.input(2) * beta);
  return {y};
}

// --- softmax family ---

// Before opset 13 the input is viewed as 2-D [prod(d[:axis]), prod(d[axis:])] (axis
// default 1); from 13 the op works along one axis (default -1).
template <Tensor (*F)(const Tensor&, int64_t)>
TensorList softmax_2d(NodeContext& c) {
  Tensor x = c.input(0);
  const int r = x.rank();
  const int64_t axis = onnx_axis(c, c.attr_int("axis", 1), r);
  if (axis == r - 1) return {F(x, -1)};
  Shape s = known_shape(c, x, "softmax before opset 13");
  int64_t rows = 1;
  for (int64_t i = 0; i < axis; ++i) rows *= s[int(i)];
  return {reshape(F(reshape(x, {rows, -1}), -1), s)};
}
template <Tensor (*F)(const Tensor&, int64_t)>
TensorList softmax_axis(NodeContext& c) {
  Tensor x = c.input(0);
  return {F(x, onnx_axis(c, c.attr_int("axis", -1), x.rank()))};
}
Tensor hardmax_of(const Tensor& x, int64_t axis) {
  Tensor idx = argmax(x, axis);
  const int64_t depth = x.shape().dim(int(axis));
  return one_hot(idx, depth, 1, 0, axis, x.dtype());
}

// --- dropout (inference) ---

TensorList import_dropout(NodeContext& c) {
  Tensor x = c.input(0);
  bool training = false;
  if (c.opset() >= 12 && c.has_input(2)) training = c.constant_input(2).item<bool>();
  // The ratio matters only in training mode (it may be a run-time input otherwise).
  double ratio = 0;
  if (training) ratio = c.has_input(1) ? c.constant_input(1).flat(0) : 0.5;
  Tensor y, mask;
  if (training && ratio > 0) {
    std::optional<int64_t> seed;
    if (c.has_attr("seed")) seed = c.attr_int("seed", 0);
    y = dropout(x, ratio, seed);
    mask = not_equal(y, zeros_like(y));
  } else {
    y = identity(x);
    mask = cast(ones_like(x), DType::Bool);
  }
  if (c.opset() < 10 && c.num_outputs() > 1) mask = cast(mask, x.dtype());
  return {y, mask};
}

// --- losses ---

// -input[n, target[n, ...], ...] * weight[target], with ignore_index and reduction.
Tensor nll_loss(NodeContext& c, const Tensor& input, const Tensor& target, const Tensor& weight) {
  const std::string reduction = c.attr_string("reduction", "mean");
  const int64_t classes = known_shape(c, input, "the loss input")[1];
  Tensor t = target;
  if (t.dtype() != DType::Int64) t = cast(t, DType::Int64);
  Tensor valid;
  if (c.has_attr("ignore_index")) {
    valid = not_equal(t, scalar_like(t, double(c.attr_int("ignore_index", 0))));
    t = where(valid, t, zeros_like(t));
  }
  Tensor picked = reduce_sum(input * one_hot(t, classes, 1, 0, 1, input.dtype()), {1});
  Tensor w = weight.defined() ? gather(weight, t) : ones_like(picked);
  if (valid.defined()) w = where(valid, w, zeros_like(w));
  Tensor loss = neg(picked) * w;
  if (reduction == "none") return loss;
  if (reduction == "sum") return reduce_sum(loss);
  DF_CHECK(reduction == "mean", kPrefix, c.describe(), ": unknown reduction '", reduction, "'");
  return reduce_sum(loss) / reduce_sum(w);
}
TensorList import_nll_loss(NodeContext& c) {
  return {nll_loss(c, c.input(0), c.input(1), c.has_input(2) ? c.input(2) : Tensor())};
}
TensorList import_sce_loss(NodeContext& c) {
  Tensor logp = log_softmax(c.input(0), 1);
  return {nll_loss(c, logp, c.input(1), c.has_input(2) ? c.input(2) : Tensor()), logp};
}

}  // namespace

DF_ONNX_OP("Conv", 1, import_conv)
DF_ONNX_OP("ConvTranspose", 1, import_conv_transpose)
DF_ONNX_OP("MaxPool", 1, import_max_pool)
DF_ONNX_OP("AveragePool", 1, import_average_pool)
DF_ONNX_OP("GlobalAveragePool", 1, import_global_average_pool)
DF_ONNX_OP("GlobalMaxPool", 1, import_global_max_pool)
DF_ONNX_OP("LpPool", 2, import_lp_pool)
DF_ONNX_OP("GlobalLpPool", 2, import_global_lp_pool)
DF_ONNX_OP("BatchNormalization", 7, import_batch_norm)
DF_ONNX_OP("InstanceNormalization", 6, import_instance_norm)
DF_ONNX_OP("LayerNormalization", 17, import_layer_norm)
DF_ONNX_OP("LRN", 1, import_lrn)
DF_ONNX_OP("MeanVarianceNormalization", 9, import_mvn)
DF_ONNX_OP("MatMul", 1, import_matmul)
DF_ONNX_OP("Gemm", 7, import_gemm)
DF_ONNX_OP("Softmax", 1, softmax_2d<softmax>)
DF_ONNX_OP("Softmax", 13, softmax_axis<softmax>)
DF_ONNX_OP("LogSoftmax", 1, softmax_2d<log_softmax>)
DF_ONNX_OP("LogSoftmax", 13, softmax_axis<log_softmax>)
DF_ONNX_OP("Hardmax", 1, softmax_2d<hardmax_of>)
DF_ONNX_OP("Hardmax", 13, softmax_axis<hardmax_of>)
DF_ONNX_OP("Dropout", 7, import_dropout)
DF_ONNX_OP("NegativeLogLikelihoodLoss", 12, import_nll_loss)
DF_ONNX_OP("SoftmaxCrossEntropyLoss", 12, import_sce_loss)

}  // namespace deepflow::onnx
