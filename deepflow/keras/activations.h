// SPDX-License-Identifier: Apache-2.0
// Activations by name (tf.keras.activations), for the `activation` argument of layers.
//
//   Tensor y = keras::activations::apply("gelu", x);
//
// Names: "" or "linear", "relu", "relu6", "sigmoid", "tanh", "softmax", "log_softmax",
// "elu", "selu", "gelu", "softplus", "softsign", "swish" (= "silu"), "leaky_relu"
// (alpha 0.2, Keras 3), "exponential", "hard_sigmoid" (relu6(x + 3) / 6, Keras 3).
#pragma once

#include <functional>
#include <string>

#include "deepflow/core/tensor.h"

namespace deepflow::keras::activations {

using Activation = std::function<Tensor(const Tensor&)>;

/// The function of a name; throws "[activations] unknown activation 'x'; known: ...".
Activation get(const std::string& name);
/// get(name)(x).
Tensor apply(const std::string& name, const Tensor& x);
/// Throws the same error as get() for an unknown name (layers check at construction).
void check(const std::string& name);

}  // namespace deepflow::keras::activations
