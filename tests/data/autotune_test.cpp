// SPDX-License-Identifier: Apache-2.0
// The autotune model: clocks (self time excludes inputs and waits), the optimizer's
// choices within the CPU and RAM budgets, statistics of a real pipeline, and an
// end-to-end run where tuning must keep latency-bound readers parallel.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "data/data_test_util.h"
#include "deepflow/data/autotune.h"

namespace deepflow::data {
namespace {

using namespace std::chrono_literals;
using autotune::Idle;
using autotune::Model;
using autotune::Node;
using autotune::Parameter;
using autotune::Timer;

constexpr int64_t kMs = 1000000;

Options budget(int64_t cpus, int64_t ram = 0) {
  Options o;
  o.autotune.cpu_budget = cpus;
  o.autotune.ram_budget = ram;
  return o;
}

// n elements of `bytes` bytes each, `ns_per` of processing each.
void fake_stats(Node& n, int64_t count, int64_t ns_per, int64_t bytes = 4) {
  const Element e(zeros({bytes / 4}));
  for (int64_t i = 0; i < count; ++i) n.record_output(e);
  n.add_processing(count * ns_per);
}

std::shared_ptr<Parameter> knob(Parameter::Kind kind, int64_t value, int64_t min, int64_t max) {
  return std::make_shared<Parameter>(kind, value, min, max, std::make_shared<autotune::SharedState>());
}

void busy_for(std::chrono::microseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

TEST(Autotune, SelfTimeExcludesInputsAndWaits) {
  Model m(budget(2));
  auto parent = m.add_node("iter", nullptr);
  auto child = m.add_node("iter/map.0", parent.get());
  {
    Timer p(parent.get());
    std::this_thread::sleep_for(10ms);
    {
      Timer c(child.get());
      std::this_thread::sleep_for(60ms);
      {
        Idle idle;
        std::this_thread::sleep_for(60ms);
      }
    }
    std::this_thread::sleep_for(5ms);
  }
  // Wide margins: sleeps overshoot on a loaded machine, but a leak adds 60+ ms.
  EXPECT_GE(parent->processing_ns(), 15 * kMs);
  EXPECT_LT(parent->processing_ns(), 70 * kMs);  // 75+ if the child's time leaked in
  EXPECT_GE(child->processing_ns(), 60 * kMs);
  EXPECT_LT(child->processing_ns(), 115 * kMs);  // 120+ if the idle wait counted
  // The root's consumer time: between two of its get_next() calls.
  { Timer t(parent.get()); }
  std::this_thread::sleep_for(10ms);
  { Timer t(parent.get()); }
  EXPECT_GE(parent->consumer_ns(), 10 * kMs);
  EXPECT_EQ(child->parent(), parent.get());
  EXPECT_EQ(parent->children().size(), 1u);
}

// root (sync) <- map (async, tuned) <- source: a 4 ms function.
int64_t tuned_map_parallelism(int64_t cpus, bool sleeps) {
  Model m(budget(cpus));
  auto root = m.add_node("iter", nullptr);
  auto map = m.add_node("iter/batch.0", root.get());
  auto src = m.add_node("iter/batch.0/map.0", map.get());
  auto p = knob(Parameter::Kind::Parallelism, 8, 1, 8);
  map->make_async(p, 8, nullptr, 1, true);
  fake_stats(*root, 100, 1000);
  fake_stats(*map, 100, 4 * kMs);
  fake_stats(*src, 100, 1000);
  if (sleeps) {
    // A worker whose busy time is spent asleep uses almost no CPU.
    map->record_work(0);
    std::this_thread::sleep_for(3ms);
    map->record_work(3 * kMs);
  }
  m.optimize();
  EXPECT_EQ(m.runs(), 1);
  return p->value();
}

TEST(Autotune, ParallelismStopsAtTheCpuBudget) {
  EXPECT_EQ(tuned_map_parallelism(4, false), 4);
  EXPECT_EQ(tuned_map_parallelism(2, false), 2);
  EXPECT_EQ(tuned_map_parallelism(1, false), 1);
  // Sleeping workers cost no CPU: go past the cores, up to the knob's maximum.
  EXPECT_EQ(tuned_map_parallelism(2, true), 8);
}

// root = prefetch (async, buffer knob) <- a 5 ms source; consumer time c per element.
int64_t tuned_buffer(int64_t consumer_ms, int64_t ram_budget, int64_t bytes) {
  Model m(budget(2, ram_budget));
  auto pf = m.add_node("iter", nullptr);
  auto src = m.add_node("iter/prefetch.0", pf.get());
  auto b = knob(Parameter::Kind::Buffer, 1, 1, autotune::kMaxBuffer);
  pf->make_async(nullptr, 1, b, 1, true);
  fake_stats(*pf, 100, 1000, bytes);
  fake_stats(*src, 100, 5 * kMs, bytes);
  pf->add_consumer_time(100 * consumer_ms * kMs);
  const double before = m.output_time();
  m.optimize();
  if (b->value() > 1) EXPECT_LT(m.output_time(), before);
  return b->value();
}

TEST(Autotune, PrefetchBufferGrowsWhenProducerAndConsumerAreClose) {
  const int64_t k = tuned_buffer(5, 0, 400);
  EXPECT_GE(k, 4);
  EXPECT_LE(k, autotune::kMaxBuffer);
  // A consumer that never waits on anything but us: a buffer cannot help.
  EXPECT_EQ(tuned_buffer(0, 0, 400), 1);
  // The RAM budget caps it: 1000 bytes hold two 400-byte elements.
  EXPECT_EQ(tuned_buffer(5, 1000, 400), 2);
}

TEST(Autotune, RetiredChildrenStillCount) {
  Model m(budget(2));
  auto root = m.add_node("iter", nullptr);
  fake_stats(*root, 10, 1 * kMs);
  {
    auto pass = m.add_node("iter/repeat.0", root.get());
    fake_stats(*pass, 10, 3 * kMs);
  }  // the pass ends: its 30 ms fold into the root
  EXPECT_TRUE(root->children().empty());
  EXPECT_NEAR(m.output_time(), 4.0 * kMs, 0.01 * kMs);  // 1 ms self + 3 ms of input per element
}

TEST(Autotune, MeasuresARealPipeline) {
  const Options o = budget(2);
  IteratorContext ctx;
  ctx.options = o;
  ctx.model = autotune::make_model(o);
  ctx.prefix = "iter";
  Dataset ds = Dataset::range(1000)
                   .map(
                       [](const Element& e) {
                         busy_for(std::chrono::microseconds(500));
                         return e;
                       },
                       {.num_parallel_calls = kAutotune})
                   .prefetch(kAutotune);
  std::unique_ptr<IteratorBase> it = ds.impl()->make_iterator(ctx);
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(it->get_next().has_value());
  Node* pf = it->node();
  ASSERT_NE(pf, nullptr);
  ASSERT_EQ(pf->children().size(), 1u);
  std::shared_ptr<Node> map = pf->children()[0];
  ASSERT_EQ(map->children().size(), 1u);
  std::shared_ptr<Node> range = map->children()[0];
  EXPECT_EQ(pf->elements(), 60);
  EXPECT_GE(map->elements(), 60);
  EXPECT_GE(range->elements(), map->elements());
  // The function's time is the map's; the source and the prefetch hand-off are cheap.
  EXPECT_GE(map->processing_ns(), 60 * kMs / 2);
  EXPECT_LT(range->processing_ns(), map->processing_ns() / 5);
  EXPECT_LT(pf->processing_ns(), map->processing_ns() / 5);
  ASSERT_NE(map->parallelism(), nullptr);
  EXPECT_EQ(map->parallelism()->max(), 2);
  ctx.model->optimize();
  EXPECT_GE(map->parallelism()->value(), 1);
  EXPECT_LE(map->parallelism()->value(), 2);
  EXPECT_GT(ctx.model->output_time(), 0);
  // The optimizer thread runs on its own and stops promptly.
  ctx.model->start();
  const auto t0 = std::chrono::steady_clock::now();
  while (ctx.model->runs() < 3 && std::chrono::steady_clock::now() - t0 < 3s) std::this_thread::sleep_for(1ms);
  EXPECT_GE(ctx.model->runs(), 3);  // the explicit run and two of the thread's (10, 30 ms)
  const auto t1 = std::chrono::steady_clock::now();
  ctx.model->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t1, 500ms);  // not waiting out its period
  it.reset();
  // Nothing to tune: start() starts no thread, so the model never runs.
  std::shared_ptr<Model> idle = autotune::make_model(o);
  ctx.model = idle;
  it = Dataset::range(100).map([](const Element& e) { return e; }, {.num_parallel_calls = 2}).prefetch(2).impl()->make_iterator(ctx);
  idle->start();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(it->get_next().has_value());
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(idle->runs(), 0);
  it.reset();
  EXPECT_TRUE(autotune::make_model(Options{}) != nullptr);
  Options off;
  off.autotune.enabled = false;
  EXPECT_TRUE(autotune::make_model(off) == nullptr);
}

TEST(Autotune, KeepsLatencyBoundReadersParallelOnOneCpu) {
  // Four readers that mostly wait (8 ms per element) with a CPU budget of one:
  // the tuner must see that they use no CPU and keep all four running.
  std::atomic<int> now{0}, most_late{0};
  std::atomic<bool> late{false};
  auto fn = [&](const Element& e) {
    return Dataset::from_tensors(e).repeat(40).map([&](const Element& x) {
      const int n = ++now;
      if (late) most_late = std::max(most_late.load(), n);
      std::this_thread::sleep_for(8ms);
      --now;
      return x;
    });
  };
  Dataset ds = Dataset::range(4)
                   .interleave(fn, {.cycle_length = 4, .num_parallel_calls = kAutotune})
                   .with_options(budget(1));
  Iterator it = ds.iter();
  const auto t0 = std::chrono::steady_clock::now();
  int n = 0;
  while (it.next()) {
    ++n;
    // After 150 ms the optimizer has run 4 times (10, 20, 40, 80 ms).
    if (!late && std::chrono::steady_clock::now() - t0 > 150ms) late = true;
  }
  EXPECT_EQ(n, 160);
  EXPECT_TRUE(late.load());
  EXPECT_GE(most_late.load(), 3);
}

}  // namespace
}  // namespace deepflow::data
