// SPDX-License-Identifier: Apache-2.0
// Keras 3 operations as nodes of a functional model: keras.ops.not_equal(tokens, 0) and
// the other elementwise binary ops applied to Keras tensors. A Keras 3 config lists
// them among the layers with module "keras.src.ops.numpy"; their inbound node's args
// mix tensors and constants. The most common one comes unasked: Embedding(mask_zero)
// computes its mask with NotEqual, and the file passes it to the next layer as `mask`.
//
//   {"module": "keras.src.ops.numpy", "class_name": "NotEqual", "config": {"name": "not_equal"},
//    "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", ...}, 0], "kwargs": {}}]}
//
// KerasOp rebuilds such a node: its class, and the args with the tensors' places marked.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "deepflow/keras/layer.h"

namespace deepflow::keras::layers {

/// The module Keras 3 writes for these ops.
inline constexpr char kKerasOpsModule[] = "keras.src.ops.numpy";

/// True for the Keras 3 op classes KerasOp computes: NotEqual, Equal, Greater,
/// GreaterEqual, Less, LessEqual, Add, Subtract, Multiply, Divide, TrueDivide, Maximum,
/// Minimum.
bool is_keras_op_class(const std::string& class_name);

// --- KerasOp --- op(a, b) elementwise with broadcasting; a constant operand takes the
// tensor operand's dtype (not_equal(int32 ids, 0) compares int32s).
class KerasOpImpl : public Layer {
 public:
  /// `args`: the call's positional args as Keras writes them, tensors as
  /// {"class_name": "__keras_tensor__", ...} objects and the rest numbers; the layer's
  /// inputs fill the tensor places in order.
  KerasOpImpl(std::string class_name, const Config& args, std::string name);
  TensorList call(const TensorList& inputs, bool training) override;
  using Layer::call;
  std::string class_name() const override { return class_name_; }
  /// Only "name" (Keras's Operation takes no more).
  Config get_config() const override;
  /// The args to write for a call whose tensors are `tensors` (Keras tensor objects).
  Config call_args(const Config& tensors) const;

 private:
  std::string class_name_;
  std::string args_json_;                     // as written, for call_args (Config is only declared here)
  std::vector<std::optional<double>> operands_;  // a constant, or nullopt for a tensor's place
  size_t num_tensors_ = 0;
};
DF_KERAS_LAYER(KerasOp);

}  // namespace deepflow::keras::layers
