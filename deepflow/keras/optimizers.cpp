// SPDX-License-Identifier: Apache-2.0
// The built-in optimizers: Keras 3's update rules (keras/src/optimizers/*.py), written
// with ops so they run eagerly and inside traced steps alike.
#include "deepflow/keras/optimizers.h"

#include <nlohmann/json.hpp>

#include "deepflow/core/error.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras::optimizers {
namespace {

std::optional<double> optional_number(const Config& c, const char* key) {
  auto it = c.find(key);
  if (it == c.end() || it->is_null()) return std::nullopt;
  return it->get<double>();
}

double number(const Config& c, const char* key, double fallback) { return optional_number(c, key).value_or(fallback); }

/// Reads the base arguments of a Keras optimizer config into `o` (missing keys keep defaults).
template <class Options> Options options_from(const Config& c) {
  Options o;
  if (auto it = c.find("learning_rate"); it != c.end() && !it->is_null())
    o.learning_rate = it->is_object() ? LearningRate(schedules::deserialize(*it)) : LearningRate(it->get<double>());
  o.clipnorm = optional_number(c, "clipnorm");
  o.clipvalue = optional_number(c, "clipvalue");
  o.global_clipnorm = optional_number(c, "global_clipnorm");
  o.weight_decay = optional_number(c, "weight_decay");
  return o;
}

Tensor dtype_scalar(double v, DType dt) { return scalar(v, dt); }

class SGDOptimizer : public Optimizer {
 public:
  explicit SGDOptimizer(const SGDOptions& o) : Optimizer("SGD", o), o_(o) {
    DF_CHECK(o.momentum >= 0 && o.momentum <= 1, "[SGD] momentum must be in [0, 1], got ", o.momentum);
  }
  Config get_config() const override {
    Config c = Optimizer::get_config();
    c["momentum"] = o_.momentum;
    c["nesterov"] = o_.nesterov;
    return c;
  }

 protected:
  void build_slots(const Variable& var) override {
    if (o_.momentum != 0) add_slot(var, "momentum");
  }
  void update_step(const Tensor& g, Variable& var, const Tensor& lr) override {
    Tensor l = cast(lr, var.dtype());
    if (o_.momentum == 0) {
      var.assign_sub(g * l);
      return;
    }
    Variable& m = slot(var, "momentum");
    Tensor m_new = m.value() * o_.momentum - g * l;
    m.assign(m_new);
    // Keras's nesterov step uses the new momentum: v += -g * lr + m_new * momentum.
    var.assign_add(o_.nesterov ? m_new * o_.momentum - g * l : m_new);
  }

 private:
  SGDOptions o_;
};

class AdamOptimizer : public Optimizer {
 public:
  AdamOptimizer(std::string name, const AdamOptions& o) : Optimizer(std::move(name), o), o_(o) {}
  Config get_config() const override {
    Config c = Optimizer::get_config();
    c["beta_1"] = o_.beta_1;
    c["beta_2"] = o_.beta_2;
    c["epsilon"] = o_.epsilon;
    c["amsgrad"] = o_.amsgrad;
    return c;
  }

 protected:
  void build_slots(const Variable& var) override {
    add_slot(var, "momentum");
    add_slot(var, "velocity");
    if (o_.amsgrad) add_slot(var, "velocity_hat");
  }
  void update_step(const Tensor& g, Variable& var, const Tensor& lr) override {
    const DType dt = var.dtype();
    Tensor t = cast(step(), dt);
    Tensor beta_1_power = pow(dtype_scalar(o_.beta_1, dt), t);
    Tensor beta_2_power = pow(dtype_scalar(o_.beta_2, dt), t);
    Tensor alpha = cast(lr, dt) * sqrt(1.0 - beta_2_power) / (1.0 - beta_1_power);
    Variable& m = slot(var, "momentum");
    Variable& v = slot(var, "velocity");
    if (!o_.amsgrad) {  // one pass over the weights and slots instead of three
      AdamUpdate u = apply_adam(var.value(), m.value(), v.value(), g, alpha, o_.beta_1, o_.beta_2, o_.epsilon);
      m.assign(u.m);
      v.assign(u.v);
      var.assign(u.var);
      return;
    }
    Tensor m0 = m.value(), v0 = v.value();
    Tensor m_new = m0 + (g - m0) * (1 - o_.beta_1);
    Tensor v_new = v0 + (square(g) - v0) * (1 - o_.beta_2);
    m.assign(m_new);
    v.assign(v_new);
    Variable& v_hat = slot(var, "velocity_hat");  // amsgrad: the largest velocity so far
    v_new = maximum(v_hat.value(), v_new);
    v_hat.assign(v_new);
    var.assign_sub(m_new * alpha / (sqrt(v_new) + o_.epsilon));
  }

 private:
  AdamOptions o_;
};

class RMSpropOptimizer : public Optimizer {
 public:
  explicit RMSpropOptimizer(const RMSpropOptions& o) : Optimizer("RMSprop", o), o_(o) {}
  Config get_config() const override {
    Config c = Optimizer::get_config();
    c["rho"] = o_.rho;
    c["momentum"] = o_.momentum;
    c["epsilon"] = o_.epsilon;
    c["centered"] = o_.centered;
    return c;
  }

 protected:
  void build_slots(const Variable& var) override {
    add_slot(var, "velocity");
    if (o_.momentum > 0) add_slot(var, "momentum");
    if (o_.centered) add_slot(var, "average_gradient");
  }
  void update_step(const Tensor& g, Variable& var, const Tensor& lr) override {
    Variable& velocity = slot(var, "velocity");
    Tensor vel = velocity.value() * o_.rho + square(g) * (1 - o_.rho);
    velocity.assign(vel);
    Tensor denominator;
    if (o_.centered) {
      Variable& average = slot(var, "average_gradient");
      Tensor avg = average.value() * o_.rho + g * (1 - o_.rho);
      average.assign(avg);
      denominator = vel - square(avg) + o_.epsilon;
    } else {
      denominator = vel + o_.epsilon;
    }
    Tensor increment = cast(lr, var.dtype()) * g / sqrt(denominator);
    if (o_.momentum > 0) {
      Variable& momentum = slot(var, "momentum");
      Tensor mom = momentum.value() * o_.momentum + increment;
      momentum.assign(mom);
      var.assign_sub(mom);
    } else {
      var.assign_sub(increment);
    }
  }

 private:
  RMSpropOptions o_;
};

class AdagradOptimizer : public Optimizer {
 public:
  explicit AdagradOptimizer(const AdagradOptions& o) : Optimizer("Adagrad", o), o_(o) {}
  Config get_config() const override {
    Config c = Optimizer::get_config();
    c["initial_accumulator_value"] = o_.initial_accumulator_value;
    c["epsilon"] = o_.epsilon;
    return c;
  }

 protected:
  void build_slots(const Variable& var) override { add_slot(var, "accumulator", o_.initial_accumulator_value); }
  void update_step(const Tensor& g, Variable& var, const Tensor& lr) override {
    Variable& accumulator = slot(var, "accumulator");
    Tensor acc = accumulator.value() + square(g);
    accumulator.assign(acc);
    var.assign_sub(cast(lr, var.dtype()) * g / sqrt(acc + o_.epsilon));
  }

 private:
  AdagradOptions o_;
};

class AdadeltaOptimizer : public Optimizer {
 public:
  explicit AdadeltaOptimizer(const AdadeltaOptions& o) : Optimizer("Adadelta", o), o_(o) {}
  Config get_config() const override {
    Config c = Optimizer::get_config();
    c["rho"] = o_.rho;
    c["epsilon"] = o_.epsilon;
    return c;
  }

 protected:
  void build_slots(const Variable& var) override {
    add_slot(var, "accumulated_grad");
    add_slot(var, "accumulated_delta_var");
  }
  void update_step(const Tensor& g, Variable& var, const Tensor& lr) override {
    Variable& grad_acc = slot(var, "accumulated_grad");
    Variable& delta_acc = slot(var, "accumulated_delta_var");
    const double rho = o_.rho;
    Tensor ga = grad_acc.value() * rho + square(g) * (1 - rho);
    grad_acc.assign(ga);
    Tensor da = delta_acc.value();
    Tensor delta = -(sqrt(da + o_.epsilon) * g / sqrt(ga + o_.epsilon));
    delta_acc.assign(da * rho + square(delta) * (1 - rho));
    var.assign_add(cast(lr, var.dtype()) * delta);
  }

 private:
  AdadeltaOptions o_;
};

class NadamOptimizer : public Optimizer {
 public:
  explicit NadamOptimizer(const AdamOptions& o) : Optimizer("Nadam", o), o_(o) {}
  Config get_config() const override {
    Config c = Optimizer::get_config();
    c["beta_1"] = o_.beta_1;
    c["beta_2"] = o_.beta_2;
    c["epsilon"] = o_.epsilon;
    return c;
  }

 protected:
  void build_slots(const Variable& var) override {
    if (!anchor_.defined()) {
      // Keras's one u_product scalar for the whole optimizer: a float32 slot of a scalar
      // key variable, so it is in variables() (and checkpoints) like every other state.
      anchor_ = Variable(scalar(0, DType::Float32), "Nadam", false);
      add_slot(anchor_, "u_product", 1.0);
    }
    add_slot(var, "momentum");
    add_slot(var, "velocity");
  }
  void update_step(const Tensor& g, Variable& var, const Tensor& lr) override {
    const DType dt = var.dtype();
    Tensor t = cast(step(), dt);
    Tensor decay = dtype_scalar(0.96, dt);
    Tensor u_t = (1.0 - pow(decay, t) * 0.5) * o_.beta_1;
    Tensor u_t_1 = (1.0 - pow(decay, t + 1.0) * 0.5) * o_.beta_1;
    Tensor u_product_t = cast(u_product(), dt);
    Tensor u_product_t_1 = u_product_t * u_t_1;
    Tensor beta_2_power = pow(dtype_scalar(o_.beta_2, dt), t);
    Variable& m = slot(var, "momentum");
    Variable& v = slot(var, "velocity");
    Tensor m0 = m.value(), v0 = v.value();
    Tensor m_new = m0 + (g - m0) * (1 - o_.beta_1);
    Tensor v_new = v0 + (square(g) - v0) * (1 - o_.beta_2);
    m.assign(m_new);
    v.assign(v_new);
    Tensor m_hat = u_t_1 * m_new / (1.0 - u_product_t_1) + (1.0 - u_t) * g / (1.0 - u_product_t);
    Tensor v_hat = v_new / (1.0 - beta_2_power);
    var.assign_sub(m_hat * cast(lr, dt) / (sqrt(v_hat) + o_.epsilon));
  }

 private:
  // Keras updates u_product once per step, before the variables: done here on the first
  // update_step of each apply_gradients (each call makes a new step() tensor).
  Tensor u_product() {
    Tensor s = step();
    if (!seen_step_.defined() || seen_step_.impl() != s.impl()) {
      seen_step_ = s;
      Variable& up = slot(anchor_, "u_product");
      u_product_ = up.value() * o_.beta_1 * (1.0 - pow(dtype_scalar(0.96, DType::Float32), s) * 0.5);
      up.assign(u_product_);
    }
    return u_product_;
  }

  AdamOptions o_;
  Variable anchor_;
  Tensor seen_step_, u_product_;
};

[[maybe_unused]] const bool kRegistered = [] {
  register_optimizer("SGD", [](const Config& c) {
    auto o = options_from<SGDOptions>(c);
    o.momentum = number(c, "momentum", 0.0);
    o.nesterov = c.value("nesterov", false);
    return SGD(o);
  });
  auto adam_options = [](const Config& c) {
    auto o = options_from<AdamOptions>(c);
    o.beta_1 = number(c, "beta_1", 0.9);
    o.beta_2 = number(c, "beta_2", 0.999);
    o.epsilon = number(c, "epsilon", 1e-7);
    o.amsgrad = c.value("amsgrad", false);
    return o;
  };
  register_optimizer("Adam", [=](const Config& c) { return Adam(adam_options(c)); });
  register_optimizer("AdamW", [=](const Config& c) { return AdamW(adam_options(c)); });
  register_optimizer("RMSprop", [](const Config& c) {
    auto o = options_from<RMSpropOptions>(c);
    o.rho = number(c, "rho", 0.9);
    o.momentum = number(c, "momentum", 0.0);
    o.epsilon = number(c, "epsilon", 1e-7);
    o.centered = c.value("centered", false);
    return RMSprop(o);
  });
  register_optimizer("Adagrad", [](const Config& c) {
    auto o = options_from<AdagradOptions>(c);
    o.initial_accumulator_value = number(c, "initial_accumulator_value", 0.1);
    o.epsilon = number(c, "epsilon", 1e-7);
    return Adagrad(o);
  });
  register_optimizer("Adadelta", [](const Config& c) {
    auto o = options_from<AdadeltaOptions>(c);
    o.rho = number(c, "rho", 0.95);
    o.epsilon = number(c, "epsilon", 1e-7);
    return Adadelta(o);
  });
  register_optimizer("Nadam", [=](const Config& c) { return Nadam(adam_options(c)); });
  return true;
}();

}  // namespace

OptimizerPtr SGD(SGDOptions options) { return std::make_shared<SGDOptimizer>(options); }
OptimizerPtr Adam(AdamOptions options) { return std::make_shared<AdamOptimizer>("Adam", options); }
OptimizerPtr AdamW(AdamOptions options) {
  if (!options.weight_decay) options.weight_decay = 0.004;  // Keras 3's AdamW default
  return std::make_shared<AdamOptimizer>("AdamW", options);
}
OptimizerPtr RMSprop(RMSpropOptions options) { return std::make_shared<RMSpropOptimizer>(options); }
OptimizerPtr Adagrad(AdagradOptions options) { return std::make_shared<AdagradOptimizer>(options); }
OptimizerPtr Adadelta(AdadeltaOptions options) { return std::make_shared<AdadeltaOptimizer>(options); }
OptimizerPtr Nadam(AdamOptions options) { return std::make_shared<NadamOptimizer>(options); }

}  // namespace deepflow::keras::optimizers
