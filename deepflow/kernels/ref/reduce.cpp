// SPDX-License-Identifier: Apache-2.0
// Reference kernels of the reductions, argmax / argmin, cumsum and top_k.
// Floats accumulate in double; integers wrap in their own type (computed in
// uint64, whose truncation gives the same bits without signed overflow).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#include "deepflow/ops/kernel.h"
#include "deepflow/kernels/ref/ref_util.h"

namespace deepflow {
namespace {

template <class T> inline constexpr bool kIsFloat = std::is_floating_point_v<compute_t<T>>;

// Sum / prod accumulators: double for floats, wrapping uint64 for integers.
template <class T> using wrap_acc_t = std::conditional_t<kIsFloat<T>, double, uint64_t>;
// Max / min accumulators: double for floats, int64 for integers (every int dtype fits).
template <class T> using order_acc_t = std::conditional_t<kIsFloat<T>, double, int64_t>;

struct SumOp {
  template <class T> using acc = wrap_acc_t<T>;
  template <class T> static acc<T> init() { return acc<T>(0); }
  template <class A> static A f(A a, A v) { return a + v; }
};
struct ProdOp {
  template <class T> using acc = wrap_acc_t<T>;
  template <class T> static acc<T> init() { return acc<T>(1); }
  template <class A> static A f(A a, A v) { return a * v; }
};
// NaN propagates: once the accumulator is NaN it stays NaN.
struct MaxOp {
  template <class T> using acc = order_acc_t<T>;
  template <class T> static acc<T> init() {
    if constexpr (kIsFloat<T>) return -std::numeric_limits<double>::infinity();
    else return int64_t(std::numeric_limits<T>::lowest());
  }
  template <class A> static A f(A a, A v) { return (v > a || v != v) ? v : a; }
};
struct MinOp {
  template <class T> using acc = order_acc_t<T>;
  template <class T> static acc<T> init() {
    if constexpr (kIsFloat<T>) return std::numeric_limits<double>::infinity();
    else return int64_t(std::numeric_limits<T>::max());
  }
  template <class A> static A f(A a, A v) { return (v < a || v != v) ? v : a; }
};

std::vector<bool> axes_mask(const OpCall& c, int rank) {
  const auto& axes = c.attr_ints("axes");
  std::vector<bool> m(size_t(rank), axes.empty());
  for (int64_t a : axes) m[size_t(a < 0 ? a + rank : a)] = true;
  return m;
}

// x [d0..dn] -> out: every input element is folded into the output element it maps to.
template <class Op>
void ref_reduce(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  Tensor& o = out[0];
  auto m = axes_mask(c, x.rank());
  Shape kept = x.shape();
  for (int i = 0; i < kept.rank(); ++i)
    if (m[size_t(i)]) kept[i] = 1;
  DF_DISPATCH_NUMERIC(x.dtype(), c.name(), [&] {
    using A = typename Op::template acc<scalar_t>;
    std::vector<A> acc(size_t(o.size()), Op::template init<scalar_t>());
    const scalar_t* px = x.data<scalar_t>();
    int64_t idx[kMaxRank];
    for (int64_t i = 0, n = x.size(); i < n; ++i) {
      ref::unravel(x.shape(), i, idx);
      for (int d = 0; d < x.rank(); ++d)
        if (m[size_t(d)]) idx[d] = 0;
      A& a = acc[size_t(ref::ravel(kept, idx))];
      a = Op::f(a, A(compute_t<scalar_t>(px[i])));
    }
    scalar_t* po = o.data<scalar_t>();
    for (int64_t j = 0; j < o.size(); ++j) po[j] = scalar_t(compute_t<scalar_t>(acc[size_t(j)]));
  });
}

// Splits x around `axis` into [outer, n, inner].
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
  AxisSplit(const Shape& s, int axis) {
    for (int i = 0; i < s.rank(); ++i) (i < axis ? outer : i == axis ? n : inner) *= s[i];
  }
};

int norm_axis(const OpCall& c) {
  int64_t a = c.attr_int("axis");
  return int(a < 0 ? a + c.in(0).rank() : a);
}

// The first index wins ties; NaN beats any number (numpy's rule).
template <bool kMax>
void ref_arg(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  AxisSplit s(x.shape(), norm_axis(c));
  Tensor& o = out[0];
  DF_DISPATCH_NUMERIC(x.dtype(), c.name(), [&] {
    const scalar_t* px = x.data<scalar_t>();
    for (int64_t p = 0; p < s.outer; ++p)
      for (int64_t q = 0; q < s.inner; ++q) {
        const scalar_t* row = px + p * s.n * s.inner + q;
        int64_t best = 0;
        compute_t<scalar_t> bv = row[0];
        for (int64_t i = 1; i < s.n; ++i) {
          compute_t<scalar_t> v = row[i * s.inner];
          if (bv != bv) break;
          if ((kMax ? v > bv : v < bv) || v != v) best = i, bv = v;
        }
        const int64_t j = p * s.inner + q;
        if (o.dtype() == DType::Int32) o.data<int32_t>()[j] = int32_t(best);
        else o.data<int64_t>()[j] = best;
      }
  });
}

void ref_cumsum(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  AxisSplit s(x.shape(), norm_axis(c));
  const bool exclusive = c.attr_bool("exclusive"), reverse = c.attr_bool("reverse");
  DF_DISPATCH_NUMERIC(x.dtype(), c.name(), [&] {
    using A = wrap_acc_t<scalar_t>;
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* po = out[0].data<scalar_t>();
    for (int64_t p = 0; p < s.outer; ++p)
      for (int64_t q = 0; q < s.inner; ++q) {
        A acc = 0;
        for (int64_t t = 0; t < s.n; ++t) {
          const int64_t i = reverse ? s.n - 1 - t : t;
          const int64_t off = (p * s.n + i) * s.inner + q;
          const A v = A(compute_t<scalar_t>(px[off]));
          if (!exclusive) acc += v;
          po[off] = scalar_t(compute_t<scalar_t>(acc));
          if (exclusive) acc += v;
        }
      }
  });
}

// Each row sorted by value, largest first, stable so the lower index comes first
// among equal values; NaN sorts above every number.
void ref_top_k(const OpCall& c, TensorList& out) {
  const Tensor& x = c.in(0);
  const int64_t n = x.rank() ? x.dim(-1) : 1, k = c.attr_int("k");
  const int64_t rows = n ? x.size() / n : 0;
  DF_DISPATCH_NUMERIC(x.dtype(), c.name(), [&] {
    using CT = compute_t<scalar_t>;
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* pv = out[0].data<scalar_t>();
    int32_t* pi = out[1].data<int32_t>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      const scalar_t* row = px + r * n;
      std::iota(order.begin(), order.end(), int64_t(0));
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        CT va = row[a], vb = row[b];
        return (va != va && vb == vb) || va > vb;
      });
      for (int64_t j = 0; j < k; ++j) {
        pv[r * k + j] = row[order[size_t(j)]];
        pi[r * k + j] = int32_t(order[size_t(j)]);
      }
    }
  });
}

}  // namespace

DF_REGISTER_KERNEL(ReduceSum, {.run = ref_reduce<SumOp>});
DF_REGISTER_KERNEL(ReduceProd, {.run = ref_reduce<ProdOp>});
DF_REGISTER_KERNEL(ReduceMax, {.run = ref_reduce<MaxOp>});
DF_REGISTER_KERNEL(ReduceMin, {.run = ref_reduce<MinOp>});
DF_REGISTER_KERNEL(ArgMax, {.run = ref_arg<true>});
DF_REGISTER_KERNEL(ArgMin, {.run = ref_arg<false>});
DF_REGISTER_KERNEL(Cumsum, {.run = ref_cumsum});
DF_REGISTER_KERNEL(TopK, {.run = ref_top_k});

}  // namespace deepflow
