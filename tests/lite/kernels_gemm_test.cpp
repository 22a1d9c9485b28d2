// SPDX-License-Identifier: Apache-2.0
// deepflow_lite's sgemm against a naive triple loop: odd sizes (every micro-kernel edge),
// both layouts of A and B, packed and raw B, bias, clamp, accumulate, one and two threads,
// both instruction sets' kernels; and sgemm_gather against sgemm.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "deepflow/lite/kernels/gemm.h"

namespace deepflow::lite {
namespace {

struct Case {
  int m, n, k;
};

// Element (r, c) of a rows x cols operand stored as `layout` with leading dimension ld.
size_t at(Layout layout, int r, int c, int ld) {
  return layout == Layout::kRowMajor ? static_cast<size_t>(r) * ld + c : static_cast<size_t>(c) * ld + r;
}

std::vector<float> random_values(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct Options {
  Layout a_layout = Layout::kRowMajor;
  Layout b_layout = Layout::kRowMajor;
  bool packed = true;
  bool bias = false;
  bool clamp = false;
  bool accumulate = false;
  int threads = 1;
  int pad = 0;  // extra elements per leading dimension (ld > the operand's width)
};

std::string describe(const Case& c, const Options& o) {
  return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
         (o.a_layout == Layout::kTransposed ? " A^T" : "") + (o.b_layout == Layout::kTransposed ? " B^T" : "") +
         (o.packed ? " packed" : " raw") + (o.bias ? " bias" : "") + (o.clamp ? " clamp" : "") +
         (o.accumulate ? " accumulate" : "") + " threads=" + std::to_string(o.threads) +
         " pad=" + std::to_string(o.pad);
}

void check(const Case& cs, const Options& o) {
  SCOPED_TRACE(describe(cs, o));
  const int m = cs.m, n = cs.n, k = cs.k;
  std::mt19937 rng(static_cast<unsigned>(m * 131 + n * 17 + k));
  const int lda = (o.a_layout == Layout::kRowMajor ? k : m) + o.pad;
  const int ldb = (o.b_layout == Layout::kRowMajor ? n : k) + o.pad;
  const int ldc = n + o.pad;
  const auto a = random_values(static_cast<size_t>(lda) * (o.a_layout == Layout::kRowMajor ? m : k), rng);
  const auto b = random_values(static_cast<size_t>(ldb) * (o.b_layout == Layout::kRowMajor ? k : n), rng);
  const auto bias = random_values(static_cast<size_t>(n), rng);
  const auto c0 = random_values(static_cast<size_t>(ldc) * m, rng);

  GemmEpilogue e;
  if (o.bias) e.bias = bias.data();
  if (o.clamp) {
    e.lo = -0.5f;
    e.hi = 1.5f;
  }
  e.accumulate = o.accumulate;

  std::vector<float> want = c0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p)
        sum += static_cast<double>(a[at(o.a_layout, i, p, lda)]) * b[at(o.b_layout, p, j, ldb)];
      if (o.accumulate) sum += c0[static_cast<size_t>(i) * ldc + j];
      if (o.bias) sum += bias[static_cast<size_t>(j)];
      want[static_cast<size_t>(i) * ldc + j] = std::min(std::max(static_cast<float>(sum), e.lo), e.hi);
    }

  ThreadPool pool(o.threads);
  std::vector<float> got = c0;
  if (o.packed) {
    PackedB pb;
    pb.pack(b.data(), k, n, ldb, o.b_layout, &pool);
    sgemm(&pool, m, a.data(), lda, o.a_layout, pb, got.data(), ldc, e);
    // A second product with the same packing: packing once must be enough.
    std::vector<float> again = c0;
    sgemm(&pool, m, a.data(), lda, o.a_layout, pb, again.data(), ldc, e);
    EXPECT_EQ(again, got);
  } else {
    sgemm(&pool, m, n, k, a.data(), lda, o.a_layout, b.data(), ldb, o.b_layout, got.data(), ldc, e);
  }
  const float tol = 1e-5f * static_cast<float>(k + 1);
  int bad = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < ldc; ++j) {
      const size_t idx = static_cast<size_t>(i) * ldc + j;
      if (j >= n) {  // the padding of C's rows is never written
        EXPECT_EQ(got[idx], c0[idx]) << "padding at row " << i << " col " << j;
        continue;
      }
      if (std::fabs(got[idx] - want[idx]) > tol && ++bad <= 5)
        ADD_FAILURE() << "C[" << i << "," << j << "] = " << got[idx] << ", want " << want[idx];
    }
  EXPECT_EQ(bad, 0);
}

const Case kCases[] = {{1, 1, 1},   {7, 13, 5},   {6, 16, 8},   {5, 17, 3},    {1, 40, 300},
                       {3, 33, 70}, {12, 32, 257}, {67, 129, 300}, {130, 50, 513}, {9, 257, 33}};

TEST(LiteGemm, RowMajorBothB) {
  for (const Case& c : kCases)
    for (Layout bl : {Layout::kRowMajor, Layout::kTransposed})
      for (bool packed : {true, false}) {
        Options o;
        o.b_layout = bl;
        o.packed = packed;
        check(c, o);
      }
}

TEST(LiteGemm, TransposedA) {
  for (const Case& c : kCases)
    for (Layout bl : {Layout::kRowMajor, Layout::kTransposed}) {
      Options o;
      o.a_layout = Layout::kTransposed;
      o.b_layout = bl;
      check(c, o);
      o.packed = false;
      check(c, o);
    }
}

TEST(LiteGemm, BiasClampAccumulate) {
  for (const Case& c : kCases)
    for (bool packed : {true, false}) {
      Options o;
      o.b_layout = Layout::kTransposed;
      o.packed = packed;
      o.bias = true;
      o.clamp = true;
      check(c, o);
      o.accumulate = true;
      check(c, o);
      o.bias = false;
      o.clamp = false;
      check(c, o);
    }
}

TEST(LiteGemm, StridedOperands) {
  for (const Case& c : kCases) {
    Options o;
    o.pad = 3;
    o.bias = true;
    check(c, o);
    o.a_layout = Layout::kTransposed;
    o.b_layout = Layout::kTransposed;
    o.packed = false;
    check(c, o);
  }
}

TEST(LiteGemm, TwoThreads) {
  const Case cases[] = {{1, 1, 1},     {7, 13, 5},     {67, 129, 300}, {1, 300, 400},
                        {200, 20, 300}, {300, 300, 64}, {20, 270, 100}};
  for (const Case& c : cases)
    for (Layout bl : {Layout::kRowMajor, Layout::kTransposed})
      for (bool packed : {true, false}) {
        Options o;
        o.b_layout = bl;
        o.packed = packed;
        o.threads = 2;
        o.bias = true;
        o.clamp = true;
        check(c, o);
      }
}

// The other instruction set's kernels (AVX2 where this CPU has AVX-512; a no-op when the
// CPU has only the baseline): every layout, edge and epilogue again.
TEST(LiteGemm, BaselineKernels) {
  const Simd before = simd();
  set_simd(before == Simd::kAvx512 ? Simd::kAvx2 : Simd::kAvx512);
  for (const Case& c : kCases)
    for (Layout al : {Layout::kRowMajor, Layout::kTransposed})
      for (Layout bl : {Layout::kRowMajor, Layout::kTransposed})
        for (bool packed : {true, false}) {
          Options o;
          o.a_layout = al;
          o.b_layout = bl;
          o.packed = packed;
          o.bias = true;
          o.clamp = bl == Layout::kTransposed;
          o.accumulate = al == Layout::kTransposed && packed;
          check(c, o);
        }
  set_simd(before);
  EXPECT_EQ(simd(), before);
}

// sgemm_gather against sgemm on the A it gathers: rows a_row apart in an "image", each
// row's elements at scattered offsets (a convolution's patch), on both instruction sets.
TEST(LiteGemm, GatheredA) {
  const Simd before = simd();
  for (Simd isa : {Simd::kAvx2, Simd::kAvx512}) {
    set_simd(isa);
    for (const Case& c : {Case{1, 5, 3}, Case{8, 32, 9}, Case{13, 17, 27}, Case{26, 64, 300}, Case{9, 40, 513}}) {
      SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
                   (isa == Simd::kAvx512 ? " avx512" : " avx2"));
      std::mt19937 rng(static_cast<unsigned>(c.m + 7 * c.k));
      const int a_row = 6;
      std::vector<int32_t> offsets(static_cast<size_t>(c.k));
      std::uniform_int_distribution<int32_t> off(0, 4 * c.k);
      for (int32_t& o : offsets) o = off(rng);
      const auto image = random_values(static_cast<size_t>(c.m) * a_row + 4 * c.k + 1, rng);
      const auto b = random_values(static_cast<size_t>(c.k) * c.n, rng);
      const auto bias = random_values(static_cast<size_t>(c.n), rng);
      std::vector<float> a(static_cast<size_t>(c.m) * c.k);
      for (int i = 0; i < c.m; ++i)
        for (int p = 0; p < c.k; ++p)
          a[static_cast<size_t>(i) * c.k + p] = image[static_cast<size_t>(i) * a_row + offsets[static_cast<size_t>(p)]];
      PackedB pb;
      pb.pack(b.data(), c.k, c.n, c.n, Layout::kRowMajor);
      GemmEpilogue e;
      e.bias = bias.data();
      e.lo = -1.f;
      e.hi = 2.f;
      std::vector<float> want(static_cast<size_t>(c.m) * c.n), got(want.size());
      sgemm(nullptr, c.m, a.data(), c.k, Layout::kRowMajor, pb, want.data(), c.n, e);
      sgemm_gather(c.m, image.data(), a_row, offsets.data(), pb, got.data(), c.n, e);
      for (size_t q = 0; q < want.size(); ++q) ASSERT_NEAR(got[q], want[q], 1e-5f * (c.k + 1)) << "element " << q;
    }
  }
  set_simd(before);
}

TEST(LiteGemm, EmptyK) {
  // k = 0: C is the bias (clamped), or keeps its values when accumulating.
  std::vector<float> c = {5.f, -5.f, 0.5f, 2.f};
  const float bias[] = {1.f, -1.f};
  GemmEpilogue e;
  e.bias = bias;
  e.lo = 0.f;
  e.hi = 6.f;
  sgemm(nullptr, 2, 2, 0, nullptr, 0, Layout::kRowMajor, nullptr, 2, Layout::kRowMajor, c.data(), 2, e);
  EXPECT_EQ(c, (std::vector<float>{1.f, 0.f, 1.f, 0.f}));
  c = {5.f, -5.f, 0.5f, 2.f};
  e.accumulate = true;
  PackedB pb;
  pb.pack(nullptr, 0, 2, 2, Layout::kRowMajor);
  sgemm(nullptr, 2, nullptr, 0, Layout::kRowMajor, pb, c.data(), 2, e);
  EXPECT_EQ(c, (std::vector<float>{6.f, 0.f, 1.5f, 1.f}));
}

TEST(LiteGemm, NanPassesThroughTheClamp) {
  // TFLite clamps with std::min(std::max(x, lo), hi), which keeps a NaN; so must the
  // vector epilogue (full tiles) and the scalar one (edge tiles).
  const int m = 7, n = 40, k = 3;
  std::vector<float> a(m * k, 1.f), b(k * n, 1.f), c(m * n, 0.f);
  a[k] = std::nanf("");  // row 1
  GemmEpilogue e;
  e.lo = 0.f;
  e.hi = 6.f;
  for (bool packed : {true, false}) {
    if (packed) {
      PackedB pb;
      pb.pack(b.data(), k, n, n, Layout::kRowMajor);
      sgemm(nullptr, m, a.data(), k, Layout::kRowMajor, pb, c.data(), n, e);
    } else {
      sgemm(nullptr, m, n, k, a.data(), k, Layout::kRowMajor, b.data(), n, Layout::kRowMajor, c.data(), n, e);
    }
    for (int j = 0; j < n; ++j) {
      EXPECT_TRUE(std::isnan(c[n + j])) << "column " << j << (packed ? " packed" : " raw");
      EXPECT_EQ(c[j], 3.f);
    }
  }
}

TEST(LiteGemm, RepackReusesStorage) {
  // A PackedB packed again with a smaller matrix gives that matrix's product.
  std::mt19937 rng(7);
  const auto big = random_values(64 * 64, rng);
  const auto small = random_values(3 * 5, rng);
  PackedB pb;
  pb.pack(big.data(), 64, 64, 64, Layout::kRowMajor);
  pb.pack(small.data(), 3, 5, 5, Layout::kRowMajor);
  EXPECT_EQ(pb.k(), 3);
  EXPECT_EQ(pb.n(), 5);
  const float a[] = {1.f, 2.f, 3.f};
  float c[5];
  sgemm(nullptr, 1, a, 3, Layout::kRowMajor, pb, c, 5);
  for (int j = 0; j < 5; ++j) EXPECT_NEAR(c[j], small[j] + 2 * small[5 + j] + 3 * small[10 + j], 1e-5f);
}

}  // namespace
}  // namespace deepflow::lite
