// SPDX-License-Identifier: Apache-2.0
// Intra-op parallelism: OpenMP, the runtime oneDNN itself uses, so kernels and
// oneDNN primitives share one thread pool and never oversubscribe the cores.
#pragma once

#include <algorithm>
#include <cstdint>

#include <omp.h>

namespace deepflow {

/// Elements below which a loop stays on the calling thread (thread wake-up costs more).
inline constexpr int64_t kParallelGrain = 32768;

/// Threads intra-op kernels use (OMP_NUM_THREADS, default: the cores).
inline int intra_op_threads() { return omp_get_max_threads(); }

/// Sets this thread's intra-op team size for the scope and restores it after (also when
/// an exception leaves the scope). OpenMP's setting is per thread: other threads keep theirs.
class ScopedIntraOpThreads {
 public:
  explicit ScopedIntraOpThreads(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~ScopedIntraOpThreads() { omp_set_num_threads(saved_); }
  ScopedIntraOpThreads(const ScopedIntraOpThreads&) = delete;
  ScopedIntraOpThreads& operator=(const ScopedIntraOpThreads&) = delete;

 private:
  int saved_;
};

/// Calls f(begin, end) on disjoint chunks covering [0, n), in parallel when n > grain.
/// Chunks are static, so results do not depend on scheduling.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  int threads = int(std::min<int64_t>(intra_op_threads(), (n + grain - 1) / std::max<int64_t>(grain, 1)));
  if (threads <= 1 || omp_in_parallel()) {
    f(int64_t(0), n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t b = std::min<int64_t>(n, int64_t(t) * chunk), e = std::min<int64_t>(n, b + chunk);
    if (b < e) f(b, e);
  }
}

}  // namespace deepflow
