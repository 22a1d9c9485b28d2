// SPDX-License-Identifier: Apache-2.0
#include "deepflow/graph/thread_pool.h"

#include <algorithm>
#include <map>
#include <memory>

#include <omp.h>

namespace deepflow {

ThreadPool::ThreadPool(int threads) {
  threads = std::max(threads, 1);
  // Read here, on the creating thread: a fresh worker only sees OpenMP's initial value.
  const int intra = std::max(1, omp_get_max_threads() / threads);
  workers_.reserve(size_t(threads));
  for (int i = 0; i < threads; ++i)
    workers_.emplace_back([this, intra] {
      omp_set_num_threads(intra);
      work();
    });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ThreadPool::work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and nothing left
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

ThreadPool& ThreadPool::shared(int threads) {
  static std::mutex mu;
  // Never destroyed: a run may still be finishing on a worker while statics are torn down.
  static auto* pools = new std::map<int, std::unique_ptr<ThreadPool>>();
  std::lock_guard<std::mutex> lock(mu);
  auto& p = (*pools)[std::max(threads, 1)];
  if (!p) p = std::make_unique<ThreadPool>(threads);
  return *p;
}

}  // namespace deepflow
