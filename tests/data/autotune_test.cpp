// SPDX-License-Identifier: Apache-2.0
// The autotune model: clocks (self time excludes inputs and waits), the optimizer's
// choices within the CPU and RAM budgets, statistics of a real pipeline, and an
// end-to-end run where tuning must keep latency-bound readers parallel.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
    // A worker whose busy time is spent asleep uses almost no CPU: 30 us in 3 ms. Given,
    // not measured: a sleep on a loaded machine measured as busy here once (flaky).
    map->add_cpu_sample(30000, 3 * kMs);
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

// root (sync, batch of 32) <- map (async, knob 0..2) <- source; the function takes
// fn_ns per element; no hand-off measured yet (the prior applies), or h_c / h_w.
int64_t inline_or_threads(int64_t fn_ns, int64_t h_c = -1, int64_t h_w = -1) {
  Model m(budget(2));
  auto root = m.add_node("iter", nullptr);
  auto map = m.add_node("iter/batch.0", root.get());
  auto src = m.add_node("iter/batch.0/map.0", map.get());
  auto p = knob(Parameter::Kind::Parallelism, 0, 0, 2);
  map->make_async(p, 2, nullptr, 1, true);
  fake_stats(*root, 100, 2000);
  fake_stats(*map, 3200, fn_ns);
  fake_stats(*src, 3200, 100);
  if (h_c >= 0) {
    map->add_processing(3200 * (h_c + h_w));  // hand-offs are part of processing
    map->add_handoff(3200 * h_c, 3200);
    map->add_worker_handoff(3200 * h_w);
  }
  m.optimize();
  return p->value();
}

TEST(Autotune, CheapFunctionsRunInlineExpensiveOnesOnThreads) {
  // A couple of eager ops (~1 us): a hand-off costs more than the work.
  EXPECT_EQ(inline_or_threads(1000), 0);
  EXPECT_EQ(inline_or_threads(1000, 300, 1500), 0);  // measured hand-offs, as on a 2-core machine
  // 2 ms of arithmetic: both cores.
  EXPECT_EQ(inline_or_threads(2000000), 2);
  EXPECT_EQ(inline_or_threads(2000000, 300, 1500), 2);
  // In between, the measured hand-off decides: 40 us of work pays for cheap ones.
  EXPECT_EQ(inline_or_threads(40000, 300, 1500), 2);
  EXPECT_EQ(inline_or_threads(4000, 3000, 3000), 0);
}

// root = prefetch (async, buffer knob from 0) <- a source of `input_ns` per element;
// the consumer spends `consumer_ns` per element (a training step).
int64_t tuned_prefetch(int64_t input_ns, int64_t consumer_ns) {
  Model m(budget(2));
  auto pf = m.add_node("iter", nullptr);
  auto src = m.add_node("iter/prefetch.0", pf.get());
  auto b = knob(Parameter::Kind::Buffer, 0, 0, autotune::kMaxBuffer);
  pf->make_async(nullptr, 1, b, 1, true);
  fake_stats(*pf, 64, 200);
  fake_stats(*src, 64, input_ns);
  pf->add_consumer_time(64 * consumer_ns);
  m.optimize();
  return b->value();
}

TEST(Autotune, PrefetchStaysInlineWhenItsInputIsCheap) {
  // batch(128) of row views (~1.5 us) before a 2 ms training step: no thread.
  EXPECT_EQ(tuned_prefetch(1500, 2 * kMs), 0);
  // A 1 ms input before a 2 ms step: overlap them.
  EXPECT_GE(tuned_prefetch(1 * kMs, 2 * kMs), 1);
  // Producer and consumer alike (2 ms each): a deeper buffer.
  EXPECT_GE(tuned_prefetch(2 * kMs, 2 * kMs), 2);
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

// Flips a tuned knob between inline (0) and threads while a pass runs; every
// element must come out once (in order when deterministic), an error with its
// index, and nothing may hang (a watchdog aborts after 60 s).
class KnobFlipper {
 public:
  KnobFlipper(std::shared_ptr<Parameter> knob, std::vector<int64_t> values)
      : thread_([this, knob, values] {
          for (size_t i = 0; !stop_; ++i) {
            knob->set(values[i % values.size()]);
            std::this_thread::sleep_for(std::chrono::microseconds(50 + 37 * (i % 7)));
          }
        }),
        watchdog_([this] {
          const auto t0 = std::chrono::steady_clock::now();
          while (!stop_) {
            if (std::chrono::steady_clock::now() - t0 > 60s) {
              std::fprintf(stderr, "KnobFlipper: the pass hangs\n");
              std::abort();
            }
            std::this_thread::sleep_for(5ms);
          }
        }) {}
  ~KnobFlipper() {
    stop_ = true;
    thread_.join();
    watchdog_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_, watchdog_;
};

std::unique_ptr<IteratorBase> tuned_iterator(const Dataset& ds, const std::shared_ptr<Model>& model) {
  IteratorContext ctx;
  ctx.options = budget(2);
  ctx.model = model;  // never started: only the flipper sets the knob
  ctx.prefix = "iter";
  return ds.impl()->make_iterator(ctx);
}

TEST(Autotune, MapKnobsReachInlineAndBack) {
  auto model = autotune::make_model(budget(2));
  auto identity = [](const Element& e) { return e; };
  auto map = tuned_iterator(Dataset::range(10).map(identity, {.num_parallel_calls = kAutotune}), model);
  ASSERT_NE(map->node()->parallelism(), nullptr);
  EXPECT_EQ(map->node()->parallelism()->min(), 0);  // inline is a choice
  EXPECT_EQ(map->node()->parallelism()->value(), 0);  // starts inline
  EXPECT_EQ(map->node()->parallelism()->max(), 2);    // the CPU budget
  auto pf = tuned_iterator(Dataset::range(10).prefetch(kAutotune), model);
  ASSERT_NE(pf->node()->buffer(), nullptr);
  EXPECT_EQ(pf->node()->buffer()->min(), 0);
  EXPECT_EQ(pf->node()->buffer()->value(), 0);  // starts inline
}

TEST(Autotune, SwitchingInlineAndThreadedKeepsEveryElement) {
  const int64_t n = 2000;
  for (bool deterministic : {true, false})
    for (int kind = 0; kind < 3; ++kind) {  // map, batch, prefetch
      auto fn = [](const Element& e) {
        const int64_t x = int64_t(e[0].flat(0));
        // Slow enough that the consumer often waits on an empty queue when the
        // knob drops to 0 (it must then be woken to go inline).
        busy_for(std::chrono::microseconds(x % 97 == 0 ? 200 : 5));
        return Element(scalar(double(x * 3), DType::Int64));
      };
      Dataset ds = Dataset::range(n);
      std::vector<int64_t> values = {0, 2, 0, 1, 2, 0};
      if (kind == 0) ds = ds.map(fn, {.num_parallel_calls = kAutotune, .deterministic = deterministic});
      if (kind == 1)
        ds = ds.map(fn).batch(7, {.num_parallel_calls = kAutotune, .deterministic = deterministic});
      if (kind == 2) ds = ds.map(fn).prefetch(kAutotune), values = {0, 1, 0, 4, 2, 0};
      auto model = autotune::make_model(budget(2));
      std::unique_ptr<IteratorBase> it = tuned_iterator(ds, model);
      std::shared_ptr<Parameter> knob = kind == 2 ? it->node()->buffer() : it->node()->parallelism();
      ASSERT_NE(knob, nullptr);
      std::vector<int64_t> got;
      {
        KnobFlipper flip(knob, values);
        while (std::optional<Element> e = it->get_next()) {
          const Tensor& t = (*e)[0];
          for (int64_t i = 0; i < t.size(); ++i) got.push_back(int64_t(t.flat(i)));
        }
      }
      EXPECT_FALSE(it->get_next().has_value());
      const std::string what = "kind " + std::to_string(kind) + (deterministic ? " deterministic" : " any order");
      ASSERT_EQ(got.size(), size_t(n)) << what;
      if (deterministic || kind == 2) {
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[size_t(i)], 3 * i) << what << ", position " << i;
      } else {
        std::sort(got.begin(), got.end());
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[size_t(i)], 3 * i) << what;
      }
    }
}

TEST(Autotune, InlineErrorsKeepTheElementIndex) {
  for (int64_t p : {int64_t(0), int64_t(2)}) {
    auto model = autotune::make_model(budget(2));
    Dataset ds = Dataset::range(100).map(
        [](const Element& e) {
          if (int64_t(e[0].flat(0)) == 37) fail("[test] bad element");
          return e;
        },
        {.num_parallel_calls = kAutotune});
    std::unique_ptr<IteratorBase> it = tuned_iterator(ds, model);
    it->node()->parallelism()->set(p);
    int64_t n = 0;
    std::string message;
    try {
      while (it->get_next()) ++n;
    } catch (const Error& e) {
      message = e.what();
    }
    EXPECT_EQ(n, 37) << "parallelism " << p;
    EXPECT_THAT(message, ::testing::HasSubstr("[Dataset.map] element 37")) << "parallelism " << p;
    EXPECT_THAT(message, ::testing::HasSubstr("bad element"));
    EXPECT_FALSE(it->get_next().has_value());  // the pass is over
  }
}

TEST(Autotune, SaveAndRestoreAcrossInlineAndThreaded) {
  // Save while threaded, restore into an inline iterator (and the reverse): the
  // saved state does not depend on the mode.
  auto plus100 = [](const Element& e) { return Element(scalar(double(int64_t(e[0].flat(0)) + 100), DType::Int64)); };
  Dataset ds = Dataset::range(50).map(plus100, {.num_parallel_calls = kAutotune}).prefetch(kAutotune);
  for (int64_t from : {int64_t(0), int64_t(2)}) {
    const int64_t to = 2 - from;
    auto m1 = autotune::make_model(budget(2));
    auto a = tuned_iterator(ds, m1);
    a->node()->buffer()->set(from == 0 ? 0 : 2);
    a->node()->children()[0]->parallelism()->set(from);
    for (int i = 0; i < 20; ++i) ASSERT_EQ(int64_t((*a->get_next())[0].flat(0)), 100 + i);
    IteratorStateWriter w;
    a->save(w);
    auto m2 = autotune::make_model(budget(2));
    auto b = tuned_iterator(ds, m2);
    b->node()->buffer()->set(to == 0 ? 0 : 2);
    b->node()->children()[0]->parallelism()->set(to);
    b->restore(IteratorStateReader(w.serialize()));
    for (int i = 20; i < 50; ++i) {
      std::optional<Element> e = b->get_next();
      ASSERT_TRUE(e.has_value()) << "from " << from << ", element " << i;
      EXPECT_EQ(int64_t((*e)[0].flat(0)), 100 + i);
    }
    EXPECT_FALSE(b->get_next().has_value());
  }
}

}  // namespace
}  // namespace deepflow::data
