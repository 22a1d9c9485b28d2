// SPDX-License-Identifier: Apache-2.0
// CRC32C: the SSE4.2 crc32 instruction in three interleaved streams, with a
// slicing-by-8 table fallback. The three-stream scheme and the zero-shift tables
// follow Mark Adler's public-domain crc32c.c.
#include "deepflow/core/crc32c.h"

#include <array>
#include <cstring>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

namespace deepflow {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

using Table8 = std::array<std::array<uint32_t, 256>, 8>;

Table8 make_slicing_tables() {
  Table8 t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  return t;
}

#if defined(__SSE4_2__)
// The crc32 instruction has a latency of 3 cycles and a throughput of 1 per cycle, so
// one dependent chain runs at a third of the possible speed. We checksum three
// adjacent blocks independently and merge them: crc(A B) = shift(crc(A), |B|) ^ crc(B)
// for the raw (un-inverted) register values, where shift appends |B| zero bytes, a
// linear map over GF(2) precomputed as four byte-indexed tables per block length.
constexpr size_t kLong = 8192;
constexpr size_t kShort = 256;

using ShiftTable = std::array<std::array<uint32_t, 256>, 4>;

uint32_t gf2_times(const uint32_t* mat, uint32_t vec) {
  uint32_t sum = 0;
  for (; vec; vec >>= 1, ++mat)
    if (vec & 1) sum ^= *mat;
  return sum;
}

void gf2_square(uint32_t* square, const uint32_t* mat) {
  for (int n = 0; n < 32; ++n) square[n] = gf2_times(mat, mat[n]);
}

// The operator that appends `len` zero bytes (len a power of two) to a CRC register.
ShiftTable make_shift_table(size_t len) {
  uint32_t even[32], odd[32];
  odd[0] = kPoly;  // one zero bit
  for (int n = 1; n < 32; ++n) odd[n] = 1u << (n - 1);
  gf2_square(even, odd);  // two zero bits
  gf2_square(odd, even);  // four zero bits
  const uint32_t* op = nullptr;
  for (;;) {  // squaring doubles the zeros: 8 bits (1 byte), 2 bytes, ...
    gf2_square(even, odd);
    len >>= 1;
    if (len == 0) {
      op = even;
      break;
    }
    gf2_square(odd, even);
    len >>= 1;
    if (len == 0) {
      op = odd;
      break;
    }
  }
  ShiftTable t{};
  for (uint32_t n = 0; n < 256; ++n)
    for (int b = 0; b < 4; ++b) t[b][n] = gf2_times(op, n << (8 * b));
  return t;
}

inline uint32_t shift(const ShiftTable& t, uint32_t crc) {
  return t[0][crc & 0xFF] ^ t[1][(crc >> 8) & 0xFF] ^ t[2][(crc >> 16) & 0xFF] ^ t[3][crc >> 24];
}

inline uint64_t load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Three streams of `block` bytes each, as long as 3 * block bytes are left.
inline const unsigned char* three_way(uint64_t& crc0, const unsigned char* p, size_t& n, size_t block,
                                      const ShiftTable& t) {
  while (n >= 3 * block) {
    uint64_t crc1 = 0, crc2 = 0;
    const unsigned char* end = p + block;
    do {
      crc0 = _mm_crc32_u64(crc0, load64(p));
      crc1 = _mm_crc32_u64(crc1, load64(p + block));
      crc2 = _mm_crc32_u64(crc2, load64(p + 2 * block));
      p += 8;
    } while (p < end);
    crc0 = shift(t, uint32_t(crc0)) ^ uint32_t(crc1);
    crc0 = shift(t, uint32_t(crc0)) ^ uint32_t(crc2);
    p += 2 * block;
    n -= 3 * block;
  }
  return p;
}

uint32_t crc32c_extend_sse42(uint32_t crc, const void* data, size_t n) {
  static const ShiftTable long_shift = make_shift_table(kLong);
  static const ShiftTable short_shift = make_shift_table(kShort);
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t c = crc ^ 0xFFFFFFFFu;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = _mm_crc32_u8(uint32_t(c), *p++);
    --n;
  }
  p = three_way(c, p, n, kLong, long_shift);
  p = three_way(c, p, n, kShort, short_shift);
  for (; n >= 8; n -= 8, p += 8) c = _mm_crc32_u64(c, load64(p));
  for (; n > 0; --n) c = _mm_crc32_u8(uint32_t(c), *p++);
  return uint32_t(c) ^ 0xFFFFFFFFu;
}
#endif

}  // namespace

namespace detail {

uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t n) {
  static const Table8 t = make_slicing_tables();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = crc ^ 0xFFFFFFFFu;
  for (; n >= 8; n -= 8, p += 8) {
    // Little-endian: the low word is xored into the register, the high one is not.
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^ t[3][hi & 0xFF] ^
        t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
  }
  for (; n > 0; --n) c = t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

bool crc32c_hardware() {
#if defined(__SSE4_2__)
  return true;
#else
  return false;
#endif
}

}  // namespace detail

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n) {
#if defined(__SSE4_2__)
  return crc32c_extend_sse42(crc, data, n);
#else
  return detail::crc32c_extend_portable(crc, data, n);
#endif
}

uint32_t crc32c(const void* data, size_t n) { return crc32c_extend(0, data, n); }

}  // namespace deepflow
