// SPDX-License-Identifier: Apache-2.0
// Op-table rows of the reduction family (ops/reduce.cpp).
#include "op_cases.h"

namespace deepflow::testing {

namespace {
Attrs red(Axes axes, bool keepdims = false) { return {{"axes", std::move(axes)}, {"keepdims", keepdims}}; }
}  // namespace

DF_OP_CASES(reduce) {
  const std::vector<DType> all_float = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16};
  const double inf = std::numeric_limits<double>::infinity();
  return {
      // reduce_sum: every coalesced pattern of the cpu kernel, plus ones it leaves to ref.
      {.name = "reduce_sum/all", .op = "reduce_sum", .inputs = {in({3, 4})}, .dtypes = all_float},
      {.name = "reduce_sum/rows", .op = "reduce_sum", .inputs = {in({5, 7})}, .attrs = red({1}), .dtypes = all_float},
      {.name = "reduce_sum/cols-keepdims", .op = "reduce_sum", .inputs = {in({6, 5})}, .attrs = red({0}, true),
       .dtypes = all_float},
      {.name = "reduce_sum/middle", .op = "reduce_sum", .inputs = {in({4, 5, 6})}, .attrs = red({1})},
      {.name = "reduce_sum/negative-axes", .op = "reduce_sum", .inputs = {in({2, 3, 4})}, .attrs = red({-1, 0})},
      {.name = "reduce_sum/duplicate-axes", .op = "reduce_sum", .inputs = {in({2, 3, 4})}, .attrs = red({1, -2})},
      {.name = "reduce_sum/strided-pattern", .op = "reduce_sum", .inputs = {in({2, 3, 4, 5})}, .attrs = red({1, 3}, true)},
      {.name = "reduce_sum/size-one-dims", .op = "reduce_sum", .inputs = {in({1, 4, 1, 3})}, .attrs = red({0, 2})},
      {.name = "reduce_sum/scalar", .op = "reduce_sum", .inputs = {in({})}},
      {.name = "reduce_sum/empty", .op = "reduce_sum", .inputs = {in({0, 3})}, .attrs = red({0}), .gradcheck = false},
      {.name = "reduce_sum/large-rows", .op = "reduce_sum", .inputs = {in({3, 70000}, 0.5, 1.5)}, .attrs = red({1}),
       .gradcheck = false},
      {.name = "reduce_sum/large-all", .op = "reduce_sum", .inputs = {in({300, 1000}, 0.5, 1.5)}, .gradcheck = false},
      {.name = "reduce_sum/large-cols", .op = "reduce_sum", .inputs = {in({40000, 3}, 0.5, 1.5)}, .attrs = red({0}),
       .gradcheck = false},
      {.name = "reduce_sum/large-middle", .op = "reduce_sum", .inputs = {in({3, 2000, 100}, 0.5, 1.5)},
       .attrs = red({1}), .gradcheck = false},
      // Global pools: the middle axes of [n, h, w, c] (c over 1024: two equal blocks), and
      // [n, c, h, w]'s last two (short rows: 8-wide steps and a masked last load).
      {.name = "reduce_sum/nhwc-spatial", .op = "reduce_sum", .inputs = {in({3, 5, 7, 1100})},
       .attrs = red({1, 2}, true), .gradcheck = false},
      {.name = "reduce_sum/nhwc-spatial-small", .op = "reduce_sum", .inputs = {in({2, 3, 5, 19})},
       .attrs = red({1, 2})},
      {.name = "reduce_sum/nchw-spatial", .op = "reduce_sum", .inputs = {in({3, 11, 7, 7})}, .attrs = red({2, 3}, true),
       .dtypes = all_float, .gradcheck = false},
      {.name = "reduce_sum/nchw-spatial-small", .op = "reduce_sum", .inputs = {in({2, 3, 3, 3})}, .attrs = red({2, 3})},
      {.name = "reduce_sum/rows-41", .op = "reduce_sum", .inputs = {in({4, 41})}, .attrs = red({1})},
      {.name = "reduce_sum/int", .op = "reduce_sum", .inputs = {in_int({3, 4}, -5, 5)}, .attrs = red({1}),
       .gradcheck = false},
      {.name = "reduce_sum/int8-wraps", .op = "reduce_sum", .inputs = {in_int({4, 9}, 100, 127, DType::Int8)},
       .attrs = red({1}), .gradcheck = false},
      {.name = "reduce_sum/axis-out-of-range", .op = "reduce_sum", .inputs = {in({2, 3})}, .attrs = red({3}),
       .error = "[reduce_sum] axis 3 out of range for rank 2"},
      {.name = "reduce_sum/bool", .op = "reduce_sum", .inputs = {in_bool({2})},
       .error = "[reduce_sum] does not take bool tensors"},
      // reduce_max / reduce_min (random float64 inputs have no ties).
      {.name = "reduce_max/rows", .op = "reduce_max", .inputs = {in({4, 6})}, .attrs = red({1}), .dtypes = all_float},
      {.name = "reduce_max/all", .op = "reduce_max", .inputs = {in({3, 4, 5})}},
      {.name = "reduce_max/cols", .op = "reduce_max", .inputs = {in({3, 4, 5})}, .attrs = red({1}, true),
       .dtypes = all_float},
      {.name = "reduce_max/large", .op = "reduce_max", .inputs = {in({2, 50000})}, .attrs = red({1}), .gradcheck = false},
      {.name = "reduce_max/int", .op = "reduce_max", .inputs = {in_int({3, 4}, -9, 9, DType::Int32)},
       .attrs = red({0}), .gradcheck = false},
      {.name = "reduce_max/with-inf", .op = "reduce_max",
       .inputs = {in_fixed(f64({-inf, -inf, 1, -inf, 2, inf}, {2, 3}))}, .attrs = red({1}), .gradcheck = false},
      {.name = "reduce_min/rows", .op = "reduce_min", .inputs = {in({4, 6})}, .attrs = red({-1}), .dtypes = all_float},
      {.name = "reduce_min/cols", .op = "reduce_min", .inputs = {in({7, 3})}, .attrs = red({0})},
      {.name = "reduce_min/strided-pattern", .op = "reduce_min", .inputs = {in({3, 2, 4})}, .attrs = red({0, 2})},
      {.name = "reduce_max/nchw-spatial", .op = "reduce_max", .inputs = {in({3, 5, 7, 7})}, .attrs = red({2, 3}),
       .dtypes = all_float, .gradcheck = false},
      {.name = "reduce_min/short-rows", .op = "reduce_min", .inputs = {in({6, 5})}, .attrs = red({1})},
      {.name = "reduce_min/rows-77", .op = "reduce_min", .inputs = {in({3, 77})}, .attrs = red({1}),
       .gradcheck = false},
      {.name = "reduce_min/int", .op = "reduce_min", .inputs = {in_int({5}, -9, 9)}, .gradcheck = false},
      // reduce_prod: the gradient is checked with zeros present too (prod is a polynomial).
      {.name = "reduce_prod/rows", .op = "reduce_prod", .inputs = {in_away({3, 4}, 0.5, 1.5)}, .attrs = red({1}),
       .dtypes = all_float},
      {.name = "reduce_prod/cols", .op = "reduce_prod", .inputs = {in_away({4, 3, 2}, 0.5, 1.5)}, .attrs = red({1})},
      {.name = "reduce_prod/all", .op = "reduce_prod", .inputs = {in_away({2, 3}, 0.5, 1.5)}},
      {.name = "reduce_prod/one-zero", .op = "reduce_prod",
       .inputs = {in_fixed(f64({2, 0, -3, 1.5, 0.5, 4}, {2, 3}))}, .attrs = red({1})},
      {.name = "reduce_prod/two-zeros", .op = "reduce_prod",
       .inputs = {in_fixed(f64({2, 0, 0, 1.5, 0.5, 4}, {2, 3}))}, .attrs = red({1})},
      {.name = "reduce_prod/zero-in-column", .op = "reduce_prod",
       .inputs = {in_fixed(f64({0, 2, 1.5, 3, -1, 0.5}, {3, 2}))}, .attrs = red({0})},
      {.name = "reduce_prod/large", .op = "reduce_prod", .inputs = {in({2, 20000}, 0.9999, 1.0001)}, .attrs = red({1}),
       .gradcheck = false},
      {.name = "reduce_prod/int", .op = "reduce_prod", .inputs = {in_int({3, 4}, -3, 4)}, .attrs = red({1}),
       .gradcheck = false},
      // argmax / argmin.
      {.name = "argmax/axis1", .op = "argmax", .inputs = {in({3, 5})}, .attrs = {{"axis", int64_t(1)}},
       .dtypes = all_float, .gradcheck = false},
      {.name = "argmax/axis0-int32", .op = "argmax", .inputs = {in({4, 3, 2})},
       .attrs = {{"axis", int64_t(0)}, {"output_type", DType::Int32}}, .gradcheck = false},
      {.name = "argmax/int-ties", .op = "argmax", .inputs = {in_int({6, 4}, 0, 3)}, .attrs = {{"axis", int64_t(-1)}},
       .gradcheck = false},
      {.name = "argmax/bad-output-type", .op = "argmax", .inputs = {in({3})},
       .attrs = {{"output_type", DType::Float32}}, .error = "[argmax] output_type must be int32 or int64, got float32"},
      {.name = "argmax/axis-out-of-range", .op = "argmax", .inputs = {in({3})}, .attrs = {{"axis", int64_t(1)}},
       .error = "[argmax] axis 1 out of range for rank 1"},
      {.name = "argmin/axis1", .op = "argmin", .inputs = {in({3, 5})}, .attrs = {{"axis", int64_t(1)}},
       .gradcheck = false},
      {.name = "argmin/empty-axis", .op = "argmin", .inputs = {in({0, 2})},
       .error = "[argmin] reduction axis 0 is empty in shape [0,2]"},
      // cumsum.
      {.name = "cumsum/axis0", .op = "cumsum", .inputs = {in({4, 3})}, .dtypes = all_float},
      {.name = "cumsum/axis1-exclusive", .op = "cumsum", .inputs = {in({3, 5})},
       .attrs = {{"axis", int64_t(1)}, {"exclusive", true}}},
      {.name = "cumsum/reverse", .op = "cumsum", .inputs = {in({2, 4, 3})},
       .attrs = {{"axis", int64_t(-2)}, {"reverse", true}}},
      {.name = "cumsum/exclusive-reverse", .op = "cumsum", .inputs = {in({5})},
       .attrs = {{"exclusive", true}, {"reverse", true}}},
      {.name = "cumsum/int", .op = "cumsum", .inputs = {in_int({3, 4}, -5, 5, DType::Int32)},
       .attrs = {{"axis", int64_t(1)}}, .gradcheck = false},
      {.name = "cumsum/scalar", .op = "cumsum", .inputs = {in({})},
       .error = "[cumsum] expects a tensor of rank >= 1, got a scalar"},
      // top_k.
      {.name = "top_k/rows", .op = "top_k", .inputs = {in({3, 6})}, .attrs = {{"k", int64_t(3)}}},
      // graph_unknown_dims: the gradient needs a known last dim (one_hot depth)
      {.name = "top_k/vector-all", .op = "top_k", .inputs = {in({5})}, .attrs = {{"k", int64_t(5)}},
       .dtypes = all_float, .graph_unknown_dims = false},
      {.name = "top_k/batch-unsorted", .op = "top_k", .inputs = {in({2, 3, 4})},
       .attrs = {{"k", int64_t(2)}, {"sorted", false}}},
      {.name = "top_k/int", .op = "top_k", .inputs = {in_int({3, 8}, 0, 5, DType::Int32)},
       .attrs = {{"k", int64_t(4)}}, .gradcheck = false},
      {.name = "top_k/k-too-large", .op = "top_k", .inputs = {in({2, 6})}, .attrs = {{"k", int64_t(7)}},
       .error = "[top_k] k 7 is larger than the last dimension 6 of input [2,6]"},
      {.name = "top_k/negative-k", .op = "top_k", .inputs = {in({6})}, .attrs = {{"k", int64_t(-1)}},
       .error = "[top_k] k must be non-negative, got -1"},
      // composites.
      {.name = "reduce_mean/axis", .inputs = {in({3, 4})},
       .fn = [](const TensorList& x) { return TensorList{reduce_mean(x[0], {1})}; }},
      {.name = "reduce_mean/all-keepdims", .inputs = {in({2, 3, 2})},
       .fn = [](const TensorList& x) { return TensorList{reduce_mean(x[0], {}, true)}; }},
      {.name = "reduce_logsumexp/axis", .inputs = {in({3, 4}, -5, 5)},
       .fn = [](const TensorList& x) { return TensorList{reduce_logsumexp(x[0], {-1})}; }},
      {.name = "reduce_logsumexp/large-values", .inputs = {in({2, 3}, 500, 600)},
       .fn = [](const TensorList& x) { return TensorList{reduce_logsumexp(x[0], {0}, true)}; }},
      {.name = "moments/axes", .inputs = {in({4, 3, 2})}, .fn = [](const TensorList& x) {
         auto [m, v] = moments(x[0], {0, 2});
         return TensorList{m, v};
       }},
      {.name = "moments/keepdims", .inputs = {in({3, 5})}, .fn = [](const TensorList& x) {
         auto [m, v] = moments(x[0], {-1}, true);
         return TensorList{m, v};
       }},
  };
}

DF_KINK_CASES(reduce) {
  const double inf = std::numeric_limits<double>::infinity();
  return {
      {.name = "reduce_max ties share the gradient equally",
       .fn = [](const TensorList& x) { return TensorList{reduce_max(x[0])}; },
       .inputs = {f64({1, 3, 3, 2}, {4})}, .grads = {f64({0, 0.5, 0.5, 0}, {4})}},
      {.name = "reduce_max ties per row", .fn = [](const TensorList& x) { return TensorList{reduce_max(x[0], {1})}; },
       .inputs = {f64({2, 2, 2, 1, 5, 0}, {2, 3})}, .grads = {f64({1. / 3, 1. / 3, 1. / 3, 0, 1, 0}, {2, 3})}},
      {.name = "reduce_min ties share the gradient equally",
       .fn = [](const TensorList& x) { return TensorList{reduce_min(x[0], {0})}; },
       .inputs = {f64({1, 4, 1, 0}, {2, 2})}, .grads = {f64({0.5, 0, 0.5, 1}, {2, 2})}},
      {.name = "reduce_prod with one zero", .fn = [](const TensorList& x) { return TensorList{reduce_prod(x[0])}; },
       .inputs = {f64({2, 0, 3}, {3})}, .grads = {f64({0, 6, 0}, {3})}},
      {.name = "reduce_prod with two zeros", .fn = [](const TensorList& x) { return TensorList{reduce_prod(x[0])}; },
       .inputs = {f64({2, 0, 0}, {3})}, .grads = {f64({0, 0, 0}, {3})}},
      {.name = "top_k ties take the lower index",
       .fn = [](const TensorList& x) { return TensorList{top_k(x[0], 1).first}; },
       .inputs = {f64({1, 3, 3}, {3})}, .grads = {f64({0, 1, 0}, {3})}},
      {.name = "reduce_logsumexp of -inf gets zero gradient where exp is 0",
       .fn = [](const TensorList& x) { return TensorList{reduce_logsumexp(x[0])}; },
       .inputs = {f64({-inf, 0, 0}, {3})}, .grads = {f64({0, 0.5, 0.5}, {3})}},
  };
}

}  // namespace deepflow::testing
