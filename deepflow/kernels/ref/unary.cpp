// SPDX-License-Identifier: Apache-2.0
// Reference kernels of the unary primitives: one element at a time, in the
// compute type (float for the 16-bit types), with the textbook formula.
#include <cmath>
#include <type_traits>

#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

// Integer negation and products wrap around (two's complement, as TensorFlow's
// kernels do in practice) instead of overflowing, which C++ leaves undefined.
template <class T> T wrap_neg(T x) {
  using U = std::make_unsigned_t<T>;
  return T(U(U(0) - U(x)));
}
template <class T> bool is_negative(T x) {
  if constexpr (std::is_unsigned_v<T>) return false;
  else return x < 0;
}
template <class T> T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
  return T(U(W(U(a)) * W(U(b))));
}

struct Neg {
  template <class T> static T f(T x) {
    if constexpr (std::is_integral_v<T>) return wrap_neg(x);
    else return -x;
  }
};
struct Abs {
  template <class T> static T f(T x) {
    if constexpr (std::is_integral_v<T>) return is_negative(x) ? wrap_neg(x) : x;
    else return std::fabs(x);
  }
};
// NaN (and -0) pass through.
struct Sign { template <class T> static T f(T x) { return x > 0 ? T(1) : is_negative(x) ? T(-1) : x; } };
struct Exp { template <class T> static T f(T x) { return std::exp(x); } };
struct Log { template <class T> static T f(T x) { return std::log(x); } };
struct Log1p { template <class T> static T f(T x) { return std::log1p(x); } };
struct Expm1 { template <class T> static T f(T x) { return std::expm1(x); } };
struct Sqrt { template <class T> static T f(T x) { return std::sqrt(x); } };
struct Rsqrt { template <class T> static T f(T x) { return T(1) / std::sqrt(x); } };
struct Square {
  template <class T> static T f(T x) {
    if constexpr (std::is_integral_v<T>) return wrap_mul(x, x);
    else return x * x;
  }
};
struct Sin { template <class T> static T f(T x) { return std::sin(x); } };
struct Cos { template <class T> static T f(T x) { return std::cos(x); } };
struct Tanh { template <class T> static T f(T x) { return std::tanh(x); } };
// Never overflows, and keeps relative precision for x << 0.
struct Sigmoid {
  template <class T> static T f(T x) {
    if (x >= 0) return T(1) / (T(1) + std::exp(-x));
    T e = std::exp(x);
    return e / (T(1) + e);
  }
};
// max(x, 0) in Eigen's order: NaN and -0 pass through.
struct Relu { template <class T> static T f(T x) { return is_negative(x) ? T(0) : x; } };
struct Erf { template <class T> static T f(T x) { return std::erf(x); } };
struct Floor { template <class T> static T f(T x) { return std::floor(x); } };
struct Ceil { template <class T> static T f(T x) { return std::ceil(x); } };
// nearbyint rounds half to even in the default rounding mode (tf.round).
struct Round {
  template <class T> static T f(T x) {
    if constexpr (std::is_integral_v<T>) return x;
    else return std::nearbyint(x);
  }
};

enum class Kinds { Float, Numeric };

template <class Op, Kinds K>
void ref_unary(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  auto body = [&]<class T>() {
    using CT = compute_t<T>;
    const T* px = x.data<T>();
    T* po = o.data<T>();
    for (int64_t i = 0, n = o.size(); i < n; ++i) po[i] = T(Op::f(CT(px[i])));
  };
  if constexpr (K == Kinds::Float) {
    DF_DISPATCH_FLOAT(x.dtype(), c.name(), [&] { body.template operator()<scalar_t>(); });
  } else {
    DF_DISPATCH_NUMERIC(x.dtype(), c.name(), [&] { body.template operator()<scalar_t>(); });
  }
}

void ref_logical_not(const OpCall& c, TensorList& out) {
  const bool* px = c.in(0).data<bool>();
  bool* po = out[0].data<bool>();
  for (int64_t i = 0, n = out[0].size(); i < n; ++i) po[i] = !px[i];
}

// --- relu_grad --- g, y of one shape -> g * (y > 0): TensorFlow's product, so g = inf or
// NaN where y <= 0 gives NaN, and y = NaN gives g * 0.
void ref_relu_grad(const OpCall& c, TensorList& out) {
  DF_DISPATCH_NUMERIC(c.in(0).dtype(), c.name(), [&] {
    using CT = compute_t<scalar_t>;
    const scalar_t *g = c.in(0).data<scalar_t>(), *y = c.in(1).data<scalar_t>();
    scalar_t* o = out[0].data<scalar_t>();
    for (int64_t i = 0, n = out[0].size(); i < n; ++i) o[i] = scalar_t(CT(g[i]) * CT(CT(y[i]) > CT(0) ? 1 : 0));
  });
}

}  // namespace

DF_REGISTER_KERNEL(Neg, {.run = ref_unary<Neg, Kinds::Numeric>});
DF_REGISTER_KERNEL(Abs, {.run = ref_unary<Abs, Kinds::Numeric>});
DF_REGISTER_KERNEL(Sign, {.run = ref_unary<Sign, Kinds::Numeric>});
DF_REGISTER_KERNEL(Exp, {.run = ref_unary<Exp, Kinds::Float>});
DF_REGISTER_KERNEL(Log, {.run = ref_unary<Log, Kinds::Float>});
DF_REGISTER_KERNEL(Log1p, {.run = ref_unary<Log1p, Kinds::Float>});
DF_REGISTER_KERNEL(Expm1, {.run = ref_unary<Expm1, Kinds::Float>});
DF_REGISTER_KERNEL(Sqrt, {.run = ref_unary<Sqrt, Kinds::Float>});
DF_REGISTER_KERNEL(Rsqrt, {.run = ref_unary<Rsqrt, Kinds::Float>});
DF_REGISTER_KERNEL(Square, {.run = ref_unary<Square, Kinds::Numeric>});
DF_REGISTER_KERNEL(Sin, {.run = ref_unary<Sin, Kinds::Float>});
DF_REGISTER_KERNEL(Cos, {.run = ref_unary<Cos, Kinds::Float>});
DF_REGISTER_KERNEL(Tanh, {.run = ref_unary<Tanh, Kinds::Float>});
DF_REGISTER_KERNEL(Sigmoid, {.run = ref_unary<Sigmoid, Kinds::Float>});
DF_REGISTER_KERNEL(Relu, {.run = ref_unary<Relu, Kinds::Numeric>});
DF_REGISTER_KERNEL(ReluGrad, {.run = ref_relu_grad});
DF_REGISTER_KERNEL(Erf, {.run = ref_unary<Erf, Kinds::Float>});
DF_REGISTER_KERNEL(Floor, {.run = ref_unary<Floor, Kinds::Float>});
DF_REGISTER_KERNEL(Ceil, {.run = ref_unary<Ceil, Kinds::Float>});
DF_REGISTER_KERNEL(Round, {.run = ref_unary<Round, Kinds::Numeric>});
DF_REGISTER_KERNEL(LogicalNot, {.run = ref_logical_not});

}  // namespace deepflow
