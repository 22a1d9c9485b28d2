// SPDX-License-Identifier: Apache-2.0
// Fused normalization against its composite formulation (the evidence that fusing pays):
//   - batch norm training, forward + backward, x [32,28,28,64] float32:
//     fused_batch_norm vs moments + batch_normalization, both under a GradientTape;
//   - layer norm over the last axis, x [64,128,768] float32, forward and forward + backward:
//     the layer_norm primitive (what layer_normalization routes to) vs moments + arithmetic.
// Backward passes take a fixed upstream gradient dy (output_gradients), so both sides do
// the same work beyond the normalization itself. Wall-clock times (OpenMP threads).
#include <benchmark/benchmark.h>

#include "deepflow/deepflow.h"

namespace deepflow {
namespace {

constexpr double kEps = 1e-3;

struct BnInputs {
  Tensor x, dy, scale, offset;
};
BnInputs bn_inputs() {
  set_random_seed(1);
  return {random_normal({32, 28, 28, 64}), random_normal({32, 28, 28, 64}), random_uniform({64}, 0.5, 2),
          random_normal({64})};
}

template <class F>
void run_bn(benchmark::State& state, F&& forward) {
  BnInputs in = bn_inputs();
  for (auto _ : state) {
    GradientTape tape;
    for (const Tensor& t : {in.x, in.scale, in.offset}) tape.watch(t);
    Tensor y = forward(in);
    auto g = tape.gradient({y}, {in.x, in.scale, in.offset}, UnconnectedGradients::None, {in.dy});
    benchmark::DoNotOptimize(g[0].raw_data());
  }
  state.SetItemsProcessed(state.iterations() * in.x.size());
}

void bm_bn_train_fused(benchmark::State& state) {
  run_bn(state, [](const BnInputs& in) { return fused_batch_norm(in.x, in.scale, in.offset, Tensor(), Tensor(), kEps).y; });
}
void bm_bn_train_composite(benchmark::State& state) {
  run_bn(state, [](const BnInputs& in) {
    auto [mean, var] = moments(in.x, {0, 1, 2});
    return batch_normalization(in.x, mean, var, in.offset, in.scale, kEps);
  });
}

struct LnInputs {
  Tensor x, dy, gamma, beta;
};
LnInputs ln_inputs() {
  set_random_seed(2);
  return {random_normal({64, 128, 768}), random_normal({64, 128, 768}), random_normal({768}, 1, 0.1),
          random_normal({768})};
}
Tensor ln_fused(const LnInputs& in) { return layer_normalization(in.x, in.gamma, in.beta, {-1}, kEps); }
Tensor ln_composite(const LnInputs& in) {
  auto [mean, var] = moments(in.x, {-1}, /*keepdims=*/true);
  return (in.x - mean) * rsqrt(var + kEps) * in.gamma + in.beta;
}

void bm_ln_forward(benchmark::State& state, Tensor (*forward)(const LnInputs&)) {
  LnInputs in = ln_inputs();
  for (auto _ : state) benchmark::DoNotOptimize(forward(in).raw_data());
  state.SetItemsProcessed(state.iterations() * in.x.size());
}
void bm_ln_forward_backward(benchmark::State& state, Tensor (*forward)(const LnInputs&)) {
  LnInputs in = ln_inputs();
  for (auto _ : state) {
    GradientTape tape;
    for (const Tensor& t : {in.x, in.gamma, in.beta}) tape.watch(t);
    Tensor y = forward(in);
    auto g = tape.gradient({y}, {in.x, in.gamma, in.beta}, UnconnectedGradients::None, {in.dy});
    benchmark::DoNotOptimize(g[0].raw_data());
  }
  state.SetItemsProcessed(state.iterations() * in.x.size());
}

BENCHMARK(bm_bn_train_fused)->Name("norm/batch_norm_train_fwd_bwd_32x28x28x64/fused")->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_bn_train_composite)->Name("norm/batch_norm_train_fwd_bwd_32x28x28x64/composite")->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_ln_forward, fused, ln_fused)->Name("norm/layer_norm_fwd_64x128x768/fused")->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_ln_forward, composite, ln_composite)->Name("norm/layer_norm_fwd_64x128x768/composite")
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_ln_forward_backward, fused, ln_fused)->Name("norm/layer_norm_fwd_bwd_64x128x768/fused")
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_ln_forward_backward, composite, ln_composite)
    ->Name("norm/layer_norm_fwd_bwd_64x128x768/composite")->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace deepflow
