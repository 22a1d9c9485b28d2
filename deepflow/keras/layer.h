// SPDX-License-Identifier: Apache-2.0
// Layer: the unit of the Keras-style API (tf.keras.layers.Layer).
//
// A layer owns weights (Variables made by add_weight, trainable or not) and sublayers,
// builds itself on its first call from the input shapes, and maps inputs to outputs in
// call(). Calling a layer (operator()) works on
//   - eager tensors (runs now),
//   - tensors of a graph being traced (adds nodes: layers run inside deepflow::function),
//   - symbolic Keras tensors from keras::Input (functional models: the call is recorded
//     as a node of the layer graph, and the output carries its static shape).
//
// Layers are shared objects (std::shared_ptr): one layer called twice shares its
// weights. Built-in layers come with a holder, as in PyTorch's C++ API: `Dense` holds a
// std::shared_ptr<DenseImpl>, is called with (), and reaches members with ->.
//
//   auto dense = keras::layers::Dense(64, {.activation = "relu"});
//   Tensor y = dense(x);                    // builds a [x.dim(-1), 64] kernel on first call
//   Variable k = dense->kernel();
//
// A custom layer subclasses Layer, overrides build() and call(), and makes its weights
// with add_weight (see examples/keras_custom_layer.cpp):
//
//   class Scale : public keras::Layer {
//    public:
//     Scale() : Layer("scale") {}
//     void build(const Shape& in) override { w_ = add_weight("w", {in.dim(-1)}, keras::initializers::Ones()); }
//     Tensor call(const Tensor& x, bool training) override { return x * read(w_); }
//    private:
//     Variable w_;
//   };
//   auto scale = keras::make_layer<Scale>();   // a LayerHolder<Scale>
//
// Overriding one `call` hides the other overload inside the subclass (C++ name hiding);
// add `using Layer::call;` to keep both visible.
//
// Mixed precision: a layer computes in its policy's compute dtype. operator() casts
// floating inputs to it; read(v) gives a weight in it (float32 variables, bfloat16
// math under "mixed_bfloat16"). Built-in layers always read weights through read().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "deepflow/core/tensor.h"
#include "deepflow/keras/config.h"
#include "deepflow/keras/initializers.h"
#include "deepflow/keras/regularizers.h"
#include "deepflow/ops/op.h"  // TensorList
#include "deepflow/ops/variable.h"

namespace deepflow::keras {

class Layer : public std::enable_shared_from_this<Layer> {
 public:
  /// An empty name becomes the snake_case class name made unique: "dense", "dense_1", ...
  explicit Layer(std::string name = "");
  virtual ~Layer();
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // --- what subclasses override ---

  /// Creates the weights from the input shape (the batch dim is -1 when unknown).
  /// Runs once, eagerly, before the first call (also when that call is traced).
  virtual void build(const Shape& input_shape);
  /// Several inputs: the default calls build(input_shapes[0]) for a single input.
  virtual void build(const std::vector<Shape>& input_shapes);
  /// The computation of a single-input, single-output layer.
  virtual Tensor call(const Tensor& inputs, bool training);
  /// The general form; the default calls call(inputs[0], training) for a single input.
  virtual TensorList call(const TensorList& inputs, bool training);
  /// "Dense", "Conv2D", ... (Keras class names; summary() shows them).
  virtual std::string class_name() const;
  /// Constructor arguments as Keras names them, plus "name", "trainable" and "dtype".
  virtual Config get_config() const;

  // --- calling (Keras's __call__) ---

  /// Builds on the first call, casts floating inputs to the compute dtype, then call().
  /// `training` unset: the thread's learning phase (config.h). Errors are prefixed with
  /// "[<layer name>]" and name the input shapes.
  Tensor operator()(const Tensor& inputs, std::optional<bool> training = std::nullopt);
  TensorList operator()(const TensorList& inputs, std::optional<bool> training = std::nullopt);
  /// Keras's layer(x, mask=m): one mask per input (undefined: none). Calls on Keras tensors
  /// without explicit masks take the masks their producers computed (see compute_mask).
  TensorList operator()(const TensorList& inputs, const TensorList& masks,
                        std::optional<bool> training = std::nullopt);

  // --- masking (Keras's mask propagation: padded steps of a sequence) ---

  /// A layer that supports masking passes its first input's mask on unchanged (the
  /// default compute_mask); others drop masks. Dense, Dropout, Activation and the
  /// normalization layers do.
  bool supports_masking() const { return supports_masking_; }
  /// The outputs' masks given the inputs and their masks (empty or undefined: none), e.g.
  /// Embedding(mask_zero) gives ids != 0 [batch, steps]; RNNs with return_sequences pass
  /// the mask on. Functional and Sequential models propagate masks with it.
  virtual TensorList compute_mask(const TensorList& inputs, const TensorList& masks) const;
  /// call() for inputs with masks (at least one defined); layers that use them (RNNs,
  /// GlobalAveragePooling1D, MultiHeadAttention's padding) override it. The default ignores them.
  virtual TensorList call_masked(const TensorList& inputs, const TensorList& masks, bool training);

  // --- weights ---

  /// A new weight of this layer, initialized now (eagerly, even inside a trace) in the
  /// policy's variable dtype unless `dtype` is given. Null initializer: GlorotUniform for
  /// rank >= 2, Zeros otherwise. A regularizer adds its penalty to losses().
  Variable add_weight(const std::string& name, const Shape& shape, InitializerPtr initializer = nullptr,
                      bool trainable = true, RegularizerPtr regularizer = nullptr,
                      std::optional<DType> dtype = std::nullopt);
  /// Adopts an existing variable as a weight of this layer (a tf.Variable assigned to an
  /// attribute of a layer subclassed in Python); a variable already tracked is left alone.
  void track_variable(const Variable& v, RegularizerPtr regularizer = nullptr);
  /// This layer's then its sublayers' weights, trainable ones first (Keras's order).
  std::vector<Variable> weights() const;
  /// Empty when the layer (or an enclosing one) is frozen (trainable false).
  std::vector<Variable> trainable_weights() const;
  std::vector<Variable> non_trainable_weights() const;
  /// Copies of the weights' values, in weights() order; set_weights checks each shape.
  TensorList get_weights() const;
  void set_weights(const TensorList& values);
  int64_t count_params() const;
  /// A weight in the compute dtype (a cast when the policy is mixed).
  Tensor read(const Variable& weight) const;

  // --- sublayers ---

  /// Registers a sublayer (its weights become this layer's) and returns it, for
  /// subclassed layers and models: `dense_ = track(layers::Dense(10));`.
  template <class L>
  L track(L layer) {
    track_layer(to_layer_ptr(layer));
    return layer;
  }
  void track_layer(std::shared_ptr<Layer> layer);
  /// Forgets a sublayer (its weights leave this layer's); no-op when not tracked.
  void untrack_layer(const Layer* layer);
  /// The direct sublayers, in registration order.
  const std::vector<std::shared_ptr<Layer>>& layers() const { return sublayers_; }

  // --- losses ---

  /// An extra loss from inside call() (an activity regularizer); it replaces what the
  /// previous call of this layer added.
  void add_loss(const Tensor& loss);
  /// The weight regularization penalties (computed now from the current weights) and
  /// the losses added by the last call, of this layer and its sublayers.
  TensorList losses() const;

  // --- state ---

  /// Assigned on first use when the constructor got none: "dense", "dense_1", ...
  const std::string& name() const;
  bool trainable() const { return trainable_; }
  /// Freezing a layer freezes its sublayers' weights too (they leave trainable_weights()).
  void set_trainable(bool trainable) { trainable_ = trainable; }
  bool built() const { return built_; }
  const Policy& dtype_policy() const { return policy_; }
  /// Before build: the dtypes its weights and computation will have.
  void set_dtype_policy(const std::string& name);
  DType compute_dtype() const { return policy_.compute_dtype; }
  DType variable_dtype() const { return policy_.variable_dtype; }
  /// Static shapes of the first call's inputs and outputs (-1 for unknown dims), for summary().
  const std::vector<Shape>& input_shapes() const { return input_shapes_; }
  const std::vector<Shape>& output_shapes() const { return output_shapes_; }

  /// Marks the layer built without calling build() (layers that build sublayers themselves).
  void set_built(bool built = true) { built_ = built; }

 protected:
  /// For holders and shared_ptrs alike (see track()).
  template <class L>
  static std::shared_ptr<Layer> to_layer_ptr(const L& layer) {
    if constexpr (std::is_convertible_v<L, std::shared_ptr<Layer>>) return layer;
    else return layer.ptr();
  }

  /// Set by layers that pass masks through (see supports_masking()).
  bool supports_masking_ = false;

 private:
  friend TensorList call_layer(Layer& layer, const TensorList& inputs, std::optional<bool> training,
                               const TensorList* masks);

  mutable std::string name_;
  bool trainable_ = true;
  bool built_ = false;
  Policy policy_;
  struct Weight {
    Variable var;
    RegularizerPtr regularizer;
  };
  std::vector<Weight> weights_;
  std::vector<std::shared_ptr<Layer>> sublayers_;
  TensorList call_losses_;
  std::vector<Shape> input_shapes_, output_shapes_;
};

using LayerPtr = std::shared_ptr<Layer>;

/// The shared-ownership handle of a layer type: constructs the layer, is called with (),
/// reaches the layer with ->, and converts to std::shared_ptr<Layer> (for Sequential,
/// track(), ...).
template <class Impl>
class LayerHolder {
 public:
  template <class... Args>
    requires(!(sizeof...(Args) == 1 && (std::is_same_v<std::decay_t<Args>, LayerHolder> || ...)) &&
             std::is_constructible_v<Impl, Args...>)
  explicit LayerHolder(Args&&... args) : impl_(std::make_shared<Impl>(std::forward<Args>(args)...)) {}
  LayerHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}  // NOLINT: holders wrap pointers
  /// An empty holder, to assign later (a member of a subclassed model): `Dense head{nullptr};`.
  LayerHolder(std::nullptr_t) {}  // NOLINT
  explicit operator bool() const { return impl_ != nullptr; }

  Tensor operator()(const Tensor& x, std::optional<bool> training = std::nullopt) const {
    return (*impl_)(x, training);
  }
  TensorList operator()(const TensorList& xs, std::optional<bool> training = std::nullopt) const {
    return (*impl_)(xs, training);
  }
  TensorList operator()(const TensorList& xs, const TensorList& masks,
                        std::optional<bool> training = std::nullopt) const {
    return (*impl_)(xs, masks, training);
  }
  Impl* operator->() const { return impl_.get(); }
  Impl& operator*() const { return *impl_; }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  operator std::shared_ptr<Layer>() const { return impl_; }  // NOLINT: a holder is a layer

 private:
  std::shared_ptr<Impl> impl_;
};

/// A holder for a custom layer type: `auto s = keras::make_layer<Scale>(args...)`.
template <class Impl, class... Args>
LayerHolder<Impl> make_layer(Args&&... args) {
  return LayerHolder<Impl>(std::make_shared<Impl>(std::forward<Args>(args)...));
}

/// Declares holder `Name` of `NameImpl` (for built-in layers). Its constructor forwards
/// to NameImpl's, which cannot deduce braced options: a layer with an options struct
/// spells its holder out with explicit constructors (see layers::Dense), or callers
/// name the type (layers::EmbeddingOptions{...}).
#define DF_KERAS_LAYER(Name)                                      \
  class Name : public ::deepflow::keras::LayerHolder<Name##Impl> { \
   public:                                                        \
    using LayerHolder<Name##Impl>::LayerHolder;                   \
  }

// --- the functional API's symbolic tensors ---

/// A symbolic Keras tensor of shape [-1, shape...] (the batch dim unknown) to build a
/// functional model from (tf.keras.Input). `batch_size` fixes the batch dim.
Tensor Input(const Shape& shape, const std::string& name = "", DType dtype = DType::Float32,
             std::optional<int64_t> batch_size = std::nullopt);
/// True for tensors from Input() and from layers called on them.
bool is_keras_tensor(const Tensor& t);

/// One recorded call of a layer on Keras tensors: a node of a functional model's graph.
/// `masks`: the inputs' masks the call used; `output_masks`: what compute_mask gave
/// (Keras tensors too; undefined or empty: none).
struct LayerNode {
  LayerPtr layer;
  TensorList inputs, outputs;
  TensorList masks, output_masks;
};
/// The call that produced a Keras tensor, or nullptr for an Input (and for other tensors).
std::shared_ptr<const LayerNode> keras_history(const Tensor& t);
/// The mask a Keras tensor carries (Keras's _keras_mask), undefined when none.
Tensor keras_mask(const Tensor& t);

}  // namespace deepflow::keras
