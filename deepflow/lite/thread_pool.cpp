// SPDX-License-Identifier: Apache-2.0
#include "deepflow/lite/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace deepflow::lite {

namespace {

// How long an idle worker spins before it sleeps: long enough to bridge the serial gaps
// between the parallel ops of one invoke (and back-to-back invokes), short enough not to
// burn a core for an idle interpreter. LiteRT's pools spin similarly.
constexpr auto kSpin = std::chrono::microseconds(500);

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
    if (std::chrono::steady_clock::now() - start > limit) return done();
    // With more threads than free cores, the thread this one waits for may be waiting
    // for this core: offer it (next to free when nothing else is runnable).
    std::this_thread::yield();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(threads, 1); ++i) workers_.emplace_back([this, i] { work(i); });
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
  job_ = &fn;
  job_n_ = n;
  pending_.store(pieces - 1, std::memory_order_relaxed);
  const uint64_t count = (ticket_.load(std::memory_order_relaxed) >> 16) + 1;
  ticket_.store(count << 16 | static_cast<uint64_t>(pieces));  // seq_cst: before the read of sleepers_
  if (sleepers_.load() > 0) {
    // Taking the mutex orders this notify after a sleeper's check of the ticket.
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  in_piece = true;
  fn(0, n / pieces);  // piece 0 on the calling thread
  in_piece = false;
  // The workers' pieces are running: spin, then yield (a worker may have lost its core).
  if (!spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; }, kSpin))
    while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

void ThreadPool::work(int index) {
  uint64_t seen = 0;
  auto has_job = [&] { return ticket_.load(std::memory_order_acquire) != seen || stop_.load(); };
  for (;;) {
    if (!spin_until(has_job, kSpin)) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);  // seq_cst: before the predicate's read of the ticket
      wake_.wait(lock, has_job);
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = ticket_.load(std::memory_order_acquire);
    const int pieces = static_cast<int>(seen & 0xffff);
    if (index < pieces) {
      in_piece = true;
      (*job_)(job_n_ * index / pieces, job_n_ * (index + 1) / pieces);
      in_piece = false;
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }
}

}  // namespace deepflow::lite
