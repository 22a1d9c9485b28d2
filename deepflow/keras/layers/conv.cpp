// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/layers/conv.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

#include "deepflow/core/error.h"
#include "deepflow/keras/activations.h"
#include "deepflow/keras/serialization.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras::layers {
namespace {

InitializerPtr or_zeros(const InitializerPtr& init) { return init ? init : initializers::Zeros(); }

std::string str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// Keras lower-cases padding; the ops take it upper-case.
std::string standardize_padding(const char* layer, const std::string& padding, bool allow_causal) {
  std::string p = padding;
  std::transform(p.begin(), p.end(), p.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  const bool ok = p == "valid" || p == "same" || (allow_causal && p == "causal");
  DF_CHECK(ok, "[", layer, "] padding must be \"valid\"", allow_causal ? ", \"same\" or \"causal\"" : " or \"same\"",
           ", got \"", padding, "\"");
  return p;
}
std::string upper(std::string p) {
  std::transform(p.begin(), p.end(), p.begin(), [](unsigned char ch) { return char(std::toupper(ch)); });
  return p;
}

void check_strides_dilation(const char* layer, const std::vector<int64_t>& s, const std::vector<int64_t>& d) {
  DF_CHECK(*std::max_element(s.begin(), s.end()) == 1 || *std::max_element(d.begin(), d.end()) == 1, "[", layer,
           "] strides > 1 are not supported together with dilation_rate > 1, got strides ", str(s),
           " and dilation_rate ", str(d));
}

// The input rank and channel checks shared by build and call.
void check_input(const Layer& l, const Shape& s, int rank, const char* dims) {
  DF_CHECK(s.rank() == rank, "[", l.name(), "] expects inputs of rank ", rank, " ", dims, ", got ", s);
}
int64_t known_channels(const Layer& l, const Shape& s) {
  DF_CHECK(s.dim(-1) >= 0, "[", l.name(), "] needs inputs with a known channel dim, got ", s);
  return s.dim(-1);
}
void check_channels(const Layer& l, const Tensor& x, int64_t want) {
  DF_CHECK(x.shape().dim(-1) < 0 || x.shape().dim(-1) == want, "[", l.name(), "] expects inputs with ", want,
           " channels, got ", x.shape());
}

// The fields every conv config shares (Keras's BaseConv.get_config).
void common_config(Config& c, const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                   const std::string& padding, const std::vector<int64_t>& dilation, const std::string& activation,
                   bool use_bias) {
  c["kernel_size"] = kernel;
  c["strides"] = strides;
  c["padding"] = padding;
  c["data_format"] = "channels_last";
  c["dilation_rate"] = dilation;
  c["activation"] = activation.empty() ? "linear" : activation;
  c["use_bias"] = use_bias;
}

}  // namespace

std::vector<int64_t> IntTuple::expand(const char* layer, const char* arg, int rank, bool allow_zero) const {
  bool ok = values.size() == 1 || values.size() == size_t(rank);
  for (int64_t v : values) ok = ok && (allow_zero ? v >= 0 : v > 0);
  DF_CHECK(ok, "[", layer, "] ", arg, " must be 1 or ", rank, allow_zero ? " non-negative" : " positive",
           " ints, got ", str(values));
  return values.size() == 1 ? std::vector<int64_t>(size_t(rank), values[0]) : values;
}

// --- Conv1D ---

Conv1DImpl::Conv1DImpl(int64_t filters, IntTuple kernel_size, Conv1DOptions options)
    : Layer(options.name), filters_(filters), options_(std::move(options)) {
  DF_CHECK(filters > 0, "[Conv1D] filters must be positive, got ", filters);
  kernel_size_ = kernel_size.expand("Conv1D", "kernel_size", 1)[0];
  stride_ = options_.strides.expand("Conv1D", "strides", 1)[0];
  dilation_ = options_.dilation_rate.expand("Conv1D", "dilation_rate", 1)[0];
  check_strides_dilation("Conv1D", {stride_}, {dilation_});
  options_.padding = standardize_padding("Conv1D", options_.padding, true);
  DF_CHECK(options_.groups > 0, "[Conv1D] groups must be positive, got ", options_.groups);
  DF_CHECK(filters % options_.groups == 0, "[Conv1D] filters ", filters, " are not divisible by groups ",
           options_.groups);
  activations::check(options_.activation);
}

void Conv1DImpl::build(const Shape& input_shape) {
  check_input(*this, input_shape, 3, "(batch, steps, channels)");
  const int64_t c = known_channels(*this, input_shape);
  DF_CHECK(c % options_.groups == 0, "[", name(), "] input channels ", c, " are not divisible by groups ",
           options_.groups, " (input ", input_shape, ")");
  kernel_ = add_weight("kernel", {kernel_size_, c / options_.groups, filters_}, options_.kernel_initializer, true,
                       options_.kernel_regularizer);
  if (options_.use_bias) bias_ = add_weight("bias", {filters_}, or_zeros(options_.bias_initializer), true,
                                            options_.bias_regularizer);
}

Tensor Conv1DImpl::call(const Tensor& x, bool) {
  check_input(*this, x.shape(), 3, "(batch, steps, channels)");
  check_channels(*this, x, kernel_.shape()[1] * options_.groups);
  Tensor in = x;
  std::string padding = options_.padding;
  if (padding == "causal") {
    // Keras: pad the start so output t sees inputs up to t only, then a valid conv.
    in = pad(in, {{0, 0}, {dilation_ * (kernel_size_ - 1), 0}, {0, 0}});
    padding = "valid";
  }
  // A conv2d over [b, 1, steps, c] with a [1, k, c / groups, filters] kernel.
  Tensor y = conv2d(expand_dims(in, 1), expand_dims(read(kernel_), 0), {1, stride_}, upper(padding), {1, dilation_});
  y = squeeze(y, {1});
  if (options_.use_bias) y = y + read(bias_);
  return activations::apply(options_.activation, y);
}

Config Conv1DImpl::get_config() const {
  Config c = Layer::get_config();
  c["filters"] = filters_;
  common_config(c, {kernel_size_}, {stride_}, options_.padding, {dilation_}, options_.activation, options_.use_bias);
  c["groups"] = options_.groups;
  c["kernel_initializer"] = initializers::serialize(options_.kernel_initializer, "GlorotUniform");
  c["bias_initializer"] = initializers::serialize(options_.bias_initializer, "Zeros");
  c["kernel_regularizer"] = regularizers::serialize(options_.kernel_regularizer);
  c["bias_regularizer"] = regularizers::serialize(options_.bias_regularizer);
  return c;
}

// --- Conv2D ---

Conv2DImpl::Conv2DImpl(int64_t filters, IntTuple kernel_size, Conv2DOptions options)
    : Layer(options.name), filters_(filters), options_(std::move(options)) {
  DF_CHECK(filters > 0, "[Conv2D] filters must be positive, got ", filters);
  kernel_size_ = kernel_size.expand("Conv2D", "kernel_size", 2);
  strides_ = options_.strides.expand("Conv2D", "strides", 2);
  dilation_ = options_.dilation_rate.expand("Conv2D", "dilation_rate", 2);
  check_strides_dilation("Conv2D", strides_, dilation_);
  options_.padding = standardize_padding("Conv2D", options_.padding, false);
  DF_CHECK(options_.groups > 0, "[Conv2D] groups must be positive, got ", options_.groups);
  DF_CHECK(filters % options_.groups == 0, "[Conv2D] filters ", filters, " are not divisible by groups ",
           options_.groups);
  activations::check(options_.activation);
}

void Conv2DImpl::build(const Shape& input_shape) {
  check_input(*this, input_shape, 4, "(batch, height, width, channels)");
  const int64_t c = known_channels(*this, input_shape);
  DF_CHECK(c % options_.groups == 0, "[", name(), "] input channels ", c, " are not divisible by groups ",
           options_.groups, " (input ", input_shape, ")");
  kernel_ = add_weight("kernel", {kernel_size_[0], kernel_size_[1], c / options_.groups, filters_},
                       options_.kernel_initializer, true, options_.kernel_regularizer);
  if (options_.use_bias) bias_ = add_weight("bias", {filters_}, or_zeros(options_.bias_initializer), true,
                                            options_.bias_regularizer);
}

Tensor Conv2DImpl::call(const Tensor& x, bool) {
  check_input(*this, x.shape(), 4, "(batch, height, width, channels)");
  check_channels(*this, x, kernel_.shape()[2] * options_.groups);
  Tensor y = conv2d(x, read(kernel_), strides_, upper(options_.padding), dilation_);
  if (options_.use_bias) y = y + read(bias_);
  return activations::apply(options_.activation, y);
}

Config Conv2DImpl::get_config() const {
  Config c = Layer::get_config();
  c["filters"] = filters_;
  common_config(c, kernel_size_, strides_, options_.padding, dilation_, options_.activation, options_.use_bias);
  c["groups"] = options_.groups;
  c["kernel_initializer"] = initializers::serialize(options_.kernel_initializer, "GlorotUniform");
  c["bias_initializer"] = initializers::serialize(options_.bias_initializer, "Zeros");
  c["kernel_regularizer"] = regularizers::serialize(options_.kernel_regularizer);
  c["bias_regularizer"] = regularizers::serialize(options_.bias_regularizer);
  return c;
}

// --- Conv2DTranspose ---

Conv2DTransposeImpl::Conv2DTransposeImpl(int64_t filters, IntTuple kernel_size, Conv2DTransposeOptions options)
    : Layer(options.name), filters_(filters), options_(std::move(options)) {
  const char* cls = "Conv2DTranspose";
  DF_CHECK(filters > 0, "[", cls, "] filters must be positive, got ", filters);
  kernel_size_ = kernel_size.expand(cls, "kernel_size", 2);
  strides_ = options_.strides.expand(cls, "strides", 2);
  dilation_ = options_.dilation_rate.expand(cls, "dilation_rate", 2);
  check_strides_dilation(cls, strides_, dilation_);
  options_.padding = standardize_padding(cls, options_.padding, false);
  if (!options_.output_padding.empty()) {
    output_padding_ = options_.output_padding.expand(cls, "output_padding", 2, true);
    for (int i = 0; i < 2; ++i)
      DF_CHECK(output_padding_[i] < strides_[i], "[", cls, "] output_padding must be smaller than strides, got ",
               "output_padding ", str(output_padding_), " and strides ", str(strides_));
  }
  activations::check(options_.activation);
}

void Conv2DTransposeImpl::build(const Shape& input_shape) {
  check_input(*this, input_shape, 4, "(batch, height, width, channels)");
  const int64_t c = known_channels(*this, input_shape);
  kernel_ = add_weight("kernel", {kernel_size_[0], kernel_size_[1], filters_, c}, options_.kernel_initializer, true,
                       options_.kernel_regularizer);
  if (options_.use_bias) bias_ = add_weight("bias", {filters_}, or_zeros(options_.bias_initializer), true,
                                            options_.bias_regularizer);
}

Tensor Conv2DTransposeImpl::call(const Tensor& x, bool) {
  const Shape& s = x.shape();
  check_input(*this, s, 4, "(batch, height, width, channels)");
  check_channels(*this, x, kernel_.shape()[3]);
  // conv2d_transpose takes a static output shape; only its batch may be -1 (taken from x
  // when the graph runs).
  DF_CHECK(s[1] >= 0 && s[2] >= 0, "[", name(), "] needs inputs with a known height and width, got ", s);
  const bool same = options_.padding == "same";
  Shape out{s[0] >= 0 ? s[0] : -1, 0, 0, filters_};
  for (int i = 0; i < 2; ++i) {
    const int64_t n = s[i + 1], st = strides_[size_t(i)];
    const int64_t k = (kernel_size_[size_t(i)] - 1) * dilation_[size_t(i)] + 1;  // dilated kernel
    int64_t len;
    if (output_padding_.empty()) len = same ? n * st : n * st + std::max<int64_t>(k - st, 0);
    else len = (n - 1) * st + k - 2 * (same ? k / 2 : 0) + output_padding_[size_t(i)];  // Keras's deconv_output_length
    out[i + 1] = len;
  }
  Tensor y = conv2d_transpose(x, read(kernel_), out, strides_, upper(options_.padding), dilation_);
  if (options_.use_bias) y = y + read(bias_);
  return activations::apply(options_.activation, y);
}

Config Conv2DTransposeImpl::get_config() const {
  Config c = Layer::get_config();
  c["filters"] = filters_;
  common_config(c, kernel_size_, strides_, options_.padding, dilation_, options_.activation, options_.use_bias);
  c["output_padding"] = output_padding_.empty() ? Config(nullptr) : Config(output_padding_);
  c["kernel_initializer"] = initializers::serialize(options_.kernel_initializer, "GlorotUniform");
  c["bias_initializer"] = initializers::serialize(options_.bias_initializer, "Zeros");
  c["kernel_regularizer"] = regularizers::serialize(options_.kernel_regularizer);
  c["bias_regularizer"] = regularizers::serialize(options_.bias_regularizer);
  return c;
}

// --- DepthwiseConv2D ---

DepthwiseConv2DImpl::DepthwiseConv2DImpl(IntTuple kernel_size, DepthwiseConv2DOptions options)
    : Layer(options.name), options_(std::move(options)) {
  const char* cls = "DepthwiseConv2D";
  kernel_size_ = kernel_size.expand(cls, "kernel_size", 2);
  strides_ = options_.strides.expand(cls, "strides", 2);
  dilation_ = options_.dilation_rate.expand(cls, "dilation_rate", 2);
  check_strides_dilation(cls, strides_, dilation_);
  options_.padding = standardize_padding(cls, options_.padding, false);
  DF_CHECK(options_.depth_multiplier > 0, "[", cls, "] depth_multiplier must be positive, got ",
           options_.depth_multiplier);
  activations::check(options_.activation);
}

void DepthwiseConv2DImpl::build(const Shape& input_shape) {
  check_input(*this, input_shape, 4, "(batch, height, width, channels)");
  const int64_t c = known_channels(*this, input_shape), m = options_.depth_multiplier;
  // Keras 3 names the depthwise weight "kernel" (tf.keras 2: "depthwise_kernel").
  kernel_ = add_weight("kernel", {kernel_size_[0], kernel_size_[1], c, m}, options_.depthwise_initializer, true,
                       options_.depthwise_regularizer);
  if (options_.use_bias) bias_ = add_weight("bias", {c * m}, or_zeros(options_.bias_initializer), true,
                                            options_.bias_regularizer);
}

Tensor DepthwiseConv2DImpl::call(const Tensor& x, bool) {
  check_input(*this, x.shape(), 4, "(batch, height, width, channels)");
  check_channels(*this, x, kernel_.shape()[2]);
  Tensor y = depthwise_conv2d(x, read(kernel_), strides_, upper(options_.padding), dilation_);
  if (options_.use_bias) y = y + read(bias_);
  return activations::apply(options_.activation, y);
}

Config DepthwiseConv2DImpl::get_config() const {
  Config c = Layer::get_config();
  c["depth_multiplier"] = options_.depth_multiplier;
  common_config(c, kernel_size_, strides_, options_.padding, dilation_, options_.activation, options_.use_bias);
  c["depthwise_initializer"] = initializers::serialize(options_.depthwise_initializer, "GlorotUniform");
  c["bias_initializer"] = initializers::serialize(options_.bias_initializer, "Zeros");
  c["depthwise_regularizer"] = regularizers::serialize(options_.depthwise_regularizer);
  c["bias_regularizer"] = regularizers::serialize(options_.bias_regularizer);
  return c;
}

// --- SeparableConv2D ---

SeparableConv2DImpl::SeparableConv2DImpl(int64_t filters, IntTuple kernel_size, SeparableConv2DOptions options)
    : Layer(options.name), filters_(filters), options_(std::move(options)) {
  const char* cls = "SeparableConv2D";
  DF_CHECK(filters > 0, "[", cls, "] filters must be positive, got ", filters);
  kernel_size_ = kernel_size.expand(cls, "kernel_size", 2);
  strides_ = options_.strides.expand(cls, "strides", 2);
  dilation_ = options_.dilation_rate.expand(cls, "dilation_rate", 2);
  check_strides_dilation(cls, strides_, dilation_);
  options_.padding = standardize_padding(cls, options_.padding, false);
  DF_CHECK(options_.depth_multiplier > 0, "[", cls, "] depth_multiplier must be positive, got ",
           options_.depth_multiplier);
  activations::check(options_.activation);
}

void SeparableConv2DImpl::build(const Shape& input_shape) {
  check_input(*this, input_shape, 4, "(batch, height, width, channels)");
  const int64_t c = known_channels(*this, input_shape), m = options_.depth_multiplier;
  depthwise_ = add_weight("depthwise_kernel", {kernel_size_[0], kernel_size_[1], c, m},
                          options_.depthwise_initializer, true, options_.depthwise_regularizer);
  pointwise_ = add_weight("pointwise_kernel", {1, 1, c * m, filters_}, options_.pointwise_initializer, true,
                          options_.pointwise_regularizer);
  if (options_.use_bias) bias_ = add_weight("bias", {filters_}, or_zeros(options_.bias_initializer), true,
                                            options_.bias_regularizer);
}

Tensor SeparableConv2DImpl::call(const Tensor& x, bool) {
  check_input(*this, x.shape(), 4, "(batch, height, width, channels)");
  check_channels(*this, x, depthwise_.shape()[2]);
  // tf.nn.separable_conv2d: strides, padding and dilation apply to the depthwise step.
  Tensor y = depthwise_conv2d(x, read(depthwise_), strides_, upper(options_.padding), dilation_);
  y = conv2d(y, read(pointwise_));
  if (options_.use_bias) y = y + read(bias_);
  return activations::apply(options_.activation, y);
}

Config SeparableConv2DImpl::get_config() const {
  Config c = Layer::get_config();
  c["filters"] = filters_;
  c["depth_multiplier"] = options_.depth_multiplier;
  common_config(c, kernel_size_, strides_, options_.padding, dilation_, options_.activation, options_.use_bias);
  c["depthwise_initializer"] = initializers::serialize(options_.depthwise_initializer, "GlorotUniform");
  c["pointwise_initializer"] = initializers::serialize(options_.pointwise_initializer, "GlorotUniform");
  c["bias_initializer"] = initializers::serialize(options_.bias_initializer, "Zeros");
  c["depthwise_regularizer"] = regularizers::serialize(options_.depthwise_regularizer);
  c["pointwise_regularizer"] = regularizers::serialize(options_.pointwise_regularizer);
  c["bias_regularizer"] = regularizers::serialize(options_.bias_regularizer);
  return c;
}

// --- registration (serialization.h) ---

namespace {

namespace ser = serialization;

// The options every conv shares, read back from common_config's fields.
template <class Options>
Options conv_options(const Config& c, const char* kernel_init_key = "kernel_initializer",
                     const char* kernel_reg_key = "kernel_regularizer") {
  Options o;
  if (c.contains("strides")) o.strides = ser::ints_of(c, "strides");
  o.padding = ser::value_or<std::string>(c, "padding", "valid");
  if (c.contains("dilation_rate")) o.dilation_rate = ser::ints_of(c, "dilation_rate");
  o.activation = ser::activation_of(c);
  o.use_bias = ser::value_or(c, "use_bias", true);
  o.bias_initializer = ser::initializer_of(c, "bias_initializer", "Zeros");
  o.bias_regularizer = ser::regularizer_of(c, "bias_regularizer");
  o.name = ser::name_of(c);
  if constexpr (requires { o.kernel_initializer; }) {
    o.kernel_initializer = ser::initializer_of(c, kernel_init_key, "GlorotUniform");
    o.kernel_regularizer = ser::regularizer_of(c, kernel_reg_key);
  }
  return o;
}

void check_channels_last(const Config& c) {
  DF_CHECK(ser::value_or<std::string>(c, "data_format", "channels_last") == "channels_last",
           "[keras.layers.deserialize] only data_format \"channels_last\" is supported, got ",
           c.at("data_format").dump());
}

const bool kRegistered = [] {
  register_layer("Conv1D", [](const Config& c) -> LayerPtr {
    check_channels_last(c);
    auto o = conv_options<Conv1DOptions>(c);
    o.groups = ser::value_or<int64_t>(c, "groups", 1);
    return Conv1D(c.at("filters").get<int64_t>(), ser::ints_of(c, "kernel_size"), std::move(o));
  });
  register_layer("Conv2D", [](const Config& c) -> LayerPtr {
    check_channels_last(c);
    auto o = conv_options<Conv2DOptions>(c);
    o.groups = ser::value_or<int64_t>(c, "groups", 1);
    return Conv2D(c.at("filters").get<int64_t>(), ser::ints_of(c, "kernel_size"), std::move(o));
  });
  register_layer("Conv2DTranspose", [](const Config& c) -> LayerPtr {
    check_channels_last(c);
    auto o = conv_options<Conv2DTransposeOptions>(c);
    if (c.contains("output_padding") && !c["output_padding"].is_null()) o.output_padding = ser::ints_of(c, "output_padding");
    return Conv2DTranspose(c.at("filters").get<int64_t>(), ser::ints_of(c, "kernel_size"), std::move(o));
  });
  register_layer("DepthwiseConv2D", [](const Config& c) -> LayerPtr {
    check_channels_last(c);
    auto o = conv_options<DepthwiseConv2DOptions>(c);
    o.depth_multiplier = ser::value_or<int64_t>(c, "depth_multiplier", 1);
    o.depthwise_initializer = ser::initializer_of(c, "depthwise_initializer", "GlorotUniform");
    o.depthwise_regularizer = ser::regularizer_of(c, "depthwise_regularizer");
    return DepthwiseConv2D(ser::ints_of(c, "kernel_size"), std::move(o));
  });
  register_layer("SeparableConv2D", [](const Config& c) -> LayerPtr {
    check_channels_last(c);
    auto o = conv_options<SeparableConv2DOptions>(c);
    o.depth_multiplier = ser::value_or<int64_t>(c, "depth_multiplier", 1);
    o.depthwise_initializer = ser::initializer_of(c, "depthwise_initializer", "GlorotUniform");
    o.pointwise_initializer = ser::initializer_of(c, "pointwise_initializer", "GlorotUniform");
    o.depthwise_regularizer = ser::regularizer_of(c, "depthwise_regularizer");
    o.pointwise_regularizer = ser::regularizer_of(c, "pointwise_regularizer");
    return SeparableConv2D(c.at("filters").get<int64_t>(), ser::ints_of(c, "kernel_size"), std::move(o));
  });
  return true;
}();

}  // namespace
}  // namespace deepflow::keras::layers
