// SPDX-License-Identifier: Apache-2.0
// Graph building through the public ops, validation and execution.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/executor.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(GraphBuild, OpsAddNodesInsideAScope) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {-1, 2}, "x");
    NameScope dense("dense");
    y = relu(matmul(x, constant({1.f, -1.f, 2.f, 0.5f}, {2, 2})));
  }
  EXPECT_TRUE(y.is_symbolic());
  EXPECT_EQ(y.shape(), Shape({-1, 2}));
  EXPECT_EQ(g->node(g->value_of(y).node).name, "dense/relu");
  EXPECT_GE(g->find("x"), 0);
  EXPECT_GE(g->find("dense/const"), 0);
  EXPECT_NO_THROW(g->validate());
  TensorList out = execute(*g, {{g->value_of(x), constant({1.f, 1.f, -1.f, 2.f}, {2, 2})}}, {g->value_of(y)});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{3, 0, 3, 2}));
}

TEST(GraphBuild, VariablesAreReadAndAssignedByNodes) {
  Variable v(constant({1.f, 2.f}), "v");
  auto g = std::make_shared<Graph>();
  Tensor doubled;
  int assign = -1;
  {
    GraphScope scope(g, {.auto_control_dependencies = true});
    doubled = v.value() * 2.0;
    v.assign(doubled);
    assign = g->num_nodes() - 1;
  }
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{1, 2}));  // building runs nothing
  execute(*g, {}, {}, {assign});
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{2, 4}));
  execute(*g, {}, {}, {assign});  // the read sees the new value
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{4, 8}));
}

TEST(GraphBuild, PruningRunsOnlyWhatFetchesNeed) {
  auto g = std::make_shared<Graph>();
  Tensor a, b, c;
  {
    GraphScope scope(g);
    a = placeholder(DType::Float32, {2}, "a");
    b = exp(a);
    c = log(placeholder(DType::Float32, {2}, "unfed"));
  }
  auto order = prune(*g, {{g->value_of(a), ones({2})}}, {g->value_of(b)}, {});
  EXPECT_EQ(order.size(), 1u);  // exp only: a is fed, the unfed branch is not needed
  EXPECT_THAT([&] { execute(*g, {}, {g->value_of(c)}); },
              ThrowsMessage<Error>(HasSubstr("[graph] node 'unfed': [placeholder] a placeholder of type float32[2] must be fed")));
}

TEST(GraphBuild, FeedsAreChecked) {
  auto g = std::make_shared<Graph>();
  Tensor x;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {-1, 3}, "x");
  }
  EXPECT_THAT([&] { execute(*g, {{g->value_of(x), ones({2, 4})}}, {g->value_of(x)}); },
              ThrowsMessage<Error>(HasSubstr("[Session.run] feed for 'x' is float32[2,4], expected float32[?,3]")));
}

TEST(GraphValidate, CyclesAndConflictsNameTheNode) {
  Graph g;
  Node p{.name = "p", .op = OpId::Placeholder, .attrs = {{"dtype", DType::Float32}, {"shape", std::vector<int64_t>{2}}},
         .outputs = {{DType::Float32, {2}}}};
  g.add_node(p);
  Node e1{.name = "e1", .op = OpId::Exp, .inputs = {{2, 0}}, .outputs = {{DType::Float32, {2}}}};
  Node e2{.name = "e2", .op = OpId::Exp, .inputs = {{1, 0}}, .outputs = {{DType::Float32, {2}}}};
  g.add_node(e1);
  g.add_node(e2);
  EXPECT_THAT([&] { g.validate(); }, ThrowsMessage<Error>(HasSubstr("[graph] cycle through node 'e1'")));
  Graph h;
  h.add_node(p);
  h.add_node(Node{.name = "bad", .op = OpId::Exp, .inputs = {{0, 0}}, .outputs = {{DType::Float32, {3}}}});
  EXPECT_THAT([&] { h.validate(); }, ThrowsMessage<Error>(HasSubstr("[graph] node 'bad' output 0 is recorded as [3]")));
  Graph d;
  d.add_node(Node{.name = "dangling", .op = OpId::Exp, .inputs = {{5, 0}}, .outputs = {{DType::Float32, {2}}}});
  EXPECT_THAT([&] { d.validate(); }, ThrowsMessage<Error>(HasSubstr("[graph] node 'dangling' has a dangling input 5:0")));
}

TEST(GraphBuild, TapeInsideAGraphBuildsGradientNodes) {
  auto g = std::make_shared<Graph>();
  Tensor x, dx;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float64, {3}, "x");
    GradientTape tape;
    tape.watch(x);
    Tensor y = reduce_sum(x * x * x);
    dx = tape.gradient(y, x);
  }
  ASSERT_TRUE(dx.is_symbolic());
  TensorList out = execute(*g, {{g->value_of(x), constant({1.0, 2.0, 3.0}, {3}, DType::Float64)}}, {g->value_of(dx)});
  EXPECT_EQ(out[0].to_vector<double>(), (std::vector<double>{3, 12, 27}));
}

}  // namespace
}  // namespace deepflow
