// SPDX-License-Identifier: Apache-2.0
// Small SavedModels for the serving tests, written into a model base path as numbered
// versions, and a scratch directory (tests/io/io_test_util.h's TempDir).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "deepflow/io/saved_model.h"
#include "deepflow/ops/ops.h"
#include "io/io_test_util.h"

namespace deepflow::testing {

/// <base>/<version>: y = 0.5 * x + offset (TF Serving's half_plus_two test model, with
/// offset = 2 unless given; use the offset to tell versions apart). Signature
/// "serving_default": input "x" float32 [-1], output "y" float32 [-1]; plus signature
/// "regress_x_to_y" (the same function, method tensorflow/serving/regress) and
/// "classify_x_to_y" (scores "scores" [-1, 2] = [y, -y], method .../classify) with input
/// key "x" so the server parses tf.Examples with a float feature "x".
inline std::string save_half_plus(const std::string& base, int64_t version, float offset = 2.f) {
  std::filesystem::create_directories(base);
  std::string dir = base + "/" + std::to_string(version);
  Variable a(scalar(0.5), "a");
  Variable b(scalar(offset), "b");
  FunctionOptions opts{.name = "half_plus", .input_signature = Signature{{DType::Float32, Shape({-1})}}};
  Function f = function([&](const Tensor& x) { return add(mul(x, a.value()), b.value()); }, opts);
  opts.name = "half_plus_scores";
  opts.input_signature = Signature{{DType::Float32, Shape({-1, 1})}};
  Function c = function(
      [&](const Tensor& x) {
        Tensor y = add(mul(x, a.value()), b.value());
        return concat({y, neg(y)}, 1);
      },
      opts);
  io::save_saved_model(dir, {{.key = "serving_default", .fn = f.get_concrete_function(), .input_names = {"x"},
                              .output_names = {"y"}},
                             {.key = "regress_x_to_y", .fn = f.get_concrete_function(), .input_names = {"x"},
                              .output_names = {"outputs"}, .method_name = "tensorflow/serving/regress"},
                             {.key = "classify_x_to_y", .fn = c.get_concrete_function(), .input_names = {"x"},
                              .output_names = {"scores"}, .method_name = "tensorflow/serving/classify"}});
  return dir;
}

/// <base>/<version>: a dense layer y = x w + b with x [-1, in], y [-1, out] and
/// deterministic weights (seed); `in * out` floats of weights (use a large `in` for a
/// big model).
inline std::string save_dense(const std::string& base, int64_t version, int64_t in, int64_t out,
                              int64_t seed = 1) {
  std::filesystem::create_directories(base);
  std::string dir = base + "/" + std::to_string(version);
  Variable w(random_normal({in, out}, 0, 1, DType::Float32, seed), "dense/kernel");
  Variable b(zeros({out}), "dense/bias");
  Function f = function([&](const Tensor& x) { return add(matmul(x, w.value()), b.value()); },
                        {.name = "dense", .input_signature = Signature{{DType::Float32, Shape({-1, in})}}});
  io::save_saved_model(dir, {{.fn = f.get_concrete_function(), .input_names = {"x"}, .output_names = {"y"}}});
  return dir;
}

}  // namespace deepflow::testing
