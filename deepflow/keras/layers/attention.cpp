// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/layers/attention.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "deepflow/core/error.h"
#include "deepflow/keras/serialization.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras::layers {
namespace {

std::string shapes_of(const std::vector<Shape>& shapes) {
  std::string s;
  for (const Shape& sh : shapes) s += (s.empty() ? "" : ", ") + sh.to_string();
  return s;
}

}  // namespace

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options)
    : Layer(options.name),
      num_heads_(num_heads),
      key_dim_(key_dim),
      value_dim_(options.value_dim.value_or(key_dim)),
      options_(std::move(options)) {
  DF_CHECK(num_heads > 0, "[MultiHeadAttention] num_heads must be positive, got ", num_heads);
  DF_CHECK(key_dim > 0, "[MultiHeadAttention] key_dim must be positive, got ", key_dim);
  DF_CHECK(value_dim_ > 0, "[MultiHeadAttention] value_dim must be positive, got ", value_dim_);
  DF_CHECK(!options_.output_shape || *options_.output_shape > 0,
           "[MultiHeadAttention] output_shape must be positive, got ", options_.output_shape.value_or(0));
  DF_CHECK(options_.dropout >= 0 && options_.dropout < 1, "[MultiHeadAttention] dropout must be in [0, 1), got ",
           options_.dropout);
}

void MultiHeadAttentionImpl::build(const std::vector<Shape>& shapes) {
  DF_CHECK(shapes.size() == 2 || shapes.size() == 3, "[", name(),
           "] expects a list [query, value] or [query, value, key], got ", shapes.size(), " inputs",
           shapes.empty() ? "" : ": ", shapes_of(shapes));
  for (const Shape& s : shapes)
    DF_CHECK(s.rank() == 3 && s[2] >= 0, "[", name(),
             "] expects query, value and key of rank 3 (batch, sequence, features) with known features, got ",
             shapes_of(shapes));
  const int64_t dq = shapes[0][2], dv = shapes[1][2], dk = shapes.size() == 3 ? shapes[2][2] : dv;
  const int64_t h = num_heads_, out = options_.output_shape.value_or(dq);
  InitializerPtr kinit = options_.kernel_initializer;  // null: add_weight's GlorotUniform
  InitializerPtr binit = options_.bias_initializer ? options_.bias_initializer : initializers::Zeros();
  auto dense = [&](const std::string& n, const Shape& kernel, const Shape& bias, Variable& w, Variable& b) {
    w = add_weight(n + "/kernel", kernel, kinit, true, options_.kernel_regularizer);
    if (options_.use_bias) b = add_weight(n + "/bias", bias, binit, true, options_.bias_regularizer);
  };
  // Keras's order: query, key, value, attention_output.
  dense("query", {dq, h, key_dim_}, {h, key_dim_}, wq_, bq_);
  dense("key", {dk, h, key_dim_}, {h, key_dim_}, wk_, bk_);
  dense("value", {dv, h, value_dim_}, {h, value_dim_}, wv_, bv_);
  dense("attention_output", {h, value_dim_, out}, {out}, wo_, bo_);
}

Tensor MultiHeadAttentionImpl::project(const Tensor& x, const Variable& kernel, const Variable& bias) const {
  // [b, 1, n, d] x [h, d, e] broadcasts to [b, h, n, e]: no reshape, so the batch and
  // sequence dims may both be unknown.
  Tensor y = matmul(expand_dims(x, 1), transpose(read(kernel), {1, 0, 2}));
  if (options_.use_bias) y = y + expand_dims(read(bias), 1);
  return y;
}

TensorList MultiHeadAttentionImpl::call(const TensorList& inputs, bool training) {
  std::vector<Shape> shapes;
  for (const Tensor& x : inputs) shapes.push_back(x.shape());
  DF_CHECK(inputs.size() == 2 || inputs.size() == 3, "[", name(),
           "] expects a list [query, value] or [query, value, key], got ", inputs.size(), " inputs",
           inputs.empty() ? "" : ": ", shapes_of(shapes));
  const Tensor &query = inputs[0], &value = inputs[1], &key = inputs.size() == 3 ? inputs[2] : inputs[1];
  const int64_t want[3] = {wq_.shape()[0], wv_.shape()[0], wk_.shape()[0]};
  bool ok = true;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& s = shapes[i];
    ok &= s.rank() == 3 && (s[2] < 0 || s[2] == want[i]);
  }
  DF_CHECK(ok, "[", name(), "] expects query [b, t, ", want[0], "], value [b, s, ", want[1], "] and key [b, s, ",
           want[2], "], got ", shapes_of(shapes));
  const Shape &vs = value.shape(), &ks = key.shape(), &qs = query.shape();
  auto compatible = [](int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; };
  DF_CHECK(compatible(vs[1], ks[1]) && compatible(qs[0], vs[0]) && compatible(qs[0], ks[0]), "[", name(),
           "] query, value and key need one batch size and value and key one sequence length, got ",
           shapes_of(shapes));
  for (const Tensor& x : inputs)
    DF_CHECK(x.dtype() == query.dtype(), "[", name(), "] query, value and key need one dtype, got ",
             dtype_name(query.dtype()), " and ", dtype_name(x.dtype()));

  Tensor q = project(query, wq_, bq_) * (1.0 / std::sqrt(double(key_dim_)));  // [b, h, t, k]
  Tensor k = project(key, wk_, bk_);                                            // [b, h, s, k]
  Tensor v = project(value, wv_, bv_);                                          // [b, h, s, v]
  Tensor scores = matmul(q, k, false, true);                                    // [b, h, t, s]
  if (options_.use_causal_mask) {
    // Keras's causal mask: row index >= column index, built from run-time shapes.
    Tensor one = ones_like(slice(scores, {0, 0, 0, 0}, {1, 1, -1, -1}));  // [1, 1, t, s]
    Tensor keep = greater_equal(cumsum(one, -2), cumsum(one, -1));
    // Keras's Softmax adds a large negative number where the mask is off.
    const double large_negative = scores.dtype() == DType::Float16 ? -3e4 : -1e9;
    scores = scores + (1.0 - cast(keep, scores.dtype())) * large_negative;
  }
  Tensor probs = softmax(scores, -1);
  if (training && options_.dropout > 0) probs = dropout(probs, options_.dropout, options_.seed);
  Tensor heads = matmul(probs, v);  // [b, h, t, v]
  // Each head through its [v, o] slice of the output kernel, summed over heads.
  Tensor y = reduce_sum(matmul(heads, read(wo_)), {1});  // [b, t, o]
  if (options_.use_bias) y = y + read(bo_);
  return {y};
}

Config MultiHeadAttentionImpl::get_config() const {
  Config c = Layer::get_config();
  c["num_heads"] = num_heads_;
  c["key_dim"] = key_dim_;
  c["value_dim"] = value_dim_;
  c["dropout"] = options_.dropout;
  c["use_bias"] = options_.use_bias;
  c["output_shape"] = options_.output_shape ? Config(*options_.output_shape) : Config(nullptr);
  c["attention_axes"] = nullptr;
  c["use_causal_mask"] = options_.use_causal_mask;
  c["kernel_initializer"] = initializers::serialize(options_.kernel_initializer, "GlorotUniform");
  c["bias_initializer"] = initializers::serialize(options_.bias_initializer, "Zeros");
  c["kernel_regularizer"] = regularizers::serialize(options_.kernel_regularizer);
  c["bias_regularizer"] = regularizers::serialize(options_.bias_regularizer);
  c["seed"] = options_.seed ? Config(*options_.seed) : Config(nullptr);
  return c;
}

// --- registration (serialization.h) ---

namespace {

const bool kRegistered = register_layer("MultiHeadAttention", [](const Config& c) -> LayerPtr {
  namespace ser = serialization;
  // [1] is what None means for the (batch, sequence, features) inputs this layer takes.
  const bool default_axes = !c.contains("attention_axes") || c["attention_axes"].is_null() ||
                            c["attention_axes"] == Config::array({1}) || c["attention_axes"] == Config(1);
  DF_CHECK(default_axes, "[keras.layers.deserialize] "
           "MultiHeadAttention '", ser::name_of(c), "': attention_axes is not supported, got ", c["attention_axes"].dump());
  return MultiHeadAttention(c.at("num_heads").get<int64_t>(), c.at("key_dim").get<int64_t>(),
                            MultiHeadAttentionOptions{
                                .value_dim = ser::optional_int_of(c, "value_dim"),
                                .dropout = ser::value_or(c, "dropout", 0.0),
                                .use_bias = ser::value_or(c, "use_bias", true),
                                .output_shape = ser::optional_int_of(c, "output_shape"),
                                .use_causal_mask = ser::value_or(c, "use_causal_mask", false),
                                .kernel_initializer = ser::initializer_of(c, "kernel_initializer", "GlorotUniform"),
                                .bias_initializer = ser::initializer_of(c, "bias_initializer", "Zeros"),
                                .kernel_regularizer = ser::regularizer_of(c, "kernel_regularizer"),
                                .bias_regularizer = ser::regularizer_of(c, "bias_regularizer"),
                                .seed = ser::optional_int_of(c, "seed"),
                                .name = ser::name_of(c)});
});

}  // namespace
}  // namespace deepflow::keras::layers
