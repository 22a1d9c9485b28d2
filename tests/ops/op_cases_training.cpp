// SPDX-License-Identifier: Apache-2.0
// Op-table rows of the optimizer updates (ops/training_ops.cpp).
#include "op_cases.h"

namespace deepflow::testing {

namespace {
Attrs adam(double b1 = 0.9, double b2 = 0.999, double eps = 1e-7) {
  return {{"beta_1", b1}, {"beta_2", b2}, {"epsilon", eps}};
}
}  // namespace

DF_OP_CASES(training) {
  return {
      // v (the second moment) is never negative in use: keep it so, sqrt is then defined.
      {.name = "apply_adam/small", .op = "apply_adam",
       .inputs = {in({3, 4}), in({3, 4}), in({3, 4}, 0, 2), in({3, 4}), in({}, 0.001, 0.1)}, .attrs = adam(),
       .gradcheck = false},
      {.name = "apply_adam/betas", .op = "apply_adam",
       .inputs = {in({7}), in({7}), in({7}, 0, 2), in({7}), in({}, 0.001, 0.1)}, .attrs = adam(0.5, 0.75, 0.1),
       .gradcheck = false},
      // Large enough for several threads and a vector tail.
      {.name = "apply_adam/large", .op = "apply_adam",
       .inputs = {in({300, 701}), in({300, 701}), in({300, 701}, 0, 2), in({300, 701}), in({}, 0.001, 0.1)},
       .attrs = adam(), .gradcheck = false},
      // Past kStreamingElements (kernels/cpu/training_ops.cpp): non-temporal stores, with a
      // length that leaves a scalar tail in each thread's range.
      {.name = "apply_adam/streaming", .op = "apply_adam",
       .inputs = {in({(1 << 20) + 13}), in({(1 << 20) + 13}), in({(1 << 20) + 13}, 0, 2), in({(1 << 20) + 13}),
                  in({}, 0.001, 0.1)},
       .attrs = adam(), .gradcheck = false},
      {.name = "apply_adam/shape-mismatch", .op = "apply_adam",
       .inputs = {in({3, 4}), in({3, 4}), in({3, 4}, 0, 2), in({4, 3}), in({})}, .attrs = adam(),
       .gradcheck = false, .error = "[apply_adam] grad has shape [4,3], var is [3,4]"},
      {.name = "apply_adam/lr-not-scalar", .op = "apply_adam",
       .inputs = {in({3}), in({3}), in({3}, 0, 2), in({3}), in({1})}, .attrs = adam(), .gradcheck = false,
       .error = "[apply_adam] lr_t must be a"},
  };
}

}  // namespace deepflow::testing
