// SPDX-License-Identifier: Apache-2.0
// Training steps through the Keras-style API (the targets: the MLP >= 1.3x and
// the LeNet >= 1.2x PyTorch's samples/s; bench/peers/torch_peer.py runs the same models
// under the same names). One call of `model->train_on_batch(x, y)` on a fixed synthetic
// float32 batch with int32 labels, sparse categorical cross-entropy from logits:
//   keras/mlp_sgd_b128      Dense 784-512-512-10 (relu), batch 128, SGD lr 0.01
//   keras/lenet_adam_b64    [28,28,1] -> conv 5x5x32 same relu -> max pool 2 -> conv
//                           5x5x64 same relu -> max pool 2 -> dense 1024 relu -> dense 10,
//                           batch 64, Adam lr 1e-3
//   .../_eager              the same with compile(run_eagerly = true), for information
// Reported as us per step (the time report.py compares) plus a samples_per_s counter.
// With DEEPFLOW_BENCH_PROFILE=1 the traced benchmarks also print deepflow::profiler's
// per-op table of the step.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "deepflow/deepflow.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/model.h"

namespace deepflow {
namespace {

using bench::warm_up;
namespace layers = keras::layers;

enum class Net { Mlp, LeNet };

struct KerasStep {
  int64_t batch;
  Tensor x, y;
  keras::ModelPtr model;

  KerasStep(Net net, bool eager) {
    set_random_seed(1);
    keras::OptimizerPtr opt;
    if (net == Net::Mlp) {
      batch = 128;
      x = random_uniform({batch, 784}, 0, 1, DType::Float32, 21);
      model = std::make_shared<keras::Sequential>(std::vector<keras::LayerPtr>{
          layers::InputLayer(Shape{784}), layers::Dense(512, "relu"), layers::Dense(512, "relu"),
          layers::Dense(10)});
      opt = keras::optimizers::SGD({.learning_rate = 0.01});
    } else {
      batch = 64;
      x = random_uniform({batch, 28, 28, 1}, 0, 1, DType::Float32, 22);
      model = std::make_shared<keras::Sequential>(std::vector<keras::LayerPtr>{
          layers::InputLayer(Shape{28, 28, 1}),
          layers::Conv2D(32, 5, {.padding = "same", .activation = "relu"}),
          layers::MaxPooling2D(2),
          layers::Conv2D(64, 5, {.padding = "same", .activation = "relu"}),
          layers::MaxPooling2D(2),
          layers::Flatten(),
          layers::Dense(1024, "relu"),
          layers::Dense(10)});
      opt = keras::optimizers::Adam({.learning_rate = 1e-3});
    }
    // random_uniform in [0, 10) cast to int32 truncates to the classes 0..9.
    y = cast(random_uniform({batch}, 0, 10, DType::Float32, 23), DType::Int32);
    model->compile({.optimizer = opt,
                    .loss = {keras::losses::SparseCategoricalCrossentropy({.from_logits = true})},
                    .run_eagerly = eager});
  }
  void step() { model->train_on_batch({x}, {y}); }
};

void bm_keras_step(benchmark::State& state, Net net, bool eager) {
  KerasStep s(net, eager);
  // The first call traces the step (and builds the optimizer's slots); keep it out of the timing.
  if (!warm_up(state, [&] { s.step(); })) return;
  for (auto _ : state) s.step();
  // A rate over real time, as UseRealTime() makes Google Benchmark divide by it.
  state.counters["samples_per_s"] =
      benchmark::Counter(double(s.batch), benchmark::Counter::kIsIterationInvariantRate);
  static bool profiled[2] = {};  // Google Benchmark calls this several times: print once
  if (const char* p = std::getenv("DEEPFLOW_BENCH_PROFILE"); p && *p == '1' && !eager && !profiled[int(net)]) {
    profiled[int(net)] = true;
    const int steps = net == Net::Mlp ? 200 : 50;
    profiler::start();
    for (int i = 0; i < steps; ++i) s.step();
    std::printf("%s traced train step, per op:\n%s", net == Net::Mlp ? "mlp_sgd_b128" : "lenet_adam_b64",
                profiler::summary(profiler::stop(), steps).c_str());
  }
}

// One epoch of model->fit over 4096 LeNet samples (batch 64, shuffle off): the C++ twin
// of bench/python/tf_programs.py's keras/lenet_fit; us per step.
void bm_lenet_fit(benchmark::State& state) {
  KerasStep s(Net::LeNet, false);
  const int64_t n = 4096;
  const Tensor x = random_uniform({n, 28, 28, 1}, 0, 1, DType::Float32, 24);
  const Tensor y = cast(random_uniform({n}, 0, 10, DType::Float32, 25), DType::Int32);
  auto epoch = [&] { s.model->fit(x, y, {.batch_size = s.batch, .epochs = 1, .verbose = 0, .shuffle = false}); };
  if (!warm_up(state, epoch)) return;
  for (auto _ : state) epoch();
  state.counters["us_per_step"] =
      benchmark::Counter(double(n / s.batch), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(bm_lenet_fit)->Name("keras/lenet_fit")->UseRealTime()->Unit(benchmark::kMillisecond);

// The eager variants end in "_eager", not "/eager": run-bench.sh selects a benchmark by
// "^name(/|$)", so a "/eager" suffix would run (and report) under the traced one's name.
BENCHMARK_CAPTURE(bm_keras_step, mlp, Net::Mlp, false)
    ->Name("keras/mlp_sgd_b128")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_keras_step, lenet, Net::LeNet, false)
    ->Name("keras/lenet_adam_b64")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_keras_step, mlp_eager, Net::Mlp, true)
    ->Name("keras/mlp_sgd_b128_eager")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_keras_step, lenet_eager, Net::LeNet, true)
    ->Name("keras/lenet_adam_b64_eager")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace deepflow
