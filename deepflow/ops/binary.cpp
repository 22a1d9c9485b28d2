// SPDX-License-Identifier: Apache-2.0
// Binary elementwise primitives with broadcasting, and where (select).
#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

using detail::check_bool;
using detail::check_same_dtype;

// a, b broadcast -> broadcast shape, dtype of a (both must agree).
void infer_arith(const OpCall& c, TypeList& out) {
  check_same_dtype(c, c.in(0), c.in(1));
  DF_CHECK(c.in(0).dtype() != DType::Bool, "[", c.name(), "] does not take bool tensors");
  out.push_back({c.in(0).dtype(), broadcast_shapes(c.name(), c.in(0).shape(), c.in(1).shape())});
}
// a, b broadcast -> bool of the broadcast shape.
void infer_compare(const OpCall& c, TypeList& out) {
  check_same_dtype(c, c.in(0), c.in(1));
  out.push_back({DType::Bool, broadcast_shapes(c.name(), c.in(0).shape(), c.in(1).shape())});
}
void infer_logical(const OpCall& c, TypeList& out) {
  check_bool(c, c.in(0), "a");
  check_bool(c, c.in(1), "b");
  out.push_back({DType::Bool, broadcast_shapes(c.name(), c.in(0).shape(), c.in(1).shape())});
}

const Tensor& A(const OpCall& c) { return c.in(0); }
const Tensor& B(const OpCall& c) { return c.in(1); }

// The gradient for operand x of a broadcasting op: g itself when x's static shape alone
// fixes the output's (the other operand broadcasts into x: a [n] bias added to a [?,n]
// product), so no run-time sum_to_like keeps x alive (which would stop matmul + bias +
// activation fusion in graphs with an unknown batch dim); else sum_to(g, x).
Tensor grad_to(const Tensor& g, const Tensor& x, const Tensor& other) {
  const Shape &xs = x.shape(), &os = other.shape();
  bool fixed = xs.rank() >= os.rank() && g.shape().rank() == xs.rank();
  for (int i = 1; fixed && i <= os.rank(); ++i) {
    const int64_t a = xs[xs.rank() - i], b = os[os.rank() - i];
    fixed = b == 1 || (a >= 0 && a != 1);
  }
  return fixed ? g : sum_to(g, x);
}

}  // namespace

// --- add ---
DF_DEFINE_OP(Add, {.num_inputs = 2, .infer = infer_arith, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{grad_to(g[0], A(c), B(c)), grad_to(g[0], B(c), A(c))};
}});
Tensor add(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Add, {a, b}); }

// --- sub ---
DF_DEFINE_OP(Sub, {.num_inputs = 2, .infer = infer_arith, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{grad_to(g[0], A(c), B(c)), grad_to(neg(g[0]), B(c), A(c))};
}});
Tensor sub(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Sub, {a, b}); }

// --- mul ---
DF_DEFINE_OP(Mul, {.num_inputs = 2, .infer = infer_arith, .vjp = [](const OpCall& c, const TensorList& g) {
  return TensorList{grad_to(mul(g[0], B(c)), A(c), B(c)), grad_to(mul(g[0], A(c)), B(c), A(c))};
}});
Tensor mul(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Mul, {a, b}); }

// --- div --- (integers truncate toward zero; integer division by zero is an error)
DF_DEFINE_OP(Div, {.num_inputs = 2, .infer = infer_arith, .vjp = [](const OpCall& c, const TensorList& g) {
  Tensor ga = div(g[0], B(c));
  return TensorList{grad_to(ga, A(c), B(c)), grad_to(neg(mul(ga, c.out(0))), B(c), A(c))};
}});
Tensor div(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Div, {a, b}); }

// --- pow --- d/db uses log(a) where a > 0 and 0 elsewhere (TensorFlow's rule).
DF_DEFINE_OP(Pow, {.num_inputs = 2, .infer = infer_arith, .vjp = [](const OpCall& c, const TensorList& g) {
  Tensor a = A(c), b = B(c);
  Tensor ga = mul(g[0], mul(b, pow(a, sub(b, scalar_like(b, 1)))));
  Tensor zero = scalar_like(a, 0);
  Tensor safe_log = where(greater(a, zero), log(where(greater(a, zero), a, scalar_like(a, 1))), zero);
  Tensor gb = mul(g[0], mul(c.out(0), safe_log));
  return TensorList{grad_to(ga, a, b), grad_to(gb, b, a)};
}});
Tensor pow(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Pow, {a, b}); }

// --- maximum --- tie rule: the gradient goes to a where a >= b.
DF_DEFINE_OP(Maximum, {.num_inputs = 2, .infer = infer_arith, .vjp = [](const OpCall& c, const TensorList& g) {
  Tensor mask = greater_equal(A(c), B(c));
  Tensor zero = scalar_like(g[0], 0);
  return TensorList{grad_to(where(mask, g[0], zero), A(c), B(c)),
                    grad_to(where(mask, zero, g[0]), B(c), A(c))};
}});
Tensor maximum(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Maximum, {a, b}); }

// --- minimum --- tie rule: the gradient goes to a where a <= b.
DF_DEFINE_OP(Minimum, {.num_inputs = 2, .infer = infer_arith, .vjp = [](const OpCall& c, const TensorList& g) {
  Tensor mask = less_equal(A(c), B(c));
  Tensor zero = scalar_like(g[0], 0);
  return TensorList{grad_to(where(mask, g[0], zero), A(c), B(c)),
                    grad_to(where(mask, zero, g[0]), B(c), A(c))};
}});
Tensor minimum(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Minimum, {a, b}); }

// --- comparisons: non-differentiable ---
DF_DEFINE_OP(Equal, {.num_inputs = 2, .infer = infer_compare, .non_differentiable = true, .strings = true});
DF_DEFINE_OP(NotEqual, {.num_inputs = 2, .infer = infer_compare, .non_differentiable = true, .strings = true});
DF_DEFINE_OP(Less, {.num_inputs = 2, .infer = infer_compare, .non_differentiable = true});
DF_DEFINE_OP(LessEqual, {.num_inputs = 2, .infer = infer_compare, .non_differentiable = true});
DF_DEFINE_OP(Greater, {.num_inputs = 2, .infer = infer_compare, .non_differentiable = true});
DF_DEFINE_OP(GreaterEqual, {.num_inputs = 2, .infer = infer_compare, .non_differentiable = true});
Tensor equal(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Equal, {a, b}); }
Tensor not_equal(const Tensor& a, const Tensor& b) { return dispatch1(OpId::NotEqual, {a, b}); }
Tensor less(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Less, {a, b}); }
Tensor less_equal(const Tensor& a, const Tensor& b) { return dispatch1(OpId::LessEqual, {a, b}); }
Tensor greater(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Greater, {a, b}); }
Tensor greater_equal(const Tensor& a, const Tensor& b) { return dispatch1(OpId::GreaterEqual, {a, b}); }

// --- logical: bool only, non-differentiable ---
DF_DEFINE_OP(LogicalAnd, {.num_inputs = 2, .infer = infer_logical, .non_differentiable = true});
DF_DEFINE_OP(LogicalOr, {.num_inputs = 2, .infer = infer_logical, .non_differentiable = true});
Tensor logical_and(const Tensor& a, const Tensor& b) { return dispatch1(OpId::LogicalAnd, {a, b}); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return dispatch1(OpId::LogicalOr, {a, b}); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return not_equal(a, b); }

// --- where --- cond bool; cond, x, y broadcast -> broadcast shape, dtype of x.
static void infer_where(const OpCall& c, TypeList& out) {
  check_bool(c, c.in(0), "cond");
  check_same_dtype(c, c.in(1), c.in(2));
  Shape s = broadcast_shapes(c.name(), c.in(0).shape(), c.in(1).shape());
  out.push_back({c.in(1).dtype(), broadcast_shapes(c.name(), s, c.in(2).shape())});
}
DF_DEFINE_OP(Where, {.num_inputs = 3, .infer = infer_where, .vjp = [](const OpCall& c, const TensorList& g) {
  Tensor zero = scalar_like(g[0], 0);
  return TensorList{Tensor(), sum_to(where(c.in(0), g[0], zero), c.in(1)),
                    sum_to(where(c.in(0), zero, g[0]), c.in(2))};
}, .strings = true});
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y) { return dispatch1(OpId::Where, {cond, x, y}); }

}  // namespace deepflow
