// SPDX-License-Identifier: Apache-2.0
#include "deepflow/lite/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace deepflow::lite {

namespace {

// How long an idle thread spins before it sleeps (or, waiting on another's piece, yields
// in a loop): long enough to bridge the serial gaps between the parallel ops of one invoke
// (and back-to-back invokes), short enough not to burn a core for an idle interpreter.
constexpr auto kSpin = std::chrono::microseconds(500);
// For the first part of that it only spins: a yield is a system call, and a worker that
// sees its job a microsecond late leaves its piece to a thread whose caches lack the
// data (the pieces of consecutive ops line up when each thread takes the same one).
constexpr auto kPureSpin = std::chrono::microseconds(50);

constexpr int kIndexBits = 20;  // the state's piece count and next piece
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
constexpr uint64_t kJobMask = (uint64_t{1} << (64 - 2 * kIndexBits)) - 1;

uint64_t job_of(uint64_t state) { return state >> (2 * kIndexBits); }

// True on a thread running a piece of some pool's job: nested calls then run inline.
thread_local bool in_piece = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until done() holds or `limit` has passed; returns done().
template <class Done>
bool spin_until(Done done, std::chrono::steady_clock::duration limit) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    // Look at the clock only now and then: it costs more than a pause.
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    const auto spun = std::chrono::steady_clock::now() - start;
    if (spun > limit) return done();
    // With more threads than free cores, the thread this one waits for may be waiting
    // for this core: offer it (next to free when nothing else is runnable).
    if (spun > kPureSpin) std::this_thread::yield();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(threads, 1); ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t max_pieces = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  const int pieces = static_cast<int>(std::min<int64_t>(size(), max_pieces));
  if (pieces <= 1 || in_piece) {
    fn(0, n);
    return;
  }
  job_fn_ = &fn;
  job_n_ = n;
  done_.store(0, std::memory_order_relaxed);
  const uint64_t job = (job_of(state_.load(std::memory_order_relaxed)) + 1) & kJobMask;
  // Published with piece 0 claimed: the caller always runs the first piece, so with two
  // threads each op's pieces land on the same threads as the last op's (a spinning worker
  // would otherwise win the race for piece 0 now and then), and the data each piece reads
  // is mostly in its own core's caches.
  state_.store(job << (2 * kIndexBits) | static_cast<uint64_t>(pieces) << kIndexBits | 1);  // seq_cst: before sleepers_
  if (sleepers_.load() > 0) {
    // Taking the mutex orders this notify after a sleeper's check of the state.
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  run_piece(0, pieces);
  run_pieces(job);
  // What is left runs on workers: spin, then yield (a worker may have lost its core).
  auto finished = [&] { return done_.load(std::memory_order_acquire) == pieces; };
  if (!spin_until(finished, kSpin))
    while (!finished()) std::this_thread::yield();
  if (error_) {
    std::exception_ptr error;
    std::swap(error, error_);
    std::rethrow_exception(error);
  }
}

void ThreadPool::run_pieces(uint64_t job) {
  uint64_t state = state_.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t next = state & kIndexMask, pieces = (state >> kIndexBits) & kIndexMask;
    if (job_of(state) != job || next >= pieces) return;
    if (!state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel, std::memory_order_acquire))
      continue;  // state now holds the value that won
    run_piece(static_cast<int64_t>(next), static_cast<int64_t>(pieces));
    state = state_.load(std::memory_order_acquire);
  }
}

void ThreadPool::run_piece(int64_t i, int64_t pieces) {
  const int64_t n = job_n_;
  in_piece = true;
  try {
    (*job_fn_)(n * i / pieces, n * (i + 1) / pieces);
  } catch (...) {
    // Kept for the caller, who rethrows it once no piece runs any more.
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::current_exception();
  }
  in_piece = false;
  done_.fetch_add(1, std::memory_order_release);
}

void ThreadPool::work() {
  uint64_t seen = 0;
  auto has_job = [&] { return job_of(state_.load(std::memory_order_acquire)) != seen || stop_.load(); };
  for (;;) {
    if (!spin_until(has_job, kSpin)) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);  // seq_cst: before the predicate's read of the state
      wake_.wait(lock, has_job);
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = job_of(state_.load(std::memory_order_acquire));
    run_pieces(seen);
  }
}

}  // namespace deepflow::lite
