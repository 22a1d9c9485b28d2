// SPDX-License-Identifier: Apache-2.0
// Session::run: feeds and fetches by tensor or name, pruning, executor caching and
// the errors a user meets.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/session.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// A custom op that counts how often its kernel runs, per "tag" attribute.
std::atomic<int> g_runs[4];
OpId counting_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "session_test_count",
        .num_inputs = 1,
        .attrs = {{"tag", 0}},
        .infer = [](const OpCall& c, TypeList& out) { out.push_back({c.in(0).dtype(), c.in(0).shape()}); },
        .non_differentiable = true,
    });
    register_kernel(op, KernelDef{.run = [](const OpCall& c, TensorList& out) {
                      ++g_runs[c.attr_int("tag")];
                      out[0] = c.in(0).clone();
                    }});
    return op;
  }();
  return id;
}
Tensor count(const Tensor& x, int tag) { return dispatch1(counting_op(), {x}, {{"tag", int64_t(tag)}}); }

TEST(Session, FeedsAndFetchesByTensorOrName) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {-1, 2}, "x");
    y = relu(x * 2.0);
  }
  Session sess(g);
  Tensor batch = constant({1.f, -1.f, 3.f, 0.5f}, {2, 2});
  TensorList a = sess.run({{x, batch}}, {y});
  EXPECT_EQ(a[0].to_vector<float>(), (std::vector<float>{2, 0, 6, 1}));
  const std::string yname = g->value_name(g->value_of(y));
  TensorList b = sess.run({{"x:0", batch}}, {yname + ":0", "x"});
  EXPECT_EQ(b[0].to_vector<float>(), a[0].to_vector<float>());
  EXPECT_EQ(b[1].to_vector<float>(), batch.to_vector<float>());  // a fed value can be fetched
  EXPECT_EQ(sess.run(y, {{"x", batch}}).to_vector<float>(), a[0].to_vector<float>());
  // Same signature (feeds by another spelling): one executor; a new fetch set adds one.
  EXPECT_EQ(sess.num_cached_executors(), 2);
  sess.run({{x, batch}}, {y});
  EXPECT_EQ(sess.num_cached_executors(), 2);
  // Another batch size fits the unknown dim.
  EXPECT_EQ(sess.run({{x, ones({3, 2})}}, {y})[0].shape(), Shape({3, 2}));
}

TEST(Session, RunsOnlyWhatTheFetchesNeed) {
  auto g = std::make_shared<Graph>();
  Tensor x, a, b;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {3}, "x");
    a = count(exp(x), 0);
    b = count(log(x), 1);
  }
  for (auto& r : g_runs) r = 0;
  Session sess(g);
  Tensor v = constant({1.f, 2.f, 3.f});
  sess.run({{x, v}}, {a});
  sess.run({{x, v}}, {a});
  EXPECT_EQ(g_runs[0], 2);
  EXPECT_EQ(g_runs[1], 0);  // the branch nobody fetched never ran
  // Targets run for their effect, without fetching.
  sess.run({{x, v}}, {}, {g->node(g->value_of(b).node).name});
  EXPECT_EQ(g_runs[1], 1);
  EXPECT_EQ(g_runs[0], 2);
  // Feeding an intermediate value cuts off everything above it.
  EXPECT_EQ(sess.run({{a, v}}, {a})[0].to_vector<float>(), v.to_vector<float>());  // a is fed: nothing runs
  EXPECT_EQ(g_runs[0], 2);
}

TEST(Session, ErrorsNameTheCulprit) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {-1, 3}, "x");
    y = reduce_sum(x);
  }
  Session sess(g);
  EXPECT_THAT([&] { sess.run({}, {y}); },
              ThrowsMessage<Error>(HasSubstr("[Session.run] placeholder 'x' must be fed (float32[?,3])")));
  EXPECT_THAT([&] { sess.run({{x, ones({2, 4})}}, {y}); },
              ThrowsMessage<Error>(HasSubstr("[Session.run] feed for 'x' is float32[2,4], expected float32[?,3]")));
  EXPECT_THAT([&] { sess.run({{x, ones({2, 3}, DType::Float64)}}, {y}); },
              ThrowsMessage<Error>(HasSubstr("feed for 'x' is float64[2,3], expected float32[?,3]")));
  EXPECT_THAT([&] { sess.run({{x, ones({2, 3})}}, {"nope"}); },
              ThrowsMessage<Error>(HasSubstr("[Session.run] no node named 'nope'")));
  EXPECT_THAT([&] { sess.run({{x, ones({2, 3})}}, {"x:3"}); },
              ThrowsMessage<Error>(HasSubstr("[Session.run] node 'x' has 1 outputs; fetch 'x:3' asks for output 3")));
  EXPECT_THAT([&] { sess.run({{x, ones({2, 3})}}, {}, {"missing_op"}); },
              ThrowsMessage<Error>(HasSubstr("[Session.run] no node named 'missing_op'")));
  EXPECT_THAT([&] { sess.run({{"y_not", ones({2, 3})}}, {y}); },
              ThrowsMessage<Error>(HasSubstr("[Session.run] no node named 'y_not'")));
  EXPECT_THAT([&] { sess.run({{x, ones({2, 3})}, {"x:0", ones({2, 3})}}, {y}); },
              ThrowsMessage<Error>(HasSubstr("[Session.run] 'x' is fed twice")));
  auto other = std::make_shared<Graph>();
  Tensor z;
  {
    GraphScope scope(other);
    z = placeholder(DType::Float32, {2}, "z");
  }
  EXPECT_THAT([&] { sess.run({{x, ones({2, 3})}}, {z}); },
              ThrowsMessage<Error>(HasSubstr("[Session.run] the fetch tensor float32[2] belongs to another graph")));
  EXPECT_THAT([&] { sess.run({{x, ones({2, 3})}}, {ones({2})}); },
              ThrowsMessage<Error>(HasSubstr("a fetch must be a symbolic tensor of the session's graph or a name")));
}

TEST(Session, VariablesHoldTheirValueFromConstruction) {
  Variable w(constant({1.f, 2.f}), "w");  // no initializer to run
  auto g = std::make_shared<Graph>();
  Tensor r;
  {
    GraphScope scope(g);
    r = w.value() * 3.0;
    EXPECT_THAT([&] { Variable bad(placeholder(DType::Float32, {2}, "init"), "bad"); },
                ThrowsMessage<Error>(HasSubstr("[Variable] 'bad' needs a concrete initial value")));
  }
  Session sess(g);
  EXPECT_EQ(sess.run(r).to_vector<float>(), (std::vector<float>{3, 6}));
  w.assign(constant({2.f, 2.f}));
  EXPECT_EQ(sess.run(r).to_vector<float>(), (std::vector<float>{6, 6}));  // reads see assignments
}

TEST(Session, TrainingStepUpdatesVariables) {
  Variable w(constant({0.f, 0.f}, {2, 1}), "w");
  auto g = std::make_shared<Graph>();
  Tensor x, y, loss;
  std::string step;
  {
    GraphScope scope(g, {.auto_control_dependencies = true});
    // A fixed batch: gradients through unknown dims need the run-time shape ops.
    x = placeholder(DType::Float32, {3, 2}, "x");
    y = placeholder(DType::Float32, {3, 1}, "y");
    GradientTape tape;
    loss = reduce_mean(square(matmul(x, w.value()) - y));
    Tensor dw = tape.gradient(loss, w);
    w.assign_sub(dw * 0.1);
    step = g->node(g->num_nodes() - 1).name;
  }
  Session sess(g);
  Tensor xs = constant({1.f, 0.f, 0.f, 1.f, 1.f, 1.f}, {3, 2});
  Tensor ys = constant({1.f, 2.f, 3.f}, {3, 1});
  float first = 0, last = 0;
  for (int i = 0; i < 50; ++i) {
    float l = sess.run({{x, xs}, {y, ys}}, {loss}, {step})[0].item<float>();
    if (i == 0) first = l;
    last = l;
  }
  EXPECT_LT(last, first * 0.1f);
  EXPECT_NEAR(w.value().to_vector<float>()[0], 1.f, 0.1f);
  EXPECT_NEAR(w.value().to_vector<float>()[1], 2.f, 0.1f);
}

}  // namespace
}  // namespace deepflow
