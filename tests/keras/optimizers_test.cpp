// SPDX-License-Identifier: Apache-2.0
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <vector>

#include "deepflow/autodiff/tape.h"
#include "deepflow/function/function.h"
#include "deepflow/keras/optimizers.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using deepflow::testing::error_of;
using deepflow::testing::expect_near;
using ::testing::HasSubstr;
using Vec = std::vector<double>;

// A small variable and fixed gradients (a zero entry exercises epsilon).
const Vec kInit = {1.0, -2.0, 0.5};
const std::vector<Vec> kGrads = {{0.1, -0.2, 0.3}, {-0.5, 0.4, 0.0}, {0.2, 0.2, -0.1}, {1.0, -1.0, 0.25}};

/// Runs the optimizer on a float32 variable over kGrads; returns the variable values.
Vec run(Optimizer& opt, DType dtype = DType::Float32) {
  Variable w(constant(kInit, {3}, dtype), "w");
  for (const Vec& g : kGrads) opt.apply_gradients({constant(g, {3}, dtype)}, {w});
  EXPECT_EQ(opt.iterations().value().item<int64_t>(), int64_t(kGrads.size()));
  return cast(w.value(), DType::Float64).to_vector<double>();
}

/// The reference of one rule in doubles: update(w, g, t) for t = 1, 2, ... per element.
using Rule = std::function<void(double& w, double g, int t, size_t i)>;
Vec reference(const Rule& rule) {
  Vec w = kInit;
  for (size_t s = 0; s < kGrads.size(); ++s)
    for (size_t i = 0; i < w.size(); ++i) rule(w[i], kGrads[s][i], int(s) + 1, i);
  return w;
}

void expect_vec_near(const Vec& got, const Vec& want, double tol = 2e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "at " << i;
  // The update must be visible at this tolerance, or the comparison proves nothing.
  double moved = 0;
  for (size_t i = 0; i < got.size(); ++i) moved = std::max(moved, std::abs(want[i] - kInit[i]));
  EXPECT_GT(moved, 1e-3);
}

TEST(KerasOptimizers, SGDPlainMomentumNesterov) {
  for (double mu : {0.0, 0.9}) {
    for (bool nesterov : {false, true}) {
      auto opt = optimizers::SGD({.learning_rate = 0.1, .momentum = mu, .nesterov = nesterov});
      Vec m(3, 0.0);
      Vec want = reference([&](double& w, double g, int, size_t i) {
        if (mu == 0) {
          w -= 0.1 * g;
          return;
        }
        m[i] = mu * m[i] - 0.1 * g;
        w += nesterov ? mu * m[i] - 0.1 * g : m[i];
      });
      SCOPED_TRACE(::testing::Message() << "momentum " << mu << " nesterov " << nesterov);
      expect_vec_near(run(*opt), want);
    }
  }
}

Rule adam_rule(double lr, double b1, double b2, double eps, bool amsgrad, double wd = 0) {
  auto m = std::make_shared<Vec>(3, 0.0), v = std::make_shared<Vec>(3, 0.0), vh = std::make_shared<Vec>(3, 0.0);
  return [=](double& w, double g, int t, size_t i) {
    w -= w * wd * lr;  // Keras 3: decoupled decay before the update
    double alpha = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    (*m)[i] += (g - (*m)[i]) * (1 - b1);
    (*v)[i] += (g * g - (*v)[i]) * (1 - b2);
    double vv = (*v)[i];
    if (amsgrad) vv = (*vh)[i] = std::max((*vh)[i], vv);
    w -= (*m)[i] * alpha / (std::sqrt(vv) + eps);
  };
}

TEST(KerasOptimizers, AdamAndAmsgrad) {
  for (bool amsgrad : {false, true}) {
    auto opt = optimizers::Adam({.learning_rate = 0.1, .beta_1 = 0.8, .beta_2 = 0.9, .epsilon = 1e-3, .amsgrad = amsgrad});
    SCOPED_TRACE(amsgrad ? "amsgrad" : "adam");
    expect_vec_near(run(*opt), reference(adam_rule(0.1, 0.8, 0.9, 1e-3, amsgrad)));
  }
  auto defaults = optimizers::Adam({.learning_rate = 0.05});
  expect_vec_near(run(*defaults), reference(adam_rule(0.05, 0.9, 0.999, 1e-7, false)));
}

TEST(KerasOptimizers, AdamWDecaysBeforeTheUpdate) {
  auto opt = optimizers::AdamW({.learning_rate = 0.1, .weight_decay = 0.5});
  expect_vec_near(run(*opt), reference(adam_rule(0.1, 0.9, 0.999, 1e-7, false, 0.5)));
  EXPECT_EQ(optimizers::AdamW()->options().weight_decay, 0.004);  // Keras's default
}

TEST(KerasOptimizers, RMSpropVariants) {
  for (bool centered : {false, true}) {
    for (double mu : {0.0, 0.5}) {
      auto opt = optimizers::RMSprop({.learning_rate = 0.01, .rho = 0.8, .momentum = mu, .centered = centered});
      Vec vel(3, 0.0), avg(3, 0.0), mom(3, 0.0);
      Vec want = reference([&](double& w, double g, int, size_t i) {
        vel[i] = 0.8 * vel[i] + 0.2 * g * g;
        double denom = vel[i] + 1e-7;
        if (centered) {
          avg[i] = 0.8 * avg[i] + 0.2 * g;
          denom = vel[i] - avg[i] * avg[i] + 1e-7;
        }
        double inc = 0.01 * g / std::sqrt(denom);
        if (mu > 0) {
          mom[i] = mu * mom[i] + inc;
          w -= mom[i];
        } else {
          w -= inc;
        }
      });
      SCOPED_TRACE(::testing::Message() << "centered " << centered << " momentum " << mu);
      expect_vec_near(run(*opt), want, 5e-6);
    }
  }
}

TEST(KerasOptimizers, Adagrad) {
  auto opt = optimizers::Adagrad({.learning_rate = 0.1, .initial_accumulator_value = 0.2});
  Vec acc(3, 0.2);
  expect_vec_near(run(*opt), reference([&](double& w, double g, int, size_t i) {
                    acc[i] += g * g;
                    w -= 0.1 * g / std::sqrt(acc[i] + 1e-7);
                  }));
}

TEST(KerasOptimizers, Adadelta) {
  auto opt = optimizers::Adadelta({.learning_rate = 1.0, .rho = 0.9, .epsilon = 1e-4});
  Vec ga(3, 0.0), da(3, 0.0);
  expect_vec_near(run(*opt), reference([&](double& w, double g, int, size_t i) {
                    ga[i] = 0.9 * ga[i] + 0.1 * g * g;
                    double delta = -std::sqrt(da[i] + 1e-4) * g / std::sqrt(ga[i] + 1e-4);
                    da[i] = 0.9 * da[i] + 0.1 * delta * delta;
                    w += 1.0 * delta;
                  }));
}

TEST(KerasOptimizers, Nadam) {
  const double lr = 0.1, b1 = 0.9, b2 = 0.99, eps = 1e-7;
  auto opt = optimizers::Nadam({.learning_rate = lr, .beta_1 = b1, .beta_2 = b2, .epsilon = eps});
  Vec m(3, 0.0), v(3, 0.0);
  double u_product = 1.0;
  int last_t = 0;
  Vec want = reference([&](double& w, double g, int t, size_t i) {
    double u_t = b1 * (1 - 0.5 * std::pow(0.96, t)), u_t1 = b1 * (1 - 0.5 * std::pow(0.96, t + 1));
    if (t != last_t) u_product *= u_t, last_t = t;  // once per step
    double u_product_t1 = u_product * u_t1;
    m[i] += (g - m[i]) * (1 - b1);
    v[i] += (g * g - v[i]) * (1 - b2);
    double m_hat = u_t1 * m[i] / (1 - u_product_t1) + (1 - u_t) * g / (1 - u_product);
    double v_hat = v[i] / (1 - std::pow(b2, t));
    w -= m_hat * lr / (std::sqrt(v_hat) + eps);
  });
  expect_vec_near(run(*opt), want);
  // u_product is optimizer state, saved with the rest.
  std::vector<Variable> vars = opt->variables();
  ASSERT_EQ(vars.size(), 5u);  // iterations, learning_rate, u_product, momentum, velocity
  EXPECT_EQ(vars[2].name(), "Nadam/u_product");
  EXPECT_NEAR(vars[2].value().item<double>(), u_product, 1e-6);
}

TEST(KerasOptimizers, Float64VariablesUpdateInFloat64) {
  auto opt = optimizers::Adam({.learning_rate = 0.1, .beta_1 = 0.8, .beta_2 = 0.9, .epsilon = 1e-3});
  Vec got = run(*opt, DType::Float64);
  // The learning rate is a float32 variable (as Keras's), cast to the variable's dtype.
  Vec want = reference(adam_rule(double(0.1f), 0.8, 0.9, 1e-3, false));
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(got[i], want[i], 1e-12);
}

/// One SGD step with lr 1 (so the change is minus the clipped gradient).
std::vector<Vec> clipped(optimizers::SGDOptions o, const std::vector<Vec>& grads) {
  o.learning_rate = 1.0;
  auto opt = optimizers::SGD(o);
  std::vector<Variable> vars;
  TensorList gs;
  for (const Vec& g : grads) {
    vars.emplace_back(zeros({int64_t(g.size())}), "v");
    gs.push_back(constant(g, {int64_t(g.size())}, DType::Float32));
  }
  opt->apply_gradients(gs, vars);
  std::vector<Vec> out;
  for (const Variable& v : vars) out.push_back(cast(neg(v.value()), DType::Float64).to_vector<double>());
  return out;
}

TEST(KerasOptimizers, Clipnorm) {
  auto out = clipped({.clipnorm = 1.0}, {{3, 4}, {0.3, 0.4}, {0, 0}});
  expect_vec_near(out[0], {0.6, 0.8}, 1e-6);  // norm 5 -> 1
  EXPECT_NEAR(out[1][0], 0.3, 1e-6);          // under the norm: unchanged
  EXPECT_NEAR(out[1][1], 0.4, 1e-6);
  EXPECT_EQ(out[2], Vec({0, 0}));  // a zero gradient stays zero (no NaN)
}

TEST(KerasOptimizers, GlobalClipnorm) {
  auto out = clipped({.global_clipnorm = 1.0}, {{3, 4}, {0, 12}});  // global norm 13
  EXPECT_NEAR(out[0][0], 3.0 / 13, 1e-6);
  EXPECT_NEAR(out[0][1], 4.0 / 13, 1e-6);
  EXPECT_NEAR(out[1][1], 12.0 / 13, 1e-6);
  auto small = clipped({.global_clipnorm = 100.0}, {{3, 4}, {0, 12}});
  EXPECT_NEAR(small[1][1], 12.0, 1e-5);
}

TEST(KerasOptimizers, Clipvalue) {
  auto out = clipped({.clipvalue = 0.5}, {{3, -4, 0.2, -0.5}});
  EXPECT_EQ(out[0], Vec({0.5, -0.5, 0.2f, -0.5}));
}

TEST(KerasOptimizers, OnlyOneClipOption) {
  EXPECT_THAT(error_of([] { optimizers::SGD({.clipnorm = 1.0, .clipvalue = 2.0}); }),
              HasSubstr("[SGD] only one of clipnorm, clipvalue and global_clipnorm can be set"));
}

TEST(KerasOptimizers, WeightDecayForEveryOptimizer) {
  // SGD: w <- w - lr * wd * w, then w <- w - lr * g.
  auto opt = optimizers::SGD({.learning_rate = 0.1, .weight_decay = 0.5});
  expect_vec_near(run(*opt), reference([](double& w, double g, int, size_t) {
                    w -= 0.1 * 0.5 * w;
                    w -= 0.1 * g;
                  }));
}

TEST(KerasOptimizers, MixedPrecisionGradientsAreCast) {
  // bf16-exact gradients give the same float32 result as float32 gradients.
  Variable a(constant({1.f, 2.f}), "a"), b(constant({1.f, 2.f}), "b");
  auto oa = optimizers::Adam({.learning_rate = 0.1}), ob = optimizers::Adam({.learning_rate = 0.1});
  Tensor g = constant({0.5f, -0.25f});
  for (int i = 0; i < 3; ++i) {
    oa->apply_gradients({g}, {a});
    ob->apply_gradients({cast(g, DType::BFloat16)}, {b});
  }
  EXPECT_EQ(b.dtype(), DType::Float32);
  expect_near(b.value(), a.value(), 0);
}

TEST(KerasOptimizers, StateIsVariables) {
  auto opt = optimizers::Adam({.learning_rate = 0.01, .amsgrad = true});
  Variable w(ones({2, 3}), "w"), b(zeros({3}), "b");
  opt->build({w, b});
  opt->build({w});  // idempotent
  std::vector<Variable> vars = opt->variables();
  std::vector<std::string> names;
  for (const Variable& v : vars) names.push_back(v.name());
  EXPECT_EQ(names, (std::vector<std::string>{"Adam/iterations", "Adam/learning_rate", "w/momentum", "w/velocity",
                                             "w/velocity_hat", "b/momentum", "b/velocity", "b/velocity_hat"}));
  EXPECT_EQ(vars[0].dtype(), DType::Int64);
  EXPECT_EQ(vars[1].dtype(), DType::Float32);
  EXPECT_EQ(vars[2].shape(), Shape({2, 3}));
  for (const Variable& v : vars) EXPECT_FALSE(v.trainable()) << v.name();
  EXPECT_EQ(opt->iterations().value().item<int64_t>(), 0);
  // A schedule has no learning-rate variable (as Keras).
  auto sched = optimizers::SGD({.learning_rate = schedules::PiecewiseConstantDecay({1}, {0.1, 0.01})});
  EXPECT_EQ(sched->variables().size(), 1u);
}

TEST(KerasOptimizers, UndefinedGradientsAreSkipped) {
  Variable w(ones({2}), "w"), b(ones({2}), "b");
  auto opt = optimizers::SGD({.learning_rate = 0.5});
  opt->apply_gradients({Tensor(), ones({2})}, {w, b});
  expect_near(w.value(), ones({2}), 0);
  expect_near(b.value(), fill({2}, 0.5), 0);
  EXPECT_THAT(error_of([&] { opt->apply_gradients({Tensor(), Tensor()}, {w, b}); }),
              HasSubstr("[SGD.apply_gradients] no gradients provided for any variable (w, b)"));
}

TEST(KerasOptimizers, ApplyGradientsErrors) {
  Variable w(ones({2}), "w"), b(ones({3}), "b");
  auto opt = optimizers::Adam();
  EXPECT_THAT(error_of([&] { opt->apply_gradients({ones({2})}, {w, b}); }),
              HasSubstr("[Adam.apply_gradients] got 1 gradients for 2 variables"));
  EXPECT_THAT(error_of([&] { opt->apply_gradients({ones({2}), ones({2})}, {w, b}); }),
              HasSubstr("[Adam.apply_gradients] gradient for 'b' has shape [2], variable is [3]"));
  EXPECT_THAT(error_of([&] { opt->apply_gradients({{ones({2}, DType::Int32), w}}); }),
              HasSubstr("[Adam.apply_gradients] gradient for 'w' has dtype int32; expected a float"));
  EXPECT_THAT(error_of([&] { optimizers::SGD({.momentum = 1.5}); }), HasSubstr("[SGD] momentum must be in [0, 1], got 1.5"));
}

// A linear least-squares problem for the traced-step tests.
struct Problem {
  Tensor x = constant({0.5f, -1.f, 2.f, 1.5f, 0.f, -0.5f, 1.f, 1.f, 1.f, -2.f, 0.5f, 0.25f}, {4, 3});
  Tensor y = constant({1.f, 0.f, -1.f, 2.f, 0.5f, 0.5f, 0.f, 1.f}, {4, 2});
  Variable w{constant({0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f}, {3, 2}), "w"};
  Variable b{zeros({2}), "b"};
  std::vector<Variable> vars() const { return {w, b}; }
};

Tensor step_on(Problem& p, Optimizer& opt, const Tensor& x, const Tensor& y) {
  GradientTape tape;
  Tensor loss = reduce_mean(square(matmul(x, p.w.value()) + p.b.value() - y));
  opt.apply_gradients(tape.gradient(loss, p.vars()), p.vars());
  return loss;
}

TEST(KerasOptimizers, TracedStepMatchesEager) {
  std::vector<std::function<OptimizerPtr()>> makers = {
      [] { return optimizers::SGD({.learning_rate = 0.1, .clipnorm = 0.5, .momentum = 0.9, .nesterov = true}); },
      [] { return optimizers::Adam({.learning_rate = 0.05, .weight_decay = 0.1, .amsgrad = true}); },
      [] { return optimizers::RMSprop({.learning_rate = 0.01, .global_clipnorm = 1.0, .momentum = 0.5, .centered = true}); },
      [] { return optimizers::Adagrad({.learning_rate = 0.1}); },
      [] { return optimizers::Adadelta({.learning_rate = 1.0}); },
      [] { return optimizers::Nadam({.learning_rate = 0.05}); },
      [] {
        return optimizers::Adam({.learning_rate = schedules::ExponentialDecay(
                                      {.initial_learning_rate = 0.1, .decay_steps = 1, .decay_rate = 0.5})});
      },
  };
  for (auto& make : makers) {
    Problem eager, traced;
    OptimizerPtr oe = make(), ot = make();
    SCOPED_TRACE(oe->name());
    ot->build(traced.vars());
    Function step = function([&](const Tensor& x, const Tensor& y) { return step_on(traced, *ot, x, y); });
    for (int i = 0; i < 4; ++i) {
      Tensor le = step_on(eager, *oe, eager.x, eager.y);
      Tensor lt = step(traced.x, traced.y)[0];
      EXPECT_NEAR(lt.item<double>(), le.item<double>(), 1e-5);
    }
    EXPECT_EQ(step.trace_count(), 1);
    expect_near(traced.w.value(), eager.w.value(), 1e-5);
    expect_near(traced.b.value(), eager.b.value(), 1e-5);
    EXPECT_EQ(ot->iterations().value().item<int64_t>(), 4);
    std::vector<Variable> ve = oe->variables(), vt = ot->variables();
    ASSERT_EQ(ve.size(), vt.size());
    for (size_t i = 0; i < ve.size(); ++i)
      expect_near(cast(vt[i].value(), DType::Float64), cast(ve[i].value(), DType::Float64), 1e-5);
  }
}

TEST(KerasOptimizers, SetLearningRateReachesTracedStepWithoutRetracing) {
  Variable w(zeros({2}), "w");
  auto opt = optimizers::SGD({.learning_rate = 0.1});
  opt->build({w});
  Tensor c = constant({1.f, -2.f});  // the gradient of sum(w * c)
  Function step = function([&]() {
    GradientTape tape;
    Tensor loss = reduce_sum(w.value() * c);
    opt->apply_gradients(tape.gradient(loss, std::vector<Variable>{w}), {w});
    return loss;
  });
  step();
  expect_near(w.value(), constant({-0.1f, 0.2f}), 1e-6);
  opt->set_learning_rate(0.0);
  step();
  expect_near(w.value(), constant({-0.1f, 0.2f}), 1e-6);
  opt->set_learning_rate(1.0);
  EXPECT_DOUBLE_EQ(opt->current_learning_rate(), 1.0);
  step();
  expect_near(w.value(), constant({-1.1f, 2.2f}), 1e-6);
  EXPECT_EQ(step.trace_count(), 1);
  EXPECT_EQ(opt->iterations().value().item<int64_t>(), 3);
  EXPECT_EQ(opt->get_config()["learning_rate"], 1.0);
}

TEST(KerasOptimizers, TracingAnUnbuiltOptimizerIsAnError) {
  Problem p;
  auto opt = optimizers::Adam();
  Function step = function([&](const Tensor& x, const Tensor& y) { return step_on(p, *opt, x, y); });
  EXPECT_THAT(error_of([&] { step(p.x, p.y); }),
              HasSubstr("[Adam.apply_gradients] variable 'w' has no slots: call build(vars) before tracing"));
  // Eagerly it builds itself.
  step_on(p, *opt, p.x, p.y);
  EXPECT_EQ(opt->variables().size(), 6u);
}

TEST(KerasOptimizers, ScheduleFollowsIterations) {
  // lr 1 for steps 0 and 1 (boundaries belong below), then 0.1; g = 1 each step.
  auto opt = optimizers::SGD({.learning_rate = schedules::PiecewiseConstantDecay({1}, {1.0, 0.1})});
  Variable w(zeros({1}), "w");
  Vec seen;
  for (int i = 0; i < 4; ++i) {
    opt->apply_gradients({ones({1})}, {w});
    seen.push_back(w.value().item<double>());
  }
  expect_vec_near({seen[0], seen[1], seen[2]}, {-1.0, -2.0, -2.1}, 1e-6);
  EXPECT_NEAR(seen[3], -2.2, 1e-6);
  EXPECT_NEAR(opt->current_learning_rate(), 0.1, 1e-7);
  EXPECT_THAT(error_of([&] { opt->set_learning_rate(0.5); }),
              HasSubstr("[SGD.set_learning_rate] this optimizer was created with a PiecewiseConstantDecay schedule"));
}

TEST(KerasOptimizers, Defaults) {
  EXPECT_NEAR(optimizers::SGD()->current_learning_rate(), 0.01, 1e-9);
  EXPECT_NEAR(optimizers::SGD({.learning_rate = 0.001})->current_learning_rate(), 0.001, 1e-9);  // explicit
  EXPECT_NEAR(optimizers::Adam()->current_learning_rate(), 0.001, 1e-9);
  EXPECT_NEAR(optimizers::RMSprop()->current_learning_rate(), 0.001, 1e-9);
  Config adam = optimizers::Adam()->get_config();
  EXPECT_EQ(adam["epsilon"], 1e-7);
  EXPECT_EQ(adam["beta_2"], 0.999);
  EXPECT_TRUE(adam["clipnorm"].is_null());
  EXPECT_EQ(optimizers::Adagrad()->get_config()["initial_accumulator_value"], 0.1);
  EXPECT_EQ(optimizers::Adadelta()->get_config()["rho"], 0.95);
}

TEST(KerasOptimizers, ConfigRoundTrips) {
  std::vector<OptimizerPtr> all = {
      optimizers::SGD({.learning_rate = 0.001, .clipvalue = 0.5, .momentum = 0.8, .nesterov = true}),
      optimizers::Adam({.learning_rate = 0.02, .clipnorm = 1.0, .beta_1 = 0.85, .beta_2 = 0.99, .epsilon = 1e-6, .amsgrad = true}),
      optimizers::AdamW({.learning_rate = 0.003, .weight_decay = 0.01}),
      optimizers::RMSprop({.global_clipnorm = 2.0, .rho = 0.7, .momentum = 0.3, .epsilon = 1e-5, .centered = true}),
      optimizers::Adagrad({.learning_rate = 0.2, .initial_accumulator_value = 0.3, .epsilon = 1e-6}),
      optimizers::Adadelta({.learning_rate = 1.0, .rho = 0.9, .epsilon = 1e-6}),
      optimizers::Nadam({.learning_rate = 0.004, .beta_1 = 0.8, .beta_2 = 0.95, .epsilon = 1e-6}),
      optimizers::Adam({.learning_rate = schedules::CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 50})}),
  };
  for (const OptimizerPtr& opt : all) {
    Config c = optimizers::serialize(*opt);
    EXPECT_EQ(c["class_name"], opt->name());
    OptimizerPtr back = optimizers::deserialize(nlohmann::json::parse(c.dump()));
    EXPECT_EQ(back->name(), opt->name());
    EXPECT_EQ(back->get_config(), opt->get_config()) << c.dump();
  }
  EXPECT_EQ(all[0]->get_config()["learning_rate"], 0.001);
  EXPECT_EQ(all[0]->get_config()["nesterov"], true);
  EXPECT_EQ(all[7]->get_config()["learning_rate"]["class_name"], "CosineDecay");
  EXPECT_EQ(optimizers::deserialize("rmsprop")->name(), "RMSprop");
}

TEST(KerasOptimizers, GetByName) {
  EXPECT_EQ(optimizers::get("adam")->name(), "Adam");
  EXPECT_EQ(optimizers::get("ADAMW")->name(), "AdamW");
  EXPECT_EQ(optimizers::get("SGD")->name(), "SGD");
  EXPECT_EQ(optimizers::get("nadam")->name(), "Nadam");
  EXPECT_THAT(error_of([] { optimizers::get("adamx"); }),
              HasSubstr("[optimizers] unknown optimizer 'adamx'; known: sgd, adam, adamw, rmsprop, adagrad, adadelta, "
                        "nadam"));
  EXPECT_THAT(error_of([] { optimizers::deserialize({{"class_name", "Lion"}, {"config", Config::object()}}); }),
              HasSubstr("[optimizers] unknown optimizer 'Lion'"));
}

class SignSGD : public Optimizer {
 public:
  explicit SignSGD(double lr) : Optimizer("SignSGDTest", {.learning_rate = lr}) {}
  void update_step(const Tensor& g, Variable& v, const Tensor& lr) override {
    v.assign_sub(cast(lr, v.dtype()) * sign(g));
  }
};

TEST(KerasOptimizers, CustomOptimizerRegisters) {
  optimizers::register_optimizer("SignSGDTest", [](const Config& c) -> OptimizerPtr {
    return std::make_shared<SignSGD>(c.value("learning_rate", 0.01));
  });
  auto opt = std::make_shared<SignSGD>(0.25);
  Variable w(zeros({3}), "w");
  opt->apply_gradients({constant({3.f, -0.1f, 0.f})}, {w});
  expect_near(w.value(), constant({-0.25f, 0.25f, 0.f}), 0);
  OptimizerPtr back = optimizers::deserialize(optimizers::serialize(*opt));
  EXPECT_EQ(back->name(), "SignSGDTest");
  EXPECT_DOUBLE_EQ(back->current_learning_rate(), 0.25);
  EXPECT_EQ(optimizers::get("signsgdtest")->name(), "SignSGDTest");
}

TEST(KerasOptimizers, AdamMinimizesAQuadratic) {
  Variable w(constant({0.f, 10.f}), "w");
  auto opt = optimizers::Adam({.learning_rate = 0.1});
  for (int i = 0; i < 400; ++i) {
    GradientTape tape;
    Tensor loss = reduce_sum(square(w.value() - constant({3.f, -1.f})));
    opt->apply_gradients({tape.gradient(loss, w)}, {w});
  }
  expect_near(w.value(), constant({3.f, -1.f}), 1e-2);
}

}  // namespace
}  // namespace deepflow::keras
