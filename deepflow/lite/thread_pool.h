// SPDX-License-Identifier: Apache-2.0
// The interpreter's worker threads (num_threads - 1 of them; the caller works too). Its own,
// not the core's, because deepflow_lite builds alone.
//
// An invoke runs dozens of parallel ops of tens of microseconds each, so the hand-off is
// what costs: a worker that waited on a condition variable takes that long again to wake.
// Workers therefore spin on the job counter for a while after each job (kSpin) before
// they sleep, and the caller spins on the count of pieces still running.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace deepflow::lite {

class ThreadPool {
 public:
  /// threads >= 1: the calling thread plus threads - 1 workers.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// Runs fn(begin, end) over [0, n) cut into at most size() contiguous pieces of at least
  /// `grain` items each, and returns when all are done. Runs inline when one piece would
  /// do, or when called from inside another parallel_for's piece.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void work(int index);

  std::vector<std::thread> workers_;
  // The current job: fn and n are written by the caller while no worker has a piece, then
  // published with ticket_ = (job count << 16) | pieces (release). A worker reads them
  // only when its index is below the ticket's pieces, and the caller counts those workers
  // out (pending_) before it writes the next job; the others only read the ticket.
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  std::atomic<uint64_t> ticket_{0};
  std::atomic<int> pending_{0};   // worker pieces of the current job not yet finished
  std::atomic<int> sleepers_{0};  // workers blocked (or about to block) on wake_
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace deepflow::lite
