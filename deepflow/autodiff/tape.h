// SPDX-License-Identifier: Apache-2.0
// GradientTape: reverse-mode automatic differentiation of eager code.
//
// While a tape is alive on a thread it records every differentiable op whose
// inputs it watches: tensors passed to watch(), trainable variables (read
// automatically), and everything computed from them. gradient() then runs the
// ops' vjps backwards. Those vjps are ordinary ops, so an outer tape records
// them and nested tapes give higher-order gradients.
//
//   Variable w(ones({3}), "w");
//   Tensor x = constant({1.f, 2.f, 3.f});
//   GradientTape tape;
//   Tensor y = reduce_sum(w * x);
//   Tensor dw = tape.gradient(y, w);      // [1,2,3]
//
// Non-scalar targets are summed (the seed is ones), as in TensorFlow.
#pragma once

#include <memory>
#include <vector>

#include "deepflow/core/tensor.h"
#include "deepflow/ops/variable.h"

namespace deepflow {

/// What gradient() returns for a source the target does not depend on.
enum class UnconnectedGradients { None, Zero };

class GradientTape {
 public:
  /// A persistent tape allows several gradient() calls; otherwise one.
  explicit GradientTape(bool persistent = false, bool watch_accessed_variables = true);
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  /// Records ops on t (and on what is computed from it) from now on.
  void watch(const Tensor& t);
  void watch(const Variable& v);

  /// The variables this tape watches, in the order first seen: those passed to watch()
  /// and, with watch_accessed_variables, every trainable variable read while it recorded
  /// (eagerly, while a function was traced, or by a graph run on this thread).
  std::vector<Variable> watched_variables() const;

  /// d sum(targets * output_gradients) / d sources; one entry per source, undefined
  /// (or zeros with UnconnectedGradients::Zero) where a source is not connected.
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets, const std::vector<Tensor>& sources,
                               UnconnectedGradients unconnected = UnconnectedGradients::None,
                               const std::vector<Tensor>& output_gradients = {});
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Tensor>& sources,
                               UnconnectedGradients unconnected = UnconnectedGradients::None);
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Variable>& sources,
                               UnconnectedGradients unconnected = UnconnectedGradients::None);
  Tensor gradient(const Tensor& target, const Tensor& source,
                  UnconnectedGradients unconnected = UnconnectedGradients::None);
  Tensor gradient(const Tensor& target, const Variable& source,
                  UnconnectedGradients unconnected = UnconnectedGradients::None);

  /// d target[i] / d source[j]: shape target.shape + source.shape.
  Tensor jacobian(const Tensor& target, const Tensor& source,
                  UnconnectedGradients unconnected = UnconnectedGradients::None);

  /// Pauses recording on this tape for the lifetime of the returned guard.
  class StopRecording {
   public:
    explicit StopRecording(GradientTape& tape);
    ~StopRecording();
    StopRecording(const StopRecording&) = delete;
    StopRecording& operator=(const StopRecording&) = delete;

   private:
    GradientTape& tape_;
    bool prev_;
  };
  StopRecording stop_recording() { return StopRecording(*this); }

  /// Forgets everything recorded so far (keeps recording).
  void reset();
  /// Number of recorded op calls (for tests and debugging).
  size_t num_recorded() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace deepflow
