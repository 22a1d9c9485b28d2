// SPDX-License-Identifier: Apache-2.0
// Op-table rows of the random family (ops/random.cpp). Random ops are stateful,
// so the runner checks only infer and errors; values are in random_test.cpp.
#include "op_cases.h"

namespace deepflow::testing {
namespace {

Attrs random_row(const std::string& op, std::vector<int64_t> shape, DType dt) {
  Attrs a{{"shape", std::move(shape)}, {"dtype", dt}, {"seed", int64_t(11)}, {"seed2", int64_t(7)}};
  if (op == "random_uniform") {
    a.set("minval", -1.0);
    a.set("maxval", 3.0);
  } else {
    a.set("mean", 0.5);
    a.set("stddev", 2.0);
  }
  return a;
}

}  // namespace

DF_OP_CASES(random) {
  std::vector<OpCase> rows;
  for (const char* op : {"random_uniform", "random_normal", "truncated_normal"}) {
    std::string o = op;
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16})
      rows.push_back({.name = o + "/" + dtype_name(dt), .op = o, .attrs = random_row(o, {5, 7}, dt),
                      .dtypes = {DType::Float32}, .gradcheck = false});
    rows.push_back({.name = o + "/scalar", .op = o, .attrs = random_row(o, {}, DType::Float32),
                    .dtypes = {DType::Float32}, .gradcheck = false});
    rows.push_back({.name = o + "/empty", .op = o, .attrs = random_row(o, {3, 0}, DType::Float32),
                    .dtypes = {DType::Float32}, .gradcheck = false});
    rows.push_back({.name = o + "/odd-size", .op = o, .attrs = random_row(o, {3, 3, 3}, DType::Float64),
                    .dtypes = {DType::Float32}, .gradcheck = false});
    rows.push_back({.name = o + "/like", .op = o, .inputs = {in({4, 3})}, .attrs = random_row(o, {-1, 3}, DType::Float32),
                    .dtypes = {DType::Float32}, .gradcheck = false});
    rows.push_back({.name = o + "/two-inputs", .op = o, .inputs = {in({4, 3}), in({2})},
                    .attrs = random_row(o, {4, 3}, DType::Float32), .dtypes = {DType::Float32}, .gradcheck = false,
                    .error = "[" + o + "] takes no input or one whose shape it copies, got 2 inputs"});
    rows.push_back({.name = o + "/int-dtype", .op = o, .attrs = random_row(o, {2}, DType::Int32),
                    .dtypes = {DType::Float32}, .gradcheck = false,
                    .error = "[" + o + "] expects a floating dtype, got int32"});
    rows.push_back({.name = o + "/negative-dim", .op = o, .attrs = random_row(o, {2, -3}, DType::Float32),
                    .dtypes = {DType::Float32}, .gradcheck = false,
                    .error = "[" + o + "] shape must not have negative dims, got [2,-3]"});
  }
  return rows;
}

}  // namespace deepflow::testing
