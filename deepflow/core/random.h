// SPDX-License-Identifier: Apache-2.0
// Seeds and the counter-based generator behind every random op.
//
// Seeds follow TensorFlow: set_random_seed(s) fixes the global seed, and each
// random op takes an optional op seed. With a global seed, a program produces
// the same numbers run after run. Each (seed, seed2) pair keeps a counter, so
// repeated calls give new numbers, reproducibly. Philox4x32-10 (counter based)
// makes element i of a call independent of the thread that computes it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <utility>

namespace deepflow {

/// Sets the global seed (tf.random.set_seed) and restarts every op-seed sequence;
/// std::nullopt clears it (tf.random.set_seed(None)).
void set_random_seed(std::optional<int64_t> seed);

namespace detail {
/// (seed, seed2) for an op call, from the global seed and an optional op seed.
std::pair<int64_t, int64_t> resolve_seeds(std::optional<int64_t> op_seed);
/// Reserves `n` counter values for the generator keyed by (seed, seed2); returns the first.
uint64_t reserve_counter(int64_t seed, int64_t seed2, uint64_t n);

/// Philox4x32-10: 4 random 32-bit words for a 128-bit counter and 64-bit key.
std::array<uint32_t, 4> philox(uint64_t counter_lo, uint64_t counter_hi, uint64_t key);
/// Uniform float in [0, 1) from 24 random bits; double from 53.
inline float uint_to_float(uint32_t x) { return float(x >> 8) * (1.0f / 16777216.0f); }
inline double uints_to_double(uint32_t a, uint32_t b) {
  return double((uint64_t(a) << 21) ^ (b >> 11)) * (1.0 / 9007199254740992.0);
}
}  // namespace detail

}  // namespace deepflow
