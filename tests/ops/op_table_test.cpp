// SPDX-License-Identifier: Apache-2.0
// The generic tests every row of the op table runs (see op_cases.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "deepflow/ops/kernel.h"
#include "op_cases.h"

namespace deepflow::testing {
namespace {

// Tolerance scale for a dtype relative to float32.
double tol_scale(DType t) {
  switch (t) {
    case DType::BFloat16: return 2000;  // 8 bits of mantissa
    case DType::Float16: return 300;
    default: return 1;
  }
}

void expect_close(const Tensor& want, const Tensor& got, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  ASSERT_EQ(want.shape(), got.shape()) << what;
  int reported = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    double a = want.flat(i), b = got.flat(i);
    bool same = (std::isnan(a) && std::isnan(b)) || a == b || std::fabs(a - b) <= atol + rtol * std::fabs(a);
    if (!same && reported++ < 5) ADD_FAILURE() << what << ": element " << i << " want " << a << " got " << b;
  }
}

std::string row_label(const ::testing::TestParamInfo<OpCase>& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s + "_" + std::to_string(info.index);
}

class OpTable : public ::testing::TestWithParam<OpCase> {};

// Every kernel registered for the row's primitive agrees with the reference kernel.
TEST_P(OpTable, KernelsMatchReference) {
  const OpCase& c = GetParam();
  if (!c.error.empty() || c.op.empty() || c.fn) GTEST_SKIP() << "composite or error row";
  OpId id = op_id_from_name(c.op);
  const OpDef& def = op_def(id);
  for (DType dt : c.dtypes) {
    TensorList xs = make_inputs(c, dt);
    const KernelDef* ref = nullptr;
    for (const KernelDef& k : kernels_for(id))
      if (k.priority == kRefPriority) ref = &k;
    ASSERT_NE(ref, nullptr) << c.op << " has no reference kernel";
    OpCall call{&def, xs, &c.attrs, {}};
    if (ref->supports && !ref->supports(call)) continue;
    if (def.stateful) continue;  // random ops: every call differs by design
    TensorList want = run_kernel(*ref, id, xs, c.attrs);
    for (const KernelDef& k : kernels_for(id)) {
      if (&k == ref || (k.supports && !k.supports(call))) continue;
      TensorList got = run_kernel(k, id, xs, c.attrs);
      ASSERT_EQ(want.size(), got.size());
      for (size_t o = 0; o < want.size(); ++o)
        expect_close(want[o], got[o], c.rtol * tol_scale(dt), c.atol * tol_scale(dt),
                     detail::cat(c.name, " kernel ", k.name, " output ", o, " dtype ", dtype_name(dt)));
    }
  }
}

// infer's dtypes and shapes equal the real outputs'; an error row throws the expected message.
TEST_P(OpTable, InferMatchesOutput) {
  const OpCase& c = GetParam();
  DType dt = c.dtypes.empty() ? DType::Float32 : c.dtypes[0];
  TensorList xs = make_inputs(c, dt);
  if (!c.error.empty()) {
    try {
      run_row(c, xs);
      FAIL() << c.name << ": expected an error containing '" << c.error << "'";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(c.error));
      EXPECT_EQ(e.what()[0], '[') << e.what();
    }
    return;
  }
  TensorList outs = run_row(c, xs);
  if (c.fn || c.op.empty()) return;
  TypeList types = infer_types(op_id_from_name(c.op), xs, c.attrs);
  ASSERT_EQ(types.size(), outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    EXPECT_EQ(types[i].dtype, outs[i].dtype()) << c.name << " output " << i;
    EXPECT_EQ(types[i].shape, outs[i].shape()) << c.name << " output " << i;
  }
}

// Tape gradients agree with float64 central differences.
TEST_P(OpTable, Gradcheck) {
  const OpCase& c = GetParam();
  if (!c.gradcheck || !c.error.empty()) GTEST_SKIP() << "not differentiable";
  TensorList xs = make_inputs(c, DType::Float64);
  GradcheckResult r = gradcheck([&](const TensorList& x) { return run_row(c, x); }, xs, c.grad_inputs);
  EXPECT_LE(r.max_error, c.grad_tol) << c.name << ": " << r.worst;
}

INSTANTIATE_TEST_SUITE_P(Rows, OpTable, ::testing::ValuesIn(all_op_cases()), row_label);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpTable);

class KinkTable : public ::testing::TestWithParam<KinkCase> {};

// The tie rule at a kink: the tape's gradient of sum(outputs) is exactly the documented one.
TEST_P(KinkTable, TieRule) {
  const KinkCase& k = GetParam();
  TensorList xs;
  for (const Tensor& t : k.inputs) xs.push_back(t.clone());
  GradientTape tape;
  for (const Tensor& x : xs) tape.watch(x);
  TensorList outs = k.fn(xs);
  Tensor total;
  for (const Tensor& o : outs) total = total.defined() ? add(total, reduce_sum(o)) : reduce_sum(o);
  TensorList grads = tape.gradient({total}, xs, UnconnectedGradients::Zero);
  ASSERT_EQ(grads.size(), k.grads.size());
  for (size_t i = 0; i < grads.size(); ++i)
    expect_close(k.grads[i], grads[i], 0, 0, detail::cat(k.name, " input ", i));
}

std::string kink_label(const ::testing::TestParamInfo<KinkCase>& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Kinks, KinkTable, ::testing::ValuesIn(all_kink_cases()), kink_label);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(KinkTable);

}  // namespace
}  // namespace deepflow::testing
