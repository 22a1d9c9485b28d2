// SPDX-License-Identifier: Apache-2.0
// Shared oneDNN plumbing of the CPU kernels: one engine, one stream per thread,
// dtype mapping, per-call scratchpads and a thread-safe LRU of primitives.
//
// Primitive creation costs far more than running a small one, so kernels cache
// primitives by their geometry. Primitives are created with a user scratchpad,
// which each call takes from our caching allocator: a cached primitive is then
// safe to run from several threads at once.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "deepflow/core/tensor.h"

namespace deepflow::onednn {

/// The CPU engine all kernels share.
dnnl::engine& cpu_engine();
/// This thread's stream on cpu_engine().
dnnl::stream& thread_stream();
/// oneDNN's type for f32, bf16 and f16; nullopt for the others.
std::optional<dnnl::memory::data_type> data_type(DType t);
/// Attributes asking for a user-provided scratchpad (see scratch_tensor).
dnnl::primitive_attr user_scratchpad();
/// A byte buffer of at least `bytes` (1 when 0) from the caching allocator.
Tensor scratch_tensor(size_t bytes);
/// Row-major strides of a matmul operand with logical dims (batch..., rows, cols),
/// with the last two swapped when the operand is stored transposed.
dnnl::memory::dims operand_strides(const dnnl::memory::dims& logical, bool transposed);

/// Row-major float32 c = op(a) op(b) + beta * c (ld* are row strides as stored) through
/// oneDNN's sgemm, for products of at most kSmallGemmMacs multiply-adds; false (nothing
/// written) for bigger ones, which run faster as cached matmul primitives.
inline constexpr int64_t kSmallGemmMacs = int64_t(1) << 22;
bool small_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float beta, float* c);

/// A thread-safe LRU of created primitives (or anything built from them), keyed by
/// geometry. A null entry remembers that oneDNN refused a call (dnnl::error from
/// `make`, e.g. float16 on a CPU without it), so each geometry is asked once.
template <class Value, class Key = std::string, class Hash = std::hash<Key>>
class PrimitiveCache {
 public:
  using Ptr = std::shared_ptr<const Value>;
  static constexpr size_t kCapacity = 256;

  template <class Make>
  Ptr get(const Key& key, Make&& make) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = map_.find(key); it != map_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
      }
    }
    Ptr p;
    try {
      p = make();  // slow: outside the lock
    } catch (const dnnl::error&) {
      p = nullptr;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = map_.find(key); it != map_.end()) return it->second->second;  // another thread won
    lru_.emplace_front(key, p);
    map_.emplace(key, lru_.begin());
    if (lru_.size() > kCapacity) {
      map_.erase(lru_.back().first);
      lru_.pop_back();
    }
    return p;
  }

  /// Forgets the entry of `key` (one found stale by its owner), if any.
  void erase(const Key& key) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = map_.find(key); it != map_.end()) {
      lru_.erase(it->second);
      map_.erase(it);
    }
  }

 private:
  std::mutex mu_;
  std::list<std::pair<Key, Ptr>> lru_;
  std::unordered_map<Key, typename std::list<std::pair<Key, Ptr>>::iterator, Hash> map_;
};

/// Copies memory `from` into `to` (same size), on every core for large values.
void copy_value(const dnnl::memory& from, const dnnl::memory& to);

/// Whether oneDNN picked its reference implementation (slow: the chains fall back instead).
inline bool is_ref(const dnnl::primitive_desc_base& pd) { return std::string(pd.impl_info_str()).rfind("ref", 0) == 0; }

/// FNV-1a over a key of numbers (the plan caches' keys: shapes, attributes, addresses).
struct IntsHash {
  size_t operator()(const std::vector<int64_t>& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ uint64_t(v)) * 1099511628211ull;
    return size_t(h);
  }
};
/// A cache of per-call plans keyed by every number a plan depends on.
template <class Plan>
using PlanCache = PrimitiveCache<Plan, std::vector<int64_t>, IntsHash>;

}  // namespace deepflow::onednn
