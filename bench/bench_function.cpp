// SPDX-License-Identifier: Apache-2.0
// A traced training step against the same step run eagerly (issue 3's target:
// traced >= 1.5x faster). One SGD step of an MLP 784-128-10, batch 32, float32:
// relu(x w1 + b1) w2 + b2 -> softmax cross entropy -> mean; GradientTape
// gradients of the 4 variables; assign_sub of lr * grad on each.
//   function/mlp_step_32x784x128x10/eager   the step as plain eager code
//   function/mlp_step_32x784x128x10/traced  deepflow::function of the same code
//   .../traced_no_passes                     the same without the graph passes
// The fixed cost of one call of a tiny traced function (what a traced tf.data map pays
// per element): cast(x * 3 + 1, float32) on an int64 scalar.
//   function/call_3ops/eager    the three ops dispatched eagerly
//   function/call_3ops/traced   the ConcreteFunction of the same code (executor per call)
// With DEEPFLOW_BENCH_PROFILE=1 in the environment, the traced benchmarks also
// print where their time goes: per op, the wall time of the nodes' dispatches
// (infer + allocation + kernel) from deepflow::profiler.
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

void bm_traced(benchmark::State& state, bool passes, bool parallel = false) {
  MlpStep m;
  FunctionOptions opts{.name = "mlp_step", .optimize = passes};
  opts.executor.parallel = parallel;
  Function step = function([&](const Tensor& xs, const Tensor& ys) { return m.step(xs, ys); }, opts);
  if (!warm_up(state, [&] { step(m.x, m.labels); })) return;
  for (auto _ : state) benchmark::DoNotOptimize(step(m.x, m.labels));
  state.counters["traces"] = step.trace_count();
  state.counters["nodes"] = step.concrete_functions()[0].optimized_graph().num_nodes();
  static bool profiled[2][2] = {};  // Google Benchmark calls this several times: print once
  if (const char* p = std::getenv("DEEPFLOW_BENCH_PROFILE"); p && *p == '1' && !profiled[passes][parallel]) {
    profiled[passes][parallel] = true;
    constexpr int kSteps = 200;
    profiler::start();
    for (int i = 0; i < kSteps; ++i) step(m.x, m.labels);
    std::printf("traced step (%s, %s executor), per op:\n%s", passes ? "passes" : "no passes",
                parallel ? "parallel" : "sequential", profiler::summary(profiler::stop(), kSteps).c_str());
  }
}

Tensor affine(const Tensor& x) { return cast(x * 3.0 + 1.0, DType::Float32); }

void bm_call_eager(benchmark::State& state) {
  const Tensor x = scalar(7, DType::Int64);
  if (!warm_up(state, [&] { affine(x); })) return;
  for (auto _ : state) benchmark::DoNotOptimize(affine(x));
}

void bm_call_traced(benchmark::State& state) {
  const Tensor x = scalar(7, DType::Int64);
  const TensorList in{x};
  // The concrete function, as Dataset.map calls it: no signature lookup per call.
  const ConcreteFunction f = function(affine, {.name = "affine"}).get_concrete_function(signature_of(in));
  if (!warm_up(state, [&] { f(in); })) return;
  for (auto _ : state) benchmark::DoNotOptimize(f(in));
  state.counters["nodes"] = f.optimized_graph().num_nodes();
}

BENCHMARK(bm_call_eager)->Name("function/call_3ops/eager")->UseRealTime()->Unit(benchmark::kNanosecond);
BENCHMARK(bm_call_traced)->Name("function/call_3ops/traced")->UseRealTime()->Unit(benchmark::kNanosecond);

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
