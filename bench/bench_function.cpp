// SPDX-License-Identifier: Apache-2.0
// A traced training step against the same step run eagerly (issue 3's target:
// traced >= 1.5x faster). One SGD step of an MLP 784-128-10, batch 32, float32:
// relu(x w1 + b1) w2 + b2 -> softmax cross entropy -> mean; GradientTape
// gradients of the 4 variables; assign_sub of lr * grad on each.
//   function/mlp_step_32x784x128x10/eager   the step as plain eager code
//   function/mlp_step_32x784x128x10/traced  deepflow::function of the same code
//   .../traced_no_passes                     the same without the graph passes
// With DEEPFLOW_BENCH_PROFILE=1 in the environment, the traced benchmark also
// prints where its time goes: per op, the summed wall time of the node's
// dispatch (infer + allocation + kernel) measured by replaying the schedule,
// and the executor's own share (the step time minus the nodes).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "deepflow/deepflow.h"
#include "bench_util.h"

namespace deepflow {
namespace {

using bench::warm_up;

struct MlpStep {
  static constexpr int64_t kBatch = 32, kIn = 784, kHidden = 128, kClasses = 10;
  Tensor x, labels;
  std::vector<Variable> params;

  MlpStep() {
    x = random_uniform({kBatch, kIn}, 0, 1, DType::Float32, 14);
    labels = one_hot(cast(random_uniform({kBatch}, 0, kClasses, DType::Float32, 15), DType::Int32), kClasses);
    params = {Variable(random_uniform({kIn, kHidden}, -0.05, 0.05, DType::Float32, 16), "w1"),
              Variable(zeros({kHidden}), "b1"),
              Variable(random_uniform({kHidden, kClasses}, -0.1, 0.1, DType::Float32, 17), "w2"),
              Variable(zeros({kClasses}), "b2")};
  }
  Tensor step(const Tensor& xs, const Tensor& ys) {
    GradientTape tape;
    Tensor h = relu(matmul(xs, params[0].value()) + params[1].value());
    Tensor logits = matmul(h, params[2].value()) + params[3].value();
    Tensor loss = reduce_mean(softmax_cross_entropy_with_logits(ys, logits));
    std::vector<Tensor> grads = tape.gradient(loss, params);
    for (size_t i = 0; i < params.size(); ++i) params[i].assign_sub(grads[i] * 0.01);
    return loss;
  }
};

void bm_eager(benchmark::State& state) {
  MlpStep m;
  if (!warm_up(state, [&] { m.step(m.x, m.labels); })) return;
  for (auto _ : state) benchmark::DoNotOptimize(m.step(m.x, m.labels));
}

// Replays the concrete function's schedule node by node with a timer around each
// dispatch, the way the executor runs it, and prints the time per op.
void profile(const ConcreteFunction& cf, const TensorList& inputs, double step_us) {
  const Graph& g = cf.optimized_graph();
  std::vector<int> targets;
  for (int id = 0; id < g.num_nodes(); ++id)
    if (g.node(id).def().stateful && g.node(id).op != OpId::Placeholder && g.node(id).op != OpId::ReadVariable)
      targets.push_back(id);
  Feeds feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds.emplace_back(ValueRef{g.inputs[i], 0}, inputs[i]);
  std::vector<int> order = prune(g, feeds, g.outputs, targets);
  std::map<std::string, std::pair<double, int>> per_op;
  constexpr int kReps = 200;
  double total = 0;
  for (int rep = 0; rep < kReps; ++rep) {
    std::map<std::pair<int, int>, Tensor> values;
    for (auto& [v, t] : feeds) values[{v.node, v.index}] = t;
    for (int id : order) {
      const Node& n = g.node(id);
      TensorList ins;
      for (const ValueRef& v : n.inputs) ins.push_back(values.at({v.node, v.index}));
      auto t0 = std::chrono::steady_clock::now();
      TensorList outs = dispatch(n.op, ins, n.attrs);
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      per_op[n.def().name].first += us / kReps;
      per_op[n.def().name].second += rep == 0;
      total += us / kReps;
      for (size_t i = 0; i < outs.size(); ++i) values[{id, int(i)}] = outs[i];
    }
  }
  std::vector<std::pair<double, std::string>> rows;
  for (auto& [name, v] : per_op) rows.emplace_back(v.first, name);
  std::sort(rows.rbegin(), rows.rend());
  std::printf("traced step (%s): %zu nodes run, %.1f us in node dispatches, %.1f us per step measured\n",
              &cf.graph() == &cf.optimized_graph() ? "no passes" : "passes", order.size(), total, step_us);
  for (auto& [us, name] : rows)
    std::printf("  %-32s %3d nodes %8.1f us\n", name.c_str(), per_op[name].second, us);
}

void bm_traced(benchmark::State& state, bool passes, bool parallel = false) {
  MlpStep m;
  FunctionOptions opts{.name = "mlp_step", .optimize = passes};
  opts.executor.parallel = parallel;
  Function step = function([&](const Tensor& xs, const Tensor& ys) { return m.step(xs, ys); }, opts);
  if (!warm_up(state, [&] { step(m.x, m.labels); })) return;
  for (auto _ : state) benchmark::DoNotOptimize(step(m.x, m.labels));
  state.counters["traces"] = step.trace_count();
  state.counters["nodes"] = step.concrete_functions()[0].optimized_graph().num_nodes();
  static bool profiled[2] = {false, false};  // Google Benchmark calls this several times: print once
  if (const char* p = std::getenv("DEEPFLOW_BENCH_PROFILE"); p && *p == '1' && !profiled[passes]) {
    profiled[passes] = true;
    auto t0 = std::chrono::steady_clock::now();
    constexpr int kSteps = 200;
    for (int i = 0; i < kSteps; ++i) step(m.x, m.labels);
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / kSteps;
    profile(step.concrete_functions()[0], {m.x, m.labels}, us);
  }
}

BENCHMARK(bm_eager)->Name("function/mlp_step_32x784x128x10/eager")->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_traced, passes, true)
    ->Name("function/mlp_step_32x784x128x10/traced")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
// The parallel executor caps each node's intra-op threads: slower on this chain-like step.
BENCHMARK_CAPTURE(bm_traced, parallel, true, true)
    ->Name("function/mlp_step_32x784x128x10/traced_parallel")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_traced, no_passes, false)
    ->Name("function/mlp_step_32x784x128x10/traced_no_passes")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace deepflow
