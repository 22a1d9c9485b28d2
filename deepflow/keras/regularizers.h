// SPDX-License-Identifier: Apache-2.0
// Weight regularizers (tf.keras.regularizers): a penalty added to the training loss.
//
//   layers::Dense(64, {.kernel_regularizer = keras::regularizers::L2(1e-4)})
#pragma once

#include <memory>
#include <string>

#include "deepflow/core/tensor.h"
#include "deepflow/keras/config.h"

namespace deepflow::keras {

class Regularizer {
 public:
  virtual ~Regularizer() = default;
  /// The penalty of a weight: a scalar of its dtype.
  virtual Tensor operator()(const Tensor& weight) const = 0;
  virtual std::string class_name() const = 0;
  virtual Config get_config() const = 0;
};
using RegularizerPtr = std::shared_ptr<const Regularizer>;

namespace regularizers {

/// l1 * sum(|w|).
RegularizerPtr L1(double l1 = 0.01);
/// l2 * sum(w^2) (Keras's convention: no factor 1/2).
RegularizerPtr L2(double l2 = 0.01);
RegularizerPtr L1L2(double l1 = 0.0, double l2 = 0.0);
/// "l1", "l2", "l1_l2" with Keras's default factors; throws on an unknown name.
RegularizerPtr get(const std::string& name);
Config serialize(const Regularizer& r);
/// serialize(*r), or JSON null for a null one (a layer without that regularizer).
Config serialize(const RegularizerPtr& r);
RegularizerPtr deserialize(const Config& config);

}  // namespace regularizers
}  // namespace deepflow::keras
