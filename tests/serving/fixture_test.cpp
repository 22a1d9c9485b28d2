// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "serving/serving_test_util.h"

namespace deepflow {
namespace {

TEST(ServingFixtures, HalfPlusRunsAsSaved) {
  testing::TempDir tmp;
  std::string dir = testing::save_half_plus(tmp.path(), 1, 3.f);
  io::SavedModel m = io::load_saved_model(dir);
  auto out = m.signature("serving_default")({{"x", constant({1.f, 2.f, 5.f})}});
  EXPECT_EQ(out.at("y").to_vector<float>(), (std::vector<float>{3.5f, 4.f, 5.5f}));
  auto scores = m.signature("classify_x_to_y")({{"x", reshape(constant({2.f}), {1, 1})}});
  EXPECT_EQ(scores.at("scores").to_vector<float>(), (std::vector<float>{4.f, -4.f}));
  std::string dense = testing::save_dense(tmp.path(), 2, 4, 3);
  auto y = io::load_saved_model(dense).signature("serving_default")({{"x", ones({2, 4})}});
  EXPECT_EQ(y.at("y").shape(), Shape({2, 3}));
}

}  // namespace
}  // namespace deepflow
