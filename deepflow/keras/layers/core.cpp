// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/layers/core.h"

#include <nlohmann/json.hpp>

#include "deepflow/core/error.h"
#include "deepflow/keras/activations.h"
#include "deepflow/keras/serialization.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras::layers {
// --- InputLayer ---

InputLayerImpl::InputLayerImpl(Shape shape, DType dtype, std::string name)
    : Layer(std::move(name)), shape_(shape), dtype_(dtype) {
  output_ = Input(shape, this->name(), dtype);
  set_built();
}

Tensor InputLayerImpl::call(const Tensor& x, bool) {
  Shape want = output_.shape();
  DF_CHECK(x.shape().compatible_with(want), "[", name(), "] expects inputs of shape ", want, ", got ", x.shape());
  // On a Keras tensor (a Sequential with an InputLayer called inside a functional model)
  // a new tensor keeps the caller's history of x: the call is recorded under its output.
  return is_keras_tensor(x) ? identity(x) : x;
}

Config InputLayerImpl::get_config() const {
  Config c = Layer::get_config();
  // Keras writes an unknown dim (the batch) as null.
  Config dims = Config::array();
  for (int64_t d : output_.shape().to_vector()) dims.push_back(d < 0 ? Config(nullptr) : Config(d));
  c["batch_shape"] = dims;
  c["dtype"] = dtype_name(dtype_);
  return c;
}

// --- Dense ---

DenseImpl::DenseImpl(int64_t units, DenseOptions options)
    : Layer(options.name), units_(units), options_(std::move(options)) {
  DF_CHECK(units > 0, "[Dense] units must be positive, got ", units);
  supports_masking_ = true;
  activations::check(options_.activation);
}

void DenseImpl::build(const Shape& input_shape) {
  DF_CHECK(input_shape.rank() >= 1 && input_shape.dim(-1) >= 0, "[", name(),
           "] needs inputs with a known last dim, got ", input_shape);
  kernel_ = add_weight("kernel", {input_shape.dim(-1), units_}, options_.kernel_initializer, true,
                       options_.kernel_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", {units_}, options_.bias_initializer ? options_.bias_initializer : initializers::Zeros(),
                       true, options_.bias_regularizer);
}

Tensor DenseImpl::call(const Tensor& x, bool) {
  DF_CHECK(x.rank() >= 1 && (x.shape().dim(-1) < 0 || x.shape().dim(-1) == kernel_.shape()[0]), "[", name(),
           "] expects inputs with last dim ", kernel_.shape()[0], ", got ", x.shape());
  Tensor y = matmul(x, read(kernel_));
  if (options_.use_bias) y = y + read(bias_);
  return activations::apply(options_.activation, y);
}

Config DenseImpl::get_config() const {
  Config c = Layer::get_config();
  c["units"] = units_;
  c["activation"] = options_.activation.empty() ? "linear" : options_.activation;
  c["use_bias"] = options_.use_bias;
  c["kernel_initializer"] = initializers::serialize(options_.kernel_initializer, "GlorotUniform");
  c["bias_initializer"] = initializers::serialize(options_.bias_initializer, "Zeros");
  c["kernel_regularizer"] = regularizers::serialize(options_.kernel_regularizer);
  c["bias_regularizer"] = regularizers::serialize(options_.bias_regularizer);
  return c;
}

// --- Activation ---

ActivationImpl::ActivationImpl(std::string activation, std::string name)
    : Layer(std::move(name)), activation_(std::move(activation)) {
  activations::check(activation_);
  supports_masking_ = true;
}

Tensor ActivationImpl::call(const Tensor& x, bool) { return activations::apply(activation_, x); }

Config ActivationImpl::get_config() const {
  Config c = Layer::get_config();
  c["activation"] = activation_;
  return c;
}

// --- Flatten ---

Tensor FlattenImpl::call(const Tensor& x, bool) {
  DF_CHECK(x.rank() >= 1, "[", name(), "] expects inputs with a batch dim, got a scalar");
  int64_t rest = 1;
  for (int i = 1; i < x.rank(); ++i) {
    DF_CHECK(x.shape()[i] >= 0, "[", name(), "] needs every dim but the batch known, got ", x.shape());
    rest *= x.shape()[i];
  }
  return reshape(x, {x.shape()[0] >= 0 ? x.shape()[0] : -1, rest});
}

// --- Reshape ---

ReshapeImpl::ReshapeImpl(Shape target_shape, std::string name) : Layer(std::move(name)), target_(target_shape) {
  int unknown = 0;
  for (int i = 0; i < target_.rank(); ++i) {
    DF_CHECK(target_[i] > 0 || target_[i] == -1, "[Reshape] target dims must be positive or -1, got ", target_);
    unknown += target_[i] == -1;
  }
  DF_CHECK(unknown <= 1, "[Reshape] at most one target dim may be -1, got ", target_);
}

Tensor ReshapeImpl::call(const Tensor& x, bool) {
  DF_CHECK(x.rank() >= 1, "[", name(), "] expects inputs with a batch dim, got a scalar");
  std::vector<int64_t> dims{x.shape()[0]};
  int64_t known = 1, missing = -1;
  for (int i = 0; i < target_.rank(); ++i) {
    dims.push_back(target_[i]);
    if (target_[i] == -1) missing = i + 1;
    else known *= target_[i];
  }
  if (missing >= 0 && dims[0] < 0) {
    // Two unknowns for reshape: resolve the target's -1 from the static per-sample size.
    int64_t per_sample = 1;
    for (int i = 1; i < x.rank(); ++i) {
      DF_CHECK(x.shape()[i] >= 0, "[", name(), "] cannot infer target ", target_, " from input ", x.shape());
      per_sample *= x.shape()[i];
    }
    DF_CHECK(per_sample % known == 0, "[", name(), "] input ", x.shape(), " does not fit target ", target_);
    dims[size_t(missing)] = per_sample / known;
  }
  if (dims[0] < 0) dims[0] = -1;
  return reshape(x, Shape(dims));
}

Config ReshapeImpl::get_config() const {
  Config c = Layer::get_config();
  c["target_shape"] = target_.to_vector();
  return c;
}

// --- Dropout ---

DropoutImpl::DropoutImpl(double rate, std::optional<int64_t> seed, std::string name)
    : Layer(std::move(name)), rate_(rate), seed_(seed) {
  DF_CHECK(rate >= 0 && rate < 1, "[Dropout] rate must be in [0, 1), got ", rate);
  supports_masking_ = true;
}

Tensor DropoutImpl::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0) return x;
  return dropout(x, rate_, seed_);
}

Config DropoutImpl::get_config() const {
  Config c = Layer::get_config();
  c["rate"] = rate_;
  c["seed"] = seed_ ? Config(*seed_) : Config(nullptr);
  return c;
}

// --- registration (serialization.h) ---

namespace {

namespace ser = serialization;

const bool kRegistered = [] {
  register_layer("InputLayer", [](const Config& c) -> LayerPtr {
    // batch_shape (Keras 3) or batch_input_shape (Keras 2), the batch dim first.
    const Config& bs = c.contains("batch_shape") ? c.at("batch_shape") : c.at("batch_input_shape");
    std::vector<int64_t> dims;
    for (size_t i = 1; i < bs.size(); ++i) dims.push_back(bs[i].is_null() ? -1 : bs[i].get<int64_t>());
    const DType dt = dtype_from_name(ser::value_or<std::string>(c, "dtype", "float32"));
    return InputLayer(Shape(dims), dt, ser::name_of(c));
  });
  register_layer("Dense", [](const Config& c) -> LayerPtr {
    return Dense(c.at("units").get<int64_t>(),
                 DenseOptions{.activation = ser::activation_of(c),
                              .use_bias = ser::value_or(c, "use_bias", true),
                              .kernel_initializer = ser::initializer_of(c, "kernel_initializer", "GlorotUniform"),
                              .bias_initializer = ser::initializer_of(c, "bias_initializer", "Zeros"),
                              .kernel_regularizer = ser::regularizer_of(c, "kernel_regularizer"),
                              .bias_regularizer = ser::regularizer_of(c, "bias_regularizer"),
                              .name = ser::name_of(c)});
  });
  register_layer("Activation", [](const Config& c) -> LayerPtr {
    return Activation(ser::value_or<std::string>(c, "activation", "linear"), ser::name_of(c));
  });
  // keras.layers.ReLU in the forms Keras models use (MobileNet's ReLU(6.0)), rebuilt as
  // the equivalent Activation layer.
  register_layer("ReLU", [](const Config& c) -> LayerPtr {
    const double slope = ser::value_or(c, "negative_slope", 0.0), threshold = ser::value_or(c, "threshold", 0.0);
    const auto max_value = c.contains("max_value") && !c["max_value"].is_null()
                               ? std::optional<double>(c["max_value"].get<double>()) : std::nullopt;
    DF_CHECK(slope == 0 && threshold == 0 && (!max_value || *max_value == 6.0), "[keras.layers.deserialize] ReLU '",
             ser::name_of(c), "': only max_value None or 6 with negative_slope 0 and threshold 0 are supported, got ",
             c.dump());
    return Activation(max_value ? "relu6" : "relu", ser::name_of(c));
  });
  register_layer("Flatten", [](const Config& c) -> LayerPtr { return Flatten(ser::name_of(c)); });
  register_layer("Reshape", [](const Config& c) -> LayerPtr {
    return Reshape(Shape(ser::ints_of(c, "target_shape")), ser::name_of(c));
  });
  register_layer("Dropout", [](const Config& c) -> LayerPtr {
    return Dropout(c.at("rate").get<double>(), ser::optional_int_of(c, "seed"),
                   ser::name_of(c));
  });
  return true;
}();

}  // namespace
}  // namespace deepflow::keras::layers
