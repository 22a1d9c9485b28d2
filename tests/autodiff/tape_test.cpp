// SPDX-License-Identifier: Apache-2.0
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "deepflow/deepflow.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;

std::vector<double> vec(const Tensor& t) { return t.to_vector<double>(); }

TEST(GradientTape, WatchedTensor) {
  Tensor x = constant({1.0, 2.0, 3.0}, {3}, DType::Float64);
  GradientTape tape;
  tape.watch(x);
  Tensor y = reduce_sum(x * x);
  EXPECT_EQ(vec(tape.gradient(y, x)), (std::vector<double>{2, 4, 6}));
}

TEST(GradientTape, UnwatchedTensorHasNoGradient) {
  Tensor x = constant({1.f, 2.f});
  GradientTape tape;
  Tensor y = reduce_sum(x * x);
  EXPECT_EQ(tape.num_recorded(), 0u);
  EXPECT_FALSE(tape.gradient(y, x).defined());
}

TEST(GradientTape, TrainableVariablesAreWatchedAutomatically) {
  Variable w(constant({1.f, 1.f, 1.f}), "w");
  Variable frozen(constant({2.f, 2.f, 2.f}), "frozen", /*trainable=*/false);
  Tensor x = constant({1.f, 2.f, 3.f});
  GradientTape tape;
  Tensor y = reduce_sum(w * x + frozen * w);  // w is read twice: the gradients add up
  auto g = tape.gradient(y, std::vector<Variable>{w, frozen});
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{3, 4, 5}));
  EXPECT_FALSE(g[1].defined());
}

TEST(GradientTape, WatchAccessedVariablesOff) {
  Variable w(constant({1.f}), "w");
  GradientTape tape(/*persistent=*/false, /*watch_accessed_variables=*/false);
  Tensor y = w * w;
  EXPECT_FALSE(tape.gradient(y, w).defined());
}

// watched_variables(): trainable variables read while recording, eagerly, in a traced
// function's run and in a graph, plus explicitly watched ones, each once, first seen first.
TEST(GradientTape, WatchedVariablesListsWhatWasRead) {
  Variable a(constant({1.f}), "a"), b(constant({2.f}), "b"), frozen(constant({3.f}), "frozen", false);
  Variable c(constant({4.f}), "c");
  Function f = function([&](const Tensor& x) { return x * c.value(); },
                        {.input_signature = Signature{{DType::Float32, {1}}}});
  ConcreteFunction cf = f.get_concrete_function();
  Tensor unread = b.value();  // before the tape: not listed
  GradientTape tape;
  Tensor y = a.value() * frozen.value() + a.value();
  Tensor z = cf({y})[0];
  tape.watch(frozen);
  const std::vector<Variable> seen = tape.watched_variables();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].name(), "a");
  EXPECT_EQ(seen[1].name(), "c");
  EXPECT_EQ(seen[2].name(), "frozen");
  EXPECT_EQ(tape.gradient(z, c).to_vector<float>(), (std::vector<float>{4.f}));
  {
    GradientTape off(false, /*watch_accessed_variables=*/false);
    Tensor w = b.value() * 2;
    EXPECT_TRUE(off.watched_variables().empty());
  }
  GradientTape paused;
  {
    GradientTape::StopRecording stop(paused);
    Tensor w = b.value() * 2;
  }
  EXPECT_TRUE(paused.watched_variables().empty());
}

TEST(GradientTape, NonScalarTargetIsSummed) {
  Tensor x = constant({1.0, 2.0}, {2}, DType::Float64);
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x;  // d sum(y) / dx = 2x
  EXPECT_EQ(vec(tape.gradient(y, x)), (std::vector<double>{2, 4}));
}

TEST(GradientTape, NonPersistentTapeIsSingleUse) {
  Tensor x = constant({1.f});
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x;
  tape.gradient(y, x);
  EXPECT_THAT([&] { tape.gradient(y, x); },
              ::testing::ThrowsMessage<Error>(HasSubstr("[GradientTape.gradient] a non-persistent tape can only be used once")));
}

TEST(GradientTape, PersistentTapeAllowsSeveralGradients) {
  Tensor x = constant({3.0}, {1}, DType::Float64);
  GradientTape tape(/*persistent=*/true);
  tape.watch(x);
  Tensor y = x * x;
  Tensor z = y * y;  // x^4
  EXPECT_EQ(vec(tape.gradient(z, x)), (std::vector<double>{108}));
  EXPECT_EQ(vec(tape.gradient(y, x)), (std::vector<double>{6}));
  EXPECT_EQ(vec(tape.gradient(z, y)), (std::vector<double>{18}));
}

TEST(GradientTape, NestedTapesGiveSecondOrder) {
  Tensor x = constant({3.0}, {1}, DType::Float64);
  GradientTape outer;
  outer.watch(x);
  Tensor dy;
  {
    GradientTape inner;
    inner.watch(x);
    Tensor y = x * x * x;  // x^3
    dy = inner.gradient(y, x);  // 3x^2 = 27
  }
  EXPECT_EQ(vec(dy), (std::vector<double>{27}));
  EXPECT_EQ(vec(outer.gradient(dy, x)), (std::vector<double>{18}));  // 6x
}

TEST(GradientTape, UnconnectedGradients) {
  Tensor x = constant({1.f, 2.f}), z = constant({5.f});
  GradientTape tape(/*persistent=*/true);
  tape.watch(x);
  tape.watch(z);
  Tensor y = reduce_sum(x * x);
  EXPECT_FALSE(tape.gradient(y, z).defined());
  EXPECT_EQ(tape.gradient(y, z, UnconnectedGradients::Zero).to_vector<float>(), (std::vector<float>{0}));
}

TEST(GradientTape, StopGradientBlocksFlow) {
  Tensor x = constant({2.0}, {1}, DType::Float64);
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * stop_gradient(x);  // d/dx = stop(x) = 2
  EXPECT_EQ(vec(tape.gradient(y, x)), (std::vector<double>{2}));
}

TEST(GradientTape, StopRecordingPauses) {
  Tensor x = constant({2.0}, {1}, DType::Float64);
  GradientTape tape;
  tape.watch(x);
  Tensor y;
  {
    auto pause = tape.stop_recording();
    y = x * x;
  }
  EXPECT_EQ(tape.num_recorded(), 0u);
  EXPECT_FALSE(tape.gradient(y, x).defined());
}

TEST(GradientTape, OutputGradientsWeightTargets) {
  Tensor x = constant({1.0, 2.0}, {2}, DType::Float64);
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x;
  auto g = tape.gradient({y}, {x}, UnconnectedGradients::None, {constant({1.0, 10.0}, {2}, DType::Float64)});
  EXPECT_EQ(vec(g[0]), (std::vector<double>{2, 40}));
}

TEST(GradientTape, Jacobian) {
  Tensor x = constant({1.0, 2.0}, {2}, DType::Float64);
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x * constant({1.0, 3.0}, {2}, DType::Float64);  // y_i = c_i x_i^2
  Tensor j = tape.jacobian(y, x);
  EXPECT_EQ(j.shape(), Shape({2, 2}));
  EXPECT_EQ(vec(j), (std::vector<double>{2, 0, 0, 12}));
}

TEST(GradientTape, MatmulChainRule) {
  Tensor x = constant({1.0, 2.0, 3.0, 4.0}, {2, 2}, DType::Float64);
  Variable w(constant({1.0, 0.0, 0.0, 1.0}, {2, 2}, DType::Float64), "w");
  GradientTape tape;
  Tensor loss = reduce_sum(matmul(x, w));
  // d sum(xw)/dw = x^T 1 = column sums of x, repeated over columns.
  EXPECT_EQ(vec(tape.gradient(loss, w)), (std::vector<double>{4, 4, 6, 6}));
}

TEST(Gradcheck, CatchesAWrongGradient) {
  // A custom op whose vjp is deliberately wrong must fail gradcheck.
  static const OpId id = register_custom_op(OpDef{
      .name = "test_bad_square",
      .num_inputs = 1,
      .infer = [](const OpCall& c, TypeList& out) { out.push_back({c.in(0).dtype(), c.in(0).shape()}); },
      .vjp = [](const OpCall& c, const TensorList& g) { return TensorList{g[0] * c.in(0)}; },  // should be 2x
  });
  register_kernel(id, KernelDef{.run = [](const OpCall& c, TensorList& out) {
                    const double* x = c.in(0).data<double>();
                    double* y = out[0].data<double>();
                    for (int64_t i = 0; i < c.in(0).size(); ++i) y[i] = x[i] * x[i];
                  }});
  Tensor x = constant({1.0, 2.0}, {2}, DType::Float64);
  auto r = gradcheck([](const TensorList& xs) { return dispatch(id, xs); }, {x});
  EXPECT_GT(r.max_error, 0.1) << r.worst;
}

}  // namespace
}  // namespace deepflow
