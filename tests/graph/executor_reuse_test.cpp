// SPDX-License-Identifier: Apache-2.0
// Sequential runs reuse per-thread scratch: one Executor run on several threads at
// once, a run nested in a kernel of another, a failed run followed by a good one, and
// constants handed out by many runs all give what fresh runs would.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/executor.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// y = cast(x * 3 + 1, float32), x an int64 scalar: the shape of a traced tf.data map.
struct Affine {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  Tensor x, y;
  Affine() {
    GraphScope scope(g);
    x = placeholder(DType::Int64, {}, "x");
    y = cast(x * 3.0 + 1.0, DType::Float32);
  }
  Executor executor() const { return Executor(g, {g->value_of(x)}, {g->value_of(y)}, {}, {.parallel = false}); }
};

TEST(ExecutorReuse, OneExecutorRunsOnSeveralThreadsAtOnce) {
  Affine a;
  const Executor ex = a.executor();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const int64_t v = t * 10000 + i;
        const Tensor out = ex.run({scalar(double(v), DType::Int64)})[0];
        if (out.dtype() != DType::Float32 || out.flat(0) != double(v * 3 + 1)) ++wrong;
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

// The kernel of this op runs another executor on the calling thread, inside the outer run.
OpId nested_op(const Executor* inner) {
  static const Executor* t_inner = nullptr;
  t_inner = inner;
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "executor_reuse_test_nested",
        .num_inputs = 1,
        .infer = [](const OpCall& c, TypeList& out) { out.push_back({DType::Float32, c.in(0).shape()}); },
        .non_differentiable = true,
    });
    register_kernel(op, KernelDef{.run = [](const OpCall& c, TensorList& out) { out[0] = t_inner->run({c.in(0)})[0]; }});
    return op;
  }();
  return id;
}

TEST(ExecutorReuse, ARunNestedInAKernelKeepsTheOuterRunsValues) {
  Affine a;
  const Executor inner = a.executor();
  const OpId op = nested_op(&inner);
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Int64, {}, "x");
    Tensor kept = cast(x, DType::Float32) * 2.0;  // alive across the nested run
    y = dispatch1(op, std::vector<Tensor>{x}, {}) + kept;
  }
  Executor outer(g, {g->value_of(x)}, {g->value_of(y)}, {}, {.parallel = false});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(outer.run({scalar(5, DType::Int64)})[0].flat(0), 16 + 10);
}

TEST(ExecutorReuse, AFailedRunLeavesTheExecutorUsable) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {-1}, "x");
    y = matmul(reshape(x, {1, -1}), ones({3, 1}), false, false);
  }
  Executor ex(g, {g->value_of(x)}, {g->value_of(y)}, {}, {.parallel = false});
  EXPECT_THAT([&] { ex.run({ones({4})}); }, ThrowsMessage<Error>(HasSubstr("[graph] node '")));
  EXPECT_EQ(ex.run({ones({3})})[0].flat(0), 3);
}

TEST(ExecutorReuse, ConstantsServeEveryRunAndFetchedOnesAreNewTensors) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {2}, "x");
    y = x + constant({10.f, 20.f});  // the concrete tensor becomes a Const node
  }
  const ValueRef c = g->node(g->value_of(y).node).inputs[1];
  ASSERT_EQ(g->node(c.node).op, OpId::Const);
  Executor ex(g, {g->value_of(x)}, {g->value_of(y), c}, {}, {.parallel = false});
  const TensorList r1 = ex.run({constant({1.f, 2.f})});
  const TensorList r2 = ex.run({constant({3.f, 4.f})});
  EXPECT_EQ(r1[0].to_vector<float>(), (std::vector<float>{11, 22}));
  EXPECT_EQ(r2[0].to_vector<float>(), (std::vector<float>{13, 24}));
  EXPECT_EQ(r1[1].to_vector<float>(), (std::vector<float>{10, 20}));
  // Two runs' results never share an identity: a tape watching one must not see the other.
  EXPECT_NE(r1[1].id(), r2[1].id());
  EXPECT_NE(r1[1].impl(), r2[1].impl());
}

}  // namespace
}  // namespace deepflow
