// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the benchmark files.
#pragma once

#include <benchmark/benchmark.h>

#include <exception>

namespace deepflow::bench {

/// Runs body once outside the timing loop so an error becomes a skipped benchmark
/// (an exception escaping the loop would abort the whole run).
template <class Body>
bool warm_up(benchmark::State& state, Body&& body) {
  try {
    body();
    return true;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return false;
  }
}

}  // namespace deepflow::bench
