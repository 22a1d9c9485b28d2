// SPDX-License-Identifier: Apache-2.0
// Symbolic gradients on a graph (tf.gradients): agreement with the eager tape,
// second order, unconnected sources, grad_ys and variables.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/executor.h"
#include "test_util.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::expect_near;

// Fetches values of g with the given feeds.
TensorList run(const Graph& g, const Feeds& feeds, const std::vector<Tensor>& fetches) {
  std::vector<ValueRef> refs;
  for (const Tensor& t : fetches) refs.push_back(g.value_of(t));
  return execute(g, feeds, refs);
}

TEST(Gradients, MlpLossAgreesWithTheEagerTape) {
  const DType dt = DType::Float64;
  std::vector<Variable> vars = {Variable(random_normal({5, 7}, 0, 0.5, dt, 1), "w1"),
                                Variable(random_normal({7}, 0, 0.1, dt, 2), "b1"),
                                Variable(random_normal({7, 3}, 0, 0.5, dt, 3), "w2"),
                                Variable(random_normal({3}, 0, 0.1, dt, 4), "b2")};
  auto loss_fn = [&](const Tensor& x, const Tensor& labels) {
    Tensor h = relu(matmul(x, vars[0].value()) + vars[1].value());
    Tensor logits = matmul(h, vars[2].value()) + vars[3].value();
    return reduce_mean(softmax_cross_entropy_with_logits(labels, logits));
  };
  Tensor xv = random_normal({4, 5}, 0, 1, dt, 5);
  Tensor yv = softmax(random_normal({4, 3}, 0, 1, dt, 6));

  std::vector<Tensor> expected;
  Tensor dx_expected;
  {
    GradientTape tape(true);
    tape.watch(xv);
    Tensor loss = loss_fn(xv, yv);
    expected = tape.gradient(loss, vars);
    dx_expected = tape.gradient(loss, xv);
  }

  auto g = std::make_shared<Graph>();
  Tensor x, y;
  std::vector<Tensor> grads;
  Tensor dx;
  {
    GraphScope scope(g);
    x = placeholder(dt, {4, 5}, "x");
    y = placeholder(dt, {4, 3}, "labels");
    Tensor loss = loss_fn(x, y);
    grads = gradients(loss, vars);
    dx = gradients(loss, x);
  }
  EXPECT_NO_THROW(g->validate());
  std::vector<Tensor> fetches = grads;
  fetches.push_back(dx);
  TensorList out = run(*g, {{g->value_of(x), xv}, {g->value_of(y), yv}}, fetches);
  for (size_t i = 0; i < vars.size(); ++i) expect_near(out[i], expected[i], 1e-12);
  expect_near(out[4], dx_expected, 1e-12);
}

TEST(Gradients, SecondDerivativeOfACube) {
  auto g = std::make_shared<Graph>();
  Tensor x, dy, d2y, d3y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float64, {}, "x");
    Tensor y = x * x * x;
    dy = gradients(y, x);
    d2y = gradients(dy, x);
    d3y = gradients(d2y, x);
  }
  for (double v : {-2.0, -0.5, 0.0, 1.5, 3.0}) {
    TensorList out = run(*g, {{g->value_of(x), scalar(v, DType::Float64)}}, {dy, d2y, d3y});
    EXPECT_NEAR(out[0].item<double>(), 3 * v * v, 1e-12) << v;
    EXPECT_NEAR(out[1].item<double>(), 6 * v, 1e-12) << v;
    EXPECT_NEAR(out[2].item<double>(), 6, 1e-12) << v;
  }
}

TEST(Gradients, SecondOrderThroughPowAndTanh) {
  auto g = std::make_shared<Graph>();
  Tensor x, d2;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float64, {3}, "x");
    Tensor y = reduce_sum(tanh(x) * pow(x, scalar(3.0, DType::Float64)));
    d2 = gradients(gradients(y, x), x);  // diagonal Hessian of a separable function
  }
  Tensor xv = constant(std::vector<double>{0.3, -0.7, 1.2}, {3}, DType::Float64);
  Tensor expected;
  {
    GradientTape outer;
    outer.watch(xv);
    Tensor first;
    {
      GradientTape inner;
      inner.watch(xv);
      first = inner.gradient(reduce_sum(tanh(xv) * pow(xv, scalar(3.0, DType::Float64))), xv);
    }
    expected = outer.gradient(reduce_sum(first), xv);
  }
  expect_near(run(*g, {{g->value_of(x), xv}}, {d2})[0], expected, 1e-12);
}

TEST(Gradients, UnconnectedGradYsAndSeveralTargets) {
  auto g = std::make_shared<Graph>();
  Tensor a, b, c, y1, y2;
  std::vector<Tensor> none, zero, weighted, both;
  {
    GraphScope scope(g);
    a = placeholder(DType::Float32, {2}, "a");
    b = placeholder(DType::Float32, {2}, "b");
    c = placeholder(DType::Float32, {2}, "c");
    y1 = a * b;
    y2 = a + a;
    none = gradients({y1}, {a, c});
    zero = gradients({y1}, {a, c}, {}, UnconnectedGradients::Zero);
    weighted = gradients({y1}, {a}, {constant({2.f, 3.f})});
    both = gradients({y1, y2}, {a, b});  // d(y1 + y2)
  }
  EXPECT_TRUE(none[0].defined());
  EXPECT_FALSE(none[1].defined());
  ASSERT_TRUE(zero[1].defined());
  Feeds feeds = {{g->value_of(a), constant({1.f, 2.f})},
                 {g->value_of(b), constant({5.f, 7.f})},
                 {g->value_of(c), constant({0.f, 0.f})}};
  TensorList out = run(*g, feeds, {none[0], zero[1], weighted[0], both[0], both[1]});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{5, 7}));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{0, 0}));
  EXPECT_EQ(out[2].to_vector<float>(), (std::vector<float>{10, 21}));
  EXPECT_EQ(out[3].to_vector<float>(), (std::vector<float>{7, 9}));
  EXPECT_EQ(out[4].to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(Gradients, AVariableReadStandsForEveryRead) {
  Variable v(constant({2.f, 3.f}), "v");
  auto g = std::make_shared<Graph>();
  Tensor y, read;
  std::vector<Tensor> by_var;
  Tensor by_read;
  {
    GraphScope scope(g);
    y = reduce_sum(v.value() * v.value());  // two reads
    by_var = gradients(y, std::vector<Variable>{v});
    read = v.value();
    by_read = gradients(y, read);
  }
  TensorList out = run(*g, {}, {by_var[0], by_read});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{4, 6}));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{4, 6}));
}

TEST(Gradients, WorksAfterTheScopeClosedAndOnUnknownDims) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {-1}, "x");
    y = reduce_sum(exp(x));
  }
  Tensor dx = gradients(y, x);  // opens a scope on y's graph
  EXPECT_TRUE(dx.is_symbolic());
  TensorList out = run(*g, {{g->value_of(x), constant({0.f, 1.f, 2.f})}}, {dx});
  expect_near(out[0], exp(constant({0.f, 1.f, 2.f})), 1e-6);
}

TEST(Gradients, Errors) {
  EXPECT_THAT(error_of([] { gradients(scalar(1.0), scalar(2.0)); }),
              HasSubstr("[gradients] ys[0] is not a symbolic tensor of a graph"));
  auto g1 = std::make_shared<Graph>(), g2 = std::make_shared<Graph>();
  Tensor a, b;
  {
    GraphScope s(g1);
    a = placeholder(DType::Float32, {}, "a");
  }
  {
    GraphScope s(g2);
    b = placeholder(DType::Float32, {}, "b");
  }
  EXPECT_THAT(error_of([&] { gradients(a, b); }), HasSubstr("[gradients] xs[0] belongs to another graph"));
  {
    GraphScope s(g1);
    Tensor y = a * 2.0;
    EXPECT_THAT(error_of([&] { gradients({y}, {a}, {ones({3})}); }), HasSubstr("grad_ys[0] is float32[3]"));
  }
}

}  // namespace
}  // namespace deepflow
