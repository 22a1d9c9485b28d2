// SPDX-License-Identifier: Apache-2.0
// Learning-rate schedules (tf.keras.optimizers.schedules): the learning rate as a
// function of the step, built from ops so it works eagerly and inside traced steps.
//
//   auto lr = keras::schedules::CosineDecay({.initial_learning_rate = 0.0,
//       .decay_steps = 1000, .warmup_target = 1e-3, .warmup_steps = 100});
//   auto opt = keras::optimizers::Adam({.learning_rate = lr});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "deepflow/core/tensor.h"
#include "deepflow/keras/config.h"

namespace deepflow::keras {

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  /// The learning rate (float32 scalar) at `step` (a scalar of any numeric dtype; the
  /// optimizer passes its iterations count).
  virtual Tensor operator()(const Tensor& step) const = 0;
  virtual std::string class_name() const = 0;
  virtual Config get_config() const = 0;
};
using SchedulePtr = std::shared_ptr<const LearningRateSchedule>;

namespace schedules {

struct ExponentialDecayOptions {
  double initial_learning_rate = 0.1;
  double decay_steps = 1000;
  double decay_rate = 0.96;
  bool staircase = false;
};
/// initial * decay_rate ^ (step / decay_steps) (floored when staircase).
SchedulePtr ExponentialDecay(ExponentialDecayOptions options);

/// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <=
/// boundaries[i], values.back() after; values has one more entry than boundaries.
SchedulePtr PiecewiseConstantDecay(std::vector<double> boundaries, std::vector<double> values);

struct CosineDecayOptions {
  double initial_learning_rate = 0.0;
  double decay_steps = 1000;
  double alpha = 0.0;  ///< the floor, a fraction of the initial (or warmup target) rate
  double warmup_target = -1;  ///< < 0: no warmup
  double warmup_steps = 0;
};
/// Keras 3's CosineDecay: linear warmup from initial_learning_rate to warmup_target over
/// warmup_steps, then cosine decay over decay_steps down to alpha * the peak.
SchedulePtr CosineDecay(CosineDecayOptions options);

Config serialize(const LearningRateSchedule& s);
SchedulePtr deserialize(const Config& config);

}  // namespace schedules
}  // namespace deepflow::keras
