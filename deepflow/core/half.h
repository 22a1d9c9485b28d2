// SPDX-License-Identifier: Apache-2.0
// 16-bit floating-point storage types: IEEE half (float16) and bfloat16.
//
// Both are storage-only: arithmetic converts to float, computes, and rounds back
// (round-to-nearest-even), the way TensorFlow's Eigen::half and bfloat16 behave.
#pragma once

#include <cstdint>
#include <cstring>

namespace deepflow {

/// IEEE 754 binary16.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(from_float(f)) {}  // NOLINT: implicit like Eigen::half
  operator float() const { return to_float(bits); }  // NOLINT

  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mag = x & 0x7fffffffu;
    if (mag >= 0x7f800000u) return uint16_t(sign | (mag > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (mag >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to inf
    if (mag < 0x38800000u) {                                  // subnormal half or zero
      float af;
      uint32_t am = mag;
      std::memcpy(&af, &am, 4);
      af += 0.5f;  // the float adder rounds the half subnormal bits into place
      uint32_t r;
      std::memcpy(&r, &af, 4);
      return uint16_t(sign | (r - 0x3f000000u));
    }
    uint32_t odd = (mag >> 13) & 1u;
    mag += 0xc8000fffu + odd;  // rebias exponent and round to nearest even
    return uint16_t(sign | (mag >> 13));
  }
  static float to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t x;
    if (exp == 0x1f) {
      x = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
      float f = float(man) * (1.0f / 16777216.0f);  // man * 2^-24
      std::memcpy(&x, &f, 4);
      x |= sign;
    } else {
      x = sign | ((exp + 112u) << 23) | (man << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

/// bfloat16: the top half of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(from_float(f)) {}  // NOLINT
  operator float() const { return to_float(bits); }  // NOLINT

  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);
    return uint16_t(x >> 16);
  }
  static float to_float(uint16_t b) {
    uint32_t x = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

}  // namespace deepflow
