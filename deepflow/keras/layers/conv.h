// SPDX-License-Identifier: Apache-2.0
// Convolution layers (tf.keras.layers): Conv1D, Conv2D, Conv2DTranspose, DepthwiseConv2D,
// SeparableConv2D. Channels last: [batch, (height,) width, channels].
//
//   auto conv = keras::layers::Conv2D(32, {3, 3}, {.padding = "same", .activation = "relu"});
//   Tensor y = conv(x);                       // x [b, 28, 28, 1] -> y [b, 28, 28, 32]
//   auto down = keras::layers::Conv2D(64, 3, {.strides = 2});
//
// Output sizes follow Keras: "valid" gives ceil((n - (k - 1) * d) / s), "same" ceil(n / s);
// Conv2DTranspose gives n * s ("same") or n * s + max(k' - s, 0) ("valid"), k' the dilated
// kernel, or (n - 1) * s + k' - 2 * pad + output_padding when output_padding is set.
// As in Keras, strides > 1 together with dilation_rate > 1 is refused.
#pragma once

#include <concepts>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "deepflow/keras/layer.h"

namespace deepflow::keras::layers {

/// Keras's "int or tuple" arguments (kernel_size, strides, dilation_rate, pool_size): one int
/// for every spatial dim, or one int per dim: `3` or `{3, 3}`. Empty means "not given".
struct IntTuple {
  std::vector<int64_t> values;

  IntTuple() = default;
  IntTuple(int64_t v) : values{v} {}                                // NOLINT: 3 stands for {3, 3}
  IntTuple(std::initializer_list<int64_t> v) : values(v) {}
  IntTuple(std::vector<int64_t> v) : values(std::move(v)) {}        // NOLINT
  bool empty() const { return values.empty(); }
  /// `rank` ints: one value repeated, or the `rank` values given. Throws
  /// "[<layer>] <arg> must be 1 or <rank> positive ints, got [..]" (zeros allowed with allow_zero).
  std::vector<int64_t> expand(const char* layer, const char* arg, int rank, bool allow_zero = false) const;
};

struct Conv1DOptions {
  IntTuple strides = 1;
  /// "valid", "same" or "causal" (left padding by dilation_rate * (kernel_size - 1)); any case.
  std::string padding = "valid";
  IntTuple dilation_rate = 1;
  /// The channels split into `groups` convolved separately; filters and input channels must divide.
  int64_t groups = 1;
  std::string activation;  ///< activations.h name; "" for none
  bool use_bias = true;
  InitializerPtr kernel_initializer;  ///< null: GlorotUniform
  InitializerPtr bias_initializer;    ///< null: Zeros
  RegularizerPtr kernel_regularizer, bias_regularizer;
  std::string name;
};

// --- Conv1D --- [b, steps, c_in] -> [b, new_steps, filters]; kernel [k, c_in / groups, filters].
class Conv1DImpl : public Layer {
 public:
  Conv1DImpl(int64_t filters, IntTuple kernel_size, Conv1DOptions options = {});
  void build(const Shape& input_shape) override;
  using Layer::build;
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "Conv1D"; }
  Config get_config() const override;
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t filters_, kernel_size_, stride_, dilation_;
  Conv1DOptions options_;
  Variable kernel_, bias_;
};

struct Conv2DOptions {
  IntTuple strides = 1;
  std::string padding = "valid";  ///< "valid" or "same", any case
  IntTuple dilation_rate = 1;
  /// The channels split into `groups` convolved separately; filters and input channels must divide.
  int64_t groups = 1;
  std::string activation;  ///< activations.h name; "" for none
  bool use_bias = true;
  InitializerPtr kernel_initializer;  ///< null: GlorotUniform
  InitializerPtr bias_initializer;    ///< null: Zeros
  RegularizerPtr kernel_regularizer, bias_regularizer;
  std::string name;
};

// --- Conv2D --- [b, h, w, c_in] -> [b, oh, ow, filters]; kernel [kh, kw, c_in / groups, filters].
class Conv2DImpl : public Layer {
 public:
  Conv2DImpl(int64_t filters, IntTuple kernel_size, Conv2DOptions options = {});
  void build(const Shape& input_shape) override;
  using Layer::build;
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "Conv2D"; }
  Config get_config() const override;
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t filters_;
  std::vector<int64_t> kernel_size_, strides_, dilation_;
  Conv2DOptions options_;
  Variable kernel_, bias_;
};

struct Conv2DTransposeOptions {
  IntTuple strides = 1;
  std::string padding = "valid";  ///< "valid" or "same", any case
  /// Extra rows/columns on the bottom/right of the output, each < its stride; empty: unset.
  IntTuple output_padding;
  IntTuple dilation_rate = 1;
  std::string activation;  ///< activations.h name; "" for none
  bool use_bias = true;
  InitializerPtr kernel_initializer;  ///< null: GlorotUniform
  InitializerPtr bias_initializer;    ///< null: Zeros
  RegularizerPtr kernel_regularizer, bias_regularizer;
  std::string name;
};

// --- Conv2DTranspose --- [b, h, w, c_in] -> [b, oh, ow, filters] (sizes: file comment);
// kernel [kh, kw, filters, c_in]. The input's height and width must be known.
class Conv2DTransposeImpl : public Layer {
 public:
  Conv2DTransposeImpl(int64_t filters, IntTuple kernel_size, Conv2DTransposeOptions options = {});
  void build(const Shape& input_shape) override;
  using Layer::build;
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "Conv2DTranspose"; }
  Config get_config() const override;
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t filters_;
  std::vector<int64_t> kernel_size_, strides_, dilation_, output_padding_;  // output_padding_ empty: unset
  Conv2DTransposeOptions options_;
  Variable kernel_, bias_;
};

struct DepthwiseConv2DOptions {
  IntTuple strides = 1;
  std::string padding = "valid";  ///< "valid" or "same", any case
  /// Output channels per input channel.
  int64_t depth_multiplier = 1;
  IntTuple dilation_rate = 1;
  std::string activation;  ///< activations.h name; "" for none
  bool use_bias = true;
  InitializerPtr depthwise_initializer;  ///< null: GlorotUniform
  InitializerPtr bias_initializer;       ///< null: Zeros
  RegularizerPtr depthwise_regularizer, bias_regularizer;
  std::string name;
};

// --- DepthwiseConv2D --- [b, h, w, c] -> [b, oh, ow, c * depth_multiplier]: each channel
// convolved with its own depth_multiplier filters (output channel i * m + j, as TF);
// kernel [kh, kw, c, depth_multiplier] (named "kernel", as Keras 3).
class DepthwiseConv2DImpl : public Layer {
 public:
  explicit DepthwiseConv2DImpl(IntTuple kernel_size, DepthwiseConv2DOptions options = {});
  void build(const Shape& input_shape) override;
  using Layer::build;
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "DepthwiseConv2D"; }
  Config get_config() const override;
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  std::vector<int64_t> kernel_size_, strides_, dilation_;
  DepthwiseConv2DOptions options_;
  Variable kernel_, bias_;
};

struct SeparableConv2DOptions {
  IntTuple strides = 1;
  std::string padding = "valid";  ///< "valid" or "same", any case
  IntTuple dilation_rate = 1;
  /// Depthwise output channels per input channel.
  int64_t depth_multiplier = 1;
  std::string activation;  ///< activations.h name; "" for none
  bool use_bias = true;
  InitializerPtr depthwise_initializer;  ///< null: GlorotUniform
  InitializerPtr pointwise_initializer;  ///< null: GlorotUniform
  InitializerPtr bias_initializer;       ///< null: Zeros
  RegularizerPtr depthwise_regularizer, pointwise_regularizer, bias_regularizer;
  std::string name;
};

// --- SeparableConv2D --- [b, h, w, c] -> [b, oh, ow, filters]: a depthwise conv (strides,
// padding, dilation) then a 1x1 conv; depthwise_kernel [kh, kw, c, depth_multiplier],
// pointwise_kernel [1, 1, c * depth_multiplier, filters].
class SeparableConv2DImpl : public Layer {
 public:
  SeparableConv2DImpl(int64_t filters, IntTuple kernel_size, SeparableConv2DOptions options = {});
  void build(const Shape& input_shape) override;
  using Layer::build;
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "SeparableConv2D"; }
  Config get_config() const override;
  const Variable& depthwise_kernel() const { return depthwise_; }
  const Variable& pointwise_kernel() const { return pointwise_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t filters_;
  std::vector<int64_t> kernel_size_, strides_, dilation_;
  SeparableConv2DOptions options_;
  Variable depthwise_, pointwise_, bias_;
};

// Holders (layer.h). They declare the layer's own constructor instead of DF_KERAS_LAYER's
// forwarding one, so braced arguments work: Conv2D(32, {3, 3}, {.padding = "same"}),
// DepthwiseConv2D({3, 3}). A std::shared_ptr of the layer converts as with every holder.
#define DF_KERAS_HOLDER_FROM_PTR_(Name)                                                       \
  template <class I>                                                                          \
    requires std::same_as<I, Name##Impl>                                                      \
  Name(std::shared_ptr<I> impl) : LayerHolder<Name##Impl>(std::move(impl)) {} /* NOLINT */

class Conv1D : public LayerHolder<Conv1DImpl> {
 public:
  Conv1D(int64_t filters, IntTuple kernel_size, Conv1DOptions options = {})
      : LayerHolder(std::make_shared<Conv1DImpl>(filters, std::move(kernel_size), std::move(options))) {}
  DF_KERAS_HOLDER_FROM_PTR_(Conv1D)
};

class Conv2D : public LayerHolder<Conv2DImpl> {
 public:
  Conv2D(int64_t filters, IntTuple kernel_size, Conv2DOptions options = {})
      : LayerHolder(std::make_shared<Conv2DImpl>(filters, std::move(kernel_size), std::move(options))) {}
  DF_KERAS_HOLDER_FROM_PTR_(Conv2D)
};

class Conv2DTranspose : public LayerHolder<Conv2DTransposeImpl> {
 public:
  Conv2DTranspose(int64_t filters, IntTuple kernel_size, Conv2DTransposeOptions options = {})
      : LayerHolder(std::make_shared<Conv2DTransposeImpl>(filters, std::move(kernel_size), std::move(options))) {}
  DF_KERAS_HOLDER_FROM_PTR_(Conv2DTranspose)
};

class DepthwiseConv2D : public LayerHolder<DepthwiseConv2DImpl> {
 public:
  explicit DepthwiseConv2D(IntTuple kernel_size, DepthwiseConv2DOptions options = {})
      : LayerHolder(std::make_shared<DepthwiseConv2DImpl>(std::move(kernel_size), std::move(options))) {}
  DF_KERAS_HOLDER_FROM_PTR_(DepthwiseConv2D)
};

class SeparableConv2D : public LayerHolder<SeparableConv2DImpl> {
 public:
  SeparableConv2D(int64_t filters, IntTuple kernel_size, SeparableConv2DOptions options = {})
      : LayerHolder(std::make_shared<SeparableConv2DImpl>(filters, std::move(kernel_size), std::move(options))) {}
  DF_KERAS_HOLDER_FROM_PTR_(SeparableConv2D)
};

}  // namespace deepflow::keras::layers
