// SPDX-License-Identifier: Apache-2.0
// Reference kernels of the random primitives: Philox4x32-10 over counter blocks.
//
// A call reserves ceil(n / kPer) counters for its (seed, seed2) pair; block b of
// the call uses counter `first + b` and fills elements [b * kPer, (b + 1) * kPer).
// So every element depends only on the seeds, the reserved counter and its own
// position, never on how the blocks are split across threads.
#include <cmath>
#include <numbers>

#include "deepflow/core/parallel.h"
#include "deepflow/core/random.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

// splitmix64's finalizer: spreads seed bits over the 64-bit Philox key.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t philox_key(const OpCall& c) {
  return mix64(uint64_t(c.attr_int("seed")) ^ mix64(uint64_t(c.attr_int("seed2")) + 0x9E3779B97F4A7C15ull));
}

// Uniform in [0, 1) with as many random bits as T's significand holds, so that
// rounding to T never reaches 1.
template <class T> compute_t<T> unit_uniform(const uint32_t* w) {
  if constexpr (std::is_same_v<T, double>) return detail::uints_to_double(w[0], w[1]);
  else if constexpr (std::is_same_v<T, Half>) return float(w[0] >> 21) * (1.0f / 2048.0f);
  else if constexpr (std::is_same_v<T, BFloat16>) return float(w[0] >> 24) * (1.0f / 256.0f);
  else return detail::uint_to_float(w[0]);
}
// Words one uniform consumes: 53 bits for double, 32 for the rest.
template <class T> constexpr int kWordsPerUniform = std::is_same_v<T, double> ? 2 : 1;
// Elements one Philox block (4 words) yields.
template <class T> constexpr int kPerBlock = 4 / kWordsPerUniform<T>;

// Two standard normals from one block half (Box-Muller): for double, the whole
// block makes one pair; for 32-bit and smaller types, each word pair makes one.
template <class T> void normal_pair(const uint32_t* w, compute_t<T>* z) {
  using CT = compute_t<T>;
  constexpr int kW = kWordsPerUniform<T>;
  CT u1, u2;
  if constexpr (std::is_same_v<T, double>) {
    u1 = detail::uints_to_double(w[0], w[1]);
    u2 = detail::uints_to_double(w[2], w[3]);
  } else {
    u1 = detail::uint_to_float(w[0]);
    u2 = detail::uint_to_float(w[kW]);
  }
  // 1 - u1 lies in (0, 1], so the log is finite.
  CT r = std::sqrt(CT(-2) * std::log(CT(1) - u1));
  CT theta = CT(2 * std::numbers::pi) * u2;
  z[0] = r * std::cos(theta);
  z[1] = r * std::sin(theta);
}

template <class T> void normal_block(const std::array<uint32_t, 4>& w, compute_t<T>* z) {
  normal_pair<T>(w.data(), z);
  if constexpr (kPerBlock<T> == 4) normal_pair<T>(w.data() + 2, z + 2);
}

enum class Dist { Uniform, Normal, Truncated };

// Truncation bound in standard deviations (TensorFlow's).
constexpr double kTruncateBound = 2.0;

template <Dist D>
void ref_random(const OpCall& c, TensorList& out) {
  Tensor& o = out[0];
  const int64_t n = o.size();
  if (n == 0) return;
  const uint64_t key = philox_key(c);
  const double p0 = c.attr_float(D == Dist::Uniform ? "minval" : "mean");
  const double p1 = c.attr_float(D == Dist::Uniform ? "maxval" : "stddev");
  DF_DISPATCH_FLOAT(o.dtype(), c.name(), [&] {
    using CT = compute_t<scalar_t>;
    constexpr int kPer = kPerBlock<scalar_t>;
    const int64_t blocks = (n + kPer - 1) / kPer;
    const uint64_t first = detail::reserve_counter(c.attr_int("seed"), c.attr_int("seed2"), uint64_t(blocks));
    scalar_t* po = o.data<scalar_t>();
    const CT a = CT(p0), b = CT(p1);
    parallel_for(blocks, kParallelGrain / kPer, [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t i0 = blk * kPer;
        const int m = int(std::min<int64_t>(kPer, n - i0));
        std::array<uint32_t, 4> w = detail::philox(first + uint64_t(blk), 0, key);
        CT v[4];
        if constexpr (D == Dist::Uniform) {
          for (int j = 0; j < kPer; ++j) v[j] = a + (b - a) * unit_uniform<scalar_t>(w.data() + j * kWordsPerUniform<scalar_t>);
        } else {
          normal_block<scalar_t>(w, v);
          if constexpr (D == Dist::Truncated) {
            // Redraw lane j from the same counter with a higher attempt number in
            // the counter's upper half: still a pure function of the position.
            for (int j = 0; j < m; ++j) {
              for (uint64_t attempt = 1; !(std::abs(v[j]) < CT(kTruncateBound)); ++attempt) {
                CT z[4];
                normal_block<scalar_t>(detail::philox(first + uint64_t(blk), attempt, key), z);
                v[j] = z[j];
              }
            }
          }
          for (int j = 0; j < kPer; ++j) v[j] = a + b * v[j];
        }
        for (int j = 0; j < m; ++j) po[i0 + j] = scalar_t(v[j]);
      }
    });
  });
}

}  // namespace

DF_REGISTER_KERNEL(RandomUniform, {.run = ref_random<Dist::Uniform>});
DF_REGISTER_KERNEL(RandomNormal, {.run = ref_random<Dist::Normal>});
DF_REGISTER_KERNEL(TruncatedNormal, {.run = ref_random<Dist::Truncated>});

}  // namespace deepflow
