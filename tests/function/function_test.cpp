// SPDX-License-Identifier: Apache-2.0
// Traced functions: the signature cache, retracing and generalization, captured
// variables and program order, concrete functions, and gradients through and
// inside traces.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "deepflow/deepflow.h"
#include "test_util.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::expect_near;

TEST(Function, TracesOncePerSignatureAndReusesTheGraph) {
  int traced = 0;
  Function f = function([&](const Tensor& x) {
    ++traced;  // plain C++: runs while tracing only
    return x * 2.0 + 1.0;
  });
  Tensor a = constant({1.f, 2.f, 3.f});
  EXPECT_EQ(f(a)[0].to_vector<float>(), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(f(constant({0.f, 1.f, -1.f}))[0].to_vector<float>(), (std::vector<float>{1, 3, -1}));
  EXPECT_EQ(f.trace_count(), 1);
  EXPECT_EQ(traced, 1);
  EXPECT_FALSE(f(a)[0].is_symbolic());
  // Another dtype is another signature.
  EXPECT_EQ(f(constant(std::vector<double>{1, 2, 3}))[0].to_vector<double>(), (std::vector<double>{3, 5, 7}));
  EXPECT_EQ(f.trace_count(), 2);
}

TEST(Function, PlainCppCountsTracesNotCalls) {
  int counter = 0;
  Function f = function([&](const Tensor& x) {
    ++counter;
    return square(x);
  });
  for (int i = 0; i < 10; ++i) f(fill({2, 2}, i));
  EXPECT_EQ(counter, 1);
  EXPECT_EQ(f.trace_count(), 1);
}

TEST(Function, CallableFormsAndOutputs) {
  Function none = function([] { return scalar(4.0); });
  EXPECT_EQ(none()[0].item<float>(), 4.f);  // a concrete result becomes a constant node
  Function two = function([](const Tensor& a, const Tensor& b) { return TensorList{a + b, a * b}; });
  TensorList out = two(scalar(2.0), scalar(3.0));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].item<float>(), 5.f);
  EXPECT_EQ(out[1].item<float>(), 6.f);
  Function list = function([](const TensorList& in) { return in[0] - in[1] + in[2]; });
  EXPECT_EQ(list({scalar(1.0), scalar(2.0), scalar(5.0)})[0].item<float>(), 4.f);
  Function identity = function([](const Tensor& a) { return a; });
  EXPECT_EQ(identity(scalar(2.0))[0].item<float>(), 2.f);
  Variable v(scalar(3.0), "v");
  Function read = function([&] { return v.value(); });
  Tensor before = read()[0];
  v.assign(scalar(4.0));
  EXPECT_EQ(before.item<float>(), 3.f);  // a snapshot, as an eager read
  EXPECT_EQ(read()[0].item<float>(), 4.f);
  Function three = function([](const Tensor& a, const Tensor&, const Tensor&) { return a; });
  EXPECT_THAT(error_of([&] { three(scalar(1.0)); }), HasSubstr("the callable takes 3 tensors, got 1"));
}

TEST(Function, AutomaticGeneralizationCostsOneRetrace) {
  Tensor w = random_normal({4, 3}, 0, 1, DType::Float32, 1);
  Function f = function([&](const Tensor& x) { return reduce_sum(relu(matmul(x, w)), {1}); },
                        {.name = "dense"});
  for (int64_t batch : {8, 16, 32, 64}) {
    Tensor x = random_normal({batch, 4}, 0, 1, DType::Float32, batch);
    Tensor y = f(x)[0];
    EXPECT_EQ(y.shape(), Shape({batch}));
    expect_near(y, reduce_sum(relu(matmul(x, w)), {1}), 1e-6);
  }
  EXPECT_EQ(f.trace_count(), 2);
  std::vector<ConcreteFunction> cfs = f.concrete_functions();
  ASSERT_EQ(cfs.size(), 2u);
  EXPECT_EQ(cfs[0].inputs(), (Signature{{DType::Float32, {8, 4}}}));
  EXPECT_EQ(cfs[1].inputs(), (Signature{{DType::Float32, {-1, 4}}}));
  EXPECT_EQ(cfs[1].outputs(), (TypeList{{DType::Float32, {-1}}}));
  // A different feature size generalizes that dim too, once.
  f(random_normal({5, 4}));
  EXPECT_EQ(f.trace_count(), 2);
}

TEST(Function, GeneralizationCanBeSwitchedOff) {
  Function f = function([](const Tensor& x) { return x + 1.0; }, {.generalize_shapes = false});
  for (int64_t n : {1, 2, 3}) f(zeros({n}));
  EXPECT_EQ(f.trace_count(), 3);
}

// Random ops shaped from a tensor work with dims unknown at trace time; each call draws anew.
TEST(Function, DropoutWithUnknownBatchDim) {
  Function f = function([](const Tensor& x) { return dropout(x, 0.5, 3); },
                        {.name = "drop", .input_signature = Signature{{DType::Float32, {-1, 64}}}});
  Tensor a = f(ones({5, 64}))[0], b = f(ones({5, 64}))[0], c = f(ones({9, 64}))[0];
  EXPECT_EQ(c.shape(), (Shape{9, 64}));
  EXPECT_EQ(f.trace_count(), 1);
  int kept = 0;
  for (float v : c.to_vector<float>()) {
    EXPECT_TRUE(v == 0.f || v == 2.f) << v;
    kept += v == 2.f;
  }
  EXPECT_GT(kept, 9 * 64 / 4);
  EXPECT_LT(kept, 9 * 64 * 3 / 4);
  EXPECT_NE(a.to_vector<float>(), b.to_vector<float>());
}

TEST(Function, InputSignatureServesEveryMatchingShape) {
  Function f = function([](const Tensor& x) { return reduce_sum(x, {1}); },
                        {.name = "f", .input_signature = Signature{{DType::Float32, {-1, 4}}}});
  EXPECT_EQ(f(ones({2, 4}))[0].to_vector<float>(), (std::vector<float>{4, 4}));
  EXPECT_EQ(f(ones({3, 4}))[0].to_vector<float>(), (std::vector<float>{4, 4, 4}));
  EXPECT_EQ(f.trace_count(), 1);
  EXPECT_THAT(error_of([&] { f(ones({2, 5})); }),
              HasSubstr("[function] 'f' input 0 is float32[2,5], the signature expects float32[?,4]"));
  EXPECT_THAT(error_of([&] { f(ones({2, 4}, DType::Float64)); }), HasSubstr("input 0 is float64[2,4]"));
  EXPECT_THAT(error_of([&] { f(ones({2, 4}), ones({2, 4})); }), HasSubstr("'f' takes 1 inputs (float32[?,4]), got 2"));
  EXPECT_EQ(f.get_concrete_function().inputs(), (Signature{{DType::Float32, {-1, 4}}}));
  EXPECT_EQ(f.trace_count(), 1);
}

TEST(Function, WarnsOnceAfterFiveRetraces) {
  Function f = function([](const Tensor& x) { return x * 3.0; }, {.name = "poly"});
  ::testing::internal::CaptureStderr();
  Shape s;
  for (int rank = 0; rank < 8; ++rank) {  // another rank each time: generalization cannot help
    f(ones(s));
    s.push_back(1);
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(f.trace_count(), 8);
  EXPECT_THAT(err, HasSubstr("[function] 'poly' was retraced 5 times; pass an input_signature with unknown dims"));
  EXPECT_EQ(err.find("retraced", err.find("retraced") + 1), std::string::npos);  // once
}

TEST(Function, VariablesAreCapturedByReference) {
  Variable v(constant({1.f, 2.f}), "v");
  Function f = function([&](const Tensor& x) { return x * v.value(); });
  EXPECT_EQ(f(constant({3.f, 3.f}))[0].to_vector<float>(), (std::vector<float>{3, 6}));
  v.assign(constant({10.f, 20.f}));  // outside: the next call sees it
  EXPECT_EQ(f(constant({3.f, 3.f}))[0].to_vector<float>(), (std::vector<float>{30, 60}));
  EXPECT_EQ(f.trace_count(), 1);
}

TEST(Function, CapturedTensorsAreConstants) {
  Tensor c = constant({1.f, 1.f});
  Function f = function([&](const Tensor& x) { return x + c; });
  EXPECT_EQ(f(constant({1.f, 2.f}))[0].to_vector<float>(), (std::vector<float>{2, 3}));
  c = constant({5.f, 5.f});  // rebinding the C++ local is not seen: the graph holds a constant
  EXPECT_EQ(f(constant({1.f, 2.f}))[0].to_vector<float>(), (std::vector<float>{2, 3}));
  EXPECT_THAT(f.get_concrete_function({{DType::Float32, {2}}}).to_string(), HasSubstr("const"));
}

TEST(Function, StatefulOpsKeepProgramOrder) {
  Variable v(constant({1.f, 2.f}), "v");
  // Assign, then read: the read sees the assigned value.
  Function assign_then_read = function([&](const Tensor& x) {
    v.assign(x);
    return v.value() * 1.0;
  });
  EXPECT_EQ(assign_then_read(constant({7.f, 8.f}))[0].to_vector<float>(), (std::vector<float>{7, 8}));
  // Read, then assign: the read keeps the old value.
  Function read_then_assign = function([&](const Tensor& x) {
    Tensor old = v.value() * 1.0;
    v.assign(x);
    return old;
  });
  EXPECT_EQ(read_then_assign(constant({0.f, 0.f}))[0].to_vector<float>(), (std::vector<float>{7, 8}));
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{0, 0}));
  // Side effects that no output needs run on every call.
  Variable counter(scalar(0.0), "counter", false);
  Function tick = function([&] { counter.assign_add(scalar(1.0)); });
  for (int i = 0; i < 3; ++i) tick();
  EXPECT_EQ(counter.value().item<float>(), 3.f);
  EXPECT_EQ(tick.trace_count(), 1);
}

TEST(Function, ConcreteFunctionsCanBeFetchedPrintedAndCalled) {
  Variable w(constant({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {3, 2}), "w");
  Function f = function([&](const Tensor& x) { return relu(matmul(x, w.value())); }, {.name = "dense"});
  ConcreteFunction cf = f.get_concrete_function({{DType::Float32, {-1, 3}}});
  EXPECT_EQ(f.trace_count(), 1);
  EXPECT_EQ(cf.name(), "dense");
  EXPECT_EQ(cf.inputs(), (Signature{{DType::Float32, {-1, 3}}}));
  EXPECT_EQ(cf.outputs(), (TypeList{{DType::Float32, {-1, 2}}}));
  EXPECT_EQ(cf.graph().inputs.size(), 1u);
  EXPECT_NO_THROW(cf.graph().validate());
  std::string text = cf.to_string();
  EXPECT_THAT(text, HasSubstr("matmul"));
  EXPECT_THAT(text, HasSubstr("read_variable"));
  EXPECT_EQ(cf.serialize(), text);
  EXPECT_EQ(cf({constant({1.f, 0.f, -1.f}, {1, 3})})[0].to_vector<float>(), (std::vector<float>{0, 0}));
  EXPECT_THAT(error_of([&] { cf({ones({2, 4})}); }),
              HasSubstr("[function] 'dense' input 0 is float32[2,4], the signature expects float32[?,3]"));
  // The cached concrete function serves later calls: no retrace.
  f(ones({5, 3}));
  EXPECT_EQ(f.trace_count(), 1);
  EXPECT_EQ(f.get_concrete_function({{DType::Float32, {-1, 3}}}).graph_ptr(), cf.graph_ptr());
}

TEST(Function, InlinesWhenCalledWhileTracing) {
  Function inner = function([](const Tensor& x) { return x * 2.0; });
  Function outer = function([&](const Tensor& x) { return inner(x)[0] + 1.0; });
  EXPECT_EQ(outer(constant({1.f, 2.f}))[0].to_vector<float>(), (std::vector<float>{3, 5}));
  EXPECT_EQ(inner.trace_count(), 0);
  EXPECT_EQ(outer.trace_count(), 1);
}

TEST(Function, ErrorsInsideTheCallableReachTheCaller) {
  Function f = function([](const Tensor& x) { return matmul(x, x); });
  EXPECT_THAT(error_of([&] { f(ones({2, 3})); }), HasSubstr("[matmul]"));
}

// --- gradients ---

TEST(FunctionGradient, TapeAroundACallRecordsTheGraphOps) {
  Variable w(constant(std::vector<double>{0.5, -1.0, 2.0, 0.25, 1.5, -0.5}, {3, 2}, DType::Float64), "w");
  auto loss_fn = [&](const Tensor& x) { return reduce_sum(square(tanh(matmul(x, w.value())))); };
  Function f = function(loss_fn);
  Tensor x = constant(std::vector<double>{1, 2, -1, 0.5, 0.1, 0.3}, {2, 3}, DType::Float64);
  Tensor dw_eager, dx_eager;
  {
    GradientTape tape(true);
    tape.watch(x);
    Tensor loss = loss_fn(x);
    dw_eager = tape.gradient(loss, w);
    dx_eager = tape.gradient(loss, x);
  }
  for (int call = 0; call < 2; ++call) {  // the first call traces, the second only runs
    GradientTape tape(true);
    tape.watch(x);
    Tensor loss = f(x)[0];
    Tensor dw = tape.gradient(loss, w);
    Tensor dx = tape.gradient(loss, x);
    ASSERT_TRUE(dw.defined());
    ASSERT_TRUE(dx.defined());
    expect_near(dw, dw_eager, 1e-12);
    expect_near(dx, dx_eager, 1e-12);
  }
}

// The same MLP step, eager and traced: loss, tape.gradient w.r.t. the variables, assign_sub.
struct Mlp {
  std::vector<Variable> vars;
  explicit Mlp(int64_t in, int64_t hidden, int64_t out, DType dt) {
    vars = {Variable(random_normal({in, hidden}, 0, 0.5, dt, 11), "w1"), Variable(zeros({hidden}, dt), "b1"),
            Variable(random_normal({hidden, out}, 0, 0.5, dt, 12), "w2"), Variable(zeros({out}, dt), "b2")};
  }
  Mlp copy() const {  // same initial values, new variables
    Mlp m = *this;
    for (Variable& v : m.vars) v = Variable(v.value(), v.name());
    return m;
  }
  Tensor loss(const Tensor& x, const Tensor& labels) const {
    Tensor h = relu(matmul(x, vars[0].value()) + vars[1].value());
    Tensor logits = matmul(h, vars[2].value()) + vars[3].value();
    return reduce_mean(softmax_cross_entropy_with_logits(labels, logits));
  }
  Tensor step(const Tensor& x, const Tensor& labels, double lr) {
    GradientTape tape;
    Tensor l = loss(x, labels);
    std::vector<Tensor> grads = tape.gradient(l, vars);
    for (size_t i = 0; i < vars.size(); ++i) vars[i].assign_sub(grads[i] * lr);
    return l;
  }
};

void check_training_step(const std::vector<int64_t>& batches, DType dt = DType::Float64, bool optimize = true,
                         double tol = 1e-12) {
  Mlp eager(6, 8, 3, dt), traced = eager.copy();
  Function step = function([&](const Tensor& x, const Tensor& y) { return traced.step(x, y, 0.1); },
                           {.optimize = optimize});
  for (size_t s = 0; s < batches.size(); ++s) {
    Tensor x = random_normal({batches[s], 6}, 0, 1, dt, int64_t(100 + s));
    Tensor y = one_hot(cast(random_uniform({batches[s]}, 0, 3, dt, int64_t(200 + s)), DType::Int32), 3, 1, 0);
    y = cast(y, dt);
    Tensor le = eager.step(x, y, 0.1);
    Tensor lt = step(x, y)[0];
    expect_near(lt, le, tol);
  }
  for (size_t i = 0; i < eager.vars.size(); ++i) expect_near(traced.vars[i].value(), eager.vars[i].value(), tol);
  EXPECT_EQ(step.trace_count(), std::set<int64_t>(batches.begin(), batches.end()).size() == 1 ? 1 : 2);
}

TEST(FunctionGradient, TracedTrainingStepMatchesEager) {
  check_training_step({16, 16, 16, 16, 16});
  check_training_step({16, 16, 16, 16, 16}, DType::Float64, /*optimize=*/false);
}

// float32: the passes fuse elementwise chains (float reassociation within 1e-6).
TEST(FunctionGradient, TracedTrainingStepFloat32WithAndWithoutPasses) {
  check_training_step({32, 32, 32, 32, 32}, DType::Float32, true, 1e-5);
  check_training_step({32, 32, 32, 32, 32}, DType::Float32, false, 1e-6);
}

// Needs the vjps to use run-time shapes (broadcast_like, reshape_like, size) where the
// batch dim is unknown.
TEST(FunctionGradient, TracedTrainingStepWithAChangingBatch) {
  check_training_step({8, 16, 32, 16, 8});  // 2 traces: [8,6], then [?,6]
}

// An eager tape around a traced training step: it records the graph's ops (the forward,
// the inner tape's gradient nodes and the updates) and differentiates the loss.
TEST(FunctionGradient, TapeAroundATracedTrainingStep) {
  const DType dt = DType::Float64;
  Mlp eager(6, 8, 3, dt), traced = eager.copy();
  Function step = function([&](const Tensor& x, const Tensor& y) { return traced.step(x, y, 0.1); });
  Tensor x = random_normal({4, 6}, 0, 1, dt, 7);
  Tensor y = cast(one_hot(constant(std::vector<int32_t>{0, 2, 1, 0}), 3), dt);
  for (int call = 0; call < 2; ++call) {
    std::vector<Tensor> expected, got;
    {
      GradientTape tape;
      expected = tape.gradient(eager.loss(x, y), eager.vars);
    }
    {
      GradientTape tape;
      Tensor loss = step(x, y)[0];
      got = tape.gradient(loss, traced.vars);
    }
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(got[i].defined()) << i;
      expect_near(got[i], expected[i], 1e-12);
    }
    eager.step(x, y, 0.1);  // keep the two models in step
  }
}

TEST(Function, TheCallableMayQueryItsFunctionWhileTracing) {
  Function f;
  int seen = -1;
  f = function([&](const Tensor& x) {
    seen = f.trace_count();
    return x;
  });
  f(scalar(1.0));
  EXPECT_EQ(seen, 0);
}

TEST(FunctionGradient, SymbolicGradientsInsideATrace) {
  Function f = function([](const Tensor& x) { return gradients(reduce_sum(x * x * x), x); });
  EXPECT_EQ(f(constant({1.f, 2.f, -3.f}))[0].to_vector<float>(), (std::vector<float>{3, 12, 27}));
}

}  // namespace
}  // namespace deepflow
