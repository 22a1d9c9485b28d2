// SPDX-License-Identifier: Apache-2.0
// A custom Keras-style optimizer: Lion (Chen et al. 2023, as keras.optimizers.Lion),
// written as an Optimizer subclass with one slot, registered by name, and used to fit
// a small linear model with GradientTape, eagerly and then in a traced step.
#include <nlohmann/json.hpp>

#include <cstdio>

#include "deepflow/deepflow.h"
#include "deepflow/keras/optimizers.h"

using namespace deepflow;

class Lion : public keras::Optimizer {
 public:
  explicit Lion(double learning_rate = 1e-4, double beta_1 = 0.9, double beta_2 = 0.99)
      : Optimizer("Lion", {.learning_rate = learning_rate}), beta_1_(beta_1), beta_2_(beta_2) {}

  keras::Config get_config() const override {
    keras::Config c = Optimizer::get_config();
    c["beta_1"] = beta_1_;
    c["beta_2"] = beta_2_;
    return c;
  }

 protected:
  void build_slots(const Variable& var) override { add_slot(var, "momentum"); }

  // The sign of an interpolation of momentum and gradient, then the momentum update.
  void update_step(const Tensor& grad, Variable& var, const Tensor& lr) override {
    Variable& m = slot(var, "momentum");
    Tensor m0 = m.value();
    var.assign_sub(cast(lr, var.dtype()) * sign(m0 * beta_1_ + grad * (1 - beta_1_)));
    m.assign(m0 * beta_2_ + grad * (1 - beta_2_));
  }

 private:
  double beta_1_, beta_2_;
};

int main() {
  keras::optimizers::register_optimizer("Lion", [](const keras::Config& c) -> keras::OptimizerPtr {
    return std::make_shared<Lion>(c.value("learning_rate", 1e-4), c.value("beta_1", 0.9), c.value("beta_2", 0.99));
  });

  // y = x @ [2, -3] + 1 plus a little noise.
  set_random_seed(0);
  Tensor x = random_normal({64, 2});
  Tensor y = matmul(x, constant({2.f, -3.f}, {2, 1})) + 1.0 + random_normal({64, 1}, 0, 0.01);
  Variable w(zeros({2, 1}), "w"), b(zeros({1}), "b");
  std::vector<Variable> params = {w, b};

  keras::OptimizerPtr opt = keras::optimizers::get("lion");  // by name, from the registry
  opt->set_learning_rate(0.05);
  auto step = [&](const Tensor& xs, const Tensor& ys) {
    GradientTape tape;
    Tensor loss = reduce_mean(square(matmul(xs, w.value()) + b.value() - ys));
    opt->apply_gradients(tape.gradient(loss, params), params);
    return loss;
  };

  for (int i = 0; i < 300; ++i) {
    Tensor loss = step(x, y);
    if (i % 75 == 0) std::printf("eager  step %3d  loss %.5f\n", i, loss.item<float>());
  }
  // The same step traced: the slots exist already (build ran eagerly on the first call),
  // and the learning rate lives in a variable, so lowering it needs no retrace.
  Function traced = function(step);
  opt->set_learning_rate(0.005);
  for (int i = 0; i < 200; ++i) {
    Tensor loss = traced(x, y)[0];
    if (i % 50 == 0) std::printf("traced step %3d  loss %.5f\n", 300 + i, loss.item<float>());
  }
  std::printf("w = [%.3f, %.3f], b = %.3f (true: [2, -3], 1); %lld steps, %d trace\n", w.value().flat(0),
              w.value().flat(1), b.value().flat(0), (long long)opt->iterations().value().item<int64_t>(),
              traced.trace_count());

  keras::Config saved = keras::optimizers::serialize(*opt);
  std::printf("config: %s\n", saved.dump().c_str());
  keras::OptimizerPtr restored = keras::optimizers::deserialize(saved);
  std::printf("restored %s with learning rate %g\n", restored->name().c_str(), restored->current_learning_rate());
  return 0;
}
