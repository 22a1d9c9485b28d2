// SPDX-License-Identifier: Apache-2.0
// Op-table rows of the neural-network composites (ops/nn.cpp). They are all
// composites, so the rows check gradients and errors; values are in nn_test.cpp.
#include "op_cases.h"

namespace deepflow::testing {

DF_OP_CASES(nn) {
  using F = std::function<TensorList(const TensorList&)>;
  auto one = [](auto f) { return F([f](const TensorList& x) { return TensorList{f(x)}; }); };
  return {
      {.name = "softmax/last", .inputs = {in({3, 5})}, .fn = one([](auto& x) { return softmax(x[0]); })},
      {.name = "softmax/axis0", .inputs = {in({4, 3})}, .fn = one([](auto& x) { return softmax(x[0], 0); })},
      {.name = "softmax/middle-axis", .inputs = {in({2, 3, 4})},
       .fn = one([](auto& x) { return softmax(x[0], -2); })},
      {.name = "softmax/axis-out-of-range", .inputs = {in({2, 3})},
       .fn = one([](auto& x) { return softmax(x[0], 2); }), .error = "[softmax] axis 2 out of range for rank 2"},
      {.name = "log_softmax/last", .inputs = {in({3, 5})}, .fn = one([](auto& x) { return log_softmax(x[0]); })},
      {.name = "log_softmax/axis1", .inputs = {in({2, 4, 3})},
       .fn = one([](auto& x) { return log_softmax(x[0], 1); })},
      {.name = "softmax_cross_entropy_with_logits", .inputs = {in({4, 5}, 0, 1), in({4, 5})},
       .fn = one([](auto& x) { return softmax_cross_entropy_with_logits(x[0], x[1]); })},
      {.name = "softmax_cross_entropy_with_logits/rank3", .inputs = {in({2, 3, 4}, 0, 1), in({2, 3, 4})},
       .fn = one([](auto& x) { return softmax_cross_entropy_with_logits(x[0], x[1]); })},
      {.name = "softmax_cross_entropy_with_logits/shape-mismatch", .inputs = {in({4, 3}), in({4, 5})},
       .fn = one([](auto& x) { return softmax_cross_entropy_with_logits(x[0], x[1]); }),
       .error = "[softmax_cross_entropy_with_logits] labels [4,3] and logits [4,5] differ"},
      {.name = "sparse_softmax_cross_entropy_with_logits", .inputs = {in_int({6}, 0, 5), in({6, 5})},
       .fn = one([](auto& x) { return sparse_softmax_cross_entropy_with_logits(x[0], x[1]); })},
      {.name = "sparse_softmax_cross_entropy_with_logits/int32-rank2",
       .inputs = {in_int({2, 3}, 0, 4, DType::Int32), in({2, 3, 4})},
       .fn = one([](auto& x) { return sparse_softmax_cross_entropy_with_logits(x[0], x[1]); })},
      {.name = "sparse_softmax_cross_entropy_with_logits/label-out-of-range",
       .inputs = {in_fixed(constant(std::vector<int64_t>{0, 7})), in({2, 5})},
       .fn = one([](auto& x) { return sparse_softmax_cross_entropy_with_logits(x[0], x[1]); }),
       .error = "received a label value of 7 which is outside the valid range of [0, 5)"},
      {.name = "sigmoid_cross_entropy_with_logits", .inputs = {in({3, 4}, 0, 1), in_away({3, 4}, 0.1, 3)},
       .fn = one([](auto& x) { return sigmoid_cross_entropy_with_logits(x[0], x[1]); })},
      {.name = "batch_normalization", .inputs = {in({4, 3}), in({3}), in({3}, 0.5, 2), in({3}), in({3})},
       .fn = one([](auto& x) { return batch_normalization(x[0], x[1], x[2], x[3], x[4], 1e-3); })},
      {.name = "batch_normalization/no-offset-scale", .inputs = {in({2, 2, 3}), in({3}), in({3}, 0.5, 2)},
       .fn = one([](auto& x) { return batch_normalization(x[0], x[1], x[2], Tensor(), Tensor(), 1e-3); })},
      {.name = "layer_normalization/last", .inputs = {in({4, 6}), in({6}), in({6})},
       .fn = one([](auto& x) { return layer_normalization(x[0], x[1], x[2]); })},
      {.name = "layer_normalization/two-axes", .inputs = {in({2, 3, 4}), in({3, 4}), in({3, 4})},
       .fn = one([](auto& x) { return layer_normalization(x[0], x[1], x[2], {1, 2}, 1e-5); })},
      {.name = "dropout/rate0", .inputs = {in({3, 4})}, .fn = one([](auto& x) { return dropout(x[0], 0.0); })},
      {.name = "dropout/rate1", .inputs = {in({3, 4})}, .fn = one([](auto& x) { return dropout(x[0], 1.0); }),
       .error = "[dropout] rate must be in [0, 1), got 1"},
  };
}

DF_KINK_CASES(nn) {
  // TF's selects make d/dx at x = 0 equal sigmoid(0) - z; d/dz = -x = 0.
  return {{.name = "sigmoid_cross_entropy'(0)=0.5-z",
           .fn = [](const TensorList& x) { return TensorList{sigmoid_cross_entropy_with_logits(x[0], x[1])}; },
           .inputs = {f64({0.25, 1.0}, {2}), f64({0.0, 0.0}, {2})},
           .grads = {f64({0.0, 0.0}, {2}), f64({0.25, -0.5}, {2})}}};
}

}  // namespace deepflow::testing
