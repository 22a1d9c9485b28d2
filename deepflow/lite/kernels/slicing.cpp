// SPDX-License-Identifier: Apache-2.0
// Kernels that index: PAD, PADV2, MIRROR_PAD, TRANSPOSE, SLICE, STRIDED_SLICE, GATHER,
// DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, RESIZE_BILINEAR,
// RESIZE_NEAREST_NEIGHBOR. Shape contracts
// are TFLite's; PAD's and the slices' operands must be constant (what converters write).
#include <cmath>
#include <cstring>

#include "deepflow/lite/kernels/kernel_util.h"

namespace deepflow::lite {

namespace {

size_t element_size(const OpContext& ctx, const Tensor& t) {
  const size_t s = dtype_size(t.type);
  DF_LITE_OP_CHECK(ctx, s > 0, "tensor '", t.name, "' is ", dtype_name(t.type), ": not supported");
  return s;
}

std::vector<int64_t> strides_of(const std::vector<int>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// Calls f(out_index, in_offset) for each output element of a strided view of the input:
// out dim d reads in[begin[d] + i * step[d]] along in's dim d.
template <class F>
void strided_walk(const std::vector<int>& out, const std::vector<int64_t>& begin, const std::vector<int64_t>& step, F f) {
  const int rank = static_cast<int>(out.size());
  const int64_t n = num_elements(out);
  if (n == 0) return;
  std::vector<int> idx(static_cast<size_t>(rank), 0);
  int64_t offset = 0;
  for (int d = 0; d < rank; ++d) offset += begin[static_cast<size_t>(d)];
  for (int64_t i = 0; i < n; ++i) {
    f(i, offset);
    for (int d = rank - 1; d >= 0; --d) {
      const auto ud = static_cast<size_t>(d);
      if (++idx[ud] < out[ud]) {
        offset += step[ud];
        break;
      }
      offset -= step[ud] * (out[ud] - 1);
      idx[ud] = 0;
    }
  }
}

// PAD / PADV2 (constant value) and MIRROR_PAD (REFLECT or SYMMETRIC).
class Pad final : public Kernel {
 public:
  Pad(const OpContext& ctx, bool mirror) : mirror_(mirror) {
    if (const auto* o = ctx.options<fb::MirrorPadOptions>()) symmetric_ = o->mode() == fb::MirrorPadMode::SYMMETRIC;
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& p = ctx.input(1);
    DF_LITE_OP_CHECK(ctx, p.is_constant(), "needs constant paddings");
    const auto v = int_values(ctx, p, "paddings");
    DF_LITE_OP_CHECK(ctx, static_cast<int>(v.size()) == 2 * x.rank(), "paddings has ", v.size(), " values for ",
                     shape_string(x.shape));
    before_.assign(static_cast<size_t>(x.rank()), 0);
    std::vector<int> shape = x.shape;
    for (int d = 0; d < x.rank(); ++d) {
      const int lo = v[static_cast<size_t>(2 * d)], hi = v[static_cast<size_t>(2 * d + 1)];
      DF_LITE_OP_CHECK(ctx, lo >= 0 && hi >= 0, "paddings ", lo, ", ", hi, " are negative");
      if (mirror_)
        DF_LITE_OP_CHECK(ctx, std::max(lo, hi) <= x.dim(d) - (symmetric_ ? 0 : 1), "pads dimension ", d, " of ",
                         shape_string(x.shape), " by ", lo, ", ", hi, ": more than the mirror allows");
      before_[static_cast<size_t>(d)] = lo;
      shape[static_cast<size_t>(d)] += lo + hi;
    }
    DF_LITE_OP_CHECK(ctx, !x.quantized() || x.type == DType::kFloat32 || x.type == DType::kInt8 ||
                              x.type == DType::kUInt8, "quantized ", dtype_name(x.type), " is not supported");
    ctx.resize_output(0, shape);
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const size_t es = element_size(ctx, x);
    const int rank = x.rank();
    // The fill value: input 2 (PADV2), else zero, which for a quantized tensor is its zero point.
    std::vector<std::byte> fill(es, std::byte{0});
    if (ctx.has_input(2)) std::memcpy(fill.data(), ctx.input(2).data_ptr, es);
    else if (x.quantized() && es == 1) fill[0] = static_cast<std::byte>(static_cast<int8_t>(x.quant.zero_point[0]));
    const auto in_strides = strides_of(x.shape);
    std::vector<int> idx(static_cast<size_t>(rank), 0);
    for (int64_t i = 0, n = y.num_elements(); i < n; ++i) {
      int64_t rest = i, src = 0;
      bool inside = true;
      for (int d = rank - 1; d >= 0; --d) {
        const auto ud = static_cast<size_t>(d);
        int k = static_cast<int>(rest % y.dim(d)) - before_[ud];
        rest /= y.dim(d);
        const int len = x.dim(d);
        if (k < 0 || k >= len) {
          if (!mirror_) {
            inside = false;
            break;
          }
          k = k < 0 ? (symmetric_ ? -k - 1 : -k) : (symmetric_ ? 2 * len - k - 1 : 2 * len - k - 2);
        }
        src += k * in_strides[ud];
      }
      std::memcpy(y.data_ptr + static_cast<size_t>(i) * es,
                  inside ? x.data_ptr + static_cast<size_t>(src) * es : fill.data(), es);
    }
  }

 private:
  bool mirror_;
  bool symmetric_ = false;
  std::vector<int> before_;
};

class Transpose final : public Kernel {
 public:
  explicit Transpose(const OpContext&) {}
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    DF_LITE_OP_CHECK(ctx, ctx.input(1).is_constant(), "needs a constant permutation");
    perm_ = int_values(ctx, ctx.input(1), "perm");
    DF_LITE_OP_CHECK(ctx, static_cast<int>(perm_.size()) == x.rank(), "perm ", shape_string(perm_), " for ",
                     shape_string(x.shape));
    std::vector<int> shape(perm_.size());
    std::vector<char> seen(perm_.size(), 0);
    for (size_t i = 0; i < perm_.size(); ++i) {
      int p = perm_[i] < 0 ? perm_[i] + x.rank() : perm_[i];
      DF_LITE_OP_CHECK(ctx, p >= 0 && p < x.rank() && !seen[static_cast<size_t>(p)], "perm ", shape_string(perm_),
                       " is not a permutation of ", x.rank(), " dimensions");
      seen[static_cast<size_t>(p)] = 1;
      perm_[i] = p;
      shape[i] = x.dim(p);
    }
    ctx.resize_output(0, shape);
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const size_t es = element_size(ctx, x);
    const auto in_strides = strides_of(x.shape);
    std::vector<int64_t> step(perm_.size()), begin(perm_.size(), 0);
    for (size_t i = 0; i < perm_.size(); ++i) step[i] = in_strides[static_cast<size_t>(perm_[i])];
    auto run = [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      T* out = y.data<T>();
      strided_walk(y.shape, begin, step, [&](int64_t i, int64_t src) { out[i] = in[src]; });
    };
    switch (es) {
      case 1: run(uint8_t{}); break;
      case 2: run(uint16_t{}); break;
      case 4: run(uint32_t{}); break;
      case 8: run(uint64_t{}); break;
      default: ctx.fail("cannot transpose ", dtype_name(x.type));
    }
  }

 private:
  std::vector<int> perm_;
};

// SLICE (begin, size) and STRIDED_SLICE (begin, end, strides with TF's masks).
class Slice final : public Kernel {
 public:
  Slice(const OpContext& ctx, bool strided) : strided_(strided) {
    if (const auto* o = ctx.options<fb::StridedSliceOptions>()) {
      begin_mask_ = o->begin_mask();
      end_mask_ = o->end_mask();
      shrink_mask_ = o->shrink_axis_mask();
      ellipsis_mask_ = o->ellipsis_mask();
      new_axis_mask_ = o->new_axis_mask();
      offset_ = o->offset();
    }
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    for (int i = 1; i < (strided_ ? 4 : 3); ++i)
      DF_LITE_OP_CHECK(ctx, ctx.input(i).is_constant(), "needs constant begin/end/strides");
    DF_LITE_OP_CHECK(ctx, ellipsis_mask_ == 0 && new_axis_mask_ == 0, "ellipsis_mask ", ellipsis_mask_,
                     " and new_axis_mask ", new_axis_mask_, " are not supported");
    const auto b = int_values(ctx, ctx.input(1), "begin");
    const auto e = int_values(ctx, ctx.input(2), strided_ ? "end" : "size");
    const auto s = strided_ ? int_values(ctx, ctx.input(3), "strides") : std::vector<int>(b.size(), 1);
    const int rank = x.rank();
    DF_LITE_OP_CHECK(ctx, static_cast<int>(b.size()) <= rank && e.size() == b.size() && s.size() == b.size(),
                     "begin/end/strides of ", b.size(), ", ", e.size(), ", ", s.size(), " values for ",
                     shape_string(x.shape));
    begin_.assign(static_cast<size_t>(rank), 0);
    step_.assign(static_cast<size_t>(rank), 1);
    out_.clear();
    std::vector<int> shape;
    const auto strides = strides_of(x.shape);
    for (int d = 0; d < rank; ++d) {
      const int len = x.dim(d);
      int lo = 0, hi = len, st = 1;
      if (d < static_cast<int>(b.size())) {
        st = s[static_cast<size_t>(d)];
        DF_LITE_OP_CHECK(ctx, st != 0, "stride of dimension ", d, " is 0");
        const auto clamp = [&](int v, bool is_end) {
          if (v < 0) v += len;
          return st > 0 ? std::clamp(v, 0, len) : std::clamp(v, -1, len - 1 + (is_end ? 0 : 0));
        };
        if (strided_) {
          const bool shrink = (shrink_mask_ >> d) & 1;
          lo = (begin_mask_ >> d) & 1 ? (st > 0 ? 0 : len - 1) : clamp(b[static_cast<size_t>(d)], false);
          if (shrink) {
            hi = lo + 1;
            st = 1;
          } else if ((end_mask_ >> d) & 1) {
            hi = st > 0 ? len : -1;
          } else {
            const int ev = offset_ ? b[static_cast<size_t>(d)] + e[static_cast<size_t>(d)] : e[static_cast<size_t>(d)];
            hi = clamp(ev, true);
          }
        } else {
          lo = b[static_cast<size_t>(d)];
          const int size = e[static_cast<size_t>(d)];
          hi = size == -1 ? len : lo + size;
          DF_LITE_OP_CHECK(ctx, lo >= 0 && hi <= len && lo <= hi, "slices [", lo, ", ", hi, ") of dimension ", d,
                           " of ", shape_string(x.shape));
        }
      }
      const int count = st > 0 ? std::max(0, (hi - lo + st - 1) / st) : std::max(0, (lo - hi - st - 1) / -st);
      begin_[static_cast<size_t>(d)] = count > 0 ? static_cast<int64_t>(lo) * strides[static_cast<size_t>(d)] : 0;
      step_[static_cast<size_t>(d)] = static_cast<int64_t>(st) * strides[static_cast<size_t>(d)];
      out_.push_back(count);
      if (!(strided_ && ((shrink_mask_ >> d) & 1))) shape.push_back(count);
    }
    ctx.resize_output(0, shape);
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const size_t es = element_size(ctx, x);
    strided_walk(out_, begin_, step_, [&](int64_t i, int64_t src) {
      std::memcpy(y.data_ptr + static_cast<size_t>(i) * es, x.data_ptr + static_cast<size_t>(src) * es, es);
    });
  }

 private:
  bool strided_;
  int begin_mask_ = 0, end_mask_ = 0, shrink_mask_ = 0, ellipsis_mask_ = 0, new_axis_mask_ = 0;
  bool offset_ = false;
  std::vector<int64_t> begin_, step_;
  std::vector<int> out_;
};

class Gather final : public Kernel {
 public:
  explicit Gather(const OpContext& ctx) {
    if (const auto* o = ctx.options<fb::GatherOptions>()) {
      axis_ = o->axis();
      batch_dims_ = o->batch_dims();
    }
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& idx = ctx.input(1);
    DF_LITE_OP_CHECK(ctx, batch_dims_ == 0, "batch_dims ", batch_dims_, " is not supported");
    DF_LITE_OP_CHECK(ctx, idx.type == DType::kInt32 || idx.type == DType::kInt64, "indices are ", dtype_name(idx.type));
    axis_norm_ = axis_ < 0 ? axis_ + x.rank() : axis_;
    DF_LITE_OP_CHECK(ctx, axis_norm_ >= 0 && axis_norm_ < x.rank(), "axis ", axis_, " for ", shape_string(x.shape));
    std::vector<int> shape(x.shape.begin(), x.shape.begin() + axis_norm_);
    shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
    shape.insert(shape.end(), x.shape.begin() + axis_norm_ + 1, x.shape.end());
    ctx.resize_output(0, shape);
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& idx = ctx.input(1);
    Tensor& y = ctx.output(0);
    const size_t es = element_size(ctx, x);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis_norm_; ++i) outer *= x.dim(i);
    for (int i = axis_norm_ + 1; i < x.rank(); ++i) inner *= x.dim(i);
    const int len = x.dim(axis_norm_);
    const int64_t count = idx.num_elements();
    const size_t chunk = static_cast<size_t>(inner) * es;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < count; ++k) {
        const int64_t j = idx.type == DType::kInt32 ? idx.data<int32_t>()[k] : idx.data<int64_t>()[k];
        DF_LITE_OP_CHECK(ctx, j >= 0 && j < len, "index ", j, " is out of range [0, ", len, ")");
        std::memcpy(y.data_ptr + static_cast<size_t>(o * count + k) * chunk,
                    x.data_ptr + static_cast<size_t>(o * len + j) * chunk, chunk);
      }
  }

 private:
  int axis_ = 0, batch_dims_ = 0, axis_norm_ = 0;
};

// DEPTH_TO_SPACE / SPACE_TO_DEPTH on NHWC (TF's DCR order).
class DepthSpace final : public Kernel {
 public:
  DepthSpace(const OpContext& ctx, bool to_space) : to_space_(to_space) {
    if (const auto* o = ctx.options<fb::DepthToSpaceOptions>()) block_ = o->block_size();
    if (const auto* o = ctx.options<fb::SpaceToDepthOptions>()) block_ = o->block_size();
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    check_rank(ctx, x, 4, "input");
    const int b = block_;
    DF_LITE_OP_CHECK(ctx, b >= 1, "block_size is ", b);
    if (to_space_) {
      DF_LITE_OP_CHECK(ctx, x.dim(3) % (b * b) == 0, "depth ", x.dim(3), " is not a multiple of ", b * b);
      ctx.resize_output(0, {x.dim(0), x.dim(1) * b, x.dim(2) * b, x.dim(3) / (b * b)});
    } else {
      DF_LITE_OP_CHECK(ctx, x.dim(1) % b == 0 && x.dim(2) % b == 0, "spatial size of ", shape_string(x.shape),
                       " is not a multiple of ", b);
      ctx.resize_output(0, {x.dim(0), x.dim(1) / b, x.dim(2) / b, x.dim(3) * b * b});
    }
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const size_t es = element_size(ctx, x);
    const Tensor& space = to_space_ ? y : x;
    const Tensor& depth = to_space_ ? x : y;
    const int b = block_, c = space.dim(3);
    for (int n = 0; n < space.dim(0); ++n)
      for (int h = 0; h < space.dim(1); ++h)
        for (int w = 0; w < space.dim(2); ++w) {
          const int64_t s = ((static_cast<int64_t>(n) * space.dim(1) + h) * space.dim(2) + w) * c;
          const int64_t d = ((static_cast<int64_t>(n) * depth.dim(1) + h / b) * depth.dim(2) + w / b) * depth.dim(3) +
                            ((h % b) * b + (w % b)) * c;
          const std::byte* src = to_space_ ? x.data_ptr + d * static_cast<int64_t>(es) : x.data_ptr + s * static_cast<int64_t>(es);
          std::byte* dst = to_space_ ? y.data_ptr + s * static_cast<int64_t>(es) : y.data_ptr + d * static_cast<int64_t>(es);
          std::memcpy(dst, src, static_cast<size_t>(c) * es);
        }
  }

 private:
  bool to_space_;
  int block_ = 0;
};

// RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR on float NHWC, with TF's align_corners and
// half_pixel_centers rules.
class Resize final : public Kernel {
 public:
  Resize(const OpContext& ctx, bool bilinear) : bilinear_(bilinear) {
    if (const auto* o = ctx.options<fb::ResizeBilinearOptions>()) {
      align_ = o->align_corners();
      half_ = o->half_pixel_centers();
    }
    if (const auto* o = ctx.options<fb::ResizeNearestNeighborOptions>()) {
      align_ = o->align_corners();
      half_ = o->half_pixel_centers();
    }
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    check_rank(ctx, x, 4, "input");
    check_type(ctx, x, DType::kFloat32, "input");
    DF_LITE_OP_CHECK(ctx, ctx.input(1).is_constant(), "needs a constant size");
    const auto size = int_values(ctx, ctx.input(1), "size");
    DF_LITE_OP_CHECK(ctx, size.size() == 2 && size[0] > 0 && size[1] > 0, "size ", shape_string(size));
    ctx.resize_output(0, {x.dim(0), size[0], size[1], x.dim(3)});
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int ih = x.dim(1), iw = x.dim(2), oh = y.dim(1), ow = y.dim(2), c = x.dim(3);
    const float sh = scale(ih, oh), sw = scale(iw, ow);
    const float* in = x.data<float>();
    float* out = y.data<float>();
    for (int n = 0; n < x.dim(0); ++n)
      for (int oy = 0; oy < oh; ++oy)
        for (int ox = 0; ox < ow; ++ox) {
          float* dst = out + ((static_cast<int64_t>(n) * oh + oy) * ow + ox) * c;
          const float* base = in + static_cast<int64_t>(n) * ih * iw * c;
          if (!bilinear_) {
            auto near = [&](int o, float s, int len) {
              const float v = half_ ? (o + 0.5f) * s : o * s;
              int i = align_ ? static_cast<int>(std::round(v)) : static_cast<int>(std::floor(v));
              return std::min(std::max(i, 0), len - 1);
            };
            std::memcpy(dst, base + (static_cast<int64_t>(near(oy, sh, ih)) * iw + near(ox, sw, iw)) * c,
                        static_cast<size_t>(c) * sizeof(float));
            continue;
          }
          const float fy = half_ ? (oy + 0.5f) * sh - 0.5f : oy * sh;
          const float fx = half_ ? (ox + 0.5f) * sw - 0.5f : ox * sw;
          const int y0 = std::max(static_cast<int>(std::floor(fy)), 0), x0 = std::max(static_cast<int>(std::floor(fx)), 0);
          const int y1 = std::min(y0 + 1, ih - 1), x1 = std::min(x0 + 1, iw - 1);
          const float dy = fy - std::floor(fy) + (fy < 0 ? 0.f : 0.f), dx = fx - std::floor(fx);
          const float wy = fy < 0 ? 0.f : dy, wx = fx < 0 ? 0.f : dx;
          const float* p00 = base + (static_cast<int64_t>(y0) * iw + x0) * c;
          const float* p01 = base + (static_cast<int64_t>(y0) * iw + x1) * c;
          const float* p10 = base + (static_cast<int64_t>(y1) * iw + x0) * c;
          const float* p11 = base + (static_cast<int64_t>(y1) * iw + x1) * c;
          for (int k = 0; k < c; ++k) {
            const float top = p00[k] + (p01[k] - p00[k]) * wx;
            const float bottom = p10[k] + (p11[k] - p10[k]) * wx;
            dst[k] = top + (bottom - top) * wy;
          }
        }
  }

 private:
  float scale(int in, int out) const {
    return align_ && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                             : static_cast<float>(in) / static_cast<float>(out);
  }
  bool bilinear_;
  bool align_ = false;
  bool half_ = false;
};

// SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND: [B, S1..SM, rest] with block_shape [M] and
// paddings / crops [M, 2]; how converters write a dilated convolution. A batch index is
// (block offset, row major over the M block dims) * B + b.
class SpaceBatch final : public Kernel {
 public:
  SpaceBatch(const OpContext&, bool to_batch) : to_batch_(to_batch) {}
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    DF_LITE_OP_CHECK(ctx, ctx.input(1).is_constant() && ctx.input(2).is_constant(),
                     "needs constant block_shape and ", to_batch_ ? "paddings" : "crops");
    block_ = int_values(ctx, ctx.input(1), "block_shape");
    pads_ = int_values(ctx, ctx.input(2), to_batch_ ? "paddings" : "crops");
    const int m = static_cast<int>(block_.size());
    DF_LITE_OP_CHECK(ctx, m >= 1 && x.rank() >= m + 1 && static_cast<int>(pads_.size()) == 2 * m, "block_shape ",
                     shape_string(block_), " and ", shape_string(pads_), " for input ", shape_string(x.shape));
    int64_t blocks = 1;
    for (int b : block_) {
      DF_LITE_OP_CHECK(ctx, b >= 1, "block_shape ", shape_string(block_), " must be positive");
      blocks *= b;
    }
    std::vector<int> shape = x.shape;
    if (to_batch_) {
      shape[0] = static_cast<int>(x.dim(0) * blocks);
      for (int i = 0; i < m; ++i) {
        const int padded = x.dim(i + 1) + pads_[static_cast<size_t>(2 * i)] + pads_[static_cast<size_t>(2 * i + 1)];
        DF_LITE_OP_CHECK(ctx, padded % block_[static_cast<size_t>(i)] == 0, "padded dimension ", i + 1, " (", padded,
                         ") is not a multiple of block ", block_[static_cast<size_t>(i)]);
        shape[static_cast<size_t>(i + 1)] = padded / block_[static_cast<size_t>(i)];
      }
    } else {
      DF_LITE_OP_CHECK(ctx, x.dim(0) % blocks == 0, "batch ", x.dim(0), " is not a multiple of ", blocks);
      shape[0] = static_cast<int>(x.dim(0) / blocks);
      for (int i = 0; i < m; ++i) {
        shape[static_cast<size_t>(i + 1)] = x.dim(i + 1) * block_[static_cast<size_t>(i)] -
                                            pads_[static_cast<size_t>(2 * i)] - pads_[static_cast<size_t>(2 * i + 1)];
        DF_LITE_OP_CHECK(ctx, shape[static_cast<size_t>(i + 1)] >= 0, "crops ", shape_string(pads_), " exceed ",
                         shape_string(x.shape));
      }
    }
    ctx.resize_output(0, shape);
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const size_t es = element_size(ctx, x);
    const Tensor& space = to_batch_ ? x : y;  // [B, S..., rest]
    const Tensor& batch = to_batch_ ? y : x;  // [B * blocks, S'..., rest]
    const int m = static_cast<int>(block_.size());
    int64_t rest = 1;
    for (int d = m + 1; d < space.rank(); ++d) rest *= space.dim(d);
    const size_t chunk = static_cast<size_t>(rest) * es;
    const int64_t b_count = space.dim(0);
    // Padding is real zero: a quantized byte tensor's zero point (LiteRT pads with the
    // output's), else 0.
    const int pad_byte = y.quantized() && es == 1 && !y.quant.zero_point.empty()
                             ? static_cast<int>(static_cast<uint8_t>(y.quant.zero_point[0]))
                             : 0;
    // Walk every batch-side position; map it to the space side (or to padding).
    for (int64_t ob = 0; ob < batch.dim(0); ++ob) {
      const int64_t b = ob % b_count;
      int64_t off = ob / b_count;
      std::vector<int> offs(static_cast<size_t>(m));
      for (int i = m - 1; i >= 0; --i) {
        offs[static_cast<size_t>(i)] = static_cast<int>(off % block_[static_cast<size_t>(i)]);
        off /= block_[static_cast<size_t>(i)];
      }
      int64_t positions = 1;
      for (int i = 0; i < m; ++i) positions *= batch.dim(i + 1);
      for (int64_t p = 0; p < positions; ++p) {
        int64_t rem = p, s_off = 0, b_off = 0, s_stride = 1, b_stride = 1;
        bool inside = true;
        for (int i = m - 1; i >= 0; --i) {
          const int o = static_cast<int>(rem % batch.dim(i + 1));
          rem /= batch.dim(i + 1);
          const int s = o * block_[static_cast<size_t>(i)] + offs[static_cast<size_t>(i)] - pads_[static_cast<size_t>(2 * i)];
          if (s < 0 || s >= space.dim(i + 1)) inside = false;
          s_off += s * s_stride;
          b_off += o * b_stride;
          s_stride *= space.dim(i + 1);
          b_stride *= batch.dim(i + 1);
        }
        std::byte* bp = batch.data_ptr + static_cast<size_t>((ob * positions + b_off)) * chunk;
        if (!inside) {
          if (to_batch_) std::memset(bp, pad_byte, chunk);
          continue;
        }
        std::byte* sp = space.data_ptr + static_cast<size_t>((b * s_stride + s_off)) * chunk;
        if (to_batch_) std::memcpy(bp, sp, chunk);
        else std::memcpy(sp, bp, chunk);
      }
    }
  }

 private:
  bool to_batch_;
  std::vector<int> block_, pads_;
};

template <class K, bool flag>
KernelFactory flag_factory() {
  return [](const OpContext& ctx) { return std::unique_ptr<Kernel>(new K(ctx, flag)); };
}

}  // namespace

void register_slicing_kernels(OpResolver& r) {
  using B = fb::BuiltinOperator;
  r.add_builtin(B::PAD, flag_factory<Pad, false>(), 1, 4);
  r.add_builtin(B::PADV2, flag_factory<Pad, false>(), 1, 4);
  r.add_builtin(B::MIRROR_PAD, flag_factory<Pad, true>(), 1, 3);
  r.add_builtin(B::TRANSPOSE, make_factory<Transpose>(), 1, 6);
  r.add_builtin(B::SLICE, flag_factory<Slice, false>(), 1, 6);
  r.add_builtin(B::STRIDED_SLICE, flag_factory<Slice, true>(), 1, 8);
  r.add_builtin(B::GATHER, make_factory<Gather>(), 1, 7);
  r.add_builtin(B::DEPTH_TO_SPACE, flag_factory<DepthSpace, true>(), 1, 2);
  r.add_builtin(B::SPACE_TO_DEPTH, flag_factory<DepthSpace, false>(), 1, 2);
  r.add_builtin(B::RESIZE_BILINEAR, flag_factory<Resize, true>(), 1, 4);
  r.add_builtin(B::RESIZE_NEAREST_NEIGHBOR, flag_factory<Resize, false>(), 1, 4);
  r.add_builtin(B::SPACE_TO_BATCH_ND, flag_factory<SpaceBatch, true>(), 1, 4);
  r.add_builtin(B::BATCH_TO_SPACE_ND, flag_factory<SpaceBatch, false>(), 1, 4);
}

}  // namespace deepflow::lite
