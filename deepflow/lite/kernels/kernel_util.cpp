// SPDX-License-Identifier: Apache-2.0
#include "deepflow/lite/kernels/kernel_util.h"

namespace deepflow::lite {

void apply_activation(fb::ActivationFunctionType act, float* x, int64_t n) {
  switch (act) {
    case fb::ActivationFunctionType::NONE: return;
    case fb::ActivationFunctionType::TANH:
      for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
      return;
    case fb::ActivationFunctionType::SIGN_BIT:
      for (int64_t i = 0; i < n; ++i) x[i] = std::signbit(x[i]) ? 1.f : 0.f;
      return;
    default: {
      const FloatRange r = activation_range(act);
      for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], r.lo), r.hi);
    }
  }
}

void check_activation(const OpContext& ctx, fb::ActivationFunctionType act) {
  DF_LITE_OP_CHECK(ctx, static_cast<int>(act) >= 0 && static_cast<int>(act) <= 5, "has unknown fused activation ",
                   static_cast<int>(act));
}

PaddedDim padded_dim(const OpContext& ctx, fb::Padding padding, int in, int kernel, int stride, int dilation) {
  DF_LITE_OP_CHECK(ctx, stride >= 1 && dilation >= 1 && kernel >= 1, "has stride ", stride, ", dilation ", dilation,
                   " and kernel size ", kernel, ": each must be at least 1");
  const int effective = (kernel - 1) * dilation + 1;
  PaddedDim d;
  if (padding == fb::Padding::SAME) {
    d.out = (in + stride - 1) / stride;
  } else if (padding == fb::Padding::VALID) {
    d.out = in >= effective ? (in - effective) / stride + 1 : 0;
  } else {
    ctx.fail("has unknown padding ", static_cast<int>(padding));
  }
  const int total = std::max((d.out - 1) * stride + effective - in, 0);
  d.pad_before = total / 2;
  return d;
}

void require_float(const OpContext& ctx, const Tensor& input, const Tensor& weights, const char* what) {
  if (input.type != DType::kFloat32)
    ctx.fail(dtype_name(input.type), " ", ctx.op_name(), " is not supported yet (input '", input.name, "')");
  if (weights.type != DType::kFloat32)
    ctx.fail("hybrid (", dtype_name(input.type), " input, ", dtype_name(weights.type), " ", what, ") ",
             ctx.op_name(), " is not supported yet (", what, " '", weights.name, "')");
  check_type(ctx, ctx.output(0), DType::kFloat32, "output");
}

void check_type(const OpContext& ctx, const Tensor& t, DType want, const char* what) {
  DF_LITE_OP_CHECK(ctx, t.type == want, what, " '", t.name, "' is ", dtype_name(t.type), "; expected ",
                   dtype_name(want));
}

void check_rank(const OpContext& ctx, const Tensor& t, int rank, const char* what) {
  DF_LITE_OP_CHECK(ctx, t.rank() == rank, what, " '", t.name, "' has shape ", shape_string(t.shape),
                   "; expected rank ", rank);
}

std::vector<int> int_values(const OpContext& ctx, const Tensor& t, const char* what) {
  const int64_t n = t.num_elements();
  DF_LITE_OP_CHECK(ctx, t.data_ptr != nullptr || n == 0, what, " '", t.name, "' has no data");
  std::vector<int> out(static_cast<size_t>(n));
  if (t.type == DType::kInt32) {
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = t.data<int32_t>()[i];
  } else if (t.type == DType::kInt64) {
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<int>(t.data<int64_t>()[i]);
  } else {
    ctx.fail(what, " '", t.name, "' is ", dtype_name(t.type), "; expected INT32 or INT64");
  }
  return out;
}

MatMulShape matmul_shape(const OpContext& ctx, const Tensor& x, const Tensor& y, bool adj_x, bool adj_y) {
  DF_LITE_OP_CHECK(ctx, x.rank() >= 2 && x.rank() <= 5 && y.rank() >= 2 && y.rank() <= 5, "inputs ",
                   shape_string(x.shape), " and ", shape_string(y.shape), " must have rank 2 to 5");
  MatMulShape s;
  s.m = adj_x ? x.dim(-1) : x.dim(-2);
  s.k = adj_x ? x.dim(-2) : x.dim(-1);
  const int ky = adj_y ? y.dim(-1) : y.dim(-2);
  s.n = adj_y ? y.dim(-2) : y.dim(-1);
  DF_LITE_OP_CHECK(ctx, s.k == ky, "cannot multiply ", shape_string(x.shape), (adj_x ? " (adj_x)" : ""), " by ",
                   shape_string(y.shape), (adj_y ? " (adj_y)" : ""), ": inner dimensions ", s.k, " and ", ky);
  const int rank = std::max(x.rank(), y.rank()), batch_rank = rank - 2;
  s.batch_shape.assign(static_cast<size_t>(batch_rank), 1);
  s.x_strides.assign(static_cast<size_t>(batch_rank), 0);
  s.y_strides.assign(static_cast<size_t>(batch_rank), 0);
  int64_t xs = 1, ys = 1;
  for (int d = batch_rank - 1; d >= 0; --d) {
    const int xi = d - (rank - x.rank()), yi = d - (rank - y.rank());
    const int dx = xi >= 0 ? x.dim(xi) : 1, dy = yi >= 0 ? y.dim(yi) : 1;
    DF_LITE_OP_CHECK(ctx, dx == dy || dx == 1 || dy == 1, "cannot broadcast the batch dimensions of ",
                     shape_string(x.shape), " and ", shape_string(y.shape));
    s.batch_shape[static_cast<size_t>(d)] = (dx == 0 || dy == 0) ? 0 : std::max(dx, dy);
    s.x_strides[static_cast<size_t>(d)] = dx == 1 ? 0 : xs;
    s.y_strides[static_cast<size_t>(d)] = dy == 1 ? 0 : ys;
    xs *= dx;
    ys *= dy;
  }
  s.x_batches = xs;
  s.y_batches = ys;
  s.batches = 1;
  for (int d : s.batch_shape) s.batches *= d;
  return s;
}

std::vector<int> MatMulShape::output_shape() const {
  std::vector<int> shape = batch_shape;
  shape.push_back(m);
  shape.push_back(n);
  return shape;
}

std::pair<int64_t, int64_t> MatMulShape::operand_batches(int64_t b) const {
  int64_t xb = 0, yb = 0, rest = b;
  for (int d = static_cast<int>(batch_shape.size()) - 1; d >= 0; --d) {
    const int64_t i = rest % batch_shape[static_cast<size_t>(d)];
    rest /= batch_shape[static_cast<size_t>(d)];
    xb += i * x_strides[static_cast<size_t>(d)];
    yb += i * y_strides[static_cast<size_t>(d)];
  }
  return {xb, yb};
}

bool repeats_as_rows(const Tensor& t, const Tensor& y) {
  int dt = t.rank() - 1, dy = y.rank() - 1;
  int64_t covered = 1;
  for (; dt >= 0 && dy >= 0 && t.dim(dt) == y.dim(dy); --dt, --dy) covered *= t.dim(dt);
  for (; dt >= 0; --dt)
    if (t.dim(dt) != 1) return false;
  return covered == t.num_elements() && covered > 0;
}

}  // namespace deepflow::lite
