// SPDX-License-Identifier: Apache-2.0
// deepflow_lite's int8 matrix multiply with requantization: the core of int8 CONV_2D and
// FULLY_CONNECTED. Y[i,j] = requantize(sum_p (A[i,p] + in_offset) * W[j,p] + bias[j]) with
// A int8 activations (m x k), W int8 weights (n x k: TFLite's FC [out, in] and the conv
// filter OHWI read as [out, kh*kw*in]) and Y int8 (m x n).
//
// The int32 sums are exact, so any order of summation gives LiteRT's reference result bit for
// bit; only the requantization must match, and it does (quant_math.h, in vectors). The weights
// are packed once (PackedInt8Weights) with their column sums, which turn the input offset
// into a per-column constant: sum (a + off) w = sum a w + off * sum w.
// On CPUs with AVX-512 VNNI the micro-kernel is vpdpbusd (unsigned x signed bytes: A is
// flipped to unsigned while it is packed, a + 128, and 128 * sum w comes off the constant);
// elsewhere, and under set_simd(Simd::kAvx2), a portable kernel computes the same sums.
#pragma once

#include <cstdint>
#include <vector>

#include "deepflow/lite/kernels/gemm.h"
#include "deepflow/lite/kernels/quant_math.h"

namespace deepflow::lite {

/// Constant int8 weights W (n x k, row j = output channel j) in the micro-kernel's layout:
/// ceil(n/16) panels, each ceil(k/4) groups of 16 columns x 4 consecutive k (64 bytes,
/// zero-padded), and sum_p W[j,p] per column.
class PackedInt8Weights {
 public:
  static constexpr int kPanel = 16;
  /// Packs w[j*ldw + p] for j < n, p < k.
  void pack(const int8_t* w, int n, int k, int ldw);
  int n() const { return n_; }
  int k() const { return k_; }
  /// k rounded up to a multiple of 4.
  int k4() const { return (k_ + 3) & ~3; }
  const int8_t* panel(int j) const { return data_.data() + static_cast<size_t>(j) * k4() * kPanel; }
  const int32_t* column_sums() const { return sums_.data(); }

 private:
  int n_ = 0, k_ = 0;
  std::vector<int8_t> data_;
  std::vector<int32_t> sums_;
};

/// The requantization of each output: per column j (or one value for all when per_channel
/// is false), y = clamp(zp_out + M_j(acc), lo, hi) with M_j rounding twice (LiteRT's conv)
/// or once (its FULLY_CONNECTED through ruy).
struct Int8Requant {
  std::vector<QuantizedMultiplier> multipliers;  ///< n entries
  int32_t zp_out = 0;
  int32_t lo = -128, hi = 127;
  bool single_rounding = false;
  /// Requantize in float instead (Interpreter::set_fast_int8): y = clamp(zp_out +
  /// round_half_even(acc * real_j)), real_j the multiplier's value.
  bool fast = false;
};

/// Everything an int8 GEMM needs besides A, prepared once from constant weights and bias.
class Int8Gemm {
 public:
  /// bias: n int32 values or nullptr. in_offset: -zero_point of A.
  void prepare(const int8_t* w, int n, int k, int ldw, const int32_t* bias, int32_t in_offset, Int8Requant requant);
  int n() const { return weights_.n(); }
  int k() const { return weights_.k(); }

  /// Y = requantize(A W^T): A[i,p] = a[i*lda + p], Y[i,j] = y[i*ldy + j]. Threads split rows
  /// and columns; pool may be nullptr. rows_padded: each row of A is readable up to k rounded
  /// up to 4 (what is past k is multiplied by zero weights), so it is read in place.
  void run(ThreadPool* pool, int m, const int8_t* a, int lda, int8_t* y, int ldy, bool rows_padded = false) const;

 private:
  PackedInt8Weights weights_;
  Int8Requant requant_;
  int32_t in_offset_ = 0;
  std::vector<int32_t> column_bias_;   // bias + in_offset * sum w (+ the VNNI correction), padded to panels
  std::vector<int32_t> multiplier_;    // per column, padded
  std::vector<int32_t> left_shift_;    // per column (double rounding), padded
  std::vector<int32_t> right_shift_;   // per column: the RDBPOT exponent, or 31 - shift (single rounding)
  std::vector<float> real_;            // per column, padded: the multiplier's value (fast)
  std::vector<QuantizedMultiplier> column_multipliers_;  // per column, padded (portable path)
  bool any_left_ = false;              // some column shifts left (a multiplier above 1)
};

/// Whether the VNNI kernel runs now (the CPU has AVX-512 VNNI and simd() is kAvx512).
bool int8_vnni();

}  // namespace deepflow::lite
