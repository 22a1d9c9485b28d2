// SPDX-License-Identifier: Apache-2.0
// Reductions and normalizations over axes: MEAN, SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD,
// REDUCE_ANY, ARG_MAX, ARG_MIN (float32 / int32 inputs), and SOFTMAX, LOG_SOFTMAX,
// L2_NORMALIZATION over the last axis (float32). Output shapes are TF's (keep_dims keeps
// the reduced axes as 1).
#include <cmath>
#include <cstring>
#include <limits>

#include "deepflow/lite/kernels/kernel_util.h"

namespace deepflow::lite {

namespace {

enum class Red { kMean, kSum, kMax, kMin, kProd, kAny };

class Reduce final : public Kernel {
 public:
  Reduce(const OpContext& ctx, Red op) : op_(op) {
    if (const auto* o = ctx.options<fb::ReducerOptions>()) keep_dims_ = o->keep_dims();
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    DF_LITE_OP_CHECK(ctx, ctx.input(1).is_constant(), "needs constant axes");
    DF_LITE_OP_CHECK(ctx, (x.type == DType::kFloat32 && !x.quantized()) || x.type == DType::kInt32 ||
                              (op_ == Red::kAny && x.type == DType::kBool),
                     "input '", x.name, "' is ", dtype_name(x.type), (x.quantized() ? " (quantized)" : ""),
                     ": not supported yet");
    reduced_.assign(static_cast<size_t>(x.rank()), 0);
    for (int a : int_values(ctx, ctx.input(1), "axes")) {
      DF_LITE_OP_CHECK(ctx, a >= -x.rank() && a < x.rank(), "axis ", a, " for ", shape_string(x.shape));
      reduced_[static_cast<size_t>(a < 0 ? a + x.rank() : a)] = 1;
    }
    std::vector<int> shape;
    for (int d = 0; d < x.rank(); ++d) {
      if (!reduced_[static_cast<size_t>(d)]) shape.push_back(x.dim(d));
      else if (keep_dims_) shape.push_back(1);
    }
    ctx.resize_output(0, shape);
  }
  void eval(OpContext& ctx) override {
    switch (ctx.input(0).type) {
      case DType::kFloat32: run<float, double>(ctx); break;
      case DType::kInt32: run<int32_t, int64_t>(ctx); break;
      default: run<bool, int64_t>(ctx); break;
    }
  }

 private:
  template <class T, class Acc>
  void run(OpContext& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int rank = x.rank();
    // Output index of each input element: walk the input once, accumulating into its slot.
    std::vector<int64_t> out_stride(static_cast<size_t>(rank), 0);
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; --d) {
      if (reduced_[static_cast<size_t>(d)]) continue;
      out_stride[static_cast<size_t>(d)] = s;
      s *= x.dim(d);
    }
    const int64_t m = s;
    std::vector<Acc> acc(static_cast<size_t>(m), init<Acc>());
    const T* in = x.data<T>();
    const int64_t n = x.num_elements();
    // The innermost axis is contiguous: handle it as a run to keep the walk cheap.
    const int inner = rank ? x.dim(rank - 1) : 1;
    const bool inner_reduced = rank && reduced_[static_cast<size_t>(rank - 1)];
    std::vector<int> idx(static_cast<size_t>(rank), 0);
    for (int64_t base = 0; base < n; base += inner) {
      int64_t o = 0;
      for (int d = 0; d < rank - 1; ++d) o += idx[static_cast<size_t>(d)] * out_stride[static_cast<size_t>(d)];
      if (inner_reduced) {
        Acc a = acc[static_cast<size_t>(o)];
        for (int i = 0; i < inner; ++i) a = combine(a, static_cast<Acc>(in[base + i]));
        acc[static_cast<size_t>(o)] = a;
      } else {
        for (int i = 0; i < inner; ++i)
          acc[static_cast<size_t>(o + i)] = combine(acc[static_cast<size_t>(o + i)], static_cast<Acc>(in[base + i]));
      }
      for (int d = rank - 2; d >= 0; --d) {
        if (++idx[static_cast<size_t>(d)] < x.dim(d)) break;
        idx[static_cast<size_t>(d)] = 0;
      }
    }
    const int64_t count = m ? n / m : 0;
    T* out = y.data<T>();
    for (int64_t i = 0; i < m; ++i) {
      Acc v = acc[static_cast<size_t>(i)];
      if (op_ == Red::kMean && count) v = v / static_cast<Acc>(count);
      out[i] = static_cast<T>(v);
    }
  }
  template <class Acc>
  Acc init() const {
    switch (op_) {
      case Red::kMax: return std::numeric_limits<Acc>::lowest();
      case Red::kMin: return std::numeric_limits<Acc>::max();
      case Red::kProd: return Acc(1);
      default: return Acc(0);
    }
  }
  template <class Acc>
  Acc combine(Acc a, Acc b) const {
    switch (op_) {
      case Red::kMax: return a > b ? a : b;
      case Red::kMin: return a < b ? a : b;
      case Red::kProd: return a * b;
      case Red::kAny: return (a != 0 || b != 0) ? Acc(1) : Acc(0);
      default: return a + b;
    }
  }
  Red op_;
  bool keep_dims_ = false;
  std::vector<char> reduced_;
};

class ArgMinMax final : public Kernel {
 public:
  ArgMinMax(const OpContext&, bool max) : max_(max) {}
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    DF_LITE_OP_CHECK(ctx, ctx.input(1).is_constant(), "needs a constant axis");
    check_type(ctx, x, DType::kFloat32, "input");
    axis_ = int_values(ctx, ctx.input(1), "axis").at(0);
    if (axis_ < 0) axis_ += x.rank();
    DF_LITE_OP_CHECK(ctx, axis_ >= 0 && axis_ < x.rank(), "axis for ", shape_string(x.shape));
    std::vector<int> shape = x.shape;
    shape.erase(shape.begin() + axis_);
    ctx.resize_output(0, shape);
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis_; ++i) outer *= x.dim(i);
    for (int i = axis_ + 1; i < x.rank(); ++i) inner *= x.dim(i);
    const int len = x.dim(axis_);
    const float* in = x.data<float>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int best = 0;
        for (int k = 1; k < len; ++k) {
          const float v = in[(o * len + k) * inner + i], b = in[(o * len + best) * inner + i];
          if (max_ ? v > b : v < b) best = k;
        }
        if (y.type == DType::kInt64) y.data<int64_t>()[o * inner + i] = best;
        else y.data<int32_t>()[o * inner + i] = best;
      }
  }

 private:
  bool max_;
  int axis_ = 0;
};

enum class Norm { kSoftmax, kLogSoftmax, kL2 };

class LastAxisNorm final : public Kernel {
 public:
  LastAxisNorm(const OpContext& ctx, Norm kind) : kind_(kind) {
    if (const auto* o = ctx.options<fb::SoftmaxOptions>()) beta_ = o->beta();
  }
  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    DF_LITE_OP_CHECK(ctx, x.type == DType::kFloat32 && !x.quantized(), "input '", x.name, "' is ",
                     dtype_name(x.type), (x.quantized() ? " (quantized)" : ""), ": only FLOAT32 is supported yet");
    DF_LITE_OP_CHECK(ctx, x.rank() >= 1, "input is a scalar");
    ctx.resize_output(0, x.shape);
  }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const int64_t len = x.dim(-1);
    const int64_t rows = len ? x.num_elements() / len : 0;
    const float* in = x.data<float>();
    float* out = ctx.output(0).data<float>();
    ctx.pool().parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(len, 1)), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) row(in + r * len, out + r * len, len);
    });
  }

 private:
  void row(const float* x, float* y, int64_t n) const {
    if (kind_ == Norm::kL2) {
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
      const float inv = 1.f / static_cast<float>(std::sqrt(std::max(ss, 1e-12)));
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv;
      return;
    }
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
    float sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      y[i] = std::exp((x[i] - m) * beta_);
      sum += y[i];
    }
    if (kind_ == Norm::kSoftmax) {
      const float inv = 1.f / sum;
      for (int64_t i = 0; i < n; ++i) y[i] *= inv;
    } else {
      const float log_sum = std::log(sum);
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * beta_ - log_sum;
    }
  }
  Norm kind_;
  float beta_ = 1.f;
};

template <Red op>
KernelFactory reduce_factory() {
  return [](const OpContext& ctx) { return std::unique_ptr<Kernel>(new Reduce(ctx, op)); };
}
template <Norm kind>
KernelFactory norm_factory() {
  return [](const OpContext& ctx) { return std::unique_ptr<Kernel>(new LastAxisNorm(ctx, kind)); };
}

}  // namespace

void register_reduce_kernels(OpResolver& r) {
  using B = fb::BuiltinOperator;
  r.add_builtin(B::MEAN, reduce_factory<Red::kMean>(), 1, 3);
  r.add_builtin(B::SUM, reduce_factory<Red::kSum>(), 1, 2);
  r.add_builtin(B::REDUCE_MAX, reduce_factory<Red::kMax>(), 1, 3);
  r.add_builtin(B::REDUCE_MIN, reduce_factory<Red::kMin>(), 1, 3);
  r.add_builtin(B::REDUCE_PROD, reduce_factory<Red::kProd>(), 1, 2);
  r.add_builtin(B::REDUCE_ANY, reduce_factory<Red::kAny>(), 1, 1);
  r.add_builtin(B::ARG_MAX, [](const OpContext& c) { return std::unique_ptr<Kernel>(new ArgMinMax(c, true)); }, 1, 3);
  r.add_builtin(B::ARG_MIN, [](const OpContext& c) { return std::unique_ptr<Kernel>(new ArgMinMax(c, false)); }, 1, 3);
  r.add_builtin(B::SOFTMAX, norm_factory<Norm::kSoftmax>(), 1, 3);
  r.add_builtin(B::LOG_SOFTMAX, norm_factory<Norm::kLogSoftmax>(), 1, 2);
  r.add_builtin(B::L2_NORMALIZATION, norm_factory<Norm::kL2>(), 1, 2);
}

}  // namespace deepflow::lite
