// SPDX-License-Identifier: Apache-2.0
// Elementwise kernels: broadcasting binary ops (ADD, SUB, MUL, DIV, MAXIMUM, ...,
// comparisons, logical ops), unary math and activations, SELECT, CAST. Float32 with fused
// activations; int32 / int64 / bool where TFLite has them. Shape contract: binary outputs
// have the NumPy broadcast of the input shapes; unary outputs the input's shape.
#include <cmath>
#include <cstring>
#include <limits>

#include "deepflow/lite/kernels/kernel_util.h"

namespace deepflow::lite {

namespace {

constexpr int64_t kGrain = 1 << 14;  // elements per task: below this, threads cost more than they save

std::vector<int> broadcast_shape(const OpContext& ctx, const std::vector<int>& a, const std::vector<int>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    DF_LITE_OP_CHECK(ctx, da == db || da == 1 || db == 1, "cannot broadcast ", shape_string(a), " with ",
                     shape_string(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Element strides of `in` seen at the output's rank (0 along broadcast dimensions).
std::vector<int64_t> broadcast_strides(const std::vector<int>& in, const std::vector<int>& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t s = 1;
  for (size_t k = in.size(); k-- > 0;) {
    const size_t o = k + (out.size() - in.size());
    strides[o] = in[k] == 1 ? 0 : s;
    s *= in[k];
  }
  return strides;
}

// Calls f(out_offset, a_offset, b_offset, a_step, b_step, count) for each run along the
// last output dimension, in parallel over runs.
template <class F>
void for_each_run(ThreadPool& pool, const std::vector<int>& a, const std::vector<int>& b,
                  const std::vector<int>& out, F f) {
  const int64_t total = num_elements(out);
  if (total == 0) return;
  if (a == b) {
    pool.parallel_for(total, kGrain, [&](int64_t lo, int64_t hi) { f(lo, lo, lo, 1, 1, hi - lo); });
    return;
  }
  const auto sa = broadcast_strides(a, out);
  const auto sb = broadcast_strides(b, out);
  const int rank = static_cast<int>(out.size());
  const int64_t inner = rank ? out[static_cast<size_t>(rank - 1)] : 1;
  const int64_t rows = total / inner;
  const int64_t step_a = rank ? sa[static_cast<size_t>(rank - 1)] : 0;
  const int64_t step_b = rank ? sb[static_cast<size_t>(rank - 1)] : 0;
  pool.parallel_for(rows, std::max<int64_t>(1, kGrain / inner), [&](int64_t lo, int64_t hi) {
    // The first row's coordinates by division, the next ones by an odometer step (short
    // rows, a per-channel operand, would otherwise spend most of their time dividing).
    std::vector<int64_t> idx(static_cast<size_t>(std::max(rank - 1, 0)), 0);
    int64_t rest = lo, oa = 0, ob = 0;
    for (int d = rank - 2; d >= 0; --d) {
      idx[static_cast<size_t>(d)] = rest % out[static_cast<size_t>(d)];
      rest /= out[static_cast<size_t>(d)];
      oa += idx[static_cast<size_t>(d)] * sa[static_cast<size_t>(d)];
      ob += idx[static_cast<size_t>(d)] * sb[static_cast<size_t>(d)];
    }
    for (int64_t r = lo; r < hi; ++r) {
      f(r * inner, oa, ob, step_a, step_b, inner);
      for (int d = rank - 2; d >= 0; --d) {
        const auto u = static_cast<size_t>(d);
        oa += sa[u];
        ob += sb[u];
        if (++idx[u] < out[u]) break;
        oa -= sa[u] * out[u];
        ob -= sb[u] * out[u];
        idx[u] = 0;
      }
    }
  });
}

enum class BinOp { kAdd, kSub, kMul, kDiv, kMax, kMin, kSquaredDiff, kPow, kFloorDiv, kFloorMod,
                   kLess, kLessEqual, kGreater, kGreaterEqual, kEqual, kNotEqual, kAnd, kOr, kPrelu };

bool is_comparison(BinOp op) { return op >= BinOp::kLess && op <= BinOp::kOr; }

template <class T>
inline T wrap(uint64_t v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  else return static_cast<T>(v);
}

template <class T>
inline T binary(BinOp op, T x, T y) {
  switch (op) {
    // Integers wrap (two's complement, as LiteRT's kernels do in practice) instead of
    // overflowing, and divide by zero to zero.
    case BinOp::kAdd: if constexpr (std::is_integral_v<T>) return wrap<T>(uint64_t(x) + uint64_t(y)); else return x + y;
    case BinOp::kSub: if constexpr (std::is_integral_v<T>) return wrap<T>(uint64_t(x) - uint64_t(y)); else return x - y;
    case BinOp::kMul: if constexpr (std::is_integral_v<T>) return wrap<T>(uint64_t(x) * uint64_t(y)); else return x * y;
    case BinOp::kDiv:
      if constexpr (std::is_integral_v<T>) {
        if (y == 0 || (std::is_signed_v<T> && y == T(-1) && x == std::numeric_limits<T>::min())) return T(0);
      }
      return x / y;
    case BinOp::kMax: return x > y ? x : y;
    case BinOp::kMin: return x < y ? x : y;
    case BinOp::kSquaredDiff:
      if constexpr (std::is_integral_v<T>) {
        const uint64_t d = uint64_t(x) - uint64_t(y);
        return wrap<T>(d * d);
      } else {
        return (x - y) * (x - y);
      }
    case BinOp::kPow:
      return static_cast<T>(std::pow(static_cast<double>(x), static_cast<double>(y)));
    case BinOp::kFloorDiv:
      if constexpr (std::is_floating_point_v<T>) return std::floor(x / y);
      else return y == 0 ? T(0) : static_cast<T>(std::floor(static_cast<double>(x) / static_cast<double>(y)));
    case BinOp::kFloorMod:
      if constexpr (std::is_floating_point_v<T>) {
        const T m = std::fmod(x, y);
        return (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
      } else {
        if (y == 0 || (std::is_signed_v<T> && y == T(-1))) return 0;
        const T m = x % y;
        return (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
      }
    case BinOp::kPrelu:
      if constexpr (std::is_integral_v<T>) return x >= 0 ? x : wrap<T>(uint64_t(x) * uint64_t(y));
      else return x >= 0 ? x : x * y;
    default: return T(0);
  }
}

template <class T>
inline bool compare(BinOp op, T x, T y) {
  switch (op) {
    case BinOp::kLess: return x < y;
    case BinOp::kLessEqual: return x <= y;
    case BinOp::kGreater: return x > y;
    case BinOp::kGreaterEqual: return x >= y;
    case BinOp::kEqual: return x == y;
    case BinOp::kNotEqual: return x != y;
    case BinOp::kAnd: return x && y;
    case BinOp::kOr: return x || y;
    default: return false;
  }
}

class Binary final : public Kernel {
 public:
  Binary(const OpContext& ctx, BinOp op) : op_(op) {
    using AT = fb::ActivationFunctionType;
    if (const auto* o = ctx.options<fb::AddOptions>()) act_ = o->fused_activation_function();
    if (const auto* o = ctx.options<fb::SubOptions>()) act_ = o->fused_activation_function();
    if (const auto* o = ctx.options<fb::MulOptions>()) act_ = o->fused_activation_function();
    if (const auto* o = ctx.options<fb::DivOptions>()) act_ = o->fused_activation_function();
    if (act_ != AT::NONE) check_activation(ctx, act_);
  }

  void prepare(OpContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    DF_LITE_OP_CHECK(ctx, a.type == b.type, "inputs are ", dtype_name(a.type), " and ", dtype_name(b.type));
    DF_LITE_OP_CHECK(ctx, !a.quantized() || a.type == DType::kFloat32 || a.type == DType::kInt32,
                     "quantized ", dtype_name(a.type), " inputs are not supported yet");
    const DType want = is_comparison(op_) ? DType::kBool : a.type;
    DF_LITE_OP_CHECK(ctx, ctx.output(0).type == want, "output is ", dtype_name(ctx.output(0).type), "; expected ",
                     dtype_name(want));
    if (op_ == BinOp::kAnd || op_ == BinOp::kOr) check_type(ctx, a, DType::kBool, "input");
    ctx.resize_output(0, broadcast_shape(ctx, a.shape, b.shape));
  }

  void eval(OpContext& ctx) override {
    const Tensor& a = ctx.input(0);
    switch (a.type) {
      case DType::kFloat32: run<float>(ctx); break;
      case DType::kInt32: run<int32_t>(ctx); break;
      case DType::kInt64: run<int64_t>(ctx); break;
      case DType::kBool:
        DF_LITE_OP_CHECK(ctx, is_comparison(op_), "does not take BOOL inputs");
        run<bool>(ctx);
        break;
      default: ctx.fail("does not take ", dtype_name(a.type), " inputs");
    }
  }

 private:
  template <class T>
  void run(OpContext& ctx) {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& out = ctx.output(0);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    const BinOp op = op_;
    if (is_comparison(op)) {
      bool* po = out.data<bool>();
      for_each_run(ctx.pool(), a.shape, b.shape, out.shape,
                   [&](int64_t o, int64_t ia, int64_t ib, int64_t sa, int64_t sb, int64_t n) {
                     for (int64_t i = 0; i < n; ++i) po[o + i] = compare<T>(op, pa[ia + i * sa], pb[ib + i * sb]);
                   });
      return;
    }
    if constexpr (!std::is_same_v<T, bool>) {
      T* po = out.data<T>();
      const auto act = act_;
      if (run_rows<T>(ctx, pa, pb, po)) return;
      for_each_run(ctx.pool(), a.shape, b.shape, out.shape,
                   [&](int64_t o, int64_t ia, int64_t ib, int64_t sa, int64_t sb, int64_t n) {
                     T* dst = po + o;
                     const T* x = pa + ia;
                     const T* y = pb + ib;
                     // The common cases as plain loops the compiler vectorizes.
                     if (std::is_integral_v<T>) {
                       for (int64_t i = 0; i < n; ++i) dst[i] = binary<T>(op, x[i * sa], y[i * sb]);
                     } else if (op == BinOp::kAdd && sa == 1 && sb == 1) {
                       for (int64_t i = 0; i < n; ++i) dst[i] = x[i] + y[i];
                     } else if (op == BinOp::kMul && sa == 1 && sb == 1) {
                       for (int64_t i = 0; i < n; ++i) dst[i] = x[i] * y[i];
                     } else if (op == BinOp::kMul && sa == 1 && sb == 0) {
                       const T s = y[0];
                       for (int64_t i = 0; i < n; ++i) dst[i] = x[i] * s;
                     } else {
                       for (int64_t i = 0; i < n; ++i) dst[i] = binary<T>(op, x[i * sa], y[i * sb]);
                     }
                     if constexpr (std::is_same_v<T, float>) apply_activation(act, dst, n);
                   });
    }
  }

  // ADD / SUB / MUL / DIV where one operand has the output's shape and the other repeats
  // along its rows (a per-channel constant: [C] against [N, H, W, C]): tight loops over rows,
  // the activation applied once. False when the shapes are not of this kind.
  template <class T>
  bool run_rows(OpContext& ctx, const T* pa, const T* pb, T* po) {
    if (op_ != BinOp::kAdd && op_ != BinOp::kSub && op_ != BinOp::kMul && op_ != BinOp::kDiv) return false;
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& out = ctx.output(0);
    const int64_t n = out.num_elements(), na = a.num_elements(), nb = b.num_elements();
    const bool a_full = na == n, b_full = nb == n;
    if (a_full == b_full || n == 0) return false;
    const Tensor& small = a_full ? b : a;
    if (!repeats_as_rows(small, out) || small.num_elements() < 8) return false;
    const int64_t cols = small.num_elements(), rows = n / cols;
    const BinOp op = op_;
    ctx.pool().parallel_for(rows, std::max<int64_t>(1, kGrain / cols), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const T* x = a_full ? pa + r * cols : pa;
        const T* y = b_full ? pb + r * cols : pb;
        T* dst = po + r * cols;
        if constexpr (std::is_integral_v<T>) {
          for (int64_t i = 0; i < cols; ++i) dst[i] = binary<T>(op, x[i], y[i]);  // wrapping, and / by 0 checked
        } else {
          switch (op) {
            case BinOp::kAdd: for (int64_t i = 0; i < cols; ++i) dst[i] = x[i] + y[i]; break;
            case BinOp::kSub: for (int64_t i = 0; i < cols; ++i) dst[i] = x[i] - y[i]; break;
            case BinOp::kMul: for (int64_t i = 0; i < cols; ++i) dst[i] = x[i] * y[i]; break;
            default: for (int64_t i = 0; i < cols; ++i) dst[i] = x[i] / y[i]; break;
          }
        }
      }
      if constexpr (std::is_same_v<T, float>) apply_activation(act_, po + lo * cols, (hi - lo) * cols);
    });
    return true;
  }

  BinOp op_;
  fb::ActivationFunctionType act_ = fb::ActivationFunctionType::NONE;
};

enum class UnOp { kRelu, kRelu6, kReluN1To1, kRelu0To1, kLogistic, kTanh, kExp, kLog, kSqrt, kRsqrt, kAbs, kNeg,
                  kSquare, kSin, kCos, kFloor, kCeil, kRound, kHardSwish, kLeakyRelu, kElu, kGelu, kSign };

class Unary final : public Kernel {
 public:
  Unary(const OpContext& ctx, UnOp op) : op_(op) {
    if (const auto* o = ctx.options<fb::LeakyReluOptions>()) alpha_ = o->alpha();
    if (const auto* o = ctx.options<fb::GeluOptions>()) approximate_ = o->approximate();
  }

  void prepare(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const bool int_ok = op_ == UnOp::kAbs || op_ == UnOp::kNeg || op_ == UnOp::kSquare || op_ == UnOp::kSign;
    DF_LITE_OP_CHECK(ctx, (x.type == DType::kFloat32 && !x.quantized()) || (int_ok && x.type == DType::kInt32),
                     "input '", x.name, "' is ", dtype_name(x.type), (x.quantized() ? " (quantized)" : ""),
                     ": only FLOAT32 is supported yet");
    check_type(ctx, ctx.output(0), x.type, "output");
    ctx.resize_output(0, x.shape);
  }

  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    if (x.type == DType::kInt32) {
      const int32_t* in = x.data<int32_t>();
      int32_t* out = y.data<int32_t>();
      for (int64_t i = 0, n = x.num_elements(); i < n; ++i) {
        const int32_t v = in[i];
        out[i] = op_ == UnOp::kAbs ? std::abs(v) : op_ == UnOp::kNeg ? -v : op_ == UnOp::kSquare ? v * v : (v > 0) - (v < 0);
      }
      return;
    }
    const float* in = x.data<float>();
    float* out = y.data<float>();
    const UnOp op = op_;
    const float alpha = alpha_;
    const bool approximate = approximate_;
    ctx.pool().parallel_for(x.num_elements(), kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) out[i] = apply(op, in[i], alpha, approximate);
    });
  }

 private:
  static float apply(UnOp op, float v, float alpha, bool approximate) {
    switch (op) {
      case UnOp::kRelu: return std::max(v, 0.f);
      case UnOp::kRelu6: return std::min(std::max(v, 0.f), 6.f);
      case UnOp::kReluN1To1: return std::min(std::max(v, -1.f), 1.f);
      case UnOp::kRelu0To1: return std::min(std::max(v, 0.f), 1.f);
      case UnOp::kLogistic: return 1.f / (1.f + std::exp(-v));
      case UnOp::kTanh: return std::tanh(v);
      case UnOp::kExp: return std::exp(v);
      case UnOp::kLog: return std::log(v);
      case UnOp::kSqrt: return std::sqrt(v);
      case UnOp::kRsqrt: return 1.f / std::sqrt(v);
      case UnOp::kAbs: return std::fabs(v);
      case UnOp::kNeg: return -v;
      case UnOp::kSquare: return v * v;
      case UnOp::kSin: return std::sin(v);
      case UnOp::kCos: return std::cos(v);
      case UnOp::kFloor: return std::floor(v);
      case UnOp::kCeil: return std::ceil(v);
      case UnOp::kRound: return std::nearbyint(v);  // TFLite rounds half to even
      case UnOp::kHardSwish: return v * std::min(std::max(v + 3.f, 0.f), 6.f) / 6.f;
      case UnOp::kLeakyRelu: return v >= 0 ? v : v * alpha;
      case UnOp::kElu: return v >= 0 ? v : std::expm1(v);
      case UnOp::kGelu:
        if (approximate) return 0.5f * v * (1.f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
        return 0.5f * v * (1.f + std::erf(v * 0.70710678118f));
      case UnOp::kSign: return static_cast<float>((v > 0) - (v < 0));
    }
    return v;
  }

  UnOp op_;
  float alpha_ = 0.2f;
  bool approximate_ = false;
};

// LOGICAL_NOT: bool -> bool.
class LogicalNot final : public Kernel {
 public:
  explicit LogicalNot(const OpContext&) {}
  void prepare(OpContext& ctx) override {
    check_type(ctx, ctx.input(0), DType::kBool, "input");
    ctx.resize_output(0, ctx.input(0).shape);
  }
  void eval(OpContext& ctx) override {
    const bool* in = ctx.input(0).data<bool>();
    bool* out = ctx.output(0).data<bool>();
    for (int64_t i = 0, n = ctx.input(0).num_elements(); i < n; ++i) out[i] = !in[i];
  }
};

// SELECT / SELECT_V2: out = cond ? x : y, broadcasting (V2) or with cond of x's shape or rank 1.
class Select final : public Kernel {
 public:
  explicit Select(const OpContext&) {}
  void prepare(OpContext& ctx) override {
    const Tensor& c = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    check_type(ctx, c, DType::kBool, "condition");
    DF_LITE_OP_CHECK(ctx, x.type == y.type && dtype_size(x.type) > 0, "x is ", dtype_name(x.type), ", y is ",
                     dtype_name(y.type));
    ctx.resize_output(0, broadcast_shape(ctx, broadcast_shape(ctx, c.shape, x.shape), y.shape));
  }
  void eval(OpContext& ctx) override {
    const Tensor& c = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& y = ctx.input(2);
    Tensor& out = ctx.output(0);
    const size_t es = dtype_size(x.type);
    const auto sc = broadcast_strides(c.shape, out.shape);
    const auto sx = broadcast_strides(x.shape, out.shape);
    const auto sy = broadcast_strides(y.shape, out.shape);
    const int rank = out.rank();
    for (int64_t i = 0, n = out.num_elements(); i < n; ++i) {
      int64_t rest = i, oc = 0, ox = 0, oy = 0;
      for (int d = rank - 1; d >= 0; --d) {
        const int64_t k = rest % out.shape[static_cast<size_t>(d)];
        rest /= out.shape[static_cast<size_t>(d)];
        oc += k * sc[static_cast<size_t>(d)];
        ox += k * sx[static_cast<size_t>(d)];
        oy += k * sy[static_cast<size_t>(d)];
      }
      const std::byte* src = c.data<bool>()[oc] ? x.data_ptr + ox * static_cast<int64_t>(es) : y.data_ptr + oy * static_cast<int64_t>(es);
      std::memcpy(out.data_ptr + i * static_cast<int64_t>(es), src, es);
    }
  }
};

template <class To, class From>
void cast_values(const From* in, To* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<To>(in[i]);
}

// CAST between float32, int32, int64, bool, uint8, int8.
class Cast final : public Kernel {
 public:
  explicit Cast(const OpContext&) {}
  void prepare(OpContext& ctx) override { ctx.resize_output(0, ctx.input(0).shape); }
  void eval(OpContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t n = x.num_elements();
    auto from = [&](auto* out) {
      using To = std::remove_pointer_t<decltype(out)>;
      switch (x.type) {
        case DType::kFloat32: cast_values(x.data<float>(), out, n); break;
        case DType::kInt32: cast_values(x.data<int32_t>(), out, n); break;
        case DType::kInt64: cast_values(x.data<int64_t>(), out, n); break;
        case DType::kBool: cast_values(x.data<bool>(), out, n); break;
        case DType::kUInt8: cast_values(x.data<uint8_t>(), out, n); break;
        case DType::kInt8: cast_values(x.data<int8_t>(), out, n); break;
        default: ctx.fail("cannot cast from ", dtype_name(x.type));
      }
      (void)sizeof(To);
    };
    switch (y.type) {
      case DType::kFloat32: from(y.data<float>()); break;
      case DType::kInt32: from(y.data<int32_t>()); break;
      case DType::kInt64: from(y.data<int64_t>()); break;
      case DType::kBool: {
        // Not through static_cast<bool>(float) on each value's bits: nonzero is true.
        std::vector<float> tmp(static_cast<size_t>(n));
        from(tmp.data());
        for (int64_t i = 0; i < n; ++i) y.data<bool>()[i] = tmp[static_cast<size_t>(i)] != 0.f;
        break;
      }
      case DType::kUInt8: from(y.data<uint8_t>()); break;
      case DType::kInt8: from(y.data<int8_t>()); break;
      default: ctx.fail("cannot cast to ", dtype_name(y.type));
    }
  }
};

template <BinOp op>
KernelFactory binary_factory() {
  return [](const OpContext& ctx) { return std::unique_ptr<Kernel>(new Binary(ctx, op)); };
}

template <UnOp op>
KernelFactory unary_factory() {
  return [](const OpContext& ctx) { return std::unique_ptr<Kernel>(new Unary(ctx, op)); };
}

}  // namespace

void register_elementwise_kernels(OpResolver& r) {
  using B = fb::BuiltinOperator;
  r.add_builtin(B::ADD, binary_factory<BinOp::kAdd>(), 1, 5);
  r.add_builtin(B::SUB, binary_factory<BinOp::kSub>(), 1, 5);
  r.add_builtin(B::MUL, binary_factory<BinOp::kMul>(), 1, 7);
  r.add_builtin(B::DIV, binary_factory<BinOp::kDiv>(), 1, 2);
  r.add_builtin(B::MAXIMUM, binary_factory<BinOp::kMax>(), 1, 4);
  r.add_builtin(B::MINIMUM, binary_factory<BinOp::kMin>(), 1, 4);
  r.add_builtin(B::SQUARED_DIFFERENCE, binary_factory<BinOp::kSquaredDiff>(), 1, 2);
  r.add_builtin(B::POW, binary_factory<BinOp::kPow>(), 1, 1);
  r.add_builtin(B::FLOOR_DIV, binary_factory<BinOp::kFloorDiv>(), 1, 3);
  r.add_builtin(B::FLOOR_MOD, binary_factory<BinOp::kFloorMod>(), 1, 2);
  r.add_builtin(B::PRELU, binary_factory<BinOp::kPrelu>(), 1, 1);
  r.add_builtin(B::LESS, binary_factory<BinOp::kLess>(), 1, 3);
  r.add_builtin(B::LESS_EQUAL, binary_factory<BinOp::kLessEqual>(), 1, 3);
  r.add_builtin(B::GREATER, binary_factory<BinOp::kGreater>(), 1, 3);
  r.add_builtin(B::GREATER_EQUAL, binary_factory<BinOp::kGreaterEqual>(), 1, 3);
  r.add_builtin(B::EQUAL, binary_factory<BinOp::kEqual>(), 1, 4);
  r.add_builtin(B::NOT_EQUAL, binary_factory<BinOp::kNotEqual>(), 1, 3);
  r.add_builtin(B::LOGICAL_AND, binary_factory<BinOp::kAnd>(), 1, 1);
  r.add_builtin(B::LOGICAL_OR, binary_factory<BinOp::kOr>(), 1, 1);
  r.add_builtin(B::RELU, unary_factory<UnOp::kRelu>(), 1, 3);
  r.add_builtin(B::RELU6, unary_factory<UnOp::kRelu6>(), 1, 3);
  r.add_builtin(B::RELU_N1_TO_1, unary_factory<UnOp::kReluN1To1>(), 1, 1);
  r.add_builtin(B::RELU_0_TO_1, unary_factory<UnOp::kRelu0To1>(), 1, 1);
  r.add_builtin(B::LOGISTIC, unary_factory<UnOp::kLogistic>(), 1, 3);
  r.add_builtin(B::TANH, unary_factory<UnOp::kTanh>(), 1, 3);
  r.add_builtin(B::EXP, unary_factory<UnOp::kExp>(), 1, 2);
  r.add_builtin(B::LOG, unary_factory<UnOp::kLog>(), 1, 2);
  r.add_builtin(B::SQRT, unary_factory<UnOp::kSqrt>(), 1, 2);
  r.add_builtin(B::RSQRT, unary_factory<UnOp::kRsqrt>(), 1, 3);
  r.add_builtin(B::ABS, unary_factory<UnOp::kAbs>(), 1, 5);
  r.add_builtin(B::NEG, unary_factory<UnOp::kNeg>(), 1, 2);
  r.add_builtin(B::SQUARE, unary_factory<UnOp::kSquare>(), 1, 1);
  r.add_builtin(B::SIN, unary_factory<UnOp::kSin>(), 1, 1);
  r.add_builtin(B::COS, unary_factory<UnOp::kCos>(), 1, 1);
  r.add_builtin(B::FLOOR, unary_factory<UnOp::kFloor>(), 1, 2);
  r.add_builtin(B::CEIL, unary_factory<UnOp::kCeil>(), 1, 1);
  r.add_builtin(B::ROUND, unary_factory<UnOp::kRound>(), 1, 1);
  r.add_builtin(B::HARD_SWISH, unary_factory<UnOp::kHardSwish>(), 1, 1);
  r.add_builtin(B::LEAKY_RELU, unary_factory<UnOp::kLeakyRelu>(), 1, 2);
  r.add_builtin(B::ELU, unary_factory<UnOp::kElu>(), 1, 1);
  r.add_builtin(B::GELU, unary_factory<UnOp::kGelu>(), 1, 2);
  r.add_builtin(B::SIGN, unary_factory<UnOp::kSign>(), 1, 2);
  r.add_builtin(B::LOGICAL_NOT, make_factory<LogicalNot>(), 1, 1);
  r.add_builtin(B::SELECT, make_factory<Select>(), 1, 4);
  r.add_builtin(B::SELECT_V2, make_factory<Select>(), 1, 2);
  r.add_builtin(B::CAST, make_factory<Cast>(), 1, 6);
}

}  // namespace deepflow::lite
