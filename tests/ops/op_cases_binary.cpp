// SPDX-License-Identifier: Apache-2.0
// Op-table rows of the binary family (ops/binary.cpp).
#include "op_cases.h"

namespace deepflow::testing {

DF_OP_CASES(binary) {
  const std::vector<DType> all_float = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16};
  return {
      {.name = "add/same", .op = "add", .inputs = {in({4, 5}), in({4, 5})}, .dtypes = all_float},
      {.name = "add/broadcast", .op = "add", .inputs = {in({2, 1, 3}), in({4, 1})}},
      {.name = "add/scalar", .op = "add", .inputs = {in({3, 4}), in({})}},
      {.name = "add/int", .op = "add", .inputs = {in_int({3, 4}, -5, 5), in_int({4}, -5, 5)}, .gradcheck = false},
      {.name = "add/large", .op = "add", .inputs = {in({300, 257}), in({257})}, .gradcheck = false},
      // One long row: the optimized kernels split it into column chunks across threads.
      {.name = "add/long-row", .op = "add", .inputs = {in({70001}), in({70001})}, .gradcheck = false},
      {.name = "mul/long-row-scalar", .op = "mul", .inputs = {in({2, 70001}), in({})}, .gradcheck = false},
      // Past 2M float32 elements the flat kernels use streaming stores (odd size: unaligned chunks).
      {.name = "sub/streaming", .op = "sub", .inputs = {in({2100001}), in({2100001})}, .dtypes = {DType::Float32},
       .gradcheck = false},
      {.name = "where/long-row", .op = "where", .inputs = {in_bool({70001}), in({70001}), in({1})}, .gradcheck = false},
      {.name = "add/dtype-mismatch", .op = "add", .inputs = {in({2}), in_int({2}, 0, 3)},
       .error = "[add] dtypes differ: float32[2] and int64[2]"},
      {.name = "add/not-broadcastable", .op = "add", .inputs = {in({2, 3}), in({4})},
       .error = "[add] shapes [2,3] and [4] are not broadcastable"},
      {.name = "sub/broadcast", .op = "sub", .inputs = {in({3, 1}), in({1, 4})}, .dtypes = all_float},
      {.name = "mul/broadcast", .op = "mul", .inputs = {in({2, 3, 4}), in({3, 1})}, .dtypes = all_float},
      {.name = "div/broadcast", .op = "div", .inputs = {in({3, 4}), in_away({4}, 0.5)}, .dtypes = all_float},
      {.name = "div/int", .op = "div", .inputs = {in_int({6}, -9, 9, DType::Int32), in_fixed(constant(std::vector<int32_t>{1, 2, 3, -4, 5, 7}))},
       .dtypes = {DType::Float32}, .gradcheck = false},
      {.name = "div/int-by-zero", .op = "div",
       .inputs = {in_fixed(constant(std::vector<int32_t>{1, 2})), in_fixed(constant(std::vector<int32_t>{1, 0}))},
       .error = "[div] integer division by zero"},
      {.name = "pow/positive-base", .op = "pow", .inputs = {in({3, 4}, 0.5, 2), in({4}, -1.5, 1.5)}},
      {.name = "maximum/broadcast", .op = "maximum", .inputs = {in({3, 4}), in({4})}, .dtypes = all_float},
      {.name = "minimum/broadcast", .op = "minimum", .inputs = {in({3, 4}), in({3, 1})}, .dtypes = all_float},
      {.name = "equal", .op = "equal", .inputs = {in_int({3, 4}, 0, 3), in_int({4}, 0, 3)}, .gradcheck = false},
      {.name = "not_equal", .op = "not_equal", .inputs = {in_int({3, 4}, 0, 3), in_int({4}, 0, 3)}, .gradcheck = false},
      {.name = "less", .op = "less", .inputs = {in({3, 4}), in({4})}, .gradcheck = false},
      {.name = "less_equal", .op = "less_equal", .inputs = {in_int({5}, 0, 3), in_int({5}, 0, 3)}, .gradcheck = false},
      {.name = "greater", .op = "greater", .inputs = {in({3, 4}), in({1})}, .gradcheck = false},
      {.name = "greater_equal", .op = "greater_equal", .inputs = {in_int({2, 3}, 0, 3), in_int({2, 3}, 0, 3)}, .gradcheck = false},
      {.name = "logical_and", .op = "logical_and", .inputs = {in_bool({3, 4}), in_bool({4})}, .gradcheck = false},
      {.name = "logical_or", .op = "logical_or", .inputs = {in_bool({3, 4}), in_bool({3, 1})}, .gradcheck = false},
      {.name = "logical_and/not-bool", .op = "logical_and", .inputs = {in({2}), in_bool({2})},
       .error = "[logical_and] expects bool for a, got float32"},
      {.name = "where/broadcast", .op = "where", .inputs = {in_bool({3, 4}), in({4}), in({3, 1})}},
      {.name = "where/int", .op = "where", .inputs = {in_bool({5}), in_int({5}, 0, 9), in_int({5}, 0, 9)}, .gradcheck = false},
      {.name = "logical_xor", .op = "not_equal", .inputs = {in_bool({6}), in_bool({6})},
       .fn = [](const TensorList& x) { return TensorList{logical_xor(x[0], x[1])}; }, .gradcheck = false},
      {.name = "clip_by_value", .inputs = {in_away({4, 3}, 0.05, 2)},
       .fn = [](const TensorList& x) { return TensorList{clip_by_value(x[0], -1.0, 1.0)}; }},
  };
}

DF_KINK_CASES(binary) {
  auto fmax = [](const TensorList& x) { return TensorList{maximum(x[0], x[1])}; };
  auto fmin = [](const TensorList& x) { return TensorList{minimum(x[0], x[1])}; };
  return {
      {.name = "maximum tie goes to a", .fn = fmax, .inputs = {f64({1, 2}, {2}), f64({1, 3}, {2})},
       .grads = {f64({1, 0}, {2}), f64({0, 1}, {2})}},
      {.name = "minimum tie goes to a", .fn = fmin, .inputs = {f64({1, 2}, {2}), f64({1, 3}, {2})},
       .grads = {f64({1, 1}, {2}), f64({0, 0}, {2})}},
  };
}

}  // namespace deepflow::testing
