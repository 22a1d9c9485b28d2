// SPDX-License-Identifier: Apache-2.0
// deepflow's benchmarks (Google Benchmark): matmul, conv2d, elementwise, reductions,
// transposes, softmax, eager dispatch and a small training step.
//
// Every benchmark reports one headline number that scripts/run-bench.sh joins with
// the PyTorch peer (bench/peers/torch_peer.py) by name:
//   - a "GFLOP" rate counter, GFLOP/s (matmul, conv2d),
//   - a "GB" rate counter, GB/s (elementwise, reductions, copies),
//   - a "fraction" counter (add_vs_copy_16M: add's share of memcpy bandwidth), or
//   - the real time per iteration (dispatch in ns, training step in us).
// Times are wall clock (UseRealTime) because kernels run on OpenMP threads.
// docs/benchmarks.md explains each benchmark and how the byte and flop counts are made.
#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "deepflow/core/parallel.h"
#include "deepflow/deepflow.h"
#include "deepflow/ops/conv.h"
#include "bench_util.h"

namespace deepflow {
namespace {

using bench::warm_up;

constexpr int64_t k16M = int64_t(1) << 24;

// A tensor of uniform values in [lo, hi); a fixed LCG keeps setup fast for 16M elements
// and independent of the random op family.
Tensor uniform(const Shape& shape, DType dtype = DType::Float32, float lo = -1, float hi = 1,
               uint32_t seed = 1) {
  Tensor t(shape, dtype);
  uint32_t s = seed * 2654435761u + 12345u;
  auto next = [&] {
    s = s * 1664525u + 1013904223u;
    return lo + (hi - lo) * float(s >> 8) * (1.0f / 16777216.0f);
  };
  int64_t n = t.size();
  if (dtype == DType::Float32) {
    float* p = t.data<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = next();
  } else if (dtype == DType::BFloat16) {
    BFloat16* p = t.data<BFloat16>();
    for (int64_t i = 0; i < n; ++i) p[i] = BFloat16(next());
  } else {
    fail("[bench] unsupported dtype ", dtype);
  }
  return t;
}

// Counter "GFLOP" or "GB": giga-units per iteration, shown as a rate (GFLOP/s, GB/s).
void set_rate(benchmark::State& state, const char* unit, double per_iteration) {
  state.counters[unit] = benchmark::Counter(per_iteration * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// --- matmul: a [n, n] x b [n, n] -> [n, n]; 2 n^3 flops ---

void bm_matmul(benchmark::State& state, int64_t n, DType dtype) {
  Tensor a = uniform({n, n}, dtype, -1, 1, 1), b = uniform({n, n}, dtype, -1, 1, 2);
  if (!warm_up(state, [&] { matmul(a, b); })) return;
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b));
  set_rate(state, "GFLOP", 2.0 * double(n) * double(n) * double(n));
}

// --- conv2d: input [n, h, w, c], filters [kh, kw, c, co] -> [n, oh, ow, co]; 2 n oh ow co kh kw c flops ---

void bm_conv2d(benchmark::State& state, Shape in_shape, Shape filter_shape, std::string padding) {
  Tensor x = uniform(in_shape, DType::Float32, -1, 1, 3), f = uniform(filter_shape, DType::Float32, -1, 1, 4);
  Tensor y;
  if (!warm_up(state, [&] { y = conv2d(x, f, {1, 1}, padding); })) return;
  const double flops = 2.0 * double(y.size()) * double(filter_shape.dim(0) * filter_shape.dim(1) * filter_shape.dim(2));
  y = Tensor();
  for (auto _ : state) benchmark::DoNotOptimize(conv2d(x, f, {1, 1}, padding));
  set_rate(state, "GFLOP", flops);
}

// --- elementwise and reductions over 16M floats; GB/s counts each byte read or written once ---

void bm_add(benchmark::State& state) {
  Tensor a = uniform({k16M}, DType::Float32, -1, 1, 5), b = uniform({k16M}, DType::Float32, -1, 1, 6);
  if (!warm_up(state, [&] { add(a, b); })) return;
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  set_rate(state, "GB", 3.0 * 4.0 * double(k16M));
}

// The bandwidth baseline for add: memcpy split across the same OpenMP threads the kernels use.
void bm_copy(benchmark::State& state) {
  Tensor a = uniform({k16M}, DType::Float32, -1, 1, 7);
  Tensor o(Shape{k16M}, DType::Float32);
  const float* src = a.data<float>();
  float* dst = o.data<float>();
  auto copy = [&] {
    parallel_for(k16M, kParallelGrain, [&](int64_t b, int64_t e) {
      std::memcpy(dst + b, src + b, size_t(e - b) * sizeof(float));
    });
  };
  copy();
  for (auto _ : state) {
    copy();
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB", 2.0 * 4.0 * double(k16M));
}

// The bandwidth ceiling: a copy loop with non-temporal stores (no read-for-ownership of
// the destination), which beats glibc's memcpy on some machines. Shown for reference.
__attribute__((target("avx2"))) void stream_copy(const float* src, float* dst, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; i += 8) _mm256_stream_ps(dst + i, _mm256_load_ps(src + i));
  _mm_sfence();
}

void bm_stream_copy(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx2")) {
    state.SkipWithError("the CPU lacks AVX2");
    return;
  }
  Tensor a = uniform({k16M}, DType::Float32, -1, 1, 7);
  Tensor o(Shape{k16M}, DType::Float32);
  const float* src = a.data<float>();
  float* dst = o.data<float>();
  // Chunks of whole 64-byte lines keep every thread's stores aligned.
  auto copy = [&] {
    parallel_for(k16M / 16, kParallelGrain / 16, [&](int64_t b, int64_t e) { stream_copy(src, dst, b * 16, e * 16); });
  };
  copy();
  for (auto _ : state) {
    copy();
    benchmark::ClobberMemory();
  }
  set_rate(state, "GB", 2.0 * 4.0 * double(k16M));
}

// add's share of memcpy bandwidth, with the two interleaved call by call: this VM's memory
// bandwidth drifts by 2x within seconds, which back-to-back benchmarks cannot cancel.
void bm_add_vs_copy(benchmark::State& state) {
  Tensor a = uniform({k16M}, DType::Float32, -1, 1, 5), b = uniform({k16M}, DType::Float32, -1, 1, 6);
  Tensor o(Shape{k16M}, DType::Float32);
  const float* src = a.data<float>();
  float* dst = o.data<float>();
  auto copy = [&] {
    parallel_for(k16M, kParallelGrain, [&](int64_t b, int64_t e) {
      std::memcpy(dst + b, src + b, size_t(e - b) * sizeof(float));
    });
  };
  if (!warm_up(state, [&] { add(a, b); })) return;
  copy();
  using Clock = std::chrono::steady_clock;
  double copy_s = 0, add_s = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    copy();
    benchmark::ClobberMemory();
    auto t1 = Clock::now();
    benchmark::DoNotOptimize(add(a, b));
    auto t2 = Clock::now();
    copy_s += std::chrono::duration<double>(t1 - t0).count();
    add_s += std::chrono::duration<double>(t2 - t1).count();
  }
  // (3 * 4 n / add_s) / (2 * 4 n / copy_s)
  state.counters["fraction"] = 1.5 * copy_s / add_s;
  const double iters = double(state.iterations());
  state.counters["add_GB/s"] = 3.0 * 4.0 * double(k16M) * iters * 1e-9 / add_s;
  state.counters["copy_GB/s"] = 2.0 * 4.0 * double(k16M) * iters * 1e-9 / copy_s;
}

void bm_clone(benchmark::State& state) {
  Tensor a = uniform({k16M}, DType::Float32, -1, 1, 8);
  for (auto _ : state) benchmark::DoNotOptimize(a.clone());
  set_rate(state, "GB", 2.0 * 4.0 * double(k16M));
}

void bm_relu(benchmark::State& state) {
  Tensor a = uniform({k16M}, DType::Float32, -1, 1, 9);
  if (!warm_up(state, [&] { relu(a); })) return;
  for (auto _ : state) benchmark::DoNotOptimize(relu(a));
  set_rate(state, "GB", 2.0 * 4.0 * double(k16M));
}

void bm_reduce_sum(benchmark::State& state) {
  Tensor a = uniform({k16M}, DType::Float32, -1, 1, 10);
  if (!warm_up(state, [&] { reduce_sum(a); })) return;
  for (auto _ : state) benchmark::DoNotOptimize(reduce_sum(a));
  set_rate(state, "GB", 4.0 * double(k16M));
}

// --- max_pool gradient: the LeNet first pool, x [64,28,28,32], 2x2 stride 2 VALID; GB/s
//     counts reading x and dy and writing dx ---

void bm_max_pool_grad(benchmark::State& state) {
  Tensor x = uniform({64, 28, 28, 32}, DType::Float32, -1, 1, 17);
  Tensor y = max_pool2d(x, {2, 2}, {2, 2}, "VALID");
  Tensor dy = uniform(y.shape(), DType::Float32, -1, 1, 18);
  auto run = [&] { return max_pool_grad(x, y, dy, {2, 2}, {2, 2}, "VALID"); };
  if (!warm_up(state, [&] { run(); })) return;
  for (auto _ : state) benchmark::DoNotOptimize(run());
  set_rate(state, "GB", 4.0 * double(2 * x.size() + dy.size()));
}

// --- softmax: logits [256, 1000] along the last axis; GB/s counts one read and one write ---

void bm_softmax(benchmark::State& state) {
  Tensor a = uniform({256, 1000}, DType::Float32, -4, 4, 11);
  if (!warm_up(state, [&] { softmax(a); })) return;
  for (auto _ : state) benchmark::DoNotOptimize(softmax(a));
  set_rate(state, "GB", 2.0 * 4.0 * double(a.size()));
}

// --- eager dispatch: add on [8] floats; the time per call is the framework's overhead ---

void bm_dispatch_add(benchmark::State& state) {
  Tensor a = uniform({8}, DType::Float32, -1, 1, 12), b = uniform({8}, DType::Float32, -1, 1, 13);
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
}

// With a tape watching the input every call is recorded. The tape is reset every 256
// calls inside the timing, so the cost of releasing a record counts, as it does for
// torch, whose graph nodes are freed with each output.
void bm_dispatch_add_tape(benchmark::State& state) {
  Tensor a = uniform({8}, DType::Float32, -1, 1, 12), b = uniform({8}, DType::Float32, -1, 1, 13);
  GradientTape tape;
  tape.watch(a);
  int calls = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(add(a, b));
    if (++calls == 256) {
      tape.reset();  // forgets the watched tensors too, as in TensorFlow
      tape.watch(a);
      calls = 0;
    }
  }
}

// --- MLP training step: x [64, 784] -> dense 256 + relu -> dense 10 -> softmax cross entropy,
//     gradients of the 4 parameters with GradientTape, and an SGD update ---

void bm_mlp_step(benchmark::State& state) {
  const int64_t batch = 64, in = 784, hidden = 256, classes = 10;
  Tensor x = uniform({batch, in}, DType::Float32, 0, 1, 14);
  Tensor labels = zeros({batch, classes});
  for (int64_t i = 0; i < batch; ++i) labels.data<float>()[i * classes + (i * 7) % classes] = 1;
  Variable w1(uniform({in, hidden}, DType::Float32, -0.05f, 0.05f, 15), "w1");
  Variable b1(zeros({hidden}), "b1");
  Variable w2(uniform({hidden, classes}, DType::Float32, -0.1f, 0.1f, 16), "w2");
  Variable b2(zeros({classes}), "b2");
  std::vector<Variable> params = {w1, b1, w2, b2};
  auto step = [&] {
    GradientTape tape;
    Tensor h = relu(matmul(x, w1) + b1);
    Tensor logits = matmul(h, w2) + b2;
    Tensor loss = reduce_mean(softmax_cross_entropy_with_logits(labels, logits));
    std::vector<Tensor> grads = tape.gradient(loss, params);
    for (size_t i = 0; i < params.size(); ++i) params[i].assign_sub(grads[i] * 0.01);
  };
  if (!warm_up(state, step)) return;
  for (auto _ : state) step();
}

// transpose (the NCHW <-> NHWC layout changes ONNX import makes): GB/s (2 * bytes), and as a
// counter memcpy's GB/s on the same bytes and threads, timed call by call in between (outside
// the transpose's timing), so both see the same load.
void bm_transpose(benchmark::State& state, Shape shape, Axes perm) {
  Tensor a = uniform(shape, DType::Float32, -1, 1, 11);
  Tensor o(shape, DType::Float32);
  const int64_t n = a.size();
  if (!warm_up(state, [&] { transpose(a, perm); })) return;
  auto time = [](auto&& f) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<double> t_copy;
  for (auto _ : state) {
    benchmark::DoNotOptimize(transpose(a, perm));
    state.PauseTiming();
    t_copy.push_back(time([&] {
      parallel_for(n, kParallelGrain, [&](int64_t b, int64_t e) {
        std::memcpy(o.data<float>() + b, a.data<float>() + b, size_t(e - b) * sizeof(float));
      });
    }));
    state.ResumeTiming();
  }
  set_rate(state, "GB", 2.0 * 4.0 * double(n));
  std::nth_element(t_copy.begin(), t_copy.begin() + long(t_copy.size() / 2), t_copy.end());
  state.counters["memcpy_GB/s"] = 2.0 * 4.0 * double(n) * 1e-9 / t_copy[t_copy.size() / 2];
}

void register_all() {
  using benchmark::kMicrosecond;
  using benchmark::kMillisecond;
  using benchmark::kNanosecond;
  for (int64_t n : {512, 1024, 2048})
    benchmark::RegisterBenchmark(("matmul_f32_" + std::to_string(n)).c_str(), bm_matmul, n, DType::Float32)
        ->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("matmul_bf16_1024", bm_matmul, int64_t(1024), DType::BFloat16)
      ->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("conv2d_8x56x56x64_3x3x64_same", bm_conv2d, Shape{8, 56, 56, 64},
                               Shape{3, 3, 64, 64}, std::string("SAME"))
      ->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("conv2d_32x28x28x32_3x3x64_valid", bm_conv2d, Shape{32, 28, 28, 32},
                               Shape{3, 3, 32, 64}, std::string("VALID"))
      ->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("copy_16M", bm_copy)->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("copy_16M_stream", bm_stream_copy)->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("clone_16M", bm_clone)->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("add_16M", bm_add)->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("add_vs_copy_16M", bm_add_vs_copy)->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("transpose_8x56x56x64_to_nchw", bm_transpose, Shape{8, 56, 56, 64}, Axes{0, 3, 1, 2})
      ->UseRealTime()->Unit(kMicrosecond);
  benchmark::RegisterBenchmark("transpose_8x64x56x56_to_nhwc", bm_transpose, Shape{8, 64, 56, 56}, Axes{0, 2, 3, 1})
      ->UseRealTime()->Unit(kMicrosecond);
  benchmark::RegisterBenchmark("transpose_8x3x224x224_to_nhwc", bm_transpose, Shape{8, 3, 224, 224}, Axes{0, 2, 3, 1})
      ->UseRealTime()->Unit(kMicrosecond);
  benchmark::RegisterBenchmark("relu_16M", bm_relu)->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("reduce_sum_16M", bm_reduce_sum)->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("max_pool_grad_64x28x28x32_2x2", bm_max_pool_grad)
      ->UseRealTime()->Unit(kMicrosecond);
  benchmark::RegisterBenchmark("softmax_256x1000", bm_softmax)->UseRealTime()->Unit(kMicrosecond);
  benchmark::RegisterBenchmark("dispatch_add_8", bm_dispatch_add)->UseRealTime()->Unit(kNanosecond);
  benchmark::RegisterBenchmark("dispatch_add_8_tape", bm_dispatch_add_tape)->UseRealTime()->Unit(kNanosecond);
  benchmark::RegisterBenchmark("mlp_step_64x784x256x10", bm_mlp_step)->UseRealTime()->Unit(kMicrosecond);
}

}  // namespace
}  // namespace deepflow

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("omp_threads", std::to_string(deepflow::intra_op_threads()));
  deepflow::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
