// SPDX-License-Identifier: Apache-2.0
// The inter-op thread pool: a small fixed set of threads on which the executor runs
// independent graph nodes at once.
//
// Kernels keep their own intra-op parallelism (OpenMP, core/parallel.h). To avoid
// oversubscribing the cores, each pool thread caps its OpenMP team at
// max(1, cores / pool size): two nodes running side by side on a 2-thread pool each
// get half the cores, so the total stays at the core count. A node running alone on
// the caller's thread keeps every core.
//
//   ThreadPool& pool = ThreadPool::shared(2);
//   pool.submit([] { ... });
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace deepflow {

class ThreadPool {
 public:
  /// Starts `threads` workers (at least 1).
  explicit ThreadPool(int threads);
  /// Finishes the queued tasks, then joins the workers.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Queues a task; it runs on some worker. Tasks must not throw.
  void submit(std::function<void()> task);
  int size() const { return int(workers_.size()); }

  /// A process-wide pool of this many threads, created on first use and kept
  /// (one per size, so sessions with the same setting share threads).
  static ThreadPool& shared(int threads);

 private:
  void work();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace deepflow
