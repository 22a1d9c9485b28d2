// SPDX-License-Identifier: Apache-2.0
// The Optimizer base class (Keras 3's BaseOptimizer) and the optimizer name registry.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "deepflow/core/error.h"
#include "deepflow/keras/optimizers.h"
#include "deepflow/ops/op.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras {
namespace {

Config optional_json(const std::optional<double>& v) { return v ? Config(*v) : Config(nullptr); }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

}  // namespace

Optimizer::Optimizer(std::string name, OptimizerOptions options) : name_(std::move(name)), options_(std::move(options)) {
  const int clips = int(options_.clipnorm.has_value()) + int(options_.clipvalue.has_value()) +
                    int(options_.global_clipnorm.has_value());
  DF_CHECK(clips <= 1, "[", name_, "] only one of clipnorm, clipvalue and global_clipnorm can be set; got clipnorm=",
           optional_json(options_.clipnorm).dump(), ", clipvalue=", optional_json(options_.clipvalue).dump(),
           ", global_clipnorm=", optional_json(options_.global_clipnorm).dump());
  BuildScopeGuard eager(nullptr);  // state is made now, even when constructed inside a trace
  iterations_ = Variable(scalar(0, DType::Int64), name_ + "/iterations", false);
  // As Keras: a constant rate lives in a variable (settable without retracing); a schedule
  // is computed from iterations and has none.
  if (!options_.learning_rate.schedule)
    learning_rate_ = Variable(scalar(options_.learning_rate.value, DType::Float32), name_ + "/learning_rate", false);
}

Optimizer::~Optimizer() = default;

void Optimizer::build(const std::vector<Variable>& vars) {
  BuildScopeGuard eager(nullptr);  // slots hold concrete initial values
  for (const Variable& v : vars) {
    DF_CHECK(v.defined(), "[", name_, ".build] got an undefined variable");
    if (slots_.count(v.id())) continue;
    slots_[v.id()];  // marks v as built even when the rule has no slots
    build_slots(v);
  }
}

void Optimizer::build_slots(const Variable&) {}

Variable Optimizer::add_slot(const Variable& var, const std::string& slot, std::optional<double> init) {
  BuildScopeGuard eager(nullptr);
  auto& slots = slots_[var.id()];
  DF_CHECK(!slots.count(slot), "[", name_, "] variable '", var.name(), "' already has a slot '", slot, "'");
  Tensor value = init ? fill(var.shape(), *init, var.dtype()) : zeros(var.shape(), var.dtype());
  Variable s(value, var.name() + "/" + slot, false);
  slots.emplace(slot, s);
  slot_order_.push_back(s);
  return s;
}

Variable& Optimizer::slot(const Variable& var, const std::string& slot) {
  auto it = slots_.find(var.id());
  DF_CHECK(it != slots_.end(), "[", name_, "] variable '", var.name(), "' has no slots: call build(vars) first");
  auto s = it->second.find(slot);
  if (s == it->second.end()) {
    std::string known;
    for (const auto& [n, _] : it->second) known += (known.empty() ? "" : ", ") + n;
    fail("[", name_, "] variable '", var.name(), "' has no slot '", slot, "'; it has: ", known.empty() ? "none" : known);
  }
  return s->second;
}

Tensor Optimizer::step() const {
  return step_.defined() ? step_ : cast(iterations_.value(), DType::Float32) + 1.0;
}

Tensor Optimizer::learning_rate() const {
  if (options_.learning_rate.schedule) return (*options_.learning_rate.schedule)(iterations_.value());
  return learning_rate_.value();
}

void Optimizer::set_learning_rate(double lr) {
  DF_CHECK(!options_.learning_rate.schedule, "[", name_, ".set_learning_rate] this optimizer was created with a ",
           options_.learning_rate.schedule->class_name(), " schedule, so its learning rate is not settable");
  learning_rate_.assign(scalar(lr, DType::Float32));
  options_.learning_rate.value = lr;
}

double Optimizer::current_learning_rate() const {
  BuildScopeGuard eager(nullptr);  // a host value, even when asked while a trace is built
  return learning_rate().item<double>();
}

std::vector<Variable> Optimizer::variables() const {
  std::vector<Variable> out{iterations_};
  if (learning_rate_.defined()) out.push_back(learning_rate_);
  out.insert(out.end(), slot_order_.begin(), slot_order_.end());
  return out;
}

void Optimizer::apply_gradients(const std::vector<std::pair<Tensor, Variable>>& grads_and_vars) {
  TensorList grads;
  std::vector<Variable> vars;
  for (const auto& [g, v] : grads_and_vars) {
    grads.push_back(g);
    vars.push_back(v);
  }
  apply_gradients(grads, vars);
}

void Optimizer::apply_gradients(const TensorList& all_grads, const std::vector<Variable>& all_vars) {
  const std::string at = "[" + name_ + ".apply_gradients] ";
  DF_CHECK(all_grads.size() == all_vars.size(), at, "got ", all_grads.size(), " gradients for ", all_vars.size(),
           " variables");
  TensorList grads;
  std::vector<Variable> vars;
  for (size_t i = 0; i < all_vars.size(); ++i) {
    const Variable& v = all_vars[i];
    DF_CHECK(v.defined(), at, "variable ", i, " is undefined");
    if (!all_grads[i].defined()) continue;  // Keras skips variables without a gradient
    const Tensor& g = all_grads[i];
    DF_CHECK(is_floating(g.dtype()), at, "gradient for '", v.name(), "' has dtype ", dtype_name(g.dtype()),
             "; expected a float");
    DF_CHECK(g.shape().compatible_with(v.shape()), at, "gradient for '", v.name(), "' has shape ", g.shape(),
             ", variable is ", v.shape());
    grads.push_back(g.dtype() == v.dtype() ? g : cast(g, v.dtype()));  // mixed precision: bf16 grads, f32 vars
    vars.push_back(v);
  }
  if (all_vars.empty()) return;
  if (vars.empty()) {
    std::string names;
    for (const Variable& v : all_vars) names += (names.empty() ? "" : ", ") + v.name();
    fail(at, "no gradients provided for any variable (", names, ")");
  }

  for (const Variable& v : vars) {
    if (slots_.count(v.id())) continue;
    // Slots are Variables with concrete initial values: they must exist before a trace
    // uses them, so only eager code may build here.
    DF_CHECK(!current_build_scope(), at, "variable '", v.name(),
             "' has no slots: call build(vars) before tracing");
    build(vars);
    break;
  }

  // Clipping, as Keras 3's _clip_gradients: one of the three.
  if (options_.clipnorm && *options_.clipnorm > 0) {
    const double c = *options_.clipnorm;
    for (Tensor& g : grads) {
      Tensor l2sum = reduce_sum(square(g));
      Tensor pred = greater(l2sum, scalar_like(l2sum, 0));
      // The two-where trick keeps sqrt's gradient finite at zero.
      Tensor l2norm = where(pred, sqrt(where(pred, l2sum, ones_like(l2sum))), l2sum);
      g = g * c / maximum(l2norm, scalar_like(l2norm, c));
    }
  } else if (options_.global_clipnorm && *options_.global_clipnorm > 0) {
    const double c = *options_.global_clipnorm;
    Tensor sum;  // float32 across dtypes, since the variables may differ in dtype
    for (const Tensor& g : grads) {
      Tensor s = cast(reduce_sum(square(g)), DType::Float32);
      sum = sum.defined() ? sum + s : s;
    }
    Tensor norm = sqrt(sum);
    // Finite norms give min(1, c / norm); inf or NaN make the scale NaN, as Keras does.
    Tensor scale = minimum(1.0 / norm, scalar_like(norm, 1.0 / c)) * c + (norm - norm);
    for (Tensor& g : grads) g = g * (g.dtype() == DType::Float32 ? scale : cast(scale, g.dtype()));
  } else if (options_.clipvalue && *options_.clipvalue > 0) {
    const double c = *options_.clipvalue;
    for (Tensor& g : grads) g = clip_by_value(g, -c, c);
  }

  step_ = cast(iterations_.value(), DType::Float32) + 1.0;
  Tensor lr = learning_rate();
  if (options_.weight_decay && !handles_weight_decay()) {
    // Keras 3 decays before the update, with the step's learning rate.
    for (Variable& v : vars) {
      Tensor x = v.value();
      v.assign(x - x * *options_.weight_decay * cast(lr, v.dtype()));
    }
  }
  for (size_t i = 0; i < vars.size(); ++i) update_step(grads[i], vars[i], lr);
  iterations_.assign_add(scalar(1, DType::Int64));
  step_ = Tensor();
}

Config Optimizer::get_config() const {
  Config lr;
  if (options_.learning_rate.schedule) {
    lr = schedules::serialize(*options_.learning_rate.schedule);
  } else {
    // The variable holds float32: report the number given (0.001, not 0.0010000000474974513)
    // unless the variable was assigned something else since (a restored checkpoint).
    const double current = current_learning_rate();
    lr = float(options_.learning_rate.value) == float(current) ? options_.learning_rate.value : current;
  }
  return {{"name", name_},
          {"learning_rate", lr},
          {"weight_decay", optional_json(options_.weight_decay)},
          {"clipnorm", optional_json(options_.clipnorm)},
          {"global_clipnorm", optional_json(options_.global_clipnorm)},
          {"clipvalue", optional_json(options_.clipvalue)}};
}

// --- the registry ---

namespace optimizers {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<std::pair<std::string, std::function<OptimizerPtr(const Config&)>>> entries;  // registration order
};
Registry& registry() {
  static Registry r;
  return r;
}

std::function<OptimizerPtr(const Config&)> find(const std::string& name, std::string* known) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& [n, fn] : r.entries)
    if (lower(n) == lower(name)) return fn;
  for (const auto& [n, fn] : r.entries) *known += (known->empty() ? "" : ", ") + lower(n);
  return nullptr;
}

}  // namespace

void register_optimizer(const std::string& class_name, std::function<OptimizerPtr(const Config&)> from_config) {
  DF_CHECK(!class_name.empty() && from_config, "[optimizers] register_optimizer needs a class name and a function");
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (auto& [n, fn] : r.entries) {
    if (lower(n) == lower(class_name)) {
      fn = std::move(from_config);  // re-registering replaces
      return;
    }
  }
  r.entries.emplace_back(class_name, std::move(from_config));
}

OptimizerPtr get(const std::string& name) {
  std::string known;
  auto fn = find(name, &known);
  DF_CHECK(fn, "[optimizers] unknown optimizer '", name, "'; known: ", known);
  return fn(Config::object());
}

Config serialize(const Optimizer& opt) {
  // Keras's class name; every optimizer here is named after its class.
  return {{"module", "keras.optimizers"}, {"class_name", opt.name()}, {"config", opt.get_config()}};
}

OptimizerPtr deserialize(const Config& config) {
  if (config.is_string()) return get(config.get<std::string>());
  DF_CHECK(config.is_object() && config.contains("class_name") && config["class_name"].is_string(),
           "[optimizers] deserialize needs {\"class_name\", \"config\"} or a name, got ", config.dump());
  const std::string name = config["class_name"].get<std::string>();
  std::string known;
  auto fn = find(name, &known);
  DF_CHECK(fn, "[optimizers] unknown optimizer '", name, "'; known: ", known,
           " (custom classes: register_optimizer)");
  return fn(config.contains("config") ? config["config"] : Config::object());
}

}  // namespace optimizers
}  // namespace deepflow::keras
