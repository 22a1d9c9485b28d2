// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/config.h"

#include "deepflow/core/error.h"

namespace deepflow::keras {
namespace {

Policy g_policy;
thread_local bool t_learning_phase = false;

}  // namespace

Policy Policy::from_name(const std::string& name) {
  if (name == "float32") return {name, DType::Float32, DType::Float32};
  if (name == "float64") return {name, DType::Float64, DType::Float64};
  if (name == "mixed_bfloat16") return {name, DType::BFloat16, DType::Float32};
  if (name == "mixed_float16") return {name, DType::Float16, DType::Float32};
  if (name == "bfloat16") return {name, DType::BFloat16, DType::BFloat16};
  if (name == "float16") return {name, DType::Float16, DType::Float16};
  fail("[Policy] unknown dtype policy '", name,
       "'; known: float32, float64, mixed_bfloat16, mixed_float16, bfloat16, float16");
}

void set_global_policy(const std::string& name) { g_policy = Policy::from_name(name); }
const Policy& global_policy() { return g_policy; }

bool learning_phase() { return t_learning_phase; }

LearningPhaseScope::LearningPhaseScope(bool training) : prev_(t_learning_phase) { t_learning_phase = training; }
LearningPhaseScope::~LearningPhaseScope() { t_learning_phase = prev_; }

}  // namespace deepflow::keras
