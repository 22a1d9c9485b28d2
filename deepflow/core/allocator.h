// SPDX-License-Identifier: Apache-2.0
// The CPU caching allocator: 64-byte-aligned blocks, kept on free lists by
// size class and handed out again instead of going back to the OS.
//
// Why: a fresh page costs a page fault on first touch (about 12 us per 4 KiB on
// our machines), which dwarfs the kernels on small and medium tensors. Blocks
// are rounded up to size classes (powers of two split into 4 steps) so a
// training loop that allocates the same shapes every step never touches the OS.
#pragma once

#include <cstddef>
#include <cstdint>

namespace deepflow {

/// Alignment of every tensor buffer (a cache line, and what AVX-512 wants).
inline constexpr size_t kAlignment = 64;

struct AllocatorStats {
  size_t bytes_in_use = 0;     ///< handed out and not yet freed
  size_t bytes_cached = 0;     ///< on the free lists
  size_t peak_bytes_in_use = 0;
  uint64_t num_allocs = 0;     ///< calls to allocate
  uint64_t num_os_allocs = 0;  ///< of which went to the OS
};

/// Returns a 64-byte-aligned block of at least nbytes (nbytes may be 0).
void* cpu_allocate(size_t nbytes);
/// Returns a block from cpu_allocate to the cache; nbytes must be the same.
void cpu_free(void* p, size_t nbytes);
/// Gives every cached block back to the OS.
void cpu_release_cached();
AllocatorStats cpu_allocator_stats();
/// Restarts peak tracking: peak_bytes_in_use becomes the current bytes_in_use.
void cpu_reset_peak_stats();
/// The largest block cpu_allocate hands out (default: no limit). A larger request throws
/// "[allocate] ..." (a deepflow::Error) instead of asking the OS: fuzz targets set it, so
/// that a file asking for a huge tensor is an error rather than an out-of-memory kill.
void set_max_allocation_bytes(size_t nbytes);
size_t max_allocation_bytes();

}  // namespace deepflow
