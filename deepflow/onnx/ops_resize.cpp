// SPDX-License-Identifier: Apache-2.0
// ONNX Resize (opsets 10, 11, 13), Upsample (7, 9), GridSample (16) and RoiAlign (10, 16).
//
// Resize is separable: ONNX's reference interpolates the last axis first, then each
// earlier axis over the previous result. Output shapes are known at import, so for every
// resized axis the source indices and tap weights of each output position are computed
// here (in double, following the reference's neighbour choice and edge clamping) and the
// axis becomes gather + weighted sum over the taps. Nearest is a single gather, so it
// also works for integer tensors.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "deepflow/core/error.h"
#include "deepflow/onnx/op_importer.h"
#include "deepflow/ops/op.h"

namespace deepflow::onnx {
namespace {

constexpr const char* kPrefix = "[onnx::import] ";

struct ResizeAttrs {
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
};

// One axis: for each output position, `taps` source indices (clamped) and weights; and
// whether the position lies outside the crop (tf_crop_and_resize extrapolation).
struct AxisPlan {
  int64_t taps = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<bool> outside;
  bool any_outside = false;
};

std::vector<double> coeffs_for(const ResizeAttrs& a, double ratio, bool integral) {
  if (a.mode == "nearest") {
    if (integral) return {0, 1};
    const std::string& m = a.nearest_mode;
    if (m == "round_prefer_floor") return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    if (m == "round_prefer_ceil") return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (m == "floor") return {1, 0};
    return {0, 1};  // ceil
  }
  if (a.mode == "linear") return {1 - ratio, ratio};
  const double A = a.cubic_a, r = ratio, s = 1 - ratio;
  return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
          ((A + 2) * s - (A + 3)) * s * s + 1, ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
}

AxisPlan plan_axis(const ResizeAttrs& a, int64_t in, int64_t out, double scale, double roi_start,
                   double roi_end) {
  AxisPlan p;
  p.taps = a.mode == "cubic" ? 4 : 2;
  const int64_t n = p.taps;
  const double out_width = scale * double(in);
  for (int64_t x = 0; x < out; ++x) {
    double xo = 0;
    bool outside = false;
    const std::string& m = a.coord;
    if (m == "align_corners") {
      xo = out_width == 1 ? 0.0 : double(x) * double(in - 1) / (out_width - 1);
    } else if (m == "asymmetric") {
      xo = double(x) / scale;
    } else if (m == "tf_crop_and_resize") {
      xo = out_width == 1 ? (roi_end - roi_start) * double(in - 1) / 2
                          : double(x) * (roi_end - roi_start) * double(in - 1) / (out_width - 1);
      xo += roi_start * double(in - 1);
      outside = xo < 0 || xo > double(in - 1);
    } else if (m == "pytorch_half_pixel") {
      xo = out_width == 1 ? -0.5 : (double(x) + 0.5) / scale - 0.5;
    } else if (m == "tf_half_pixel_for_nn") {
      xo = (double(x) + 0.5) / scale;
    } else {  // half_pixel
      xo = (double(x) + 0.5) / scale - 0.5;
    }
    const double fl = std::floor(xo);
    const bool integral = xo == fl;
    const double ratio = integral ? 1.0 : xo - fl;
    std::vector<double> w = coeffs_for(a, ratio, integral);
    // The reference's neighbours: the n indices nearest to xo (ties to the lower index),
    // in increasing order, over the edge-padded axis.
    std::vector<int64_t> idx;
    const int64_t lo = int64_t(fl) - (n / 2 - 1) - (integral ? 1 : 0);
    for (int64_t k = 0; k < n; ++k) idx.push_back(lo + k);
    if (a.exclude_outside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (idx[size_t(k)] < 0 || idx[size_t(k)] >= in) w[size_t(k)] = 0;
        sum += w[size_t(k)];
      }
      for (auto& v : w) v = sum != 0 ? v / sum : v;
    }
    for (int64_t k = 0; k < n; ++k) {
      p.index.push_back(std::clamp<int64_t>(idx[size_t(k)], 0, in - 1));
      p.weight.push_back(w[size_t(k)]);
    }
    p.outside.push_back(outside);
    p.any_outside = p.any_outside || outside;
  }
  return p;
}

// One axis resampled by its plan: nearest picks the one-hot tap (a plain gather, any
// dtype); linear/cubic gather every tap and sum them weighted.
Tensor apply_axis(const Tensor& x, int64_t axis, int64_t out, const AxisPlan& p, const ResizeAttrs& a) {
  const int r = x.rank();
    if (a.mode == "nearest") {
    std::vector<int64_t> pick;
    for (int64_t i = 0; i < out; ++i) {
      int64_t best = 0;
      for (int64_t k = 0; k < p.taps; ++k)
        if (p.weight[size_t(i * p.taps + k)] > p.weight[size_t(i * p.taps + best)]) best = k;
      pick.push_back(p.index[size_t(i * p.taps + best)]);
    }
    Tensor y = gather(x, constant(pick), axis);
    if (!p.any_outside) return y;
    std::vector<int64_t> ms(size_t(r), 1);
    ms[size_t(axis)] = out;
    std::vector<double> mask(p.outside.begin(), p.outside.end());
    return where(cast(constant(mask, Shape(ms), DType::Float64), DType::Bool), fill({}, a.extrapolation, x.dtype()),
                 y);
  }
  Tensor g = gather(x, constant(p.index), axis);
  std::vector<int64_t> split_shape = g.shape().to_vector();
  split_shape[size_t(axis)] = out;
  split_shape.insert(split_shape.begin() + axis + 1, p.taps);
  g = reshape(g, Shape(split_shape));
  std::vector<int64_t> ws(size_t(r + 1), 1);
  ws[size_t(axis)] = out;
  ws[size_t(axis + 1)] = p.taps;
  Tensor y = reduce_sum(g * constant(p.weight, Shape(ws), x.dtype()), {axis + 1});
  if (!p.any_outside) return y;
  std::vector<int64_t> ms(size_t(r), 1);
  ms[size_t(axis)] = out;
  std::vector<double> mask(p.outside.begin(), p.outside.end());
  return where(cast(constant(mask, Shape(ms), DType::Float64), DType::Bool), fill({}, a.extrapolation, x.dtype()), y);
}

Tensor do_resize(NodeContext& c, const Tensor& x, const ResizeAttrs& a, std::vector<double> scales,
                 std::vector<int64_t> sizes, const std::vector<double>& roi) {
  const int r = x.rank();
  const Shape& s = x.shape();
  DF_CHECK(s.is_fully_defined(), kPrefix, c.describe(), ": Resize needs a known input shape, got ", s.to_string());
  DF_CHECK(a.mode == "nearest" || a.mode == "linear" || a.mode == "cubic" || a.mode == "bilinear", kPrefix,
           c.describe(), ": unknown mode '", a.mode, "'");
  if (!sizes.empty()) {
    DF_CHECK(int(sizes.size()) == r, kPrefix, c.describe(), ": ", sizes.size(), " sizes for rank ", r);
    scales.clear();
    for (int i = 0; i < r; ++i) scales.push_back(double(sizes[size_t(i)]) / double(s[i]));
  } else {
    DF_CHECK(int(scales.size()) == r, kPrefix, c.describe(), ": ", scales.size(), " scales for rank ", r);
    for (int i = 0; i < r; ++i) {
      DF_CHECK(scales[size_t(i)] > 0, kPrefix, c.describe(), ": scale ", scales[size_t(i)], " must be positive");
      sizes.push_back(int64_t(scales[size_t(i)] * double(s[i])));
    }
  }
  const bool crop = a.coord == "tf_crop_and_resize";
  if (crop) DF_CHECK(int(roi.size()) == 2 * r, kPrefix, c.describe(), ": tf_crop_and_resize needs an roi of ", 2 * r,
                     " values, got ", roi.size());
  Tensor y = x;
  for (int axis = r - 1; axis >= 0; --axis) {
    if (!crop && sizes[size_t(axis)] == s[axis] && scales[size_t(axis)] == 1.0) continue;
    const AxisPlan p = plan_axis(a, s[axis], sizes[size_t(axis)], scales[size_t(axis)],
                                 crop ? roi[size_t(axis)] : 0, crop ? roi[size_t(axis + r)] : 1);
    DF_CHECK(a.mode == "nearest" || is_floating(x.dtype()), kPrefix, c.describe(), ": ", a.mode,
             " resize needs a floating input, got ", x.dtype());
    y = apply_axis(y, axis, sizes[size_t(axis)], p, a);
  }
  return y.impl() == x.impl() ? identity(x) : y;
}

std::vector<double> doubles_of(const Tensor& t) { return t.to_vector<double>(); }

ResizeAttrs read_attrs(NodeContext& c) {
  ResizeAttrs a;
  a.mode = c.attr_string("mode", "nearest");
  if (a.mode == "bilinear" || a.mode == "trilinear") a.mode = "linear";
  a.coord = c.attr_string("coordinate_transformation_mode", "half_pixel");
  a.nearest_mode = c.attr_string("nearest_mode", "round_prefer_floor");
  a.cubic_a = c.attr_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
  a.extrapolation = c.attr_float("extrapolation_value", 0.f);
  return a;
}

// Resize-10 and Upsample: asymmetric coordinates, nearest picks floor (np.repeat-like).
TensorList import_upsample_like(NodeContext& c, std::vector<double> scales) {
  ResizeAttrs a;
  a.mode = c.attr_string("mode", "nearest");
  if (a.mode == "bilinear") a.mode = "linear";
  a.coord = "asymmetric";
  a.nearest_mode = "floor";
  return {do_resize(c, c.input(0), a, std::move(scales), {}, {})};
}

TensorList import_upsample_7(NodeContext& c) { return import_upsample_like(c, [&] {
  std::vector<double> v;
  for (float f : c.attr_floats("scales")) v.push_back(f);
  return v;
}()); }
TensorList import_upsample_9(NodeContext& c) { return import_upsample_like(c, doubles_of(c.constant_input(1))); }

TensorList import_resize_11(NodeContext& c) {
  const ResizeAttrs a = read_attrs(c);
  std::vector<double> roi, scales;
  std::vector<int64_t> sizes;
  if (a.coord == "tf_crop_and_resize" && c.has_input(1)) roi = doubles_of(c.constant_input(1));
  if (c.has_input(2)) scales = doubles_of(c.constant_input(2));
  if (c.has_input(3)) sizes = c.constant_input(3).to_vector<int64_t>();
  DF_CHECK(!scales.empty() || !sizes.empty(), kPrefix, c.describe(), ": needs scales or sizes");
  if (!sizes.empty()) scales.clear();
  return {do_resize(c, c.input(0), a, scales, sizes, roi)};
}


// --- GridSample (opset 16), following PyTorch's grid_sample (which produced ONNX's
// expected values): coordinates are unnormalized, then clipped or reflected for the
// border/reflection paddings (bilinear, nearest) or per tap (bicubic); taps outside the
// image read zero. The grid is a runtime tensor, so taps are gather_nd's with computed
// indices.

// PyTorch's reflect_coordinates followed by clip_coordinates.
Tensor reflect_clip(const Tensor& x, double twice_low, double twice_high, int64_t size) {
  if (twice_low == twice_high) return zeros_like(x);
  const double lo = twice_low / 2, span = (twice_high - twice_low) / 2;
  const Tensor a = abs(x - lo);
  const Tensor flips = floor(a / span);
  const Tensor extra = a - flips * span;
  const Tensor odd = flips - floor(flips / 2.0) * 2.0;
  const Tensor r = where(equal(odd, zeros_like(odd)), extra + lo, (span + lo) - extra);
  return clip_by_value(r, 0.0, double(size - 1));
}

struct GridCtx {
  Tensor x_nhwc;    // [N, H, W, C]
  Tensor batch;     // [N, 1, 1] int64 batch index
  int64_t h = 0, w = 0;
};

// Pixels at integer (float-valued) coordinates iy, ix [N, Ho, Wo]; zero outside.
Tensor tap(const GridCtx& g, const Tensor& iy, const Tensor& ix) {
  const Tensor inside = logical_and(logical_and(greater_equal(ix, scalar_like(ix, 0)), less_equal(ix, scalar_like(ix, double(g.w - 1)))),
                                    logical_and(greater_equal(iy, scalar_like(iy, 0)), less_equal(iy, scalar_like(iy, double(g.h - 1)))));
  const Tensor cy = cast(clip_by_value(iy, 0.0, double(g.h - 1)), DType::Int64);
  const Tensor cx = cast(clip_by_value(ix, 0.0, double(g.w - 1)), DType::Int64);
  const Tensor idx = stack({g.batch + zeros_like(cy), cy, cx}, -1);
  const Tensor v = gather_nd(g.x_nhwc, idx);  // [N, Ho, Wo, C]
  return v * expand_dims(cast(inside, v.dtype()), -1);
}

TensorList import_grid_sample(NodeContext& c) {
  const Tensor x = c.input(0), grid = c.input(1);
  DF_CHECK(x.rank() == 4 && grid.rank() == 4 && x.shape().is_fully_defined(), kPrefix, c.describe(),
           ": needs a known [N,C,H,W] input and an [N,Ho,Wo,2] grid, got ", x.shape().to_string(), " and ",
           grid.shape().to_string());
  const std::string mode = c.attr_string("mode", "bilinear");
  const std::string padding = c.attr_string("padding_mode", "zeros");
  const bool align = c.attr_int("align_corners", 0) != 0;
  GridCtx g;
  g.h = x.shape()[2];
  g.w = x.shape()[3];
  g.x_nhwc = transpose(x, {0, 2, 3, 1});
  g.batch = reshape(arange(0, double(x.shape()[0]), 1, DType::Int64), {-1, 1, 1});
  const Tensor gx = squeeze(slice(grid, {0, 0, 0, 0}, {-1, -1, -1, 1}), {3});
  const Tensor gy = squeeze(slice(grid, {0, 0, 0, 1}, {-1, -1, -1, 1}), {3});
  auto unnormalize = [&](const Tensor& v, int64_t size) {
    return align ? (v + 1.0) / 2.0 * double(size - 1) : ((v + 1.0) * double(size) - 1.0) / 2.0;
  };
  auto pad_coord = [&](const Tensor& v, int64_t size) {
    if (padding == "border") return clip_by_value(v, 0.0, double(size - 1));
    if (padding == "reflection")
      return align ? reflect_clip(v, 0, 2.0 * double(size - 1), size) : reflect_clip(v, -1, 2.0 * double(size) - 1, size);
    return v;
  };
  DF_CHECK(padding == "zeros" || padding == "border" || padding == "reflection", kPrefix, c.describe(),
           ": unknown padding_mode '", padding, "'");
  Tensor ix = unnormalize(gx, g.w), iy = unnormalize(gy, g.h);
  Tensor out;
  if (mode == "nearest" || mode == "bilinear") {
    ix = pad_coord(ix, g.w);
    iy = pad_coord(iy, g.h);
    if (mode == "nearest") {
      out = tap(g, round(iy), round(ix));
    } else {
      const Tensor x0 = floor(ix), y0 = floor(iy);
      const Tensor tx = expand_dims(ix - x0, -1), ty = expand_dims(iy - y0, -1);
      out = tap(g, y0, x0) * (1.0 - tx) * (1.0 - ty) + tap(g, y0, x0 + 1.0) * tx * (1.0 - ty) +
            tap(g, y0 + 1.0, x0) * (1.0 - tx) * ty + tap(g, y0 + 1.0, x0 + 1.0) * tx * ty;
    }
  } else {
    DF_CHECK(mode == "bicubic", kPrefix, c.describe(), ": unknown mode '", mode, "'");
    const double A = -0.75;
    auto coeffs = [&](const Tensor& t) {
      auto cubic1 = [&](const Tensor& v) { return ((A + 2) * v - (A + 3)) * v * v + 1.0; };
      auto cubic2 = [&](const Tensor& v) { return ((A * v - 5 * A) * v + 8 * A) * v - 4 * A; };
      return std::vector<Tensor>{cubic2(t + 1.0), cubic1(t), cubic1(1.0 - t), cubic2(2.0 - t)};
    };
    const Tensor x0 = floor(ix), y0 = floor(iy);
    const std::vector<Tensor> cx = coeffs(ix - x0), cy = coeffs(iy - y0);
    for (int i = 0; i < 4; ++i) {
      Tensor row;
      const Tensor ty = pad_coord(y0 + double(i - 1), g.h);
      for (int j = 0; j < 4; ++j) {
        const Tensor tx = pad_coord(x0 + double(j - 1), g.w);
        const Tensor v = tap(g, ty, tx) * expand_dims(cx[size_t(j)], -1);
        row = row.defined() ? row + v : v;
      }
      row = row * expand_dims(cy[size_t(i)], -1);
      out = out.defined() ? out + row : row;
    }
  }
  return {transpose(out, {0, 3, 1, 2})};
}

// --- RoiAlign (opsets 10, 16) --- with the rois and batch indices known at import, every
// output cell is a fixed weighted sum of input pixels (the bilinear taps of its sampling
// grid, averaged), computed here as in ONNX Runtime and applied as gather + sum.
TensorList import_roi_align(NodeContext& c) {
  const Tensor x = c.input(0);
  DF_CHECK(x.rank() == 4 && x.shape().is_fully_defined(), kPrefix, c.describe(), ": needs a known [N,C,H,W] input, got ",
           x.shape().to_string());
  const Tensor rois_t = c.constant_input(1), bidx_t = c.constant_input(2);
  const std::vector<double> rois = rois_t.to_vector<double>();
  const std::vector<int64_t> bidx = bidx_t.to_vector<int64_t>();
  const int64_t nr = int64_t(bidx.size());
  DF_CHECK(int64_t(rois.size()) == nr * 4, kPrefix, c.describe(), ": rois must be [", nr, ",4], got ",
           rois_t.shape().to_string());
  const std::string mode = c.attr_string("mode", "avg");
  DF_CHECK(mode == "avg", kPrefix, c.describe(), ": mode '", mode, "' is not supported (only avg)");
  const int64_t ph = c.attr_int("output_height", 1), pw = c.attr_int("output_width", 1);
  const int64_t sampling = c.attr_int("sampling_ratio", 0);
  const double scale = c.attr_float("spatial_scale", 1.f);
  const bool half_pixel = c.attr_string("coordinate_transformation_mode", c.opset() >= 16 ? "half_pixel" : "output_half_pixel") ==
                          "half_pixel";
  const int64_t H = x.shape()[2], W = x.shape()[3], C = x.shape()[1];
  const double offset = half_pixel ? 0.5 : 0.0;
  // Taps per output cell vary; pad every cell to the longest list with zero weights.
  std::vector<std::vector<std::pair<int64_t, double>>> cells(static_cast<size_t>(nr * ph * pw));
  for (int64_t r = 0; r < nr; ++r) {
    const double x1 = rois[size_t(r * 4)] * scale - offset, y1 = rois[size_t(r * 4 + 1)] * scale - offset;
    const double x2 = rois[size_t(r * 4 + 2)] * scale - offset, y2 = rois[size_t(r * 4 + 3)] * scale - offset;
    double rw = x2 - x1, rh = y2 - y1;
    if (!half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / double(ph), bw = rw / double(pw);
    const int64_t gh = sampling > 0 ? sampling : int64_t(std::ceil(rh / double(ph)));
    const int64_t gw = sampling > 0 ? sampling : int64_t(std::ceil(rw / double(pw)));
    const double count = double(std::max<int64_t>(gh * gw, 1));
    for (int64_t i = 0; i < ph; ++i)
      for (int64_t j = 0; j < pw; ++j) {
        auto& cell = cells[size_t((r * ph + i) * pw + j)];
        for (int64_t iy = 0; iy < gh; ++iy) {
          double yy = y1 + double(i) * bh + (double(iy) + 0.5) * bh / double(gh);
          for (int64_t ix = 0; ix < gw; ++ix) {
            double xx = x1 + double(j) * bw + (double(ix) + 0.5) * bw / double(gw);
            if (yy < -1.0 || yy > double(H) || xx < -1.0 || xx > double(W)) continue;
            double y = std::max(yy, 0.0), xv = std::max(xx, 0.0);
            int64_t yl = int64_t(y), xl = int64_t(xv), yh, xh;
            if (yl >= H - 1) {
              yh = yl = H - 1;
              y = double(yl);
            } else {
              yh = yl + 1;
            }
            if (xl >= W - 1) {
              xh = xl = W - 1;
              xv = double(xl);
            } else {
              xh = xl + 1;
            }
            const double ly = y - double(yl), lx = xv - double(xl), hy = 1 - ly, hx = 1 - lx;
            cell.push_back({yl * W + xl, hy * hx / count});
            cell.push_back({yl * W + xh, hy * lx / count});
            cell.push_back({yh * W + xl, ly * hx / count});
            cell.push_back({yh * W + xh, ly * lx / count});
          }
        }
      }
  }
  size_t taps = 1;
  for (const auto& cell : cells) taps = std::max(taps, cell.size());
  std::vector<int64_t> idx;
  std::vector<double> wts;
  for (const auto& cell : cells)
    for (size_t k = 0; k < taps; ++k) {
      idx.push_back(k < cell.size() ? cell[k].first : 0);
      wts.push_back(k < cell.size() ? cell[k].second : 0.0);
    }
  const int64_t P = ph * pw, K = int64_t(taps);
  // [R, H*W, C] rows of each roi's image, then the taps of every cell.
  const Tensor img = transpose(reshape(gather(x, constant(bidx, Shape{nr}), 0), {nr, C, H * W}), {0, 2, 1});
  const Tensor g = gather(img, constant(idx, Shape{nr, P * K}), 1, 1);  // [R, P*K, C]
  const Tensor y = reduce_sum(reshape(g * constant(wts, Shape{nr, P * K, 1}, x.dtype()), {nr, P, K, C}), {2});
  return {reshape(transpose(y, {0, 2, 1}), {nr, C, ph, pw})};
}

}  // namespace

DF_ONNX_OP("Upsample", 7, import_upsample_7)
DF_ONNX_OP("Upsample", 9, import_upsample_9)
DF_ONNX_OP("Resize", 10, import_upsample_9)
DF_ONNX_OP("Resize", 11, import_resize_11)
DF_ONNX_OP("GridSample", 16, import_grid_sample)
DF_ONNX_OP("RoiAlign", 10, import_roi_align)

}  // namespace deepflow::onnx
