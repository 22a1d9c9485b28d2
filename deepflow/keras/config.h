// SPDX-License-Identifier: Apache-2.0
// Shared vocabulary of the Keras-style API: configs (get_config / from_config, as
// JSON objects like Keras's), the mixed-precision dtype policy, and the learning
// phase (the `training` argument a layer sees when a call does not pass one).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

#include "deepflow/core/dtype.h"

namespace deepflow::keras {

/// A JSON object, as Keras's get_config() returns (include <nlohmann/json.hpp> to use it).
using Config = nlohmann::json;

/// Which dtypes a layer computes in and keeps its variables in (tf.keras.mixed_precision.Policy).
///   "float32"         compute float32, variables float32
///   "mixed_bfloat16"  compute bfloat16, variables float32
///   "mixed_float16"   compute float16, variables float32 (use a LossScaleOptimizer)
///   "float64", "bfloat16", "float16": compute and variables in that dtype
struct Policy {
  std::string name = "float32";
  DType compute_dtype = DType::Float32;
  DType variable_dtype = DType::Float32;

  /// The policy of a name above; throws "[Policy] unknown dtype policy 'x'; known: ...".
  static Policy from_name(const std::string& name);
};

/// The policy new layers take (tf.keras.mixed_precision.set_global_policy).
void set_global_policy(const std::string& name);
const Policy& global_policy();

/// The learning phase of this thread: what a layer's `training` is when a call does not
/// pass one. False by default; fit() sets it for its train step.
bool learning_phase();

/// Sets the learning phase while alive.
class LearningPhaseScope {
 public:
  explicit LearningPhaseScope(bool training);
  ~LearningPhaseScope();
  LearningPhaseScope(const LearningPhaseScope&) = delete;
  LearningPhaseScope& operator=(const LearningPhaseScope&) = delete;

 private:
  bool prev_;
};

}  // namespace deepflow::keras
