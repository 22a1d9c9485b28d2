// SPDX-License-Identifier: Apache-2.0
// The interpreter's worker threads (num_threads - 1 of them; the caller works too). Its own,
// not the core's, because deepflow_lite builds alone.
//
// An invoke runs dozens of parallel ops of tens of microseconds each, so the hand-off is
// what costs: a worker that waited on a condition variable takes that long again to wake.
// Workers therefore spin for a while after each job before they sleep. And since a core
// may be taken away (a shared machine, more threads than cores), no thread waits for
// another to start: the caller runs the first piece and the others are claimed from a
// shared counter, so a caller whose workers are late runs their pieces itself, and waits
// only for pieces already being run.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
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
  /// `grain` items each (the first on the calling thread, each other one on whichever
  /// thread claims it first), and returns when all are done; an exception from a piece is
  /// rethrown then (the first, when several throw). Runs inline when one piece would do, or
  /// when called from inside another parallel_for's piece.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  // Claims and runs pieces of job `job` until none is left (or a newer job is up).
  void run_pieces(uint64_t job);
  // Runs piece i of the current job's `pieces` and counts it done.
  void run_piece(int64_t i, int64_t pieces);
  void work();

  std::vector<std::thread> workers_;
  // The current job: fn and n are written by the caller while no piece is claimed, then
  // published with state_ = job << 40 | pieces << 20 | next piece (release). A thread
  // claims piece i by moving `next` from i to i + 1 in a state of its job, and reads fn and
  // n after that: the caller cannot have moved on, since it waits for done_ to reach the
  // job's pieces before it writes the next.
  const std::function<void(int64_t, int64_t)>* job_fn_ = nullptr;
  int64_t job_n_ = 0;
  std::atomic<uint64_t> state_{0};
  std::atomic<int> done_{0};      // pieces of the current job finished
  std::exception_ptr error_;      // the first exception a piece of the current job threw (under mutex_)
  std::atomic<int> sleepers_{0};  // workers blocked (or about to block) on wake_
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace deepflow::lite
