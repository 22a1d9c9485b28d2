// SPDX-License-Identifier: Apache-2.0
// CRC32C (Castagnoli): the checksum of TFRecord files and of our weights files.
//
// CRC-32 with the polynomial 0x1EDC6F41 (reflected 0x82F63B78), initial value and
// final xor 0xFFFFFFFF, as TensorFlow's core/lib/hash/crc32c.h and LevelDB compute it:
//
//   crc32c("123456789", 9) == 0xE3069283
//   crc32c_extend(crc32c(a), b) == crc32c(a + b)
//
// On x86 with SSE4.2 (our -march=x86-64-v3 builds) it runs on the crc32 instruction,
// three streams at once (about 25 GB/s per core); elsewhere on a slicing-by-8 table
// (about 2 GB/s). bench/bench_tfrecord.cpp measures both.
#pragma once

#include <cstddef>
#include <cstdint>

namespace deepflow {

/// The CRC32C of n bytes.
uint32_t crc32c(const void* data, size_t n);
/// The CRC32C of (the bytes crc was computed over) followed by these n bytes.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);

/// TFRecord stores checksums masked, because a CRC of data that itself holds CRCs is
/// weak: rotate right by 15 bits and add a constant (32-bit arithmetic).
inline constexpr uint32_t kCrc32cMaskDelta = 0xA282EAD8u;
constexpr uint32_t crc32c_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kCrc32cMaskDelta; }
constexpr uint32_t crc32c_unmask(uint32_t masked) {
  const uint32_t rot = masked - kCrc32cMaskDelta;
  return (rot >> 17) | (rot << 15);
}

namespace detail {
/// The table implementation, always built (the tests compare it with the fast path).
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t n);
/// True when crc32c_extend uses the SSE4.2 instruction.
bool crc32c_hardware();
}  // namespace detail

}  // namespace deepflow
