// SPDX-License-Identifier: Apache-2.0
// Kernels that move bytes without arithmetic, any element type: RESHAPE, SQUEEZE,
// EXPAND_DIMS, SHAPE, CONCATENATION, PACK, UNPACK, SPLIT, SPLIT_V, TILE, FILL,
// BROADCAST_TO, ZEROS_LIKE. Shape contracts follow TFLite's (and TensorFlow's) ops.
#include <cstring>
#include <numeric>

#include "deepflow/lite/kernels/kernel_util.h"

namespace deepflow::lite {

namespace {

int normalize_axis(const OpContext& ctx, int axis, int rank, const char* what = "axis") {
  DF_LITE_OP_CHECK(ctx, axis >= -rank && axis < rank, what, " ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

size_t element_size(const OpContext& ctx, const Tensor& t) {
  const size_t s = dtype_size(t.type);
  DF_LITE_OP_CHECK(ctx, s > 0, "tensor '", t.name, "' is ", dtype_name(t.type), ": not supported");
  return s;
}

// Copies the input's bytes to the output (whose shape differs).
void copy_bytes(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.data_ptr != x.data_ptr && x.bytes) std::memcpy(y.data_ptr, x.data_ptr, std::min(x.bytes, y.bytes));
}

// The new shape of RESHAPE: from input 1 (when present and not a 0-d placeholder), else the
// options; one -1 takes what is left.
std::vector<int> reshape_target(const OpContext& ctx, const Tensor& x, const std::vector<int>& spec) {
  std::vector<int> shape = spec;
  int64_t known = 1;
  int unknown = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      DF_LITE_OP_CHECK(ctx, unknown < 0, "new shape ", shape_string(spec), " has more than one -1");
      unknown = static_cast<int>(i);
    } else {
      known *= shape[i];
    }
  }
  const int64_t n = x.num_elements();
  if (unknown >= 0) {
    DF_LITE_OP_CHECK(ctx, known > 0 && n % known == 0, "cannot reshape ", shape_string(x.shape), " to ",
                     shape_string(spec));
    shape[static_cast<size_t>(unknown)] = static_cast<int>(n / known);
  }
  DF_LITE_OP_CHECK(ctx, num_elements(shape) == n, "cannot reshape ", shape_string(x.shape), " (", n,
                   " elements) to ", shape_string(shape));
  return shape;
}

class Reshape final : public Kernel {
 public:
  explicit Reshape(const OpContext& ctx) {
    if (const auto* o = ctx.options<fb::ReshapeOptions>(); o && o->new_shape())
      options_shape_.assign(o->new_shape()->begin(), o->new_shape()->end());
  }
  void prepare(OpContext& ctx) override {
    if (uses_input(ctx) && !ctx.input(1).is_constant()) {
      ctx.mark_dynamic(0);  // the shape is a value computed while running
      return;
    }
    ctx.resize_output(0, target(ctx));
  }
  void eval(OpContext& ctx) override {
    if (uses_input(ctx) && !ctx.input(1).is_constant()) ctx.resize_output(0, target(ctx));
    copy_bytes(ctx);
  }

 private:
  bool uses_input(const OpContext& ctx) const {
    return ctx.has_input(1) && !(ctx.input(1).rank() == 1 && ctx.input(1).dim(0) == 0 && !options_shape_.empty());
  }
  std::vector<int> target(const OpContext& ctx) const {
    return reshape_target(ctx, ctx.input(0), uses_input(ctx) ? int_values(ctx, ctx.input(1), "shape") : options_shape_);
  }
  std::vector<int> options_shape_;
};

class Squeeze final : public Kernel {
 public:
  explicit Squeeze(const OpContext& ctx) {
    if (const auto* o = ctx.options<fb::SqueezeOptions>(); o && o->squeeze_dims())
      dims_.assign(o->squeeze_dims()->begin(), o->squeeze_dims()->end());
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    std::vector<char> drop(static_cast<size_t>(x.rank()), 0);
    for (int d : dims_) {
      const int a = normalize_axis(ctx, d, x.rank(), "squeeze dimension");
      DF_LITE_OP_CHECK(ctx, x.dim(a) == 1, "cannot squeeze dimension ", d, " of ", shape_string(x.shape));
      drop[static_cast<size_t>(a)] = 1;
    }
    std::vector<int> shape;
    for (int i = 0; i < x.rank(); ++i)
      if (!(dims_.empty() ? x.dim(i) == 1 : drop[static_cast<size_t>(i)])) shape.push_back(x.dim(i));
    ctx.resize_output(0, shape);
  }
  void eval(OpContext& ctx) override { copy_bytes(ctx); }

 private:
  std::vector<int> dims_;
};

class ExpandDims final : public Kernel {
 public:
  explicit ExpandDims(const OpContext&) {}
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    DF_LITE_OP_CHECK(ctx, ctx.input(1).is_constant(), "needs a constant axis");
    const auto axis = int_values(ctx, ctx.input(1), "axis");
    DF_LITE_OP_CHECK(ctx, axis.size() == 1, "axis has ", axis.size(), " values; expected 1");
    const int a = normalize_axis(ctx, axis[0], x.rank() + 1);
    std::vector<int> shape = x.shape;
    shape.insert(shape.begin() + a, 1);
    ctx.resize_output(0, shape);
  }
  void eval(OpContext& ctx) override { copy_bytes(ctx); }
};

class Shape final : public Kernel {
 public:
  explicit Shape(const OpContext&) {}
  void prepare(OpContext& ctx) override { ctx.resize_output(0, {ctx.input(0).rank()}); }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    for (int i = 0; i < x.rank(); ++i) {
      if (y.type == DType::kInt64) y.data<int64_t>()[i] = x.dim(i);
      else y.data<int32_t>()[i] = x.dim(i);
    }
  }
  bool shape_only() const override { return true; }
};

// Copies `count` slices of `inner` bytes from each input, in order, along one axis:
// the shared loop of CONCATENATION and PACK.
void concat_bytes(const std::vector<const Tensor*>& inputs, Tensor& out, int axis, size_t esize, bool pack) {
  int64_t outer = 1;
  for (int i = 0; i < axis; ++i) outer *= out.dim(i);
  std::vector<size_t> chunk(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    int64_t inner = 1;
    for (int i = pack ? axis : axis; i < inputs[k]->rank(); ++i) inner *= inputs[k]->dim(i);
    chunk[k] = static_cast<size_t>(inner) * esize;
  }
  std::byte* dst = out.data_ptr;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (chunk[k]) std::memcpy(dst, inputs[k]->data_ptr + static_cast<size_t>(o) * chunk[k], chunk[k]);
      dst += chunk[k];
    }
}

class Concatenation final : public Kernel {
 public:
  explicit Concatenation(const OpContext& ctx) {
    if (const auto* o = ctx.options<fb::ConcatenationOptions>()) {
      axis_ = o->axis();
      act_ = o->fused_activation_function();
    }
  }
  void prepare(OpContext& ctx) override {
    const Tensor& first = ctx.input(0);
    axis_norm_ = normalize_axis(ctx, axis_, first.rank());
    std::vector<int> shape = first.shape;
    shape[static_cast<size_t>(axis_norm_)] = 0;
    for (int k = 0; k < ctx.num_inputs(); ++k) {
      const Tensor& t = ctx.input(k);
      DF_LITE_OP_CHECK(ctx, t.type == first.type && t.rank() == first.rank(), "input ", k, " is ",
                       dtype_name(t.type), shape_string(t.shape), ", input 0 is ", dtype_name(first.type),
                       shape_string(first.shape));
      for (int i = 0; i < t.rank(); ++i)
        DF_LITE_OP_CHECK(ctx, i == axis_norm_ || t.dim(i) == first.dim(i), "input ", k, " has shape ",
                         shape_string(t.shape), ", input 0 ", shape_string(first.shape), " (axis ", axis_norm_, ")");
      shape[static_cast<size_t>(axis_norm_)] += t.dim(axis_norm_);
    }
    const Tensor& out = ctx.output(0);
    if (first.quantized() && first.type != DType::kFloat32) {
      // As LiteRT: quantized inputs share the output's parameters (converters make them so),
      // so the bytes are copied as they are.
      DF_LITE_OP_CHECK(ctx, act_ == fb::ActivationFunctionType::NONE, "a fused activation on quantized inputs");
      DF_LITE_OP_CHECK(ctx, out.quantized(), "output '", out.name, "' has no quantization parameters");
      auto zp = [](const Tensor& t) { return t.quant.zero_point.empty() ? int64_t{0} : t.quant.zero_point[0]; };
      for (int k = 0; k < ctx.num_inputs(); ++k) {
        const Tensor& t = ctx.input(k);
        const float scale = t.quantized() ? t.quant.scale[0] : 0.f;
        DF_LITE_OP_CHECK(ctx, t.quantized() && scale == out.quant.scale[0] && zp(t) == zp(out), "input ", k, " '",
                         t.name, "' is quantized with scale ", scale, " and zero point ", zp(t), ", the output with ",
                         out.quant.scale[0], " and ", zp(out), "; quantized inputs must share the output's parameters");
      }
    }
    ctx.resize_output(0, shape);
  }
  void eval(OpContext& ctx) override {
    std::vector<const Tensor*> in;
    for (int k = 0; k < ctx.num_inputs(); ++k) in.push_back(&ctx.input(k));
    Tensor& out = ctx.output(0);
    concat_bytes(in, out, axis_norm_, element_size(ctx, out), false);
    if (out.type == DType::kFloat32) apply_activation(act_, out.data<float>(), out.num_elements());
  }

 private:
  int axis_ = 0;
  int axis_norm_ = 0;
  fb::ActivationFunctionType act_ = fb::ActivationFunctionType::NONE;
};

class Pack final : public Kernel {
 public:
  explicit Pack(const OpContext& ctx) {
    if (const auto* o = ctx.options<fb::PackOptions>()) axis_ = o->axis();
  }
  void prepare(OpContext& ctx) override {
    const Tensor& first = ctx.input(0);
    axis_norm_ = normalize_axis(ctx, axis_, first.rank() + 1);
    for (int k = 1; k < ctx.num_inputs(); ++k)
      DF_LITE_OP_CHECK(ctx, ctx.input(k).shape == first.shape && ctx.input(k).type == first.type, "input ", k,
                       " is ", shape_string(ctx.input(k).shape), ", input 0 is ", shape_string(first.shape));
    std::vector<int> shape = first.shape;
    shape.insert(shape.begin() + axis_norm_, ctx.num_inputs());
    ctx.resize_output(0, shape);
  }
  void eval(OpContext& ctx) override {
    std::vector<const Tensor*> in;
    for (int k = 0; k < ctx.num_inputs(); ++k) in.push_back(&ctx.input(k));
    concat_bytes(in, ctx.output(0), axis_norm_, element_size(ctx, ctx.output(0)), true);
  }

 private:
  int axis_ = 0;
  int axis_norm_ = 0;
};

// UNPACK, SPLIT and SPLIT_V: cut the input along an axis into the outputs.
class Split final : public Kernel {
 public:
  enum class Kind { kUnpack, kSplit, kSplitV };
  Split(const OpContext& ctx, Kind kind) : kind_(kind) {
    if (const auto* o = ctx.options<fb::UnpackOptions>()) axis_ = o->axis();
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = data(ctx);
    if (kind_ != Kind::kUnpack) {
      const Tensor& a = ctx.input(kind_ == Kind::kSplit ? 0 : 2);
      DF_LITE_OP_CHECK(ctx, a.is_constant(), "needs a constant axis");
      axis_ = int_values(ctx, a, "axis").at(0);
    }
    axis_norm_ = normalize_axis(ctx, axis_, x.rank());
    const int n = ctx.num_outputs();
    const int len = x.dim(axis_norm_);
    sizes_.assign(static_cast<size_t>(n), 0);
    if (kind_ == Kind::kSplitV) {
      DF_LITE_OP_CHECK(ctx, ctx.input(1).is_constant(), "needs constant split sizes");
      auto s = int_values(ctx, ctx.input(1), "size_splits");
      DF_LITE_OP_CHECK(ctx, static_cast<int>(s.size()) == n, "has ", s.size(), " sizes for ", n, " outputs");
      int known = 0, unknown = -1;
      for (int i = 0; i < n; ++i) {
        if (s[static_cast<size_t>(i)] == -1) unknown = i;
        else known += s[static_cast<size_t>(i)];
      }
      if (unknown >= 0) s[static_cast<size_t>(unknown)] = len - known;
      sizes_ = s;
    } else {
      DF_LITE_OP_CHECK(ctx, len % n == 0, "cannot cut dimension ", axis_norm_, " of ", shape_string(x.shape),
                       " into ", n, " equal parts");
      sizes_.assign(static_cast<size_t>(n), len / n);
    }
    DF_LITE_OP_CHECK(ctx, std::accumulate(sizes_.begin(), sizes_.end(), 0) == len, "sizes ", shape_string(sizes_),
                     " do not add up to ", len);
    for (int i = 0; i < n; ++i) {
      std::vector<int> shape = x.shape;
      if (kind_ == Kind::kUnpack) shape.erase(shape.begin() + axis_norm_);
      else shape[static_cast<size_t>(axis_norm_)] = sizes_[static_cast<size_t>(i)];
      ctx.resize_output(i, shape);
    }
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = data(ctx);
    const size_t es = element_size(ctx, x);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis_norm_; ++i) outer *= x.dim(i);
    for (int i = axis_norm_ + 1; i < x.rank(); ++i) inner *= x.dim(i);
    const size_t row = static_cast<size_t>(x.dim(axis_norm_) * inner) * es;
    size_t offset = 0;
    for (int k = 0; k < ctx.num_outputs(); ++k) {
      const size_t chunk = static_cast<size_t>(sizes_[static_cast<size_t>(k)] * inner) * es;
      std::byte* dst = ctx.output(k).data_ptr;
      for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + static_cast<size_t>(o) * chunk, x.data_ptr + static_cast<size_t>(o) * row + offset, chunk);
      offset += chunk;
    }
  }

 private:
  const Tensor& data(const OpContext& ctx) const { return ctx.input(kind_ == Kind::kSplit ? 1 : 0); }
  Kind kind_;
  int axis_ = 0;
  int axis_norm_ = 0;
  std::vector<int> sizes_;
};

// TILE and BROADCAST_TO: out[i] = in[i mod in_dim] per dimension.
class Tile final : public Kernel {
 public:
  Tile(const OpContext&, bool broadcast) : broadcast_(broadcast) {}
  void prepare(OpContext& ctx) override {
    if (!ctx.input(1).is_constant()) {
      ctx.mark_dynamic(0);
      return;
    }
    ctx.resize_output(0, target(ctx));
  }
  void eval(OpContext& ctx) override {
    if (!ctx.input(1).is_constant()) ctx.resize_output(0, target(ctx));
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const size_t es = element_size(ctx, x);
    const int rank = y.rank();
    std::vector<int> in(static_cast<size_t>(rank), 1);
    for (int i = 0; i < x.rank(); ++i) in[static_cast<size_t>(rank - x.rank() + i)] = x.dim(i);
    for (int64_t i = 0, n = y.num_elements(); i < n; ++i) {
      int64_t rest = i, src = 0, stride = 1;
      for (int d = rank - 1; d >= 0; --d) {
        const int64_t k = rest % y.dim(d);
        rest /= y.dim(d);
        src += (k % in[static_cast<size_t>(d)]) * stride;
        stride *= in[static_cast<size_t>(d)];
      }
      std::memcpy(y.data_ptr + static_cast<size_t>(i) * es, x.data_ptr + static_cast<size_t>(src) * es, es);
    }
  }

 private:
  std::vector<int> target(const OpContext& ctx) const {
    const Tensor& x = ctx.input(0);
    const auto v = int_values(ctx, ctx.input(1), broadcast_ ? "shape" : "multiples");
    if (!broadcast_) {
      DF_LITE_OP_CHECK(ctx, static_cast<int>(v.size()) == x.rank(), "has ", v.size(), " multiples for ",
                       shape_string(x.shape));
      std::vector<int> shape = x.shape;
      for (size_t i = 0; i < shape.size(); ++i) shape[i] *= v[i];
      return shape;
    }
    DF_LITE_OP_CHECK(ctx, static_cast<int>(v.size()) >= x.rank(), "cannot broadcast ", shape_string(x.shape), " to ",
                     shape_string(v));
    for (int i = 0; i < x.rank(); ++i) {
      const int d = x.dim(i), t = v[v.size() - static_cast<size_t>(x.rank()) + static_cast<size_t>(i)];
      DF_LITE_OP_CHECK(ctx, d == t || d == 1, "cannot broadcast ", shape_string(x.shape), " to ", shape_string(v));
    }
    return v;
  }
  bool broadcast_;
};

// FILL(dims, value) and ZEROS_LIKE(x).
class Fill final : public Kernel {
 public:
  Fill(const OpContext&, bool zeros_like) : zeros_like_(zeros_like) {}
  void prepare(OpContext& ctx) override {
    if (zeros_like_) {
      ctx.resize_output(0, ctx.input(0).shape);
    } else if (ctx.input(0).is_constant()) {
      ctx.resize_output(0, int_values(ctx, ctx.input(0), "dims"));
    } else {
      ctx.mark_dynamic(0);
    }
  }
  void eval(OpContext& ctx) override {
    Tensor& y = ctx.output(0);
    if (zeros_like_) {
      std::memset(y.data_ptr, 0, y.bytes);
      return;
    }
    if (!ctx.input(0).is_constant()) ctx.resize_output(0, int_values(ctx, ctx.input(0), "dims"));
    const Tensor& v = ctx.input(1);
    const size_t es = element_size(ctx, v);
    for (int64_t i = 0, n = y.num_elements(); i < n; ++i) std::memcpy(y.data_ptr + static_cast<size_t>(i) * es, v.data_ptr, es);
  }

 private:
  bool zeros_like_;
};

}  // namespace

void register_shape_kernels(OpResolver& r) {
  using B = fb::BuiltinOperator;
  r.add_builtin(B::RESHAPE, make_factory<Reshape>(), 1, 1);
  r.add_builtin(B::SQUEEZE, make_factory<Squeeze>(), 1, 2);
  r.add_builtin(B::EXPAND_DIMS, make_factory<ExpandDims>(), 1, 2);
  r.add_builtin(B::SHAPE, make_factory<Shape>(), 1, 1);
  r.add_builtin(B::CONCATENATION, make_factory<Concatenation>(), 1, 4);
  r.add_builtin(B::PACK, make_factory<Pack>(), 1, 4);
  auto split = [](Split::Kind k) {
    return KernelFactory([k](const OpContext& ctx) { return std::unique_ptr<Kernel>(new Split(ctx, k)); });
  };
  r.add_builtin(B::UNPACK, split(Split::Kind::kUnpack), 1, 4);
  r.add_builtin(B::SPLIT, split(Split::Kind::kSplit), 1, 4);
  r.add_builtin(B::SPLIT_V, split(Split::Kind::kSplitV), 1, 2);
  r.add_builtin(B::TILE, [](const OpContext& ctx) { return std::unique_ptr<Kernel>(new Tile(ctx, false)); }, 1, 3);
  r.add_builtin(B::BROADCAST_TO, [](const OpContext& ctx) { return std::unique_ptr<Kernel>(new Tile(ctx, true)); }, 1, 3);
  r.add_builtin(B::FILL, [](const OpContext& ctx) { return std::unique_ptr<Kernel>(new Fill(ctx, false)); }, 1, 4);
  r.add_builtin(B::ZEROS_LIKE, [](const OpContext& ctx) { return std::unique_ptr<Kernel>(new Fill(ctx, true)); }, 1, 1);
  register_slicing_kernels(r);
}

}  // namespace deepflow::lite
