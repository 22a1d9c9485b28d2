// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/schedules.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <numbers>
#include <utility>

#include "deepflow/core/error.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras {
namespace {

// Schedules compute in float32, as Keras's do (the dtype of the initial rate).
Tensor f32(const Tensor& step) { return step.dtype() == DType::Float32 ? step : cast(step, DType::Float32); }
Tensor c32(double v) { return scalar(v, DType::Float32); }

double number(const Config& c, const char* key, double fallback) {
  auto it = c.find(key);
  return it == c.end() || it->is_null() ? fallback : it->get<double>();
}

class ExponentialDecaySchedule : public LearningRateSchedule {
 public:
  explicit ExponentialDecaySchedule(schedules::ExponentialDecayOptions o) : o_(o) {
    DF_CHECK(o_.decay_steps > 0, "[ExponentialDecay] decay_steps must be > 0, got ", o_.decay_steps);
  }
  Tensor operator()(const Tensor& step) const override {
    Tensor p = f32(step) / o_.decay_steps;
    if (o_.staircase) p = floor(p);
    return pow(c32(o_.decay_rate), p) * o_.initial_learning_rate;
  }
  std::string class_name() const override { return "ExponentialDecay"; }
  Config get_config() const override {
    return {{"initial_learning_rate", o_.initial_learning_rate},
            {"decay_steps", o_.decay_steps},
            {"decay_rate", o_.decay_rate},
            {"staircase", o_.staircase},
            {"name", "ExponentialDecay"}};
  }

 private:
  schedules::ExponentialDecayOptions o_;
};

class PiecewiseConstantDecaySchedule : public LearningRateSchedule {
 public:
  PiecewiseConstantDecaySchedule(std::vector<double> boundaries, std::vector<double> values)
      : boundaries_(std::move(boundaries)), values_(std::move(values)) {
    DF_CHECK(!boundaries_.empty(), "[PiecewiseConstantDecay] needs at least one boundary");
    DF_CHECK(values_.size() == boundaries_.size() + 1, "[PiecewiseConstantDecay] values must have one more entry ",
             "than boundaries; got ", boundaries_.size(), " boundaries and ", values_.size(), " values");
    for (size_t i = 1; i < boundaries_.size(); ++i)
      DF_CHECK(boundaries_[i - 1] < boundaries_[i], "[PiecewiseConstantDecay] boundaries must increase; got ",
               boundaries_[i - 1], " then ", boundaries_[i]);
  }
  // Keras sums indicator * value over the ranges; the comparisons run in float64 so
  // int64 steps compare exactly.
  Tensor operator()(const Tensor& step) const override {
    Tensor x = step.dtype() == DType::Float64 ? step : cast(step, DType::Float64);
    auto in = [](const Tensor& cond) { return cast(cond, DType::Float32); };
    auto b = [&](size_t i) { return scalar(boundaries_[i], DType::Float64); };
    Tensor result = in(less_equal(x, b(0))) * values_[0];
    result = result + in(greater(x, b(boundaries_.size() - 1))) * values_.back();
    for (size_t i = 1; i < boundaries_.size(); ++i)
      result = result + in(logical_and(greater(x, b(i - 1)), less_equal(x, b(i)))) * values_[i];
    return result;
  }
  std::string class_name() const override { return "PiecewiseConstantDecay"; }
  Config get_config() const override {
    return {{"boundaries", boundaries_}, {"values", values_}, {"name", "PiecewiseConstantDecay"}};
  }

 private:
  std::vector<double> boundaries_, values_;
};

class CosineDecaySchedule : public LearningRateSchedule {
 public:
  explicit CosineDecaySchedule(schedules::CosineDecayOptions o) : o_(o) {
    DF_CHECK(o_.decay_steps > 0, "[CosineDecay] decay_steps must be > 0, got ", o_.decay_steps);
    DF_CHECK(o_.warmup_steps >= 0, "[CosineDecay] warmup_steps must be >= 0, got ", o_.warmup_steps);
  }
  Tensor operator()(const Tensor& step) const override {
    Tensor s = f32(step);
    if (o_.warmup_target < 0) return decay(minimum(s, c32(o_.decay_steps)), o_.initial_learning_rate);
    s = minimum(s, c32(o_.decay_steps + o_.warmup_steps));
    // Keras's ops.cond of the two branches, as a where: both are cheap scalars.
    Tensor warm = s / o_.warmup_steps * (o_.warmup_target - o_.initial_learning_rate) + o_.initial_learning_rate;
    return where(less(s, c32(o_.warmup_steps)), warm, decay(s - o_.warmup_steps, o_.warmup_target));
  }
  std::string class_name() const override { return "CosineDecay"; }
  Config get_config() const override {
    return {{"initial_learning_rate", o_.initial_learning_rate},
            {"decay_steps", o_.decay_steps},
            {"alpha", o_.alpha},
            {"name", "CosineDecay"},
            {"warmup_target", o_.warmup_target < 0 ? Config(nullptr) : Config(o_.warmup_target)},
            {"warmup_steps", o_.warmup_steps}};
  }

 private:
  Tensor decay(const Tensor& s, double from) const {
    Tensor cosine = (cos(s / o_.decay_steps * std::numbers::pi) + 1.0) * 0.5;
    return (cosine * (1 - o_.alpha) + o_.alpha) * from;
  }
  schedules::CosineDecayOptions o_;
};

}  // namespace

namespace schedules {

SchedulePtr ExponentialDecay(ExponentialDecayOptions options) {
  return std::make_shared<ExponentialDecaySchedule>(options);
}

SchedulePtr PiecewiseConstantDecay(std::vector<double> boundaries, std::vector<double> values) {
  return std::make_shared<PiecewiseConstantDecaySchedule>(std::move(boundaries), std::move(values));
}

SchedulePtr CosineDecay(CosineDecayOptions options) { return std::make_shared<CosineDecaySchedule>(options); }

Config serialize(const LearningRateSchedule& s) {
  return {{"module", "keras.optimizers.schedules"}, {"class_name", s.class_name()}, {"config", s.get_config()}};
}

SchedulePtr deserialize(const Config& config) {
  DF_CHECK(config.is_object() && config.contains("class_name"),
           "[schedules] deserialize needs {\"class_name\", \"config\"}, got ", config.dump());
  const std::string name = config["class_name"].get<std::string>();
  const Config c = config.contains("config") ? config["config"] : Config::object();
  if (name == "ExponentialDecay") {
    return ExponentialDecay({.initial_learning_rate = number(c, "initial_learning_rate", 0.1),
                             .decay_steps = number(c, "decay_steps", 1000),
                             .decay_rate = number(c, "decay_rate", 0.96),
                             .staircase = c.value("staircase", false)});
  }
  if (name == "PiecewiseConstantDecay") {
    DF_CHECK(c.contains("boundaries") && c.contains("values"),
             "[schedules] PiecewiseConstantDecay config needs boundaries and values, got ", c.dump());
    return PiecewiseConstantDecay(c["boundaries"].get<std::vector<double>>(), c["values"].get<std::vector<double>>());
  }
  if (name == "CosineDecay") {
    return CosineDecay({.initial_learning_rate = number(c, "initial_learning_rate", 0.0),
                        .decay_steps = number(c, "decay_steps", 1000),
                        .alpha = number(c, "alpha", 0.0),
                        .warmup_target = number(c, "warmup_target", -1),
                        .warmup_steps = number(c, "warmup_steps", 0)});
  }
  fail("[schedules] unknown schedule '", name, "'; known: ExponentialDecay, PiecewiseConstantDecay, CosineDecay");
}

}  // namespace schedules
}  // namespace deepflow::keras
