// SPDX-License-Identifier: Apache-2.0
// The executor (deepflow/graph/executor.h):
//   - overhead per node, sequential vs parallel path, on a 1000-node chain of tiny adds
//     and on 1000 independent tiny nodes (time per node = iteration time / 1000);
//   - a wide graph of real work (8 branches of matmul 256^3 + tanh), sequential vs parallel;
//   - memory planning: peak allocator bytes of a traced-style inference of a 20-layer
//     MLP (width 1024, batch 256, weights as constants) with planning (free at last use,
//     in-place reuse) vs without. Reported as counters: peak_planned, peak_unplanned, ratio.
#include <benchmark/benchmark.h>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/executor.h"

namespace deepflow {
namespace {

constexpr int kNodes = 1000;

ExecutorOptions mode(bool parallel) {
  ExecutorOptions o;
  o.parallel = parallel;
  o.parallel_min_width = 1;  // force the parallel path even on a chain
  return o;
}

void run_graph(benchmark::State& state, const std::shared_ptr<Graph>& g, const Tensor& x,
               const std::vector<ValueRef>& fetches, bool parallel, int nodes) {
  Executor ex(g, {g->value_of(x)}, fetches, {}, mode(parallel));
  Tensor in = ones(x.shape());
  for (auto _ : state) benchmark::DoNotOptimize(ex.run({in}));
  if (nodes > 0)
    state.counters["ns_per_node"] =
        benchmark::Counter(double(nodes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void bm_chain(benchmark::State& state) {
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {8}, "x");
    y = x;
    Tensor one = constant({1.f});
    for (int i = 0; i < kNodes; ++i) y = add(y, one);
  }
  run_graph(state, g, x, {g->value_of(y)}, state.range(0) != 0, kNodes);
}

void bm_wide_tiny(benchmark::State& state) {
  auto g = std::make_shared<Graph>();
  Tensor x;
  std::vector<ValueRef> outs;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {8}, "x");
    for (int i = 0; i < kNodes; ++i) outs.push_back(g->value_of(neg(x)));
  }
  run_graph(state, g, x, outs, state.range(0) != 0, kNodes);
}

void bm_wide_matmul(benchmark::State& state) {
  TensorList ws;
  for (int b = 0; b < 8; ++b) ws.push_back(random_uniform({256, 256}, -0.1, 0.1, DType::Float32, b));
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {256, 256}, "x");
    for (int b = 0; b < 8; ++b) {
      Tensor t = tanh(matmul(x, ws[size_t(b)]));
      y = b == 0 ? t : y + t;
    }
  }
  run_graph(state, g, x, {g->value_of(y)}, state.range(0) != 0, 0);
}

void bm_mlp_peak(benchmark::State& state) {
  constexpr int kLayers = 20, kWidth = 1024, kBatch = 256;
  TensorList ws, bs;
  for (int l = 0; l < kLayers; ++l) {
    ws.push_back(random_uniform({kWidth, kWidth}, -0.03, 0.03, DType::Float32, l));
    bs.push_back(random_uniform({kWidth}, -0.1, 0.1, DType::Float32, 100 + l));
  }
  auto g = std::make_shared<Graph>();
  Tensor x, y;
  {
    GraphScope scope(g);
    x = placeholder(DType::Float32, {kBatch, kWidth}, "x");
    y = x;
    for (int l = 0; l < kLayers; ++l) y = relu(matmul(y, ws[size_t(l)]) + bs[size_t(l)]);
  }
  ExecutorOptions planned_opt, unplanned_opt;
  planned_opt.parallel = unplanned_opt.parallel = false;
  unplanned_opt.free_at_last_use = false;
  Executor planned(g, {g->value_of(x)}, {g->value_of(y)}, {}, planned_opt);
  Executor unplanned(g, {g->value_of(x)}, {g->value_of(y)}, {}, unplanned_opt);
  Tensor in = random_uniform({kBatch, kWidth}, -1, 1, DType::Float32, 7);
  auto peak = [&](const Executor& ex) {
    cpu_reset_peak_stats();
    const size_t base = cpu_allocator_stats().bytes_in_use;
    Tensor out = ex.run({in})[0];
    return double(cpu_allocator_stats().peak_bytes_in_use - base);
  };
  double p_planned = 0, p_unplanned = 0;
  for (auto _ : state) {
    p_planned = peak(planned);  // timed: the planned run is the one that ships
    state.PauseTiming();
    p_unplanned = peak(unplanned);
    state.ResumeTiming();
  }
  state.counters["peak_planned_MiB"] = p_planned / (1 << 20);
  state.counters["peak_unplanned_MiB"] = p_unplanned / (1 << 20);
  state.counters["ratio"] = p_planned / p_unplanned;
}

}  // namespace

BENCHMARK(bm_chain)->Name("executor/chain1000")->ArgName("parallel")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(bm_wide_tiny)->Name("executor/wide1000_tiny")->ArgName("parallel")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(bm_wide_matmul)->Name("executor/wide8_matmul256")->ArgName("parallel")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(bm_mlp_peak)->Name("executor/mlp20x1024_peak")->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace deepflow
