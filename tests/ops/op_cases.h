// SPDX-License-Identifier: Apache-2.0
// The op table: one row per primitive (and per composite) drives every generic
// op test in op_table_test.cpp:
//   - every registered kernel against the reference kernel, for each dtype of the row;
//   - `infer` against the real output's dtype and shape;
//   - a float64 finite-difference gradient check (relative error <= 1e-6);
// Kink rows pin the tie rule: the exact gradient at a point where the op has a kink.
//
// Rows live in tests/ops/op_cases_<family>.cpp, next to no other code:
//
//   DF_OP_CASES(binary) {
//     return {
//       {.name = "add/broadcast", .op = "add", .inputs = {in({2, 3}), in({3})}},
//       {.name = "maximum/ties", .op = "maximum", .inputs = {in({4}), in({4})}},
//     };
//   }
//   DF_KINK_CASES(unary) {
//     return {{.name = "relu'(0)=0", .fn = [](const TensorList& x) { return TensorList{relu(x[0])}; },
//              .inputs = {f64({0.0}, {1})}, .grads = {f64({0.0}, {1})}}};
//   }
#pragma once

#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "deepflow/deepflow.h"

namespace deepflow::testing {

/// How to make one input of a row.
struct InputSpec {
  Shape shape;
  enum class Kind { Float, Int, Bool, Fixed } kind = Kind::Float;
  double lo = -2, hi = 2;   ///< range of Float and Int values (Int: [lo, hi))
  double min_abs = 0;       ///< Float: |x| >= min_abs (keeps finite differences off kinks at 0)
  DType int_dtype = DType::Int64;
  Tensor fixed;             ///< Kind::Fixed: used as is (any dtype; floats are converted per row dtype)
};

/// A float input of the given shape, uniform in [lo, hi).
inline InputSpec in(Shape s, double lo = -2, double hi = 2) { return {.shape = s, .lo = lo, .hi = hi}; }
/// A float input with |x| in [min_abs, hi) and a random sign.
inline InputSpec in_away(Shape s, double min_abs, double hi = 2) {
  return {.shape = s, .lo = -hi, .hi = hi, .min_abs = min_abs};
}
/// An integer input (int64 unless told) uniform in [lo, hi).
inline InputSpec in_int(Shape s, int64_t lo, int64_t hi, DType dt = DType::Int64) {
  return {.shape = s, .kind = InputSpec::Kind::Int, .lo = double(lo), .hi = double(hi), .int_dtype = dt};
}
/// A random bool input.
inline InputSpec in_bool(Shape s) { return {.shape = s, .kind = InputSpec::Kind::Bool}; }
/// A fixed tensor.
inline InputSpec in_fixed(Tensor t) { return {.shape = t.shape(), .kind = InputSpec::Kind::Fixed, .fixed = t}; }

/// A float64 tensor from values (for kink rows and fixed inputs).
inline Tensor f64(std::vector<double> v, Shape s) { return constant(v, s); }

struct OpCase {
  std::string name;                  ///< "add/broadcast"
  std::string op;                    ///< the primitive this row tests (its serialized name)
  std::vector<InputSpec> inputs;
  Attrs attrs;
  /// For composites: computes the outputs. Unset: dispatch(op, inputs, attrs).
  std::function<TensorList(const TensorList&)> fn;
  /// Dtypes the kernels are compared in; float inputs are converted to each.
  std::vector<DType> dtypes = {DType::Float32, DType::Float64};
  bool gradcheck = true;             ///< false for non-differentiable ops
  std::vector<int> grad_inputs;      ///< inputs to gradcheck (all floating inputs when empty)
  double grad_tol = 1e-6;
  /// Kernel-vs-reference tolerance for float32 (scaled up for 16-bit types).
  double rtol = 1e-5, atol = 1e-5;
  /// Expected error substring: the row checks that the call throws deepflow::Error with it.
  std::string error;
  /// op_graph_test also runs the row in a graph whose inputs have an unknown (-1) leading
  /// dim; false where that cannot work (a composite that needs the static size of that dim).
  bool graph_unknown_dims = true;
};

/// d outputs / d inputs at an exact point, compared with the tape's gradient.
struct KinkCase {
  std::string name;
  std::function<TensorList(const TensorList&)> fn;
  TensorList inputs;  ///< float64
  TensorList grads;   ///< expected gradient of sum(outputs) for each input
};

/// gtest prints rows and kink rows by name (not as bytes).
inline void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }
inline void PrintTo(const KinkCase& c, std::ostream* os) { *os << c.name; }

/// A row's inputs, floats in float_dtype; deterministic (seeded by the row name).
TensorList make_inputs(const OpCase& c, DType float_dtype);
/// Runs a row: its fn, or dispatch(op, inputs, attrs).
TensorList run_row(const OpCase& c, const TensorList& xs);

std::vector<OpCase>& all_op_cases();
std::vector<KinkCase>& all_kink_cases();
struct OpCaseRegistrar {
  explicit OpCaseRegistrar(std::vector<OpCase> (*make)());
  explicit OpCaseRegistrar(std::vector<KinkCase> (*make)());
};

}  // namespace deepflow::testing

#define DF_OP_CASES(family)                                                                    \
  static std::vector<::deepflow::testing::OpCase> df_op_cases_##family();                      \
  static ::deepflow::testing::OpCaseRegistrar df_op_cases_reg_##family(&df_op_cases_##family); \
  static std::vector<::deepflow::testing::OpCase> df_op_cases_##family()
#define DF_KINK_CASES(family)                                                                    \
  static std::vector<::deepflow::testing::KinkCase> df_kink_cases_##family();                    \
  static ::deepflow::testing::OpCaseRegistrar df_kink_cases_reg_##family(&df_kink_cases_##family); \
  static std::vector<::deepflow::testing::KinkCase> df_kink_cases_##family()
