// SPDX-License-Identifier: Apache-2.0
// The CPU's arithmetic peaks, measured: the yardsticks report.py states matmul and conv
// against. Each runs independent chains of the widest instruction of its kind in
// registers on every OpenMP thread, so the figure is what the cores sustain (turbo
// included), not a nominal clock times a guessed width.
//
//   fma_peak_f32   fp32 FMA (vfmadd: 512-bit on AVX-512, else 256-bit), GFLOP/s
//   fma_peak_f32_avx2   the same with 256-bit FMAs, to show what AVX-512 adds on this CPU
//   vnni_peak_int8 u8 x s8 dot products into int32 (vpdpbusd, AVX512_VNNI), GOP/s with a
//                  multiply-add counted as 2 ops
//   bf16_peak      bf16 pair dot products into fp32 (vdpbf16ps, AVX512_BF16), GFLOP/s
//
// Each row's label names the instruction set it ran, and a CPU without it skips the row
// with that reason. AMX tiles (Sapphire Rapids) are not measured: they need a per-process
// permission request and are not what our kernels or the peers' fp32 paths use.
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <omp.h>

#include <cstdint>
#include <string>

#include "deepflow/core/parallel.h"

namespace deepflow {
namespace {

constexpr int64_t kLoops = 1 << 20;
// 12 chains hide a 4-5 cycle latency on two ports; fewer would measure latency, not width.
constexpr int kChains = 12;

__attribute__((target("avx2,fma"))) float fma_chains_256(float seed) {
  __m256 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm256_set1_ps(seed + float(j));
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
  for (int64_t i = 0; i < kLoops; ++i)
    for (int j = 0; j < kChains; ++j) acc[j] = _mm256_fmadd_ps(acc[j], m, c);
  __m256 s = acc[0];
  for (int j = 1; j < kChains; ++j) s = _mm256_add_ps(s, acc[j]);
  return _mm256_cvtss_f32(s);
}

__attribute__((target("avx512f"))) float fma_chains_512(float seed) {
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(seed + float(j));
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
  for (int64_t i = 0; i < kLoops; ++i)
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], m, c);
  __m512 s = acc[0];
  for (int j = 1; j < kChains; ++j) s = _mm512_add_ps(s, acc[j]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512vnni"))) float vnni_chains(float seed) {
  __m512i acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_epi32(int(seed) + j);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (int64_t i = 0; i < kLoops; ++i)
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
  __m512i s = acc[0];
  for (int j = 1; j < kChains; ++j) s = _mm512_add_epi32(s, acc[j]);
  return float(_mm512_reduce_add_epi32(s));
}

__attribute__((target("avx512f,avx512bf16"))) float bf16_chains(float seed) {
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(seed + float(j));
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3380);  // 1, ~6e-8
  for (int64_t i = 0; i < kLoops; ++i)
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
  __m512 s = acc[0];
  for (int j = 1; j < kChains; ++j) s = _mm512_add_ps(s, acc[j]);
  return _mm512_reduce_add_ps(s);
}

using ChainFn = float (*)(float);

// ops_per_instruction: flops (or int ops) one instruction of the chain does.
void run_peak(benchmark::State& state, ChainFn fn, const char* isa, bool supported, double ops_per_instruction,
              const char* counter) {
  if (!supported) {
    state.SkipWithError((std::string("the CPU lacks ") + isa).c_str());
    return;
  }
  const int threads = intra_op_threads();
  float sink = 0;
  for (auto _ : state) {
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += fn(float(omp_get_thread_num()));
  }
  benchmark::DoNotOptimize(sink);
  state.SetLabel(isa);
  state.counters[counter] = benchmark::Counter(double(threads) * double(kLoops) * kChains * ops_per_instruction * 1e-9,
                                               benchmark::Counter::kIsIterationInvariantRate);
}

bool has_avx512() { return __builtin_cpu_supports("avx512f"); }
bool has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

void bm_fma_peak(benchmark::State& state) {
  // The widest FMA this CPU has: 16 fp32 lanes x 2 flops with AVX-512, else 8 x 2.
  if (has_avx512())
    run_peak(state, fma_chains_512, "avx512f", true, 16 * 2, "GFLOP");
  else
    run_peak(state, fma_chains_256, "avx2+fma", has_avx2(), 8 * 2, "GFLOP");
}

void bm_fma_peak_avx2(benchmark::State& state) { run_peak(state, fma_chains_256, "avx2+fma", has_avx2(), 8 * 2, "GFLOP"); }

void bm_vnni_peak(benchmark::State& state) {
  // vpdpbusd zmm: 64 u8 x s8 products, summed in groups of 4 into 16 int32 lanes.
  run_peak(state, vnni_chains, "avx512_vnni", has_avx512() && __builtin_cpu_supports("avx512vnni"), 64 * 2, "GOP");
}

void bm_bf16_peak(benchmark::State& state) {
  // vdpbf16ps zmm: 32 bf16 products, summed in pairs into 16 fp32 lanes.
  run_peak(state, bf16_chains, "avx512_bf16", has_avx512() && __builtin_cpu_supports("avx512bf16"), 32 * 2, "GFLOP");
}

const bool registered = [] {
  using benchmark::kMillisecond;
  benchmark::RegisterBenchmark("fma_peak_f32", bm_fma_peak)->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("fma_peak_f32_avx2", bm_fma_peak_avx2)->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("vnni_peak_int8", bm_vnni_peak)->UseRealTime()->Unit(kMillisecond);
  benchmark::RegisterBenchmark("bf16_peak", bm_bf16_peak)->UseRealTime()->Unit(kMillisecond);
  return true;
}();

}  // namespace
}  // namespace deepflow
