// SPDX-License-Identifier: Apache-2.0
// Storage for the rows registered by tests/ops/op_cases_<family>.cpp.
#include "op_cases.h"

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

}  // namespace deepflow::testing
