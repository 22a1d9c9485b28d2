// SPDX-License-Identifier: Apache-2.0
// Input pipelines (issue 5's targets). Each benchmark iteration is one full pass
// over a fresh iterator, timed in real time (the pipelines run threads); the
// elements_per_s counter is the throughput.
//   data/map_expensive/pN     range(64).map(2 ms of arithmetic per element), N calls
//                             at once (p1: the sequential map). Target: p2 >= 1.8x p1
//                             on 2 free cores.
//   data/prefetch_{sleep,compute}/bN   producer 2 ms per element, consumer 3 ms, 40
//                             elements, prefetch buffer N (b0: none). Counter
//                             vs_slower = time / (40 x 3 ms). Target: <= 1.1.
//   data/tune_{cheap,expensive,latency}/{p1,p2,p4,autotune}   three pipelines with
//                             hand-picked parallelism and with kAutotune. Target:
//                             autotune within 10% of the best hand-picked.
//     cheap:     range(8192).map(x * 2 + 1, eager ops).batch(32)
//     expensive: range(64).map(2 ms of arithmetic).batch(8)
//     latency:   range(4).interleave(x -> a generator of 24 elements, 2 ms of wait
//                each, cycle 4)
//   data/map_affine/autotune  range(65536).map(x * 3 + 1 as float32, autotuned).batch(256)
//                             (the C++ twin of tf_programs.py's data/map_traced)
//   data/fit_mlp/{tensors,dataset,dataset_no_prefetch}   one epoch of Model::fit on MNIST-shaped data
//                             (8192 x 784 float32, int32 labels; Dense 784-512-512-10,
//                             batch 128, SGD): from in-memory tensors (shuffle off) vs
//                             from_tensor_slices -> batch(128) -> prefetch(kAutotune).
//                             Target: dataset within 5% of tensors.
#include <benchmark/benchmark.h>

#include <chrono>
#include <thread>

#include "bench_util.h"
#include "deepflow/data/dataset.h"
#include "deepflow/deepflow.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/model.h"

namespace deepflow::data {
namespace {

using bench::warm_up;
using namespace std::chrono_literals;

// About 2 ms of dependent floating-point work on one core (no memory traffic, no
// OpenMP): the result feeds the output so the compiler cannot drop it.
double burn(double seed) {
  double x = seed;
  for (int i = 0; i < 1500000; ++i) x = x * 0.9999999 + 1e-7;
  return x;
}

void spin_for(std::chrono::microseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

Element expensive(const Element& e) { return Element(scalar(burn(e[0].flat(0)), DType::Float64)); }

int64_t drain(const Dataset& ds) {
  int64_t n = 0;
  Iterator it = ds.iter();
  while (it.next()) ++n;
  return n;
}

void report(benchmark::State& state, int64_t elements) {
  state.counters["elements_per_s"] =
      benchmark::Counter(double(elements), benchmark::Counter::kIsIterationInvariantRate);
}

void bm_map_expensive(benchmark::State& state, int64_t p) {
  const Dataset ds = Dataset::range(64).map(expensive, {.num_parallel_calls = p});
  int64_t n = 0;
  if (!warm_up(state, [&] { n = drain(ds); })) return;
  for (auto _ : state) benchmark::DoNotOptimize(drain(ds));
  report(state, n);
}

// The pipeline bench/python/tf_programs.py's data/map_traced builds from Python (there the
// map is a Python function traced into a graph): range(65536).map(x * 3 + 1 as float32,
// autotuned).batch(256), one pass. The C++ map calls the ops eagerly per element.
void bm_map_affine(benchmark::State& state) {
  const Dataset ds = Dataset::range(65536)
                         .map([](const Element& e) { return Element(cast(e[0] * 3.0 + 1.0, DType::Float32)); },
                              {.num_parallel_calls = kAutotune})
                         .batch(256);
  int64_t n = 0;
  if (!warm_up(state, [&] { n = drain(ds); })) return;
  for (auto _ : state) benchmark::DoNotOptimize(drain(ds));
  report(state, n);
}

// Producer X = 2 ms per element, consumer Y = 3 ms, by sleeping or by computing.
void bm_prefetch(benchmark::State& state, bool compute, int64_t buffer) {
  const int64_t n = 40;
  auto wait = [compute](std::chrono::microseconds d) {
    if (compute) spin_for(d);
    else std::this_thread::sleep_for(d);
  };
  Dataset ds = Dataset::range(n).map([&](const Element& e) {
    wait(2000us);
    return e;
  });
  if (buffer != 0) ds = ds.prefetch(buffer);
  auto pass = [&] {
    Iterator it = ds.iter();
    while (it.next()) wait(3000us);
  };
  if (!warm_up(state, pass)) return;
  for (auto _ : state) pass();
  // (time per pass) / (n x 3 ms): an inverted per-iteration rate.
  state.counters["vs_slower"] = benchmark::Counter(
      double(n) * 3e-3, benchmark::Counter::Flags(benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert));
  report(state, n);
}

enum class Pipe { Cheap, Expensive, Latency };

Dataset pipeline(Pipe pipe, int64_t p) {
  switch (pipe) {
    case Pipe::Cheap:
      return Dataset::range(8192)
          .map([](const Element& e) { return Element(add(mul(e[0], scalar(2, DType::Int64)), scalar(1, DType::Int64))); },
               {.num_parallel_calls = p})
          .batch(32);
    case Pipe::Expensive:
      return Dataset::range(64).map(expensive, {.num_parallel_calls = p}).batch(8);
    case Pipe::Latency: {
      const ElementSpec spec{{{DType::Int64, Shape{}}}, {}};
      return Dataset::range(4).interleave(
          [spec](const Element& e) {
            const int64_t base = int64_t(e[0].flat(0)) * 1000;
            return Dataset::from_generator(
                [base] {
                  return GeneratorFn([base, i = int64_t(0)]() mutable -> std::optional<Element> {
                    if (i == 24) return std::nullopt;
                    std::this_thread::sleep_for(2ms);  // a remote read's latency
                    return Element(scalar(double(base + i++), DType::Int64));
                  });
                },
                spec);
          },
          {.cycle_length = 4, .num_parallel_calls = p});
    }
  }
  return {};
}

void bm_tune(benchmark::State& state, Pipe pipe, int64_t p) {
  const Dataset ds = pipeline(pipe, p);
  int64_t n = 0;
  if (!warm_up(state, [&] { n = drain(ds); })) return;
  for (auto _ : state) benchmark::DoNotOptimize(drain(ds));
  report(state, n);
}

void bm_fit(benchmark::State& state, bool from_dataset, bool prefetch) {
  namespace layers = keras::layers;
  const int64_t n = 8192, batch = 128;
  set_random_seed(1);
  const Tensor x = random_uniform({n, 784}, 0, 1, DType::Float32, 31);
  const Tensor y = cast(random_uniform({n}, 0, 10, DType::Float32, 32), DType::Int32);
  auto model = std::make_shared<keras::Sequential>(std::vector<keras::LayerPtr>{
      layers::InputLayer(Shape{784}), layers::Dense(512, "relu"), layers::Dense(512, "relu"), layers::Dense(10)});
  model->compile({.optimizer = keras::optimizers::SGD({.learning_rate = 0.01}),
                  .loss = {keras::losses::SparseCategoricalCrossentropy({.from_logits = true})}});
  Dataset ds = Dataset::from_tensor_slices({x, y}).batch(batch);
  if (prefetch) ds = ds.prefetch(kAutotune);
  auto epoch = [&] {
    if (from_dataset) model->fit(ds, {.epochs = 1, .verbose = 0});
    else model->fit(x, y, {.batch_size = batch, .epochs = 1, .verbose = 0, .shuffle = false});
  };
  if (!warm_up(state, epoch)) return;  // traces the train step
  for (auto _ : state) epoch();
  state.counters["samples_per_s"] = benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
  using benchmark::kMillisecond;
  for (int64_t p : {int64_t(1), int64_t(2), int64_t(4)})
    benchmark::RegisterBenchmark(("data/map_expensive/p" + std::to_string(p)).c_str(), bm_map_expensive, p)
        ->UseRealTime()
        ->Unit(kMillisecond);
  for (bool compute : {false, true})
    for (int64_t b : {int64_t(0), int64_t(1), int64_t(2), kAutotune}) {
      const std::string name = std::string("data/prefetch_") + (compute ? "compute" : "sleep") + "/" +
                               (b == kAutotune ? std::string("autotune") : "b" + std::to_string(b));
      benchmark::RegisterBenchmark(name.c_str(), bm_prefetch, compute, b)->UseRealTime()->Unit(kMillisecond);
    }
  const std::pair<Pipe, const char*> pipes[] = {
      {Pipe::Cheap, "cheap"}, {Pipe::Expensive, "expensive"}, {Pipe::Latency, "latency"}};
  for (const auto& [pipe, pname] : pipes)
    for (int64_t p : {int64_t(1), int64_t(2), int64_t(4), kAutotune}) {
      const std::string name = std::string("data/tune_") + pname + "/" +
                               (p == kAutotune ? std::string("autotune") : "p" + std::to_string(p));
      benchmark::RegisterBenchmark(name.c_str(), bm_tune, pipe, p)->UseRealTime()->Unit(kMillisecond);
    }
  benchmark::RegisterBenchmark("data/map_affine/autotune", bm_map_affine)->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("data/fit_mlp/tensors", bm_fit, false, false)->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("data/fit_mlp/dataset", bm_fit, true, true)->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("data/fit_mlp/dataset_no_prefetch", bm_fit, true, false)
      ->UseRealTime()
      ->Unit(kMillisecond);
}

const bool registered = (register_all(), true);

}  // namespace
}  // namespace deepflow::data
