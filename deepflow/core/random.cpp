// SPDX-License-Identifier: Apache-2.0
#include "deepflow/core/random.h"

#include <map>
#include <mutex>
#include <random>

namespace deepflow {
namespace {

// TensorFlow's seed used when only an op seed is given.
constexpr int64_t kDefaultGraphSeed = 87654321;

struct SeedState {
  std::mutex mu;
  std::optional<int64_t> global;
  int64_t op_counter = 0;
  std::map<std::pair<int64_t, int64_t>, uint64_t> counters;
};

SeedState& state() {
  static SeedState* s = new SeedState;
  return *s;
}

}  // namespace

void set_random_seed(std::optional<int64_t> seed) {
  SeedState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.global = seed;
  s.op_counter = 0;
  s.counters.clear();
}

namespace detail {

std::pair<int64_t, int64_t> resolve_seeds(std::optional<int64_t> op_seed) {
  SeedState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.global) return {*s.global, op_seed ? *op_seed : s.op_counter++};
  if (op_seed) return {kDefaultGraphSeed, *op_seed};
  static std::random_device rd;
  return {int64_t(rd()) << 31 ^ int64_t(rd()), int64_t(rd())};
}

uint64_t reserve_counter(int64_t seed, int64_t seed2, uint64_t n) {
  SeedState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  uint64_t& c = s.counters[{seed, seed2}];
  uint64_t first = c;
  c += n;
  return first;
}

std::array<uint32_t, 4> philox(uint64_t counter_lo, uint64_t counter_hi, uint64_t key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c0 = uint32_t(counter_lo), c1 = uint32_t(counter_lo >> 32), c2 = uint32_t(counter_hi),
           c3 = uint32_t(counter_hi >> 32);
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t(kM0) * c0, p1 = uint64_t(kM1) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0, n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += kW0;
    k1 += kW1;
  }
  return {c0, c1, c2, c3};
}

}  // namespace detail
}  // namespace deepflow
