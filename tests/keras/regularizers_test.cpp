// SPDX-License-Identifier: Apache-2.0
// keras::regularizers: penalties against hand-computed values, gradients, traced use,
// configs and names.
#include "deepflow/keras/regularizers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "deepflow/autodiff/tape.h"
#include "deepflow/function/function.h"
#include "deepflow/ops/ops.h"
#include "deepflow/ops/variable.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
namespace reg = regularizers;

// sum |w| = 10, sum w^2 = 30.
Tensor w4() { return constant({1.f, -2.f, 3.f, -4.f}, {2, 2}); }

TEST(KerasRegularizers, Penalties) {
  Tensor p1 = (*reg::L1(0.1))(w4());
  EXPECT_EQ(p1.rank(), 0);
  EXPECT_EQ(p1.dtype(), DType::Float32);
  EXPECT_NEAR(p1.item<double>(), 1.0, 1e-6);
  EXPECT_NEAR((*reg::L2(0.01))(w4()).item<double>(), 0.3, 1e-6);  // no 1/2 factor (Keras)
  EXPECT_NEAR((*reg::L1L2(0.1, 0.01))(w4()).item<double>(), 1.3, 1e-6);
  Tensor zero = (*reg::L1L2())(w4());
  EXPECT_EQ(zero.rank(), 0);
  EXPECT_EQ(zero.item<double>(), 0.0);
  Tensor p64 = (*reg::L2())(cast(w4(), DType::Float64));
  EXPECT_EQ(p64.dtype(), DType::Float64);
  EXPECT_NEAR(p64.item<double>(), 0.3, 1e-12);  // default factor 0.01
}

TEST(KerasRegularizers, Gradients) {
  Variable w(w4(), "w");
  GradientTape tape;
  Tensor p = (*reg::L1L2(0.5, 0.25))(w);
  Tensor g = tape.gradient(p, w);
  // 0.5 * sign(w) + 0.25 * 2 * w
  testing::expect_near(g, constant({1.f, -1.5f, 2.f, -2.5f}, {2, 2}), 1e-6);
}

TEST(KerasRegularizers, RunsInsideATrace) {
  RegularizerPtr r = reg::L1L2(0.1, 0.01);
  Function f = function([r](const Tensor& x) { return (*r)(x); });
  EXPECT_NEAR(f(w4())[0].item<double>(), 1.3, 1e-6);
  Function z = function([](const Tensor& x) { return (*reg::L1L2(0, 0))(x); });
  EXPECT_EQ(z(w4())[0].item<double>(), 0.0);
}

TEST(KerasRegularizers, ConfigsAndNames) {
  EXPECT_EQ(reg::serialize(*reg::L1(0.5)).dump(), R"({"class_name":"L1","config":{"l1":0.5}})");
  EXPECT_EQ(reg::serialize(*reg::L2()).dump(), R"({"class_name":"L2","config":{"l2":0.01}})");
  EXPECT_EQ(reg::serialize(*reg::L1L2(0.5)).dump(), R"({"class_name":"L1L2","config":{"l1":0.5,"l2":0.0}})");
  for (const RegularizerPtr& r : {reg::L1(0.2), reg::L2(0.3), reg::L1L2(0.4, 0.5)}) {
    RegularizerPtr back = reg::deserialize(reg::serialize(*r));
    EXPECT_EQ(reg::serialize(*back), reg::serialize(*r));
    EXPECT_NEAR((*back)(w4()).item<double>(), (*r)(w4()).item<double>(), 1e-6);
  }
  EXPECT_EQ(reg::get("l1")->get_config().dump(), R"({"l1":0.01})");
  EXPECT_EQ(reg::get("l2")->get_config().dump(), R"({"l2":0.01})");
  EXPECT_EQ(reg::get("l1_l2")->get_config().dump(), R"({"l1":0.01,"l2":0.01})");
  EXPECT_EQ(reg::get("L1L2")->get_config().dump(), R"({"l1":0.0,"l2":0.0})");
  EXPECT_EQ(reg::deserialize(nlohmann::json("l2"))->class_name(), "L2");
  EXPECT_THAT(error_of([] { reg::get("l3"); }),
              HasSubstr("[regularizers] unknown regularizer 'l3'; known: l1, l2, l1_l2"));
  EXPECT_THAT(error_of([] { reg::deserialize(nlohmann::json{{"l1", 1}}); }),
              HasSubstr("[regularizers.deserialize] expects {\"class_name\""));
  EXPECT_THAT(error_of([] { (*reg::L2())(constant(std::vector<int32_t>{1, 2})); }),
              HasSubstr("[L2] expects a floating weight, got int32"));
}

}  // namespace
}  // namespace deepflow::keras
