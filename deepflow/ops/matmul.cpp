// SPDX-License-Identifier: Apache-2.0
// Matrix products.
#include "deepflow/ops/infer_util.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

// Inner dimensions must match unless one is unknown.
bool dims_agree(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

// a [..., m, k], b [..., k, n] -> [..., m, n] (after the optional transposes of the
// last two dims); the batch dims broadcast like numpy's matmul.
void infer_matmul(const OpCall& c, TypeList& out) {
  const Tensor &a = c.in(0), &b = c.in(1);
  const bool ta = c.attr_bool("transpose_a"), tb = c.attr_bool("transpose_b");
  DF_CHECK(a.rank() >= 2 && b.rank() >= 2, "[matmul] expects inputs of rank >= 2, got a ", a.shape(), " and b ",
           b.shape());
  detail::check_same_dtype(c, a, b);
  const DType t = a.dtype();
  DF_CHECK(is_floating(t) || t == DType::Int32 || t == DType::Int64, "[matmul] does not support dtype ",
           dtype_name(t));
  const int64_t m = ta ? a.dim(-1) : a.dim(-2), ka = ta ? a.dim(-2) : a.dim(-1);
  const int64_t kb = tb ? b.dim(-1) : b.dim(-2), n = tb ? b.dim(-2) : b.dim(-1);
  DF_CHECK(dims_agree(ka, kb), "[matmul] inner dimensions differ: a is ", a.shape(), ", b is ", b.shape(),
           ta ? " (transpose_a)" : "", tb ? " (transpose_b)" : "");
  Shape batch_a(a.shape().begin(), a.shape().end() - 2), batch_b(b.shape().begin(), b.shape().end() - 2);
  Shape s = broadcast_shapes("matmul", batch_a, batch_b);
  s.push_back(m);
  s.push_back(n);
  out.push_back({t, s});
}

// With C = op(a) op(b) and G = dL/dC: dL/dop(a) = G b', dL/dop(b) = a' G, where ' is the
// transpose of the op applied; each case below is that, folded into the transpose flags.
TensorList vjp_matmul(const OpCall& c, const TensorList& g) {
  const Tensor &a = c.in(0), &b = c.in(1), &gc = g[0];
  const bool ta = c.attr_bool("transpose_a"), tb = c.attr_bool("transpose_b");
  Tensor ga, gb;
  if (!ta && !tb) {
    ga = matmul(gc, b, false, true);
    gb = matmul(a, gc, true, false);
  } else if (!ta && tb) {
    ga = matmul(gc, b, false, false);
    gb = matmul(gc, a, true, false);
  } else if (ta && !tb) {
    ga = matmul(b, gc, false, true);
    gb = matmul(a, gc, false, false);
  } else {
    ga = matmul(b, gc, true, true);
    gb = matmul(gc, a, true, true);
  }
  return {sum_to(ga, a), sum_to(gb, b)};
}

}  // namespace

// --- matmul --- a [..., m, k], b [..., k, n] -> [..., m, n], batch dims broadcast.
DF_DEFINE_OP(MatMul, {.num_inputs = 2, .attrs = {{"transpose_a", false}, {"transpose_b", false}},
                      .infer = infer_matmul, .vjp = vjp_matmul});

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  return dispatch1(OpId::MatMul, {a, b}, {{"transpose_a", transpose_a}, {"transpose_b", transpose_b}});
}

}  // namespace deepflow
