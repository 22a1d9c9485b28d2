// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/layers/pooling.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

#include "deepflow/core/error.h"
#include "deepflow/keras/serialization.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras::layers {
namespace {

const char* dims_of(int rank) {
  return rank == 1 ? "(batch, steps, channels)" : "(batch, height, width, channels)";
}

void check_input(const Layer& l, const Shape& s, int rank) {
  DF_CHECK(s.rank() == rank + 2, "[", l.name(), "] expects inputs of rank ", rank + 2, " ", dims_of(rank), ", got ",
           s);
}

}  // namespace

// --- windowed pooling ---

PoolingImpl::PoolingImpl(const char* class_name, int rank, bool max, IntTuple pool_size, PoolingOptions options)
    : Layer(options.name), class_name_(class_name), rank_(rank), max_(max) {
  pool_size_ = pool_size.expand(class_name, "pool_size", rank);
  // Keras: strides=None means strides = pool_size.
  strides_ = options.strides.empty() ? pool_size_ : options.strides.expand(class_name, "strides", rank);
  padding_ = options.padding;
  std::transform(padding_.begin(), padding_.end(), padding_.begin(),
                 [](unsigned char ch) { return char(std::tolower(ch)); });
  DF_CHECK(padding_ == "valid" || padding_ == "same", "[", class_name,
           "] padding must be \"valid\" or \"same\", got \"", options.padding, "\"");
}

Tensor PoolingImpl::call(const Tensor& x, bool) {
  check_input(*this, x.shape(), rank_);
  const std::string padding = padding_ == "same" ? "SAME" : "VALID";
  // A 1D pooling is a 2D one over [b, 1, steps, c] with a {1, pool} window.
  const Tensor in = rank_ == 1 ? expand_dims(x, 1) : x;
  const Axes k = rank_ == 1 ? Axes{1, pool_size_[0]} : pool_size_;
  const Axes s = rank_ == 1 ? Axes{1, strides_[0]} : strides_;
  Tensor y = max_ ? max_pool2d(in, k, s, padding) : avg_pool2d(in, k, s, padding);
  return rank_ == 1 ? squeeze(y, {1}) : y;
}

Config PoolingImpl::get_config() const {
  Config c = Layer::get_config();
  c["pool_size"] = pool_size_;
  c["padding"] = padding_;
  c["strides"] = strides_;
  c["data_format"] = "channels_last";
  return c;
}

// --- global pooling ---

GlobalPoolingImpl::GlobalPoolingImpl(const char* class_name, int rank, bool max, GlobalPoolingOptions options)
    : Layer(options.name), class_name_(class_name), rank_(rank), max_(max), keepdims_(options.keepdims) {}

Tensor GlobalPoolingImpl::call(const Tensor& x, bool) {
  check_input(*this, x.shape(), rank_);
  const Axes axes = rank_ == 1 ? Axes{1} : Axes{1, 2};
  return max_ ? reduce_max(x, axes, keepdims_) : reduce_mean(x, axes, keepdims_);
}

// Keras's masked GlobalAveragePooling1D: the mean over the steps the mask keeps (a row
// with none kept divides 0 by 0, as Keras). The max poolings ignore masks, as Keras.
TensorList GlobalPoolingImpl::call_masked(const TensorList& inputs, const TensorList& masks, bool training) {
  if (max_ || rank_ != 1 || inputs.size() != 1 || masks.empty() || !masks[0].defined())
    return Layer::call_masked(inputs, masks, training);
  const Tensor& x = inputs[0];
  check_input(*this, x.shape(), rank_);
  DF_CHECK(masks[0].rank() == 2, "[", name(), "] expects a mask of shape [batch, steps], got ", masks[0].shape());
  const Tensor m = expand_dims(cast(masks[0], x.dtype()), -1);  // [b, steps, 1]
  return {reduce_sum(x * m, {1}, keepdims_) / reduce_sum(m, {1}, keepdims_)};
}

Config GlobalPoolingImpl::get_config() const {
  Config c = Layer::get_config();
  c["data_format"] = "channels_last";
  c["keepdims"] = keepdims_;
  return c;
}

// --- registration (serialization.h) ---

namespace {

namespace ser = serialization;

template <class Holder>
void register_pooling(const char* cls) {
  register_layer(cls, [](const Config& c) -> LayerPtr {
    PoolingOptions o{.padding = ser::value_or<std::string>(c, "padding", "valid"), .name = ser::name_of(c)};
    if (c.contains("strides") && !c["strides"].is_null()) o.strides = ser::ints_of(c, "strides");
    return Holder(c.contains("pool_size") ? IntTuple(ser::ints_of(c, "pool_size")) : IntTuple(2), std::move(o));
  });
}

template <class Holder>
void register_global_pooling(const char* cls) {
  register_layer(cls, [](const Config& c) -> LayerPtr {
    return Holder(GlobalPoolingOptions{.keepdims = ser::value_or(c, "keepdims", false), .name = ser::name_of(c)});
  });
}

const bool kRegistered = [] {
  register_pooling<MaxPooling1D>("MaxPooling1D");
  register_pooling<AveragePooling1D>("AveragePooling1D");
  register_pooling<MaxPooling2D>("MaxPooling2D");
  register_pooling<AveragePooling2D>("AveragePooling2D");
  register_global_pooling<GlobalAveragePooling1D>("GlobalAveragePooling1D");
  register_global_pooling<GlobalMaxPooling1D>("GlobalMaxPooling1D");
  register_global_pooling<GlobalAveragePooling2D>("GlobalAveragePooling2D");
  register_global_pooling<GlobalMaxPooling2D>("GlobalMaxPooling2D");
  return true;
}();

}  // namespace
}  // namespace deepflow::keras::layers
