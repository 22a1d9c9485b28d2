// SPDX-License-Identifier: Apache-2.0
// Storage for the rows registered by tests/ops/op_cases_<family>.cpp.
#include "op_cases.h"

#include <random>

namespace deepflow::testing {

std::vector<OpCase>& all_op_cases() {
  static std::vector<OpCase> cases;
  return cases;
}
std::vector<KinkCase>& all_kink_cases() {
  static std::vector<KinkCase> cases;
  return cases;
}
OpCaseRegistrar::OpCaseRegistrar(std::vector<OpCase> (*make)()) {
  for (OpCase& c : make()) all_op_cases().push_back(std::move(c));
}
OpCaseRegistrar::OpCaseRegistrar(std::vector<KinkCase> (*make)()) {
  for (KinkCase& c : make()) all_kink_cases().push_back(std::move(c));
}

TensorList make_inputs(const OpCase& c, DType float_dtype) {
  std::mt19937_64 rng(std::hash<std::string>{}(c.name));
  TensorList xs;
  for (const InputSpec& s : c.inputs) {
    switch (s.kind) {
      case InputSpec::Kind::Float: {
        std::uniform_real_distribution<double> u(s.lo, s.hi);
        std::vector<double> v(size_t(s.shape.num_elements()));
        for (double& x : v) {
          x = u(rng);
          if (s.min_abs > 0) {
            double m = std::uniform_real_distribution<double>(s.min_abs, std::max(s.hi, s.min_abs))(rng);
            x = x < 0 ? -m : m;
          }
        }
        xs.push_back(constant(v, s.shape, float_dtype));
        break;
      }
      case InputSpec::Kind::Int: {
        std::uniform_int_distribution<int64_t> u(int64_t(s.lo), int64_t(s.hi) - 1);
        std::vector<double> v(size_t(s.shape.num_elements()));
        for (double& x : v) x = double(u(rng));
        xs.push_back(constant(v, s.shape, s.int_dtype));
        break;
      }
      case InputSpec::Kind::Bool: {
        std::vector<double> v(size_t(s.shape.num_elements()));
        for (double& x : v) x = double(rng() & 1);
        xs.push_back(constant(v, s.shape, DType::Bool));
        break;
      }
      case InputSpec::Kind::Fixed:
        xs.push_back(is_floating(s.fixed.dtype()) ? cast(s.fixed, float_dtype) : s.fixed);
        break;
    }
  }
  return xs;
}

TensorList run_row(const OpCase& c, const TensorList& xs) {
  if (c.fn) return c.fn(xs);
  return dispatch(op_id_from_name(c.op), xs, c.attrs);
}

}  // namespace deepflow::testing
