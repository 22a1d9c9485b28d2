// SPDX-License-Identifier: Apache-2.0
// Preprocessing and padding layers Keras models carry: ZeroPadding2D, Rescaling,
// Normalization (keras.applications models pad before strided convs; image models rescale
// and normalize their inputs inside the model). Each is a class `<Name>Impl` with holder
// `<Name>` (layer.h): `layers::Rescaling(1.0 / 255)(x)`.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "deepflow/keras/layer.h"

namespace deepflow::keras::layers {

// --- ZeroPadding2D --- [b, h, w, c] -> [b, h + top + bottom, w + left + right, c]
// (channels_last, as Keras's default).
class ZeroPadding2DImpl : public Layer {
 public:
  /// ((top, bottom), (left, right)), each >= 0.
  explicit ZeroPadding2DImpl(std::pair<int64_t, int64_t> rows, std::pair<int64_t, int64_t> cols,
                             std::string name = "");
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "ZeroPadding2D"; }
  Config get_config() const override;

 private:
  std::pair<int64_t, int64_t> rows_, cols_;
};
DF_KERAS_LAYER(ZeroPadding2D);

// --- Rescaling --- x -> x * scale + offset, same shape (float32 out).
class RescalingImpl : public Layer {
 public:
  explicit RescalingImpl(double scale, double offset = 0.0, std::string name = "");
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "Rescaling"; }
  Config get_config() const override;

 private:
  double scale_, offset_;
};
DF_KERAS_LAYER(Rescaling);

// --- Normalization --- x [..., c] -> (x - mean) / max(sqrt(variance), 1e-7), same shape;
// `invert`: mean + x * max(sqrt(variance), 1e-7). Over the last axis only. Without a given
// mean and variance the layer has Keras's three non-trainable weights, in its order: mean
// [c], variance [c] and count (int64 scalar), filled by loading weights (adapt() is not
// implemented here).
struct NormalizationOptions {
  std::optional<std::vector<double>> mean, variance;  ///< both or neither; one value or c
  bool invert = false;
  std::string name;
};

class NormalizationImpl : public Layer {
 public:
  explicit NormalizationImpl(NormalizationOptions options = {});
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "Normalization"; }
  Config get_config() const override;

 private:
  NormalizationOptions options_;
  Variable mean_, variance_, count_;
};
class Normalization : public LayerHolder<NormalizationImpl> {
 public:
  using LayerHolder<NormalizationImpl>::LayerHolder;
  Normalization(NormalizationOptions options = {})  // NOLINT: options convert
      : LayerHolder(std::make_shared<NormalizationImpl>(std::move(options))) {}
};

}  // namespace deepflow::keras::layers
