// SPDX-License-Identifier: Apache-2.0
// deepflow_lite's float32 matrix multiply: C[m,n] = A[m,k] * B[k,n] (+ C), with a per-column
// bias and a clamp (a fused activation) applied once the sum is complete. The core of
// CONV_2D, FULLY_CONNECTED, BATCH_MATMUL and TRANSPOSE_CONV.
//
// B is the matrix a kernel usually knows ahead of time (a weight), so it can be packed once
// into PackedB (panels of 16 columns, the micro-kernel's width) at prepare and reused by
// every eval; sgemm() on a raw B packs it per call. A is packed per cache block inside.
// The micro-kernels use AVX-512 where the CPU has it (the library itself is built for
// x86-64-v3), else AVX2; simd() says which.
// This header needs neither the schema nor any instruction set: tests include it alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>

#include "deepflow/lite/thread_pool.h"

namespace deepflow::lite {

/// How an operand's elements sit in memory. For an operand X of r rows and c columns with
/// leading dimension ld: kRowMajor is X[i,j] = x[i*ld + j]; kTransposed is X[i,j] =
/// x[j*ld + i] (X stored as its transpose: TFLite's FC weights [out,in] and conv filters
/// OHWI are B in this layout).
enum class Layout : uint8_t { kRowMajor, kTransposed };

/// The widest vectors deepflow_lite's float kernels (GEMM, depthwise convolution) use.
/// kAvx2 is the build's baseline (AVX2 + FMA on x86-64-v3, the compiler's generic vectors
/// elsewhere); kAvx512 needs AVX-512 F/BW/DQ/VL, checked once at first use. Setting the
/// environment variable DEEPFLOW_LITE_SIMD=avx2 keeps a process on the baseline.
enum class Simd : uint8_t { kAvx2, kAvx512 };

/// The vectors the kernels use now.
Simd simd();
/// Chooses the kernels' vectors (capped at what the CPU runs): for tests of both paths.
/// Not to be called while a kernel runs.
void set_simd(Simd s);

/// What happens to each element of C after the products are summed.
struct GemmEpilogue {
  const float* bias = nullptr;  ///< n values added to each row of C; nullptr for none
  float lo = -std::numeric_limits<float>::infinity();  ///< clamp (a fused activation's FloatRange)
  float hi = std::numeric_limits<float>::infinity();
  bool accumulate = false;  ///< C += A*B (C's old values kept) instead of C = A*B
};

/// A 64-byte aligned float buffer that only grows (packing buffers reused across evals).
class AlignedFloats {
 public:
  /// Makes room for n floats; the old contents are lost when it grows.
  float* reserve(size_t n);
  float* data() const { return data_.get(); }
  size_t capacity() const { return capacity_; }

 private:
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float, Free> data_;
  size_t capacity_ = 0;
};

/// B (k x n) copied into the micro-kernel's layout: ceil(n/16) panels of k rows x 16
/// columns, the last one zero-padded. Pack a constant weight once, multiply many times.
class PackedB {
 public:
  /// Number of columns per panel.
  static constexpr int kPanel = 16;

  /// Packs B of k rows and n columns (b and ldb read as `layout` says). The pool, when
  /// given, packs panels in parallel. Reuses the storage of an earlier pack when it fits.
  void pack(const float* b, int k, int n, int ldb, Layout layout, ThreadPool* pool = nullptr);
  int k() const { return k_; }
  int n() const { return n_; }
  bool empty() const { return n_ == 0 && k_ == 0; }
  /// Panel j: k rows of kPanel floats.
  const float* panel(int j) const { return buffer_.data() + static_cast<size_t>(j) * k_ * kPanel; }

 private:
  int k_ = 0;
  int n_ = 0;
  AlignedFloats buffer_;
};

/// C = A*B (+ epilogue) with B packed. A is m x b.k(): A[i,p] is a[i*lda + p] (kRowMajor)
/// or a[p*lda + i] (kTransposed). C[i,j] is c[i*ldc + j]. pool: nullptr (or a one-thread
/// pool) runs on the calling thread only, for callers that parallelize around the GEMM.
void sgemm(ThreadPool* pool, int m, const float* a, int lda, Layout a_layout, const PackedB& b, float* c, int ldc,
           const GemmEpilogue& epilogue = {});

/// C = A*B (+ epilogue) with A gathered: A[i,p] is a[i*a_row + offsets[p]] (b.k() offsets).
/// A convolution's patches read in place from the image for a run of output pixels whose
/// windows lie inside it (an implicit im2col). On the calling thread only.
void sgemm_gather(int m, const float* a, int a_row, const int32_t* offsets, const PackedB& b, float* c, int ldc,
                  const GemmEpilogue& epilogue = {});

/// C = A*B (+ epilogue) with B of k x n read in place (packed per call when that pays).
void sgemm(ThreadPool* pool, int m, int n, int k, const float* a, int lda, Layout a_layout, const float* b, int ldb,
           Layout b_layout, float* c, int ldc, const GemmEpilogue& epilogue = {});

}  // namespace deepflow::lite
