// SPDX-License-Identifier: Apache-2.0
// Pooling layers (tf.keras.layers): MaxPooling1D/2D, AveragePooling1D/2D and the global
// poolings GlobalAveragePooling1D/2D, GlobalMaxPooling1D/2D. Channels last.
//
//   Tensor y = keras::layers::MaxPooling2D()(x);                    // [b, 28, 28, c] -> [b, 14, 14, c]
//   Tensor z = keras::layers::AveragePooling2D({3, 3}, {.strides = 1, .padding = "same"})(x);
//   Tensor g = keras::layers::GlobalAveragePooling2D({.keepdims = true})(x);   // [b, 1, 1, c]
//
// Output sizes follow Keras: "valid" gives floor((n - pool) / stride) + 1, "same" ceil(n / stride);
// "same" average pooling divides by the cells inside the input (TensorFlow).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "deepflow/keras/layer.h"
#include "deepflow/keras/layers/conv.h"  // IntTuple

namespace deepflow::keras::layers {

struct PoolingOptions {
  /// Empty: pool_size (Keras's strides=None).
  IntTuple strides;
  std::string padding = "valid";  ///< "valid" or "same", any case
  std::string name;
};

/// The shared windowed pooling: rank 1 ([b, steps, c]) or 2 ([b, h, w, c]), max or average.
class PoolingImpl : public Layer {
 public:
  PoolingImpl(const char* class_name, int rank, bool max, IntTuple pool_size, PoolingOptions options);
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  std::string class_name() const override { return class_name_; }
  Config get_config() const override;

 private:
  const char* class_name_;
  int rank_;
  bool max_;
  std::vector<int64_t> pool_size_, strides_;
  std::string padding_;
};

// --- MaxPooling1D --- [b, steps, c] -> [b, new_steps, c], the max of each window.
class MaxPooling1DImpl : public PoolingImpl {
 public:
  explicit MaxPooling1DImpl(IntTuple pool_size = 2, PoolingOptions options = {})
      : PoolingImpl("MaxPooling1D", 1, true, std::move(pool_size), std::move(options)) {}
};
// --- AveragePooling1D --- [b, steps, c] -> [b, new_steps, c], the mean of each window.
class AveragePooling1DImpl : public PoolingImpl {
 public:
  explicit AveragePooling1DImpl(IntTuple pool_size = 2, PoolingOptions options = {})
      : PoolingImpl("AveragePooling1D", 1, false, std::move(pool_size), std::move(options)) {}
};
// --- MaxPooling2D --- [b, h, w, c] -> [b, oh, ow, c], the max of each window.
class MaxPooling2DImpl : public PoolingImpl {
 public:
  explicit MaxPooling2DImpl(IntTuple pool_size = 2, PoolingOptions options = {})
      : PoolingImpl("MaxPooling2D", 2, true, std::move(pool_size), std::move(options)) {}
};
// --- AveragePooling2D --- [b, h, w, c] -> [b, oh, ow, c], the mean of each window.
class AveragePooling2DImpl : public PoolingImpl {
 public:
  explicit AveragePooling2DImpl(IntTuple pool_size = 2, PoolingOptions options = {})
      : PoolingImpl("AveragePooling2D", 2, false, std::move(pool_size), std::move(options)) {}
};

struct GlobalPoolingOptions {
  /// Keep the pooled dims as size 1: [b, 1, 1, c] (2D) or [b, 1, c] (1D).
  bool keepdims = false;
  std::string name;
};

/// The shared global pooling over every spatial dim: [b, ..., c] -> [b, c].
class GlobalPoolingImpl : public Layer {
 public:
  GlobalPoolingImpl(const char* class_name, int rank, bool max, GlobalPoolingOptions options);
  Tensor call(const Tensor& x, bool training) override;
  using Layer::call;
  /// GlobalAveragePooling1D with a mask [b, steps]: the mean over the kept steps.
  TensorList call_masked(const TensorList& inputs, const TensorList& masks, bool training) override;
  std::string class_name() const override { return class_name_; }
  Config get_config() const override;

 private:
  const char* class_name_;
  int rank_;
  bool max_;
  bool keepdims_;
};

// --- GlobalAveragePooling1D / GlobalMaxPooling1D --- [b, steps, c] -> [b, c].
class GlobalAveragePooling1DImpl : public GlobalPoolingImpl {
 public:
  explicit GlobalAveragePooling1DImpl(GlobalPoolingOptions options = {})
      : GlobalPoolingImpl("GlobalAveragePooling1D", 1, false, std::move(options)) {}
};
class GlobalMaxPooling1DImpl : public GlobalPoolingImpl {
 public:
  explicit GlobalMaxPooling1DImpl(GlobalPoolingOptions options = {})
      : GlobalPoolingImpl("GlobalMaxPooling1D", 1, true, std::move(options)) {}
};
// --- GlobalAveragePooling2D / GlobalMaxPooling2D --- [b, h, w, c] -> [b, c].
class GlobalAveragePooling2DImpl : public GlobalPoolingImpl {
 public:
  explicit GlobalAveragePooling2DImpl(GlobalPoolingOptions options = {})
      : GlobalPoolingImpl("GlobalAveragePooling2D", 2, false, std::move(options)) {}
};
class GlobalMaxPooling2DImpl : public GlobalPoolingImpl {
 public:
  explicit GlobalMaxPooling2DImpl(GlobalPoolingOptions options = {})
      : GlobalPoolingImpl("GlobalMaxPooling2D", 2, true, std::move(options)) {}
};

// Holders (layer.h), with the layer's own constructor so braced arguments work:
// MaxPooling2D({2, 2}, {.padding = "same"}); see conv.h.
#define DF_KERAS_POOLING_HOLDER_(Name)                                                                 \
  class Name : public LayerHolder<Name##Impl> {                                                        \
   public:                                                                                             \
    explicit Name(IntTuple pool_size = 2, PoolingOptions options = {})                                 \
        : LayerHolder(std::make_shared<Name##Impl>(std::move(pool_size), std::move(options))) {}       \
    DF_KERAS_HOLDER_FROM_PTR_(Name)                                                                    \
  }
#define DF_KERAS_GLOBAL_POOLING_HOLDER_(Name)                                                          \
  class Name : public LayerHolder<Name##Impl> {                                                        \
   public:                                                                                             \
    explicit Name(GlobalPoolingOptions options = {})                                                   \
        : LayerHolder(std::make_shared<Name##Impl>(std::move(options))) {}                             \
    DF_KERAS_HOLDER_FROM_PTR_(Name)                                                                    \
  }

DF_KERAS_POOLING_HOLDER_(MaxPooling1D);
DF_KERAS_POOLING_HOLDER_(AveragePooling1D);
DF_KERAS_POOLING_HOLDER_(MaxPooling2D);
DF_KERAS_POOLING_HOLDER_(AveragePooling2D);
DF_KERAS_GLOBAL_POOLING_HOLDER_(GlobalAveragePooling1D);
DF_KERAS_GLOBAL_POOLING_HOLDER_(GlobalMaxPooling1D);
DF_KERAS_GLOBAL_POOLING_HOLDER_(GlobalAveragePooling2D);
DF_KERAS_GLOBAL_POOLING_HOLDER_(GlobalMaxPooling2D);

#undef DF_KERAS_POOLING_HOLDER_
#undef DF_KERAS_GLOBAL_POOLING_HOLDER_

}  // namespace deepflow::keras::layers
