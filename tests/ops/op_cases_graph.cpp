// SPDX-License-Identifier: Apache-2.0
// Op-table rows of the graph building blocks (ops/graph_ops.cpp). They run eagerly
// too; placeholder must be fed, so eagerly it is an error row.
#include "op_cases.h"

namespace deepflow::testing {

DF_OP_CASES(graph) {
  static Variable v(constant({1.f, 2.f, 3.f}), "op_cases/v");
  return {
      {.name = "const", .op = "const", .attrs = {{"value", constant({1.f, 2.f}, {2, 1})}}, .gradcheck = false},
      {.name = "placeholder/unfed", .op = "placeholder", .attrs = {{"dtype", DType::Float32}, {"shape", std::vector<int64_t>{2, 3}}},
       .error = "[placeholder] a placeholder of type float32[2,3] must be fed"},
      {.name = "placeholder/unknown-dims", .op = "placeholder",
       .attrs = {{"dtype", DType::Float32}, {"shape", std::vector<int64_t>{-1, 3}}},
       .error = "[placeholder] output shape [?,3] is not fully known"},
      {.name = "read_variable", .op = "read_variable", .attrs = {{"variable", v}}, .gradcheck = false},
      {.name = "assign_variable/shape-mismatch", .op = "assign_variable", .inputs = {in({2})}, .attrs = {{"variable", v}},
       .error = "[assign_variable] 'op_cases/v' is float32[3], value is float32[2]"},
      {.name = "zeros_like", .op = "zeros_like", .inputs = {in({3, 2})}, .dtypes = {DType::Float32, DType::Float64, DType::BFloat16},
       .gradcheck = false},
      {.name = "ones_like/int", .op = "ones_like", .inputs = {in_int({4}, 0, 5)}, .gradcheck = false},
      {.name = "no_op", .op = "no_op", .inputs = {in({2}), in_int({1}, 0, 3)}, .gradcheck = false},
  };
}

}  // namespace deepflow::testing
