// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/layers/embedding.h"

#include <nlohmann/json.hpp>

#include "deepflow/core/error.h"
#include "deepflow/keras/serialization.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras::layers {

EmbeddingImpl::EmbeddingImpl(int64_t input_dim, int64_t output_dim, EmbeddingOptions options)
    : Layer(options.name), input_dim_(input_dim), output_dim_(output_dim), options_(std::move(options)) {
  DF_CHECK(input_dim > 0, "[Embedding] input_dim must be positive, got ", input_dim);
  DF_CHECK(output_dim > 0, "[Embedding] output_dim must be positive, got ", output_dim);
  if (!options_.embeddings_initializer) options_.embeddings_initializer = initializers::RandomUniform(-0.05, 0.05);
}

void EmbeddingImpl::build(const Shape&) {
  embeddings_ = add_weight("embeddings", {input_dim_, output_dim_}, options_.embeddings_initializer, true,
                           options_.embeddings_regularizer);
}

Tensor EmbeddingImpl::call(const Tensor& ids, bool) {
  const DType dt = ids.dtype();
  DF_CHECK(dt != DType::Bool, "[", name(), "] expects integer ids, got ", dtype_name(dt), ids.shape());
  // Keras casts any id dtype but int32 / int64 to int32.
  Tensor idx = dt == DType::Int32 || dt == DType::Int64 ? ids : cast(ids, DType::Int32);
  return gather(read(embeddings_), idx);
}

TensorList EmbeddingImpl::compute_mask(const TensorList& inputs, const TensorList&) const {
  if (!options_.mask_zero || inputs.empty()) return {};
  return {not_equal(inputs[0], scalar_like(inputs[0], 0.0))};
}

Config EmbeddingImpl::get_config() const {
  Config c = Layer::get_config();
  c["input_dim"] = input_dim_;
  c["output_dim"] = output_dim_;
  c["embeddings_initializer"] = initializers::serialize(*options_.embeddings_initializer);
  c["embeddings_regularizer"] =
      options_.embeddings_regularizer ? regularizers::serialize(*options_.embeddings_regularizer) : Config(nullptr);
  c["mask_zero"] = options_.mask_zero;
  return c;
}

// --- registration (serialization.h) ---

namespace {

const bool kRegistered = register_layer("Embedding", [](const Config& c) -> LayerPtr {
  namespace ser = serialization;
  return Embedding(c.at("input_dim").get<int64_t>(), c.at("output_dim").get<int64_t>(),
                   EmbeddingOptions{.embeddings_initializer = ser::initializer_of(c, "embeddings_initializer", ""),
                                    .embeddings_regularizer = ser::regularizer_of(c, "embeddings_regularizer"),
                                    .mask_zero = ser::value_or(c, "mask_zero", false),
                                    .name = ser::name_of(c)});
});

}  // namespace
}  // namespace deepflow::keras::layers
