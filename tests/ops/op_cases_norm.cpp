// SPDX-License-Identifier: Apache-2.0
// Op-table rows of the fused normalizations (ops/norm.cpp). Batch-norm rows stay
// float32/float64: for 16-bit x the parameters are float32, which the table's
// per-row dtype cannot express, so norm_test.cpp compares those kernels.
#include "op_cases.h"

namespace deepflow::testing {

namespace {
Attrs bn(bool training, double eps = 1e-3) { return {{"epsilon", eps}, {"is_training", training}}; }

// Gradients of a scalar loss of the forward outputs, taken under a nested tape: the table's
// gradcheck then differentiates them, which checks the grad primitives' vjps (second order).
TensorList bn_second_order(const TensorList& x, bool training) {
  GradientTape tape;
  for (int i = 0; i < 3; ++i) tape.watch(x[size_t(i)]);
  FusedBatchNormResult r = fused_batch_norm(x[0], x[1], x[2], training ? Tensor() : x[4],
                                            training ? Tensor() : x[5], 1e-3, training);
  Tensor loss = reduce_sum(sin(r.y) * x[3]) + reduce_sum(square(r.batch_variance)) + reduce_sum(sin(r.batch_mean));
  return tape.gradient(loss, {x[0], x[1], x[2]});
}
TensorList ln_second_order(const TensorList& x) {
  GradientTape tape;
  for (int i = 0; i < 3; ++i) tape.watch(x[size_t(i)]);
  TensorList o = dispatch(OpId::LayerNorm, {x[0], x[1], x[2]}, {{"epsilon", 1e-3}});
  Tensor loss = reduce_sum(sin(o[0]) * x[3]) + reduce_sum(square(o[1])) + reduce_sum(sin(o[2]));
  return tape.gradient(loss, {x[0], x[1], x[2]});
}
}  // namespace

DF_OP_CASES(norm) {
  using F = std::function<TensorList(const TensorList&)>;
  const std::vector<DType> with_bf16 = {DType::Float32, DType::Float64, DType::BFloat16};
  return {
      // fused_batch_norm: training (empty or ignored stats), inference, ranks 2 to 4.
      {.name = "fused_batch_norm/training", .op = "fused_batch_norm",
       .inputs = {in({4, 3, 5}), in({5}, 0.5, 2), in({5}), in({0}), in({0})}, .attrs = bn(true)},
      {.name = "fused_batch_norm/training-stats-ignored", .op = "fused_batch_norm",
       .inputs = {in({6, 4}), in({4}, 0.5, 2), in({4}), in({4}), in({4}, 0.5, 2)}, .attrs = bn(true, 1e-5)},
      {.name = "fused_batch_norm/training-nhwc", .op = "fused_batch_norm",
       .inputs = {in({2, 3, 3, 8}, -1, 3), in({8}, 0.5, 2), in({8}), in({0}), in({0})}, .attrs = bn(true)},
      {.name = "fused_batch_norm/training-one-row", .op = "fused_batch_norm",
       .inputs = {in({1, 3}), in({3}, 0.5, 2), in({3}), in({0}), in({0})}, .attrs = bn(true)},
      {.name = "fused_batch_norm/inference", .op = "fused_batch_norm",
       .inputs = {in({4, 3, 5}), in({5}, 0.5, 2), in({5}), in({5}), in({5}, 0.5, 2)}, .attrs = bn(false)},
      {.name = "fused_batch_norm/inference-nhwc", .op = "fused_batch_norm",
       .inputs = {in({2, 2, 3, 6}), in({6}, 0.5, 2), in({6}), in({6}), in({6}, 0.5, 2)}, .attrs = bn(false, 1e-4)},
      {.name = "fused_batch_norm/large", .op = "fused_batch_norm",
       .inputs = {in({16, 7, 7, 32}), in({32}, 0.5, 2), in({32}), in({0}), in({0})}, .attrs = bn(true),
       .gradcheck = false, .rtol = 1e-4, .atol = 1e-4},
      {.name = "fused_batch_norm/empty-x", .op = "fused_batch_norm",
       .inputs = {in({0, 3}), in({3}), in({3}), in({0}), in({0})}, .attrs = bn(true), .gradcheck = false},
      {.name = "fused_batch_norm/scale-shape", .op = "fused_batch_norm",
       .inputs = {in({2, 4}), in({3}), in({4}), in({0}), in({0})}, .attrs = bn(true),
       .error = "[fused_batch_norm] scale has shape [3], expected [4] (the channels of x [2,4])"},
      {.name = "fused_batch_norm/inference-needs-stats", .op = "fused_batch_norm",
       .inputs = {in({2, 4}), in({4}), in({4}), in({0}), in({0})}, .attrs = bn(false),
       .error = "[fused_batch_norm] mean has shape [0], expected [4] (the channels of x [2,4])"},
      {.name = "fused_batch_norm/rank1", .op = "fused_batch_norm",
       .inputs = {in({4}), in({4}), in({4}), in({0}), in({0})}, .attrs = bn(true),
       .error = "[fused_batch_norm] x must have rank >= 2 (channels last), got shape [4]"},
      {.name = "fused_batch_norm/public-training", .op = "fused_batch_norm",
       .inputs = {in({5, 3}), in({3}, 0.5, 2), in({3})},
       .fn = F([](const TensorList& x) {
         FusedBatchNormResult r = fused_batch_norm(x[0], x[1], x[2], Tensor(), Tensor());
         return TensorList{r.y, r.batch_mean, r.batch_variance};
       })},
      {.name = "fused_batch_norm/second-order-training", .op = "fused_batch_norm",
       .inputs = {in({4, 3}), in({3}, 0.5, 2), in({3}), in({4, 3})},
       .fn = F([](const TensorList& x) { return bn_second_order(x, true); }), .grad_tol = 1e-5},
      {.name = "fused_batch_norm/second-order-inference", .op = "fused_batch_norm",
       .inputs = {in({4, 3}), in({3}, 0.5, 2), in({3}), in({4, 3}), in({3}), in({3}, 0.5, 2)},
       .fn = F([](const TensorList& x) { return bn_second_order(x, false); }), .grad_tol = 1e-5},

      // fused_batch_norm_grad: dy, x, scale, saved mean, saved (biased) variance.
      {.name = "fused_batch_norm_grad/training", .op = "fused_batch_norm_grad",
       .inputs = {in({4, 3, 5}), in({4, 3, 5}), in({5}, 0.5, 2), in({5}), in({5}, 0.5, 2)}, .attrs = bn(true)},
      {.name = "fused_batch_norm_grad/inference", .op = "fused_batch_norm_grad",
       .inputs = {in({6, 4}), in({6, 4}), in({4}, 0.5, 2), in({4}), in({4}, 0.5, 2)}, .attrs = bn(false)},
      {.name = "fused_batch_norm_grad/large", .op = "fused_batch_norm_grad",
       .inputs = {in({16, 7, 7, 32}), in({16, 7, 7, 32}), in({32}, 0.5, 2), in({32}, -0.1, 0.1),
                  in({32}, 1, 1.5)},
       .attrs = bn(true), .gradcheck = false, .rtol = 1e-4, .atol = 1e-4},
      {.name = "fused_batch_norm_grad/dy-shape", .op = "fused_batch_norm_grad",
       .inputs = {in({3, 4}), in({2, 4}), in({4}), in({4}), in({4})}, .attrs = bn(true),
       .error = "[fused_batch_norm_grad] y_backprop float32[3,4] does not match x float32[2,4]"},

      // layer_norm over the last axis.
      {.name = "layer_norm/2d", .op = "layer_norm", .inputs = {in({4, 6}), in({6}), in({6})}, .dtypes = with_bf16},
      {.name = "layer_norm/3d", .op = "layer_norm", .inputs = {in({2, 3, 8}), in({8}), in({8})},
       .attrs = {{"epsilon", 1e-5}}, .dtypes = with_bf16},
      {.name = "layer_norm/rank1", .op = "layer_norm", .inputs = {in({5}), in({5}), in({5})}},
      {.name = "layer_norm/large", .op = "layer_norm", .inputs = {in({8, 16, 96}), in({96}), in({96})},
       .dtypes = with_bf16, .gradcheck = false, .rtol = 1e-4, .atol = 1e-4},
      {.name = "layer_norm/gamma-shape", .op = "layer_norm", .inputs = {in({2, 4}), in({3}), in({4})},
       .error = "[layer_norm] gamma has shape [3], expected [4] (the channels of x [2,4])"},
      {.name = "layer_norm/second-order", .op = "layer_norm",
       .inputs = {in({3, 5}), in({5}), in({5}), in({3, 5})}, .fn = F(ln_second_order), .grad_tol = 1e-5},

      // layer_norm_grad: dy, x, gamma, saved mean, saved inverse std.
      {.name = "layer_norm_grad/2d", .op = "layer_norm_grad",
       .inputs = {in({4, 6}), in({4, 6}), in({6}), in({4}), in({4}, 0.5, 2)}},
      {.name = "layer_norm_grad/3d", .op = "layer_norm_grad",
       .inputs = {in({2, 3, 5}), in({2, 3, 5}), in({5}), in({2, 3}), in({2, 3}, 0.5, 2)}},
      {.name = "layer_norm_grad/large", .op = "layer_norm_grad",
       .inputs = {in({8, 16, 96}), in({8, 16, 96}), in({96}), in({8, 16}, -0.1, 0.1), in({8, 16}, 0.5, 1.5)},
       .gradcheck = false, .rtol = 1e-4, .atol = 1e-4},
      {.name = "layer_norm_grad/stats-shape", .op = "layer_norm_grad",
       .inputs = {in({4, 6}), in({4, 6}), in({6}), in({6}), in({4})},
       .error = "[layer_norm_grad] mean has shape [6], expected [4] (x [4,6] without its last dim)"},
  };
}

}  // namespace deepflow::testing
