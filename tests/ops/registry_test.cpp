// SPDX-License-Identifier: Apache-2.0
// Every primitive of op_list.h is complete: an OpDef with infer, a vjp or an
// explicit non-differentiable mark, a reference kernel, and a row in the op table.
#include <gtest/gtest.h>

#include <set>

#include "deepflow/ops/kernel.h"
#include "op_cases.h"

namespace deepflow::testing {
namespace {

TEST(Registry, EveryPrimitiveIsComplete) {
  std::set<std::string> rows;
  for (const OpCase& c : all_op_cases())
    if (!c.op.empty()) rows.insert(c.op);
  int complete = 0;
  for (int i = 0; i < kNumPrimitives; ++i) {
    OpId id = OpId(i);
    const char* name = primitive_name(id);
    const OpDef* def = find_op_def(id);
    if (!def) {
      ADD_FAILURE() << name << ": no OpDef (DF_DEFINE_OP)";
      continue;
    }
    bool ok = true;
    if (!def->infer) ok = false, ADD_FAILURE() << name << ": no infer";
    if (!def->vjp && !def->non_differentiable) ok = false, ADD_FAILURE() << name << ": no vjp and not marked non_differentiable";
    bool has_ref = false;
    for (const KernelDef& k : kernels_for(id)) has_ref |= k.priority == kRefPriority;
    if (!has_ref) ok = false, ADD_FAILURE() << name << ": no reference kernel";
    if (!rows.count(name)) ok = false, ADD_FAILURE() << name << ": no row in tests/ops/op_cases_*.cpp";
    complete += ok;
  }
  RecordProperty("complete_primitives", complete);
  std::printf("registry: %d of %d primitives complete\n", complete, kNumPrimitives);
}

TEST(Registry, NamesRoundTrip) {
  for (int i = 0; i < kNumPrimitives; ++i) {
    const OpDef* def = find_op_def(OpId(i));
    if (!def) continue;
    EXPECT_EQ(op_id_from_name(def->name), OpId(i));
    EXPECT_EQ(def->name, primitive_name(OpId(i)));
  }
}

TEST(Registry, UnknownOpNameIsAnError) {
  try {
    op_id_from_name("no_such_op");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[op] unknown op 'no_such_op'");
  }
}

TEST(Registry, RowsNameRegisteredOps) {
  for (const OpCase& c : all_op_cases()) {
    if (!c.op.empty()) {
      EXPECT_NO_THROW(op_id_from_name(c.op)) << c.name;
    }
  }
}

}  // namespace
}  // namespace deepflow::testing
