// SPDX-License-Identifier: Apache-2.0
// Weight initializers (tf.keras.initializers): each makes a concrete tensor of a
// shape and dtype. Fans follow Keras: for a kernel [..., fan_in_dim, fan_out_dim]
// the receptive field is the product of the leading dims, fan_in = receptive *
// shape[-2], fan_out = receptive * shape[-1]; a vector has fan_in = fan_out = its size.
//
//   auto init = keras::initializers::get("he_normal");
//   Tensor w = (*init)({3, 3, 16, 32}, DType::Float32);
//
// Seeds: an initializer with a seed gives the same values on every call (Keras 3);
// without one it draws from the global generator (core/random.h), so models built
// after set_random_seed(s) are reproducible.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "deepflow/core/tensor.h"
#include "deepflow/keras/config.h"

namespace deepflow::keras {

class Initializer {
 public:
  virtual ~Initializer() = default;
  /// A new tensor of the shape and (floating) dtype.
  virtual Tensor operator()(const Shape& shape, DType dtype) const = 0;
  /// "GlorotUniform", "Zeros", ... (Keras class names).
  virtual std::string class_name() const = 0;
  /// Constructor arguments: {"seed": 3}, {"value": 0.5}, {"mean": 0, "stddev": 0.05}, ...
  virtual Config get_config() const;
};
using InitializerPtr = std::shared_ptr<const Initializer>;

namespace initializers {

/// By name, Keras's snake_case ("glorot_uniform", "he_normal", "lecun_uniform", "zeros",
/// "ones", "orthogonal", "random_normal", "random_uniform", "truncated_normal") or class
/// name ("GlorotUniform"); throws "[initializers] unknown initializer 'x'; known: ...".
InitializerPtr get(const std::string& name);
/// From {"class_name": ..., "config": {...}} as serialize() writes it.
InitializerPtr deserialize(const Config& config);
Config serialize(const Initializer& init);
/// serialize(*init), or {"class_name": default_class, "config": {}} for a null one (a
/// layer's default initializer, in its get_config()).
Config serialize(const InitializerPtr& init, const char* default_class);

InitializerPtr Zeros();
InitializerPtr Ones();
InitializerPtr Constant(double value);
InitializerPtr RandomNormal(double mean = 0, double stddev = 0.05, std::optional<int64_t> seed = std::nullopt);
InitializerPtr RandomUniform(double minval = -0.05, double maxval = 0.05, std::optional<int64_t> seed = std::nullopt);
InitializerPtr TruncatedNormal(double mean = 0, double stddev = 0.05, std::optional<int64_t> seed = std::nullopt);
/// uniform(-l, l) with l = sqrt(6 / (fan_in + fan_out)).
InitializerPtr GlorotUniform(std::optional<int64_t> seed = std::nullopt);
/// truncated normal, stddev sqrt(2 / (fan_in + fan_out)) / .87962566103423978.
InitializerPtr GlorotNormal(std::optional<int64_t> seed = std::nullopt);
/// uniform(-l, l) with l = sqrt(6 / fan_in).
InitializerPtr HeUniform(std::optional<int64_t> seed = std::nullopt);
/// truncated normal, stddev sqrt(2 / fan_in) / .87962566103423978.
InitializerPtr HeNormal(std::optional<int64_t> seed = std::nullopt);
/// uniform(-l, l) with l = sqrt(3 / fan_in).
InitializerPtr LecunUniform(std::optional<int64_t> seed = std::nullopt);
/// truncated normal, stddev sqrt(1 / fan_in) / .87962566103423978.
InitializerPtr LecunNormal(std::optional<int64_t> seed = std::nullopt);
/// A (semi-)orthogonal matrix from the QR decomposition of a normal one, times gain; a
/// kernel of rank > 2 is orthogonal as [prod(shape[:-1]), shape[-1]].
InitializerPtr Orthogonal(double gain = 1.0, std::optional<int64_t> seed = std::nullopt);

}  // namespace initializers
}  // namespace deepflow::keras
