// SPDX-License-Identifier: Apache-2.0
// Graph passes on inference graphs, run through the Executor with the passes off and on:
//   - an MLP 784-256-256-10 (relu), batch 64: matmul + bias + relu fuse into fused_matmul;
//   - a small CNN, batch 16, 28x28x1: (conv 3x3 -> batch norm (inference) -> relu) x 2 ->
//     max pool 2x2 -> dense 10. Batch norms fold into the convs; bias + relu fuse into one loop.
// Weights are constants (a frozen inference graph), so folding applies. Wall-clock times.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/executor.h"
#include "deepflow/graph/passes.h"

namespace deepflow {
namespace {

struct Model {
  std::shared_ptr<Graph> graph;
  Tensor input;
};

Model mlp() {
  set_random_seed(3);
  // Weights are made eagerly (outside the scope): concrete tensors become const nodes.
  const int64_t sizes[] = {784, 256, 256, 10};
  TensorList ws, bs;
  for (int i = 0; i < 3; ++i) {
    ws.push_back(random_normal({sizes[i], sizes[i + 1]}, 0, 0.05));
    bs.push_back(random_normal({sizes[i + 1]}, 0, 0.1));
  }
  auto g = std::make_shared<Graph>();
  {
    GraphScope scope(g);
    Tensor x = placeholder(DType::Float32, {64, 784}, "x");
    g->inputs = {g->value_of(x).node};
    Tensor h = x;
    for (int i = 0; i < 3; ++i) {
      h = matmul(h, ws[size_t(i)]) + bs[size_t(i)];
      if (i < 2) h = relu(h);
    }
    g->outputs = {g->value_of(h)};
  }
  return {g, random_normal({64, 784})};
}

Model cnn() {
  set_random_seed(4);
  struct Block {
    Tensor w, scale, offset, mean, var;
  };
  std::vector<Block> blocks;
  int64_t cin = 1;
  for (int64_t cout : {16, 32}) {
    blocks.push_back({random_normal({3, 3, cin, cout}, 0, 0.2), random_uniform({cout}, 0.5, 1.5),
                      random_normal({cout}, 0, 0.1), random_normal({cout}, 0, 0.1), random_uniform({cout}, 0.5, 1.5)});
    cin = cout;
  }
  Tensor dense_w = random_normal({14 * 14 * 32, 10}, 0, 0.01), dense_b = random_normal({10}, 0, 0.1);
  auto g = std::make_shared<Graph>();
  {
    GraphScope scope(g);
    Tensor x = placeholder(DType::Float32, {16, 28, 28, 1}, "x");
    g->inputs = {g->value_of(x).node};
    Tensor h = x;
    for (const Block& b : blocks)
      h = relu(fused_batch_norm(conv2d(h, b.w, {1, 1}, "SAME"), b.scale, b.offset, b.mean, b.var, 1e-3, false).y);
    h = max_pool2d(h, {2, 2}, {2, 2});
    h = reshape(h, {16, 14 * 14 * 32});
    h = matmul(h, dense_w) + dense_b;
    g->outputs = {g->value_of(h)};
  }
  return {g, random_normal({16, 28, 28, 1})};
}

void run_model(benchmark::State& state, Model (*make)(), bool passes) {
  Model m = make();
  std::shared_ptr<const Graph> g = passes ? optimize(*m.graph) : m.graph;
  Executor ex(g, {{g->inputs[0], 0}}, g->outputs);
  for (auto _ : state) {
    TensorList out = ex.run({m.input});
    benchmark::DoNotOptimize(out[0].raw_data());
  }
  state.counters["nodes"] = double(ex.schedule().size());
}

// Off and on alternate inside one loop, so that load changes on a shared machine hit both
// alike; the counters are the medians of each and their ratio (the speed-up).
void run_pair(benchmark::State& state, Model (*make)(), ExecutorOptions options) {
  Model m = make();
  std::shared_ptr<const Graph> off = m.graph, on = optimize(*m.graph);
  Executor ex_off(off, {{off->inputs[0], 0}}, off->outputs, {}, options);
  Executor ex_on(on, {{on->inputs[0], 0}}, on->outputs, {}, options);
  std::vector<double> t_off, t_on;
  auto time = [&](const Executor& ex) {
    auto t0 = std::chrono::steady_clock::now();
    TensorList out = ex.run({m.input});
    benchmark::DoNotOptimize(out[0].raw_data());
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  };
  for (auto _ : state) {
    t_off.push_back(time(ex_off));
    t_on.push_back(time(ex_on));
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const double a = median(t_off), b = median(t_on);
  state.counters["off_us"] = a;
  state.counters["on_us"] = b;
  state.counters["speedup"] = a / b;
  state.counters["nodes_off"] = double(ex_off.schedule().size());
  state.counters["nodes_on"] = double(ex_on.schedule().size());
}

void bm_mlp_passes_off(benchmark::State& s) { run_model(s, mlp, false); }
void bm_mlp_passes_on(benchmark::State& s) { run_model(s, mlp, true); }
void bm_cnn_passes_off(benchmark::State& s) { run_model(s, cnn, false); }
void bm_cnn_passes_on(benchmark::State& s) { run_model(s, cnn, true); }
void bm_mlp_passes_ratio(benchmark::State& s) { run_pair(s, mlp, {}); }
void bm_cnn_passes_ratio(benchmark::State& s) { run_pair(s, cnn, {}); }
// One thread, one device: the kernels and node count alone, without inter-op scheduling.
void bm_mlp_passes_ratio_sequential(benchmark::State& s) { run_pair(s, mlp, {.parallel = false, .num_devices = 1}); }
void bm_cnn_passes_ratio_sequential(benchmark::State& s) { run_pair(s, cnn, {.parallel = false, .num_devices = 1}); }

}  // namespace

BENCHMARK(bm_mlp_passes_off)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(bm_mlp_passes_on)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(bm_cnn_passes_off)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(bm_cnn_passes_on)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(bm_mlp_passes_ratio)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(400);
BENCHMARK(bm_cnn_passes_ratio)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(200);
BENCHMARK(bm_mlp_passes_ratio_sequential)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(400);
BENCHMARK(bm_cnn_passes_ratio_sequential)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(200);

}  // namespace deepflow
