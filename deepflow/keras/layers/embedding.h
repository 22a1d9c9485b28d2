// SPDX-License-Identifier: Apache-2.0
// Embedding: integer ids -> dense vectors (tf.keras.layers.Embedding).
#pragma once

#include <string>

#include "deepflow/keras/layer.h"

namespace deepflow::keras::layers {

struct EmbeddingOptions {
  InitializerPtr embeddings_initializer;  ///< null: RandomUniform(-0.05, 0.05), Keras's "uniform"
  RegularizerPtr embeddings_regularizer;
  /// Id 0 is padding: compute_mask gives ids != 0, which RNNs and
  /// GlobalAveragePooling1D downstream honour (input_dim must then count the 0).
  bool mask_zero = false;
  std::string name;
};

// --- Embedding --- ids int [...] (any rank; floats are truncated to int32 as Keras casts
// them) -> [..., output_dim]: rows of `embeddings` [input_dim, output_dim]. An id outside
// [0, input_dim) is an error of gather (when the lookup runs).
class EmbeddingImpl : public Layer {
 public:
  EmbeddingImpl(int64_t input_dim, int64_t output_dim, EmbeddingOptions options = {});
  void build(const Shape& input_shape) override;
  using Layer::build;
  Tensor call(const Tensor& ids, bool training) override;
  using Layer::call;
  /// With mask_zero: {ids != 0} (bool, the ids' shape); otherwise none.
  TensorList compute_mask(const TensorList& inputs, const TensorList& masks) const override;
  std::string class_name() const override { return "Embedding"; }
  Config get_config() const override;
  int64_t input_dim() const { return input_dim_; }
  int64_t output_dim() const { return output_dim_; }
  const Variable& embeddings() const { return embeddings_; }

 private:
  int64_t input_dim_, output_dim_;
  EmbeddingOptions options_;
  Variable embeddings_;
};
/// Spelled out so braced options work: Embedding(1000, 64, {.name = "emb"}).
class Embedding : public LayerHolder<EmbeddingImpl> {
 public:
  using LayerHolder<EmbeddingImpl>::LayerHolder;
  Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options = {})
      : LayerHolder(std::make_shared<EmbeddingImpl>(input_dim, output_dim, std::move(options))) {}
};

}  // namespace deepflow::keras::layers
