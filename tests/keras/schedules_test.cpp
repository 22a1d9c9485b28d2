// SPDX-License-Identifier: Apache-2.0
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <numbers>

#include "deepflow/function/function.h"
#include "deepflow/keras/schedules.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using deepflow::testing::error_of;
using ::testing::HasSubstr;

double at(const SchedulePtr& s, double step, DType dtype = DType::Int64) {
  Tensor lr = (*s)(scalar(step, dtype));
  EXPECT_EQ(lr.dtype(), DType::Float32);
  EXPECT_EQ(lr.rank(), 0);
  return lr.item<double>();
}

constexpr double kTol = 1e-6;

TEST(KerasSchedules, ExponentialDecayContinuous) {
  auto s = schedules::ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5});
  for (double step : {0.0, 1.0, 5.0, 10.0, 25.0, 1000.0})
    EXPECT_NEAR(at(s, step), 0.1 * std::pow(0.5, step / 10), kTol) << "step " << step;
  EXPECT_NEAR(at(s, 7.5, DType::Float32), 0.1 * std::pow(0.5, 0.75), kTol);  // float steps too
}

TEST(KerasSchedules, ExponentialDecayStaircase) {
  auto s = schedules::ExponentialDecay(
      {.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5, .staircase = true});
  EXPECT_NEAR(at(s, 0), 0.1, kTol);
  EXPECT_NEAR(at(s, 9), 0.1, kTol);
  EXPECT_NEAR(at(s, 10), 0.05, kTol);
  EXPECT_NEAR(at(s, 19), 0.05, kTol);
  EXPECT_NEAR(at(s, 20), 0.025, kTol);
  EXPECT_NEAR(at(s, 35), 0.0125, kTol);
}

TEST(KerasSchedules, PiecewiseConstantBoundaries) {
  // The Keras docs' example: 1.0 for the first 100001 steps, 0.5 for the next 10000, 0.1 after.
  auto s = schedules::PiecewiseConstantDecay({100000, 110000}, {1.0, 0.5, 0.1});
  EXPECT_NEAR(at(s, 0), 1.0, kTol);
  EXPECT_NEAR(at(s, 100000), 1.0, kTol);  // boundaries belong to the range below
  EXPECT_NEAR(at(s, 100001), 0.5, kTol);
  EXPECT_NEAR(at(s, 110000), 0.5, kTol);
  EXPECT_NEAR(at(s, 110001), 0.1, kTol);
  EXPECT_NEAR(at(s, 1e9), 0.1, kTol);
  auto one = schedules::PiecewiseConstantDecay({2}, {0.3, 0.03});
  EXPECT_NEAR(at(one, 2), 0.3, kTol);
  EXPECT_NEAR(at(one, 3), 0.03, kTol);
  EXPECT_NEAR(at(one, 2.5, DType::Float32), 0.03, kTol);
}

TEST(KerasSchedules, PiecewiseConstantErrors) {
  EXPECT_THAT(error_of([] { schedules::PiecewiseConstantDecay({1, 2}, {1.0, 0.5}); }),
              HasSubstr("[PiecewiseConstantDecay] values must have one more entry than boundaries; got 2 boundaries "
                        "and 2 values"));
  EXPECT_THAT(error_of([] { schedules::PiecewiseConstantDecay({5, 2}, {1.0, 0.5, 0.1}); }),
              HasSubstr("[PiecewiseConstantDecay] boundaries must increase; got 5 then 2"));
}

double cosine(double step, double decay_steps, double from, double alpha) {
  step = std::min(step, decay_steps);
  return from * ((1 - alpha) * 0.5 * (1 + std::cos(std::numbers::pi * step / decay_steps)) + alpha);
}

TEST(KerasSchedules, CosineDecayWithAlphaFloor) {
  auto s = schedules::CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 100, .alpha = 0.1});
  EXPECT_NEAR(at(s, 0), 0.1, kTol);
  EXPECT_NEAR(at(s, 50), 0.055, kTol);  // 0.1 * (0.9 * 0.5 + 0.1)
  for (double step : {10.0, 25.0, 73.0, 99.0}) EXPECT_NEAR(at(s, step), cosine(step, 100, 0.1, 0.1), kTol);
  EXPECT_NEAR(at(s, 100), 0.01, kTol);  // alpha * initial
  EXPECT_NEAR(at(s, 5000), 0.01, kTol);  // stays at the floor
}

TEST(KerasSchedules, CosineDecayWarmupThenDecay) {
  auto s = schedules::CosineDecay(
      {.initial_learning_rate = 0.0, .decay_steps = 100, .alpha = 0.2, .warmup_target = 1.0, .warmup_steps = 10});
  EXPECT_NEAR(at(s, 0), 0.0, kTol);
  EXPECT_NEAR(at(s, 3), 0.3, kTol);  // linear warmup
  EXPECT_NEAR(at(s, 5), 0.5, kTol);
  EXPECT_NEAR(at(s, 10), 1.0, kTol);  // the peak, then cosine from the warmup target
  EXPECT_NEAR(at(s, 60), cosine(50, 100, 1.0, 0.2), kTol);
  EXPECT_NEAR(at(s, 60), 0.6, kTol);  // 0.8 * 0.5 + 0.2
  EXPECT_NEAR(at(s, 110), 0.2, kTol);  // alpha * warmup_target
  EXPECT_NEAR(at(s, 1e6), 0.2, kTol);
  auto from_half = schedules::CosineDecay(
      {.initial_learning_rate = 0.5, .decay_steps = 10, .warmup_target = 1.5, .warmup_steps = 4});
  EXPECT_NEAR(at(from_half, 1), 0.75, kTol);  // 0.5 + (1.5 - 0.5) / 4
}

TEST(KerasSchedules, RunInTracedFunctions) {
  auto s = schedules::CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 20, .warmup_target = 0.4,
                                   .warmup_steps = 5});
  Function f = function([&](const Tensor& step) { return (*s)(step); });
  for (int64_t step : {0, 2, 5, 12, 30}) {
    Tensor st = scalar(double(step), DType::Int64);
    EXPECT_NEAR(f(st)[0].item<double>(), (*s)(st).item<double>(), 1e-7) << "step " << step;
  }
  EXPECT_EQ(f.trace_count(), 1);
}

TEST(KerasSchedules, SerializeRoundTrips) {
  std::vector<SchedulePtr> all = {
      schedules::ExponentialDecay({.initial_learning_rate = 0.2, .decay_steps = 7, .decay_rate = 0.9,
                                   .staircase = true}),
      schedules::PiecewiseConstantDecay({3, 8}, {0.3, 0.2, 0.1}),
      schedules::CosineDecay({.initial_learning_rate = 0.05, .decay_steps = 30, .alpha = 0.1}),
      schedules::CosineDecay({.initial_learning_rate = 0.0, .decay_steps = 30, .alpha = 0.1,
                              .warmup_target = 0.3, .warmup_steps = 6}),
  };
  for (const SchedulePtr& s : all) {
    Config c = schedules::serialize(*s);
    EXPECT_EQ(c["class_name"], s->class_name());
    SchedulePtr back = schedules::deserialize(nlohmann::json::parse(c.dump()));
    EXPECT_EQ(back->class_name(), s->class_name());
    EXPECT_EQ(back->get_config(), s->get_config()) << c.dump();
    for (double step : {0.0, 4.0, 9.0, 33.0}) EXPECT_NEAR(at(back, step), at(s, step), 1e-7) << c.dump();
  }
  Config cosine = all[2]->get_config();
  EXPECT_TRUE(cosine["warmup_target"].is_null());  // Keras's None
  EXPECT_EQ(all[3]->get_config()["warmup_target"], 0.3);
  EXPECT_EQ(all[0]->get_config()["staircase"], true);
}

TEST(KerasSchedules, DeserializeErrors) {
  EXPECT_THAT(error_of([] { schedules::deserialize({{"class_name", "LinearDecay"}, {"config", Config::object()}}); }),
              HasSubstr("[schedules] unknown schedule 'LinearDecay'; known: ExponentialDecay, PiecewiseConstantDecay, "
                        "CosineDecay"));
  EXPECT_THAT(error_of([] { schedules::deserialize(Config::array()); }), HasSubstr("[schedules] deserialize needs"));
  EXPECT_THAT(error_of([] { schedules::ExponentialDecay({.decay_steps = 0}); }),
              HasSubstr("[ExponentialDecay] decay_steps must be > 0, got 0"));
}

}  // namespace
}  // namespace deepflow::keras
