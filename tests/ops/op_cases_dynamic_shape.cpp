// SPDX-License-Identifier: Apache-2.0
// Op-table rows of the run-time shape ops (ops/dynamic_shape.cpp). `like` inputs only
// lend their shape, so gradients are checked for the first input alone.
#include "op_cases.h"

namespace deepflow::testing {

DF_OP_CASES(dynamic_shape) {
  const std::vector<DType> all_floats = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16};
  return {
      // broadcast_like: x broadcast to like's shape.
      {.name = "broadcast_like/vector", .op = "broadcast_like", .inputs = {in({3}), in({2, 3})},
       .dtypes = all_floats, .grad_inputs = {0}},
      {.name = "broadcast_like/ones", .op = "broadcast_like", .inputs = {in({2, 1}), in({4, 2, 3})},
       .grad_inputs = {0}},
      {.name = "broadcast_like/same", .op = "broadcast_like", .inputs = {in({2, 3}), in({2, 3})}, .grad_inputs = {0}},
      {.name = "broadcast_like/int", .op = "broadcast_like", .inputs = {in_int({1, 3}, -5, 5), in({2, 3})},
       .gradcheck = false},
      {.name = "broadcast_like/bad", .op = "broadcast_like", .inputs = {in({3}), in({2, 4})},
       .error = "[broadcast_like] cannot broadcast [3] to the shape of like [2,4]"},
      // reshape_like: x viewed with like's shape.
      {.name = "reshape_like", .op = "reshape_like", .inputs = {in({2, 6}), in({3, 4})}, .dtypes = all_floats,
       .grad_inputs = {0}},
      {.name = "reshape_like/to-scalar", .op = "reshape_like", .inputs = {in({1, 1}), in({})}, .grad_inputs = {0}},
      {.name = "reshape_like/bad", .op = "reshape_like", .inputs = {in({2, 3}), in({4})},
       .error = "[reshape_like] cannot reshape [2,3] (6 elements) to the shape of like [4] (4 elements)"},
      // sum_to_like: g summed down to like's shape.
      {.name = "sum_to_like/lead-and-ones", .op = "sum_to_like", .inputs = {in({4, 2, 3}), in({2, 1})},
       .dtypes = all_floats, .grad_inputs = {0}, .rtol = 1e-4},
      {.name = "sum_to_like/same", .op = "sum_to_like", .inputs = {in({2, 3}), in({2, 3})}, .grad_inputs = {0}},
      {.name = "sum_to_like/leading-one", .op = "sum_to_like", .inputs = {in({1, 2, 3}), in({2, 3})},
       .grad_inputs = {0}},
      {.name = "sum_to_like/to-scalar", .op = "sum_to_like", .inputs = {in({3, 4}), in({})}, .grad_inputs = {0}},
      {.name = "sum_to_like/int", .op = "sum_to_like", .inputs = {in_int({3, 2}, -5, 5), in({1, 2})},
       .gradcheck = false},
      {.name = "sum_to_like/bad", .op = "sum_to_like", .inputs = {in({2, 3}), in({2, 2})},
       .error = "[sum_to_like] cannot sum [2,3] down to the shape of like [2,2]"},
      // size: the element count.
      {.name = "size", .op = "size", .inputs = {in({2, 3})}, .gradcheck = false},
      {.name = "size/int32-of-int", .op = "size", .inputs = {in_int({4}, 0, 3)}, .attrs = {{"out_type", DType::Int32}},
       .gradcheck = false},
      {.name = "size/bad-type", .op = "size", .inputs = {in({2})}, .attrs = {{"out_type", DType::Float32}},
       .error = "[size] out_type must be int32 or int64, got float32"},
      // sum_to with a tensor: static when like's shape is known.
      {.name = "sum_to(like)", .inputs = {in({4, 2, 3}), in({1, 3})},
       .fn = [](const TensorList& x) { return TensorList{sum_to(x[0], x[1])}; }, .grad_inputs = {0}},
  };
}

}  // namespace deepflow::testing
