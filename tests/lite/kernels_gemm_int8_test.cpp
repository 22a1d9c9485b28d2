// SPDX-License-Identifier: Apache-2.0
// deepflow_lite's int8 GEMM against the reference arithmetic (quant_math.h on each output, the
// loop of LiteRT's reference kernels): odd sizes (every tile edge, K not a multiple of 4, a
// last panel of fewer than 16 columns), per-channel and per-tensor multipliers with left and
// right shifts, both rounding forms, activation clamps, one and two threads, and both the
// VNNI and the portable kernel. Integer sums are exact, so every byte must be equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "deepflow/lite/kernels/gemm_int8.h"

namespace deepflow::lite {
namespace {

struct Case {
  int m, n, k;
};

struct GemmSetup {
  bool per_channel = true;
  bool single_rounding = false;
  bool bias = true;
  int32_t in_zp = -5;
  int32_t out_zp = 3;
  int32_t lo = -128, hi = 127;
  int threads = 1;
};

std::vector<int8_t> reference(const Case& c, const std::vector<int8_t>& a, const std::vector<int8_t>& w,
                              const std::vector<int32_t>& bias, const Int8Requant& q, int32_t in_off) {
  std::vector<int8_t> y(static_cast<size_t>(c.m) * c.n);
  for (int i = 0; i < c.m; ++i)
    for (int j = 0; j < c.n; ++j) {
      int32_t acc = 0;
      for (int p = 0; p < c.k; ++p)
        acc += (a[static_cast<size_t>(i) * c.k + p] + in_off) * w[static_cast<size_t>(j) * c.k + p];
      if (!bias.empty()) acc += bias[static_cast<size_t>(j)];
      const QuantizedMultiplier m = q.multipliers[q.multipliers.size() == 1 ? 0 : static_cast<size_t>(j)];
      const int32_t v = (q.single_rounding ? multiply_by_quantized_multiplier_single_rounding(acc, m)
                                           : multiply_by_quantized_multiplier(acc, m)) + q.zp_out;
      y[static_cast<size_t>(i) * c.n + j] = static_cast<int8_t>(std::clamp(v, q.lo, q.hi));
    }
  return y;
}

void check(const Case& c, const GemmSetup& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(-128, 127), weight(-127, 127), bias_dist(-20000, 20000);
  std::uniform_real_distribution<double> scale(0.3, 3.0);
  std::vector<int8_t> a(static_cast<size_t>(c.m) * c.k), w(static_cast<size_t>(c.n) * c.k);
  for (auto& v : a) v = static_cast<int8_t>(byte(rng));
  for (auto& v : w) v = static_cast<int8_t>(weight(rng));
  std::vector<int32_t> bias;
  if (s.bias)
    for (int j = 0; j < c.n; ++j) bias.push_back(bias_dist(rng));
  Int8Requant q;
  q.zp_out = s.out_zp;
  q.lo = s.lo;
  q.hi = s.hi;
  q.single_rounding = s.single_rounding;
  // Real multipliers around 1 / (the sums' spread): mostly right shifts, some left (> 1).
  const int channels = s.per_channel ? c.n : 1;
  for (int j = 0; j < channels; ++j)
    q.multipliers.push_back(quantize_multiplier(scale(rng) / (j % 7 == 3 ? 0.5 : 60.0 * c.k)));
  const int32_t in_off = -s.in_zp;
  const std::vector<int8_t> want = reference(c, a, w, bias, q, in_off);
  Int8Gemm gemm;
  gemm.prepare(w.data(), c.n, c.k, c.k, s.bias ? bias.data() : nullptr, in_off, q);
  ThreadPool pool(s.threads);
  std::vector<int8_t> got(want.size(), 0);
  gemm.run(&pool, c.m, a.data(), c.k, got.data(), c.n);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << "m=" << c.m << " n=" << c.n << " k=" << c.k << " element " << i << " (row "
                               << i / static_cast<size_t>(c.n) << ", column " << i % static_cast<size_t>(c.n)
                               << "), vnni " << int8_vnni();
}

class GemmInt8Test : public ::testing::TestWithParam<Simd> {
 protected:
  void SetUp() override {
    before_ = simd();
    set_simd(GetParam());
  }
  void TearDown() override { set_simd(before_); }
  Simd before_ = Simd::kAvx2;
};

const Case kCases[] = {{1, 1, 1},   {1, 10, 1280}, {3, 17, 5},   {8, 32, 64},   {9, 33, 27},
                       {15, 48, 9}, {64, 16, 96},  {100, 7, 13}, {200, 70, 144}, {1, 1001, 258}};

TEST_P(GemmInt8Test, PerChannelDoubleRounding) {
  uint32_t seed = 1;
  for (const Case& c : kCases) check(c, GemmSetup{}, seed++);
}

TEST_P(GemmInt8Test, PerTensorSingleRoundingNoBias) {
  GemmSetup s;
  s.per_channel = false;
  s.single_rounding = true;
  s.bias = false;
  s.in_zp = 100;
  s.out_zp = -128;
  uint32_t seed = 20;
  for (const Case& c : kCases) check(c, s, seed++);
}

TEST_P(GemmInt8Test, SingleRoundingPerChannelClamped) {
  GemmSetup s;
  s.single_rounding = true;
  s.lo = -128 + 40;
  s.hi = 90;
  s.in_zp = -128;
  uint32_t seed = 40;
  for (const Case& c : kCases) check(c, s, seed++);
}

TEST_P(GemmInt8Test, TwoThreads) {
  GemmSetup s;
  s.threads = 2;
  uint32_t seed = 60;
  for (const Case& c : {Case{256, 96, 144}, Case{1, 1000, 1280}, Case{4096, 24, 16}}) check(c, s, seed++);
  s.single_rounding = true;
  for (const Case& c : {Case{257, 100, 33}, Case{2, 64, 300}}) check(c, s, seed++);
}

INSTANTIATE_TEST_SUITE_P(Kernels, GemmInt8Test, ::testing::Values(Simd::kAvx2, Simd::kAvx512),
                         [](const ::testing::TestParamInfo<Simd>& info) {
                           return std::string(info.param == Simd::kAvx512 ? "Vnni" : "Portable");
                         });

TEST(GemmInt8, VnniMatchesTheCpu) {
  // Which path the kAvx512 cases exercised, for the log: the VNNI one only where the CPU has it.
  const Simd before = simd();
  set_simd(Simd::kAvx512);
  const bool vnni = int8_vnni();
  set_simd(Simd::kAvx2);
  EXPECT_FALSE(int8_vnni());
  set_simd(before);
  RecordProperty("vnni", vnni ? "yes" : "no");
}

}  // namespace
}  // namespace deepflow::lite
