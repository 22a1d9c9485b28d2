// SPDX-License-Identifier: Apache-2.0
// Optimizers (tf.keras.optimizers): SGD (momentum, nesterov), Adam, AdamW, RMSprop,
// Adagrad, Adadelta, Nadam, and the base class for custom ones.
//
//   auto opt = keras::optimizers::Adam({.learning_rate = 1e-3});
//   GradientTape tape;
//   Tensor loss = ...;
//   opt->apply_gradients(tape.gradient(loss, vars), vars);
//
// Every piece of optimizer state is a Variable (iterations, the learning rate, slots),
// so apply_gradients works eagerly and inside traced functions alike, and a traced
// train step sees a learning rate changed by a callback without retracing. Slots are
// made by build(vars), eagerly; apply_gradients builds on first use (outside traces),
// and fit() builds before it traces its step.
//
// A custom optimizer subclasses Optimizer and overrides build_slots() and
// update_step() (see examples/keras_custom_optimizer.cpp):
//
//   class SignSGD : public keras::Optimizer {
//    public:
//     explicit SignSGD(double lr) : Optimizer("SignSGD", {.learning_rate = lr}) {}
//     void update_step(const Tensor& g, Variable& v, const Tensor& lr) override {
//       v.assign_sub(cast(lr, v.dtype()) * sign(g));
//     }
//   };
//
// Gradient clipping (clipnorm per gradient, clipvalue, global_clipnorm over all) runs
// before the update; so does weight_decay (decoupled, as Keras 3: v -= lr * wd * v, just
// before update_step) for every optimizer that does not handle it itself.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "deepflow/core/tensor.h"
#include "deepflow/keras/config.h"
#include "deepflow/keras/schedules.h"
#include "deepflow/ops/op.h"  // TensorList
#include "deepflow/ops/variable.h"

namespace deepflow::keras {

/// A constant learning rate or a schedule of the step.
struct LearningRate {
  LearningRate(double v = 0.001) : value(v) {}  // NOLINT: a number is a learning rate
  LearningRate(SchedulePtr s) : schedule(std::move(s)) {}  // NOLINT: so is a schedule
  double value = 0.001;
  SchedulePtr schedule;  ///< when set, value is ignored
};

/// Options every optimizer takes (Keras's base-class arguments).
struct OptimizerOptions {
  LearningRate learning_rate = 0.001;
  std::optional<double> clipnorm;         ///< clip each gradient to this L2 norm
  std::optional<double> clipvalue;        ///< clip each gradient element to [-v, v]
  std::optional<double> global_clipnorm;  ///< clip all gradients together to this global norm
  std::optional<double> weight_decay;     ///< decoupled weight decay factor
};

class Optimizer {
 public:
  Optimizer(std::string name, OptimizerOptions options);
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Makes the slots of `vars` (eagerly; idempotent per variable).
  void build(const std::vector<Variable>& vars);
  /// One step: clip, decay, update every variable with a defined gradient (undefined
  /// gradients are skipped, as Keras warns and skips them), then iterations += 1. Gradients
  /// are cast to each variable's dtype (mixed precision: bf16 grads, f32 variables).
  /// Throws "[<name>.apply_gradients] ..." on a count or shape mismatch.
  void apply_gradients(const TensorList& grads, const std::vector<Variable>& vars);
  void apply_gradients(const std::vector<std::pair<Tensor, Variable>>& grads_and_vars);

  /// The learning rate now: the schedule at `iterations`, or the value (a float32 scalar,
  /// symbolic inside a trace).
  Tensor learning_rate() const;
  /// Replaces a constant learning rate (ReduceLROnPlateau, LearningRateScheduler); an
  /// error for a schedule.
  void set_learning_rate(double lr);
  /// The current constant learning rate (the schedule's value at the current step if any).
  double current_learning_rate() const;
  /// The number of steps applied (an int64 variable).
  const Variable& iterations() const { return iterations_; }
  /// iterations, the learning rate, then every slot (what a checkpoint saves).
  std::vector<Variable> variables() const;
  const std::string& name() const { return name_; }
  const OptimizerOptions& options() const { return options_; }

  /// Keras's config: {"name", "learning_rate" (a number or a serialized schedule),
  /// "clipnorm", "clipvalue", "global_clipnorm", "weight_decay"} plus subclass arguments.
  virtual Config get_config() const;

 protected:
  /// Makes the slots of one variable with add_slot().
  virtual void build_slots(const Variable& var);
  /// The update rule of one variable: `grad` has var's shape and dtype, `lr` is a float32
  /// scalar (the current learning rate).
  virtual void update_step(const Tensor& grad, Variable& var, const Tensor& lr) = 0;
  /// Whether update_step applies weight_decay itself (then the base skips it; no built-in
  /// does: Keras 3's AdamW is Adam with the base's decay).
  virtual bool handles_weight_decay() const { return false; }

  /// A zero-initialized (or `init`-filled) slot like var, named "<var name>/<slot>".
  Variable add_slot(const Variable& var, const std::string& slot, std::optional<double> init = std::nullopt);
  Variable& slot(const Variable& var, const std::string& slot);
  /// The step number as a float32 scalar (iterations + 1 during update_step).
  Tensor step() const;

 private:
  std::string name_;
  OptimizerOptions options_;
  Variable iterations_, learning_rate_;
  std::map<uint64_t, std::map<std::string, Variable>> slots_;  // by variable id
  std::vector<Variable> slot_order_;
  Tensor step_;
};
using OptimizerPtr = std::shared_ptr<Optimizer>;

namespace optimizers {

// Each optimizer's options are flat (no base struct) so that designated initializers can
// set the common and the specific fields together: Adam({.learning_rate = 3e-4, .beta_1 = 0.8}).
#define DF_OPTIMIZER_COMMON_OPTIONS(default_lr)                                          \
  LearningRate learning_rate = default_lr;                                              \
  std::optional<double> clipnorm;                                                       \
  std::optional<double> clipvalue;                                                      \
  std::optional<double> global_clipnorm;                                                \
  std::optional<double> weight_decay;                                                   \
  /* NOLINTNEXTLINE: the common part, for the Optimizer base */                         \
  operator OptimizerOptions() const {                                                   \
    return OptimizerOptions{learning_rate, clipnorm, clipvalue, global_clipnorm, weight_decay}; \
  }

struct SGDOptions {
  DF_OPTIMIZER_COMMON_OPTIONS(0.01)
  double momentum = 0.0;
  bool nesterov = false;
};
struct AdamOptions {
  DF_OPTIMIZER_COMMON_OPTIONS(0.001)
  double beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7;
  bool amsgrad = false;
};
struct RMSpropOptions {
  DF_OPTIMIZER_COMMON_OPTIONS(0.001)
  double rho = 0.9, momentum = 0.0, epsilon = 1e-7;
  bool centered = false;
};
struct AdagradOptions {
  DF_OPTIMIZER_COMMON_OPTIONS(0.001)
  double initial_accumulator_value = 0.1, epsilon = 1e-7;
};
struct AdadeltaOptions {
  DF_OPTIMIZER_COMMON_OPTIONS(0.001)
  double rho = 0.95, epsilon = 1e-7;
};

/// The learning rate defaults follow Keras: SGD 0.01, the others 0.001.
OptimizerPtr SGD(SGDOptions options = {});
OptimizerPtr Adam(AdamOptions options = {});
/// Adam with decoupled weight decay (default 0.004, Keras's).
OptimizerPtr AdamW(AdamOptions options = {});
OptimizerPtr RMSprop(RMSpropOptions options = {});
OptimizerPtr Adagrad(AdagradOptions options = {});
OptimizerPtr Adadelta(AdadeltaOptions options = {});
OptimizerPtr Nadam(AdamOptions options = {});

/// By name ("sgd", "adam", "adamw", "rmsprop", "adagrad", "adadelta", "nadam", any case)
/// with default options; throws "[optimizers] unknown optimizer 'x'; known: ...".
OptimizerPtr get(const std::string& name);
/// {"class_name": "Adam", "config": {...}} and back (custom classes: register_optimizer).
Config serialize(const Optimizer& opt);
OptimizerPtr deserialize(const Config& config);
/// Makes a custom optimizer class known to deserialize().
void register_optimizer(const std::string& class_name, std::function<OptimizerPtr(const Config&)> from_config);

}  // namespace optimizers
}  // namespace deepflow::keras
