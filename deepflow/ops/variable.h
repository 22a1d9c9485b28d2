// SPDX-License-Identifier: Apache-2.0
// Variable: named, mutable state (weights, optimizer slots, counters).
//
// A Variable converts to a Tensor by reading its value; every read of one
// variable carries the variable's id, so GradientTape accumulates gradients
// for the variable no matter how often it is read. Trainable variables are
// watched by tapes automatically. Assignments replace the value; reads taken
// before an assignment keep the old value.
//
//   Variable w(random_normal({3, 2}), "w");
//   GradientTape tape;
//   Tensor loss = reduce_sum(square(matmul(x, w)));
//   Tensor dw = tape.gradient(loss, w.value());
//   w.assign_sub(dw * 0.1);
#pragma once

#include <memory>
#include <string>

#include "deepflow/core/tensor.h"

namespace deepflow {

class Variable {
 public:
  /// An undefined variable (defined() is false).
  Variable() = default;
  /// A variable holding a copy of initial_value.
  explicit Variable(const Tensor& initial_value, std::string name = "Variable", bool trainable = true);
  /// A variable whose value is `value` itself, sharing its buffer (no copy): for
  /// memory-mapped checkpoint and SavedModel tensors. Safe because assignments swap
  /// buffers and never write into one.
  static Variable wrap(const Tensor& value, std::string name = "Variable", bool trainable = true);

  bool defined() const { return state_ != nullptr; }
  /// Reads the current value (a tensor that shares the variable's id).
  Tensor value() const;
  operator Tensor() const { return value(); }  // NOLINT: variables are used where tensors are

  /// Replaces the value; shape and dtype must match.
  void assign(const Tensor& value);
  void assign_add(const Tensor& delta);
  void assign_sub(const Tensor& delta);

  const std::string& name() const;
  bool trainable() const;
  void set_trainable(bool trainable);
  const Shape& shape() const;
  DType dtype() const;
  /// The id shared by every read; gradients for the variable are keyed by it.
  uint64_t id() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace deepflow
