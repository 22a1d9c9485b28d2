// SPDX-License-Identifier: Apache-2.0
// MultiHeadAttention (tf.keras.layers.MultiHeadAttention), called on a list:
//
//   auto mha = layers::MultiHeadAttention(4, 16);
//   Tensor y = mha({query, value});          // key = value
//   Tensor z = mha({query, value, key});
//
// query [b, t, dq], value [b, s, dv], key [b, s, dk] -> [b, t, output_shape or dq].
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "deepflow/keras/layer.h"

namespace deepflow::keras::layers {

struct MultiHeadAttentionOptions {
  /// Per-head size of the value projection; unset: key_dim.
  std::optional<int64_t> value_dim;
  /// Dropout rate on the attention probabilities (in training).
  double dropout = 0;
  bool use_bias = true;
  /// The last dim of the output; unset: the query's last dim.
  std::optional<int64_t> output_shape;
  /// Query position i attends only to key positions j <= i (Keras's call argument
  /// use_causal_mask, here fixed per layer).
  bool use_causal_mask = false;
  InitializerPtr kernel_initializer;  ///< null: GlorotUniform
  InitializerPtr bias_initializer;    ///< null: Zeros
  RegularizerPtr kernel_regularizer, bias_regularizer;
  /// Seed of the attention dropout.
  std::optional<int64_t> seed;
  std::string name;
};

// --- MultiHeadAttention --- with h = num_heads, k = key_dim, v = value_dim, o the output dim:
//   Q = query . Wq + bq     Wq [dq, h, k], bq [h, k]   (Keras's EinsumDense "query")
//   K = key . Wk + bk       Wk [dk, h, k], bk [h, k]   ("key")
//   V = value . Wv + bv     Wv [dv, h, v], bv [h, v]   ("value")
//   P = softmax(Q K^T / sqrt(k) + mask) per head [b, h, t, s], dropout in training
//   y = sum over heads of (P V) . Wo + bo, Wo [h, v, o], bo [o]   ("attention_output")
// The causal mask adds -1e9 (-3e4 for float16) where j > i, as Keras's Softmax.
class MultiHeadAttentionImpl : public Layer {
 public:
  MultiHeadAttentionImpl(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options = {});
  /// [query, value] or [query, value, key] shapes.
  void build(const std::vector<Shape>& input_shapes) override;
  using Layer::build;
  /// inputs: [query, value] or [query, value, key] -> [attention output].
  TensorList call(const TensorList& inputs, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "MultiHeadAttention"; }
  Config get_config() const override;

  int64_t num_heads() const { return num_heads_; }
  int64_t key_dim() const { return key_dim_; }
  int64_t value_dim() const { return value_dim_; }
  /// Kernels [d, h, k|v] and [h, v, o]; biases [h, k|v] and [o] (undefined without use_bias).
  const Variable& query_kernel() const { return wq_; }
  const Variable& query_bias() const { return bq_; }
  const Variable& key_kernel() const { return wk_; }
  const Variable& key_bias() const { return bk_; }
  const Variable& value_kernel() const { return wv_; }
  const Variable& value_bias() const { return bv_; }
  const Variable& output_kernel() const { return wo_; }
  const Variable& output_bias() const { return bo_; }

 private:
  // x [b, n, d] through kernel [d, h, e] (+ bias [h, e]) -> [b, h, n, e].
  Tensor project(const Tensor& x, const Variable& kernel, const Variable& bias) const;

  int64_t num_heads_, key_dim_, value_dim_;
  MultiHeadAttentionOptions options_;
  Variable wq_, bq_, wk_, bk_, wv_, bv_, wo_, bo_;
};
/// Spelled out so braced options work: MultiHeadAttention(4, 16, {.use_causal_mask = true}).
class MultiHeadAttention : public LayerHolder<MultiHeadAttentionImpl> {
 public:
  using LayerHolder<MultiHeadAttentionImpl>::LayerHolder;
  MultiHeadAttention(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options = {})
      : LayerHolder(std::make_shared<MultiHeadAttentionImpl>(num_heads, key_dim, std::move(options))) {}
};

}  // namespace deepflow::keras::layers
