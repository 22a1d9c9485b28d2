// SPDX-License-Identifier: Apache-2.0
// Op-table rows of matmul (ops/matmul.cpp).
#include "op_cases.h"

namespace deepflow::testing {

namespace {
Attrs tr(bool a, bool b) { return {{"transpose_a", a}, {"transpose_b", b}}; }
}  // namespace

DF_OP_CASES(matmul) {
  const std::vector<DType> all_float = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16};
  return {
      // 2D, every transpose combination.
      {.name = "matmul/nn", .op = "matmul", .inputs = {in({3, 4}), in({4, 5})}, .dtypes = all_float},
      {.name = "matmul/nt", .op = "matmul", .inputs = {in({3, 4}), in({5, 4})}, .attrs = tr(false, true),
       .dtypes = all_float},
      {.name = "matmul/tn", .op = "matmul", .inputs = {in({4, 3}), in({4, 5})}, .attrs = tr(true, false),
       .dtypes = all_float},
      {.name = "matmul/tt", .op = "matmul", .inputs = {in({4, 3}), in({5, 4})}, .attrs = tr(true, true),
       .dtypes = all_float},
      // Batched: equal batch dims, a batch folded into rows, broadcast batch dims.
      {.name = "matmul/batch", .op = "matmul", .inputs = {in({2, 3, 4}), in({2, 4, 5})}, .dtypes = all_float},
      {.name = "matmul/batch-tt", .op = "matmul", .inputs = {in({2, 4, 3}), in({2, 5, 4})}, .attrs = tr(true, true)},
      {.name = "matmul/batch-a-only", .op = "matmul", .inputs = {in({2, 3, 3, 4}), in({4, 2})}, .dtypes = all_float},
      {.name = "matmul/batch-a-only-ta", .op = "matmul", .inputs = {in({2, 4, 3}), in({1, 4, 2})},
       .attrs = tr(true, false)},
      {.name = "matmul/batch-b-only", .op = "matmul", .inputs = {in({3, 4}), in({2, 4, 5})}, .dtypes = all_float},
      {.name = "matmul/broadcast-batch", .op = "matmul", .inputs = {in({2, 1, 3, 4}), in({3, 4, 2})},
       .dtypes = all_float},
      {.name = "matmul/broadcast-batch-nt", .op = "matmul", .inputs = {in({1, 3, 2, 4}), in({2, 1, 5, 4})},
       .attrs = tr(false, true)},
      {.name = "matmul/broadcast-batch-tn", .op = "matmul", .inputs = {in({2, 1, 4, 3}), in({1, 2, 4, 2})},
       .attrs = tr(true, false)},
      // Vectors as matrices, empty dims, a larger product.
      {.name = "matmul/row-times-col", .op = "matmul", .inputs = {in({1, 6}), in({6, 1})}},
      {.name = "matmul/k-zero", .op = "matmul", .inputs = {in({3, 0}), in({0, 2})}, .gradcheck = false},
      {.name = "matmul/m-zero", .op = "matmul", .inputs = {in({0, 3}), in({3, 2})}, .gradcheck = false},
      {.name = "matmul/large", .op = "matmul", .inputs = {in({64, 300}), in({300, 70})}, .gradcheck = false,
       .rtol = 1e-4, .atol = 1e-4},
      {.name = "matmul/large-bf16", .op = "matmul", .inputs = {in({32, 200}), in({70, 200})}, .attrs = tr(false, true),
       .dtypes = {DType::BFloat16, DType::Float16}, .gradcheck = false, .rtol = 1e-4, .atol = 1e-4},
      {.name = "matmul/int", .op = "matmul", .inputs = {in_int({2, 3}, -4, 4, DType::Int32), in_int({3, 2}, -4, 4, DType::Int32)},
       .gradcheck = false},
      // Errors.
      {.name = "matmul/inner-mismatch", .op = "matmul", .inputs = {in({2, 3}), in({4, 5})},
       .error = "[matmul] inner dimensions differ: a is [2,3], b is [4,5]"},
      {.name = "matmul/rank-1", .op = "matmul", .inputs = {in({3}), in({3, 2})},
       .error = "[matmul] expects inputs of rank >= 2, got a [3] and b [3,2]"},
      {.name = "matmul/dtype-mismatch", .op = "matmul", .inputs = {in({2, 2}), in_int({2, 2}, 0, 3)},
       .error = "[matmul] dtypes differ: float32[2,2] and int64[2,2]"},
      {.name = "matmul/batch-not-broadcastable", .op = "matmul", .inputs = {in({2, 3, 4}), in({3, 4, 5})},
       .error = "[matmul] shapes [2] and [3] are not broadcastable"},
      {.name = "matmul/bool", .op = "matmul", .inputs = {in_bool({2, 2}), in_bool({2, 2})},
       .error = "[matmul] does not support dtype bool"},
  };
}

}  // namespace deepflow::testing
