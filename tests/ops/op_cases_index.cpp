// SPDX-License-Identifier: Apache-2.0
// Op-table rows of the indexing family (ops/index.cpp).
#include "op_cases.h"

namespace deepflow::testing {

namespace {
using Ints = std::vector<int64_t>;
Tensor i64(std::vector<int64_t> v, Shape s) { return constant(v, s); }
}  // namespace

DF_OP_CASES(index) {
  const std::vector<DType> all_float = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16};
  return {
      // gather
      // graph_unknown_dims: params dim 0 unknown: the gradient's unsorted_segment_sum needs a static num_segments
      {.name = "gather/axis0", .op = "gather", .inputs = {in({5, 3}), in_int({4}, 0, 5)}, .dtypes = all_float,
       .grad_inputs = {0}, .graph_unknown_dims = false},
      {.name = "gather/axis1-2d-indices", .op = "gather", .inputs = {in({3, 5, 2}), in_int({2, 4}, 0, 5)},
       .attrs = {{"axis", int64_t(1)}}, .grad_inputs = {0}},
      {.name = "gather/neg-axis-int32", .op = "gather",
       .inputs = {in({2, 3, 4}), in_int({6}, 0, 4, DType::Int32)}, .attrs = {{"axis", int64_t(-1)}},
       .grad_inputs = {0}},
      {.name = "gather/scalar-index", .op = "gather", .inputs = {in({4, 3}), in_int({}, 0, 4)},
       .grad_inputs = {0}, .graph_unknown_dims = false},
      // graph_unknown_dims: the gradient with batch_dims needs static shapes
      {.name = "gather/batch_dims1", .op = "gather", .inputs = {in({2, 5, 3}), in_int({2, 4}, 0, 5)},
       .attrs = {{"axis", int64_t(1)}, {"batch_dims", int64_t(1)}}, .grad_inputs = {0}, .graph_unknown_dims = false},
      {.name = "gather/batch_dims1-axis2", .op = "gather", .inputs = {in({2, 3, 6, 2}), in_int({2, 4}, 0, 6)},
       .attrs = {{"axis", int64_t(2)}, {"batch_dims", int64_t(-1)}}, .grad_inputs = {0}, .graph_unknown_dims = false},
      {.name = "gather/int-params", .op = "gather", .inputs = {in_int({6, 2}, -9, 9), in_int({3}, 0, 6)},
       .gradcheck = false},
      {.name = "gather/bool-params", .op = "gather", .inputs = {in_bool({6}), in_int({4}, 0, 6)}, .gradcheck = false},
      {.name = "gather/out-of-range", .op = "gather", .inputs = {in({5, 2}), in_fixed(i64({0, 7}, {2}))},
       .error = "[gather] indices[1] = 7 is not in [0, 5)"},
      {.name = "gather/negative-index", .op = "gather", .inputs = {in({5, 2}), in_fixed(i64({0, 1, 2, -1}, {2, 2}))},
       .error = "[gather] indices[1,1] = -1 is not in [0, 5)"},
      {.name = "gather/float-indices", .op = "gather", .inputs = {in({5, 2}), in({2})},
       .error = "[gather] expects int32 or int64 indices, got float32"},
      {.name = "gather/batch-dims-mismatch", .op = "gather", .inputs = {in({2, 5}), in_int({3, 1}, 0, 5)},
       .attrs = {{"axis", int64_t(1)}, {"batch_dims", int64_t(1)}},
       .error = "[gather] params [2,5] and indices [3,1] differ"},
      // gather_nd
      // graph_unknown_dims: the gradient (scatter_nd) needs the static shape of params
      {.name = "gather_nd/slices", .op = "gather_nd", .inputs = {in({4, 5, 3}), in_int({6, 2}, 0, 4)},
       .dtypes = all_float, .grad_inputs = {0}, .graph_unknown_dims = false},
      {.name = "gather_nd/elements", .op = "gather_nd", .inputs = {in({3, 3}), in_int({2, 2, 2}, 0, 3)},
       .grad_inputs = {0}, .graph_unknown_dims = false},
      {.name = "gather_nd/int32", .op = "gather_nd",
       .inputs = {in_int({4, 4}, 0, 9, DType::Int32), in_int({3, 1}, 0, 4, DType::Int32)}, .gradcheck = false},
      {.name = "gather_nd/out-of-range", .op = "gather_nd", .inputs = {in({2, 4}), in_fixed(i64({0, 1, 1, 5}, {2, 2}))},
       .error = "[gather_nd] indices[1] = [1, 5] does not index into params of shape [2,4]"},
      {.name = "gather_nd/too-deep", .op = "gather_nd", .inputs = {in({2, 4}), in_int({2, 3}, 0, 2)},
       .error = "[gather_nd] index depth 3"},
      // scatter_nd
      {.name = "scatter_nd/rows-with-duplicates", .op = "scatter_nd",
       .inputs = {in_fixed(i64({0, 3, 0, 1, 3, 3}, {6, 1})), in({6, 3})}, .attrs = {{"shape", Ints{4, 3}}},
       .dtypes = all_float, .grad_inputs = {1}},
      {.name = "scatter_nd/elements", .op = "scatter_nd", .inputs = {in_int({5, 2}, 0, 3), in({5})},
       .attrs = {{"shape", Ints{3, 3}}}, .grad_inputs = {1}},
      {.name = "scatter_nd/int", .op = "scatter_nd", .inputs = {in_int({4, 1}, 0, 3), in_int({4}, -5, 5)},
       .attrs = {{"shape", Ints{3}}}, .gradcheck = false},
      {.name = "scatter_nd/out-of-range", .op = "scatter_nd", .inputs = {in_fixed(i64({1, 4}, {2, 1})), in({2})},
       .attrs = {{"shape", Ints{4}}}, .error = "[scatter_nd] indices[1] = [4] does not index into shape [4]"},
      {.name = "scatter_nd/bad-updates", .op = "scatter_nd", .inputs = {in_int({2, 1}, 0, 4), in({3})},
       .attrs = {{"shape", Ints{4}}}, .error = "[scatter_nd] updates [3] must have shape"},
      // unsorted_segment_sum
      {.name = "unsorted_segment_sum/dropped-ids", .op = "unsorted_segment_sum",
       .inputs = {in({8, 3}), in_fixed(i64({0, 2, -1, 2, 4, 3, 0, 1}, {8}))}, .attrs = {{"num_segments", int64_t(4)}},
       .dtypes = all_float, .grad_inputs = {0}},
      {.name = "unsorted_segment_sum/random", .op = "unsorted_segment_sum", .inputs = {in({10}), in_int({10}, -1, 6)},
       .attrs = {{"num_segments", int64_t(5)}}, .grad_inputs = {0}},
      {.name = "unsorted_segment_sum/2d-ids", .op = "unsorted_segment_sum",
       .inputs = {in({2, 3, 2}), in_int({2, 3}, 0, 3, DType::Int32)}, .attrs = {{"num_segments", int64_t(3)}},
       .grad_inputs = {0}},
      {.name = "unsorted_segment_sum/int", .op = "unsorted_segment_sum",
       .inputs = {in_int({6}, -9, 9, DType::Int32), in_int({6}, 0, 3)}, .attrs = {{"num_segments", int64_t(3)}},
       .gradcheck = false},
      {.name = "unsorted_segment_sum/not-prefix", .op = "unsorted_segment_sum",
       .inputs = {in({4, 3}), in_int({3}, 0, 2)},
       .attrs = {{"num_segments", int64_t(2)}},
       .error = "[unsorted_segment_sum] segment_ids [3] must be a prefix of data's shape [4,3]"},
      // one_hot (composite)
      {.name = "one_hot/last-axis", .inputs = {in_fixed(i64({0, 2, -1, 5, 1}, {5}))},
       .fn = [](const TensorList& x) { return TensorList{one_hot(x[0], 3)}; }, .gradcheck = false},
      {.name = "one_hot/axis0-on-off", .inputs = {in_int({2, 3}, -1, 4, DType::Int32)},
       .fn = [](const TensorList& x) { return TensorList{one_hot(x[0], 4, 5.0, -1.0, 0, DType::Float64)}; },
       .gradcheck = false},
      {.name = "one_hot/bad-axis", .inputs = {in_int({2}, 0, 2)},
       .fn = [](const TensorList& x) { return TensorList{one_hot(x[0], 2, 1, 0, 3)}; },
       .error = "[one_hot] axis 3 must be -1 or in [0, 1]"},
      // composites of this family used with gradients
      {.name = "gather/fn", .inputs = {in({4, 3}), in_int({5}, 0, 4)},
       .fn = [](const TensorList& x) { return TensorList{gather(x[0], x[1], 1 - 1)}; }, .grad_inputs = {0}, .graph_unknown_dims = false},
      {.name = "gather_nd/fn", .inputs = {in({3, 2}), in_int({2, 1}, 0, 3)},
       .fn = [](const TensorList& x) { return TensorList{gather_nd(x[0], x[1])}; }, .grad_inputs = {0}, .graph_unknown_dims = false},
      {.name = "scatter_nd/fn", .inputs = {in_int({2, 1}, 0, 3), in({2, 2})},
       .fn = [](const TensorList& x) { return TensorList{scatter_nd(x[0], x[1], {3, 2})}; }, .grad_inputs = {1}},
      {.name = "unsorted_segment_sum/fn", .inputs = {in({4, 2}), in_int({4}, 0, 3)},
       .fn = [](const TensorList& x) { return TensorList{unsorted_segment_sum(x[0], x[1], 3)}; }, .grad_inputs = {0}},
  };
}

}  // namespace deepflow::testing
