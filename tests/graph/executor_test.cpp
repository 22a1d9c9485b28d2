// SPDX-License-Identifier: Apache-2.0
// The executor: sequential and parallel paths agree, control inputs are honoured,
// errors stop a parallel run cleanly, and memory planning lowers the peak.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/executor.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// Fails when its input holds a negative first element; sleeps a little first so
// that other nodes are in flight when it throws.
OpId failing_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "executor_test_fail_if_negative",
        .num_inputs = 1,
        .infer = [](const OpCall& c, TypeList& out) { out.push_back({c.in(0).dtype(), c.in(0).shape()}); },
        .non_differentiable = true,
    });
    register_kernel(op, KernelDef{.run = [](const OpCall& c, TensorList& out) {
                      std::this_thread::sleep_for(std::chrono::milliseconds(5));
                      DF_CHECK(c.in(0).flat(0) >= 0, "[executor_test_fail_if_negative] got ", c.in(0).flat(0));
                      out[0] = c.in(0).clone();
                    }});
    return op;
  }();
  return id;
}

// 8 independent branches of a few ops each, summed.
struct Wide {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  Tensor x, y;
  Wide() {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {64, 64}, "x");
    Tensor acc;
    for (int b = 0; b < 8; ++b) {
      Tensor t = tanh(matmul(x, x) * (0.01 * (b + 1)));
      t = exp(t) - 1.0;
      acc = b == 0 ? t : acc + t;
    }
    y = acc;
  }
};

TEST(Executor, ParallelMatchesSequential) {
  Wide w;
  Tensor x = random_uniform({64, 64}, -1, 1, DType::Float32, 3);
  Executor seq(w.g, {w.g->value_of(w.x)}, {w.g->value_of(w.y)}, {}, {.parallel = false});
  Executor par(w.g, {w.g->value_of(w.x)}, {w.g->value_of(w.y)}, {}, {.parallel = true});
  EXPECT_FALSE(seq.runs_parallel());
  EXPECT_TRUE(par.runs_parallel());
  Tensor a = seq.run({x})[0];
  for (int i = 0; i < 20; ++i) {
    Tensor b = par.run({x})[0];
    ASSERT_EQ(a.to_vector<float>(), b.to_vector<float>()) << "run " << i;
  }
}

TEST(Executor, ChainsStaySequentialUnlessForced) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {4}, "x");
    y = x;
    for (int i = 0; i < 50; ++i) y = y + 1.0;
  }
  Executor chain(g, {g->value_of(x)}, {g->value_of(y)});
  EXPECT_FALSE(chain.runs_parallel());
  Executor forced(g, {g->value_of(x)}, {g->value_of(y)}, {}, {.parallel_min_width = 1});
  EXPECT_TRUE(forced.runs_parallel());
  EXPECT_EQ(forced.run({zeros({4})})[0].to_vector<float>(), std::vector<float>(4, 50.f));
  EXPECT_EQ(chain.run({zeros({4})})[0].to_vector<float>(), std::vector<float>(4, 50.f));
}

TEST(Executor, ControlInputsOrderStatefulNodes) {
  Variable v(constant({1.f}), "executor_test/v");
  auto g = std::make_shared<Graph>();
  Tensor before, after;
  int assign = -1;
  {
    GraphScope scope(g);
    before = v.value() + 0.0;
    {
      ControlDependencies deps({before});
      v.assign(constant({5.f}));
      assign = g->num_nodes() - 1;
    }
    after = v.value() * 1.0;
  }
  // The second read must follow the assignment (assign has no output to depend on).
  const int read = g->node(g->value_of(after).node).inputs[0].node;
  g->mutable_node(read).control_inputs.push_back(assign);
  ASSERT_EQ(g->node(read).op, OpId::ReadVariable);
  for (bool parallel : {false, true}) {
    v.assign(constant({1.f}));
    Executor ex(g, {}, {g->value_of(before), g->value_of(after)}, {}, {.parallel = parallel, .parallel_min_width = 1});
    TensorList out = ex.run({});
    EXPECT_EQ(out[0].item<float>(), 1.f);
    EXPECT_EQ(out[1].item<float>(), 5.f);
    EXPECT_EQ(v.value().item<float>(), 5.f);
  }
}

TEST(Executor, AnErrorStopsAParallelRunAndNamesTheNode) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {16}, "x");
    Tensor acc;
    for (int b = 0; b < 6; ++b) {
      Tensor t = exp(x * double(b));
      if (b == 3) {
        NameScope ns("bad");
        t = dispatch1(failing_op(), {x - 1.0});
      }
      acc = b == 0 ? t : acc + t;
    }
    y = acc;
  }
  Executor ex(g, {g->value_of(x)}, {g->value_of(y)}, {}, {.parallel_min_width = 1});
  ASSERT_TRUE(ex.runs_parallel());
  for (int i = 0; i < 10; ++i)
    EXPECT_THAT([&] { ex.run({zeros({16})}); },
                ThrowsMessage<Error>(HasSubstr("[graph] node 'bad/executor_test_fail_if_negative': "
                                               "[executor_test_fail_if_negative] got -1")));
  // The executor is still usable afterwards.
  EXPECT_NO_THROW(ex.run({ones({16}) * 2.0}));
}

// A traced-style inference of an MLP: layers x W + b -> relu, weights as constants.
struct Mlp {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  Tensor x, y;
  Mlp(int layers, int width, int batch) {
    // Weights are made eagerly, so they become constants of the graph.
    TensorList ws, bs;
    for (int l = 0; l < layers; ++l) {
      ws.push_back(random_uniform({width, width}, -0.05, 0.05, DType::Float32, uint64_t(l)));
      bs.push_back(random_uniform({width}, -0.1, 0.1, DType::Float32, uint64_t(100 + l)));
    }
    GraphScope scope(g);
    x = placeholder(DType::Float32, {batch, width}, "x");
    Tensor h = x;
    for (int l = 0; l < layers; ++l) h = relu(matmul(h, ws[size_t(l)]) + bs[size_t(l)]);
    y = h;
  }
};

size_t peak_of_run(const Executor& ex, const Tensor& x, Tensor* out) {
  cpu_reset_peak_stats();
  const size_t base = cpu_allocator_stats().bytes_in_use;
  *out = ex.run({x})[0];
  return cpu_allocator_stats().peak_bytes_in_use - base;
}

TEST(Executor, MemoryPlanningHalvesThePeakOfAnMlp) {
  {
    Mlp m(20, 256, 64);
    Tensor x = random_uniform({64, 256}, -1, 1, DType::Float32, 9);
    Executor planned(m.g, {m.g->value_of(m.x)}, {m.g->value_of(m.y)}, {}, {.parallel = false});
    Executor unplanned(m.g, {m.g->value_of(m.x)}, {m.g->value_of(m.y)}, {},
                       {.parallel = false, .free_at_last_use = false});
    Tensor a, b;
    size_t p_unplanned = peak_of_run(unplanned, x, &b);
    size_t p_planned = peak_of_run(planned, x, &a);
    EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
    EXPECT_LE(p_planned * 2, p_unplanned) << "planned " << p_planned << " unplanned " << p_unplanned;
    std::printf("peak planned %zu B, unplanned %zu B (%.3fx)\n", p_planned, p_unplanned,
                double(p_planned) / double(p_unplanned));
  }
}

TEST(Executor, InPlaceReusesDyingBuffersButNeverFeeds) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {1024}, "x");
    y = sigmoid(exp(tanh(x * 0.5) + 1.0));  // mul allocates; the rest may reuse its buffer
  }
  Tensor in = random_uniform({1024}, -1, 1, DType::Float32, 1);
  std::vector<float> before = in.to_vector<float>();
  Executor reuse(g, {g->value_of(x)}, {g->value_of(y)}, {}, {.parallel = false});
  Executor fresh(g, {g->value_of(x)}, {g->value_of(y)}, {}, {.parallel = false, .reuse_in_place = false});
  Tensor want = fresh.run({in})[0];
  uint64_t allocs0 = cpu_allocator_stats().num_allocs;
  Tensor got = reuse.run({in})[0];
  uint64_t allocs1 = cpu_allocator_stats().num_allocs;
  fresh.run({in});
  uint64_t allocs2 = cpu_allocator_stats().num_allocs;
  EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
  EXPECT_EQ(in.to_vector<float>(), before);  // the feed is untouched
  EXPECT_LT(allocs1 - allocs0, allocs2 - allocs1);
}

TEST(Executor, ATapeAroundARunRecordsTheOps) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {3}, "x");
    y = reduce_sum(square(x) + x);
  }
  Tensor xv = constant({1.f, 2.f, 3.f});
  GradientTape tape;
  tape.watch(xv);
  Tensor out = execute(*g, {{g->value_of(x), xv}}, {g->value_of(y)})[0];
  EXPECT_EQ(tape.gradient(out, xv).to_vector<float>(), (std::vector<float>{3, 5, 7}));
}

}  // namespace
}  // namespace deepflow

namespace deepflow {
namespace {

// The profiler records every node an executor runs (sequential and parallel paths),
// by name and op, only while it is on.
TEST(Profiler, RecordsEachNodeRunWhileOn) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {4}, "x");
    Tensor a = exp(x), b = neg(x);
    y = a + b;
  }
  for (bool parallel : {false, true}) {
    Executor ex(g, {g->value_of(x)}, {g->value_of(y)}, {}, {.parallel = parallel, .parallel_min_width = 1});
    ex.run({ones({4})});  // not recorded
    profiler::start();
    for (int i = 0; i < 3; ++i) ex.run({ones({4})});
    std::vector<profiler::NodeRecord> records = profiler::stop();
    ex.run({ones({4})});  // not recorded either
    ASSERT_EQ(records.size(), 9u) << "parallel=" << parallel;  // exp, neg, add; 3 runs
    std::map<std::string, int> ops;
    for (const auto& r : records) {
      ops[r.op]++;
      EXPECT_GE(r.micros, 0);
      EXPECT_FALSE(r.node.empty());
    }
    EXPECT_EQ(ops, (std::map<std::string, int>{{"add", 3}, {"exp", 3}, {"neg", 3}}));
    std::string table = profiler::summary(records, 3);
    EXPECT_THAT(table, ::testing::HasSubstr("exp"));
    EXPECT_THAT(table, ::testing::HasSubstr("total"));
  }
  EXPECT_FALSE(profiler::active());
}

}  // namespace
}  // namespace deepflow
