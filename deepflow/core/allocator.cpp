// SPDX-License-Identifier: Apache-2.0
#include "deepflow/core/allocator.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include "deepflow/core/error.h"

namespace deepflow {
namespace {

// Size classes: 64 B, then four steps per power of two (x1, x1.25, x1.5, x1.75).
// Waste is under 25%; blocks above kMaxCached are not cached.
constexpr size_t kMaxCached = size_t(1) << 32;
constexpr size_t kCacheCap = size_t(2) << 30;  // cached bytes kept at most

size_t round_class(size_t n, int* cls) {
  if (n <= 64) {
    *cls = 0;
    return 64;
  }
  int p = 63 - __builtin_clzll(n - 1);  // 2^p < n <= 2^(p+1)
  size_t base = size_t(1) << p;
  size_t step = base / 4 < 64 ? 64 : base / 4;  // keep sizes multiples of kAlignment
  size_t k = (n - base + step - 1) / step;  // 1..4
  *cls = 1 + (p - 6) * 4 + int(k - 1);
  return base + k * step;
}

struct Cache {
  std::mutex mu;
  std::vector<std::vector<void*>> lists = std::vector<std::vector<void*>>(128);
  AllocatorStats stats;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: tensors may outlive static destructors
  return *c;
}

}  // namespace

std::atomic<size_t> g_max_allocation{SIZE_MAX};

void set_max_allocation_bytes(size_t nbytes) { g_max_allocation.store(nbytes, std::memory_order_relaxed); }
size_t max_allocation_bytes() { return g_max_allocation.load(std::memory_order_relaxed); }

void* cpu_allocate(size_t nbytes) {
  const size_t limit = max_allocation_bytes();
  DF_CHECK(nbytes <= limit, "[allocate] ", nbytes, " bytes exceed this process's limit of ", limit,
           " bytes per tensor (set_max_allocation_bytes)");
  int cls;
  size_t sz = round_class(nbytes, &cls);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    ++c.stats.num_allocs;
    c.stats.bytes_in_use += sz;
    if (c.stats.bytes_in_use > c.stats.peak_bytes_in_use) c.stats.peak_bytes_in_use = c.stats.bytes_in_use;
    if (sz <= kMaxCached && !c.lists[cls].empty()) {
      void* p = c.lists[cls].back();
      c.lists[cls].pop_back();
      c.stats.bytes_cached -= sz;
      return p;
    }
    ++c.stats.num_os_allocs;
  }
  void* p = std::aligned_alloc(kAlignment, sz);
  if (!p) throw std::bad_alloc();
  return p;
}

void cpu_free(void* p, size_t nbytes) {
  if (!p) return;
  int cls;
  size_t sz = round_class(nbytes, &cls);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.stats.bytes_in_use -= sz;
    if (sz <= kMaxCached && c.stats.bytes_cached + sz <= kCacheCap) {
      c.lists[cls].push_back(p);
      c.stats.bytes_cached += sz;
      return;
    }
  }
  std::free(p);
}

void cpu_release_cached() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& l : c.lists) {
    for (void* p : l) std::free(p);
    l.clear();
  }
  c.stats.bytes_cached = 0;
}

void cpu_reset_peak_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.stats.peak_bytes_in_use = c.stats.bytes_in_use;
}

AllocatorStats cpu_allocator_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.stats;
}

}  // namespace deepflow
