// SPDX-License-Identifier: Apache-2.0
// Recurrent layers: SimpleRNN, LSTM, GRU and the Bidirectional wrapper (Keras 3).
//
// Inputs are [batch, timesteps, features]; the output is the last hidden state
// [batch, units], or every step's [batch, timesteps, units] with return_sequences.
// With return_state the layer returns several tensors, [output, final states...]
// (LSTM: h, c; SimpleRNN and GRU: h), through the TensorList call; the single-tensor
// call returns the output. Initial states may be passed as extra inputs of the
// TensorList call: layer({x, h0, c0}).
//
//   auto lstm = keras::layers::LSTM(32, {.return_sequences = true});
//   Tensor y = lstm(x);                                  // [b, t, 32]
//   auto bi = keras::layers::Bidirectional(keras::layers::GRU(16));
//   Tensor z = bi(x);                                    // [b, 32] (concat)
//
// A known timestep count unrolls the loop (the batch dim may be unknown): x @ kernel
// for all steps is one matmul, then each step adds h @ recurrent_kernel. This runs
// eagerly, under GradientTape and in traces. An unknown count (Input((None, f))) runs a
// while_loop instead, which has no gradient (fit's batches have a known length).
// Masks (Embedding(mask_zero), or layer({x}, {mask}) with mask [batch, timesteps] bool)
// follow Keras: at a masked step the states and the output keep their previous values.
// Not supported: dropout / recurrent_dropout, stateful.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "deepflow/keras/layer.h"

namespace deepflow::keras::layers {

// --- the common base of SimpleRNN, LSTM and GRU (not a Keras class) ---
class RecurrentLayer : public Layer {
 public:
  /// Builds the weights from [batch, timesteps, features] (features must be known).
  void build(const Shape& input_shape) override;
  /// {inputs, initial states...}: builds from the first shape.
  void build(const std::vector<Shape>& input_shapes) override;
  /// {x} or {x, initial states...} -> {output} or, with return_state, {output, states...}.
  TensorList call(const TensorList& inputs, bool training) override;
  /// The first output of the TensorList call.
  Tensor call(const Tensor& x, bool training) override;
  /// The TensorList call with masks[0] [batch, timesteps] on the sequence.
  TensorList call_masked(const TensorList& inputs, const TensorList& masks, bool training) override;
  /// With return_sequences, the sequence's mask; otherwise none.
  TensorList compute_mask(const TensorList& inputs, const TensorList& masks) const override;
  /// Layer's config plus units, return_sequences, return_state, go_backwards, stateful,
  /// dropout and recurrent_dropout (always false / 0 here).
  Config get_config() const override;

  int64_t units() const { return units_; }
  bool return_sequences() const { return return_sequences_; }
  bool return_state() const { return return_state_; }
  bool go_backwards() const { return go_backwards_; }
  /// How many state tensors the layer carries: 2 for LSTM (h, c), 1 otherwise.
  virtual int num_states() const = 0;
  /// A new, unbuilt layer of the same class and config but with `go_backwards` and
  /// `name` (Bidirectional makes its forward and backward copies with it).
  virtual std::shared_ptr<RecurrentLayer> clone_with(bool go_backwards, const std::string& name) const = 0;

  const Variable& kernel() const { return kernel_; }
  const Variable& recurrent_kernel() const { return recurrent_kernel_; }
  /// Undefined without use_bias.
  const Variable& bias() const { return bias_; }

 protected:
  /// `who` names the class in construction errors: "[LSTM] units must be positive, got 0".
  RecurrentLayer(const char* who, int64_t units, bool return_sequences, bool return_state, bool go_backwards,
                 std::string name);
  /// One step: (x_t @ kernel + input bias [batch, gates * units], states) -> new states, h first.
  using Step = std::function<TensorList(const Tensor& xw_t, const TensorList& states)>;
  /// Makes kernel_, recurrent_kernel_ and bias_ for inputs with `features` features.
  virtual void make_weights(int64_t features) = 0;
  /// x [timesteps * batch, features] -> x @ kernel + input bias [timesteps * batch, gates * units].
  virtual Tensor project_inputs(const Tensor& x) const = 0;
  /// The step function of one call (it holds the weights as read for that call).
  virtual Step make_step() const = 0;

  Variable kernel_, recurrent_kernel_, bias_;

 private:
  TensorList run(const TensorList& inputs, const Tensor& mask);
  TensorList run_unrolled(const Tensor& time_major, const Tensor& step_mask, const TensorList& initial,
                          int64_t steps);
  TensorList run_loop(const Tensor& time_major, const Tensor& step_mask, const TensorList& initial);

  int64_t units_;
  bool return_sequences_, return_state_, go_backwards_;
};

struct SimpleRNNOptions {
  /// activations.h name; "" for none.
  std::string activation = "tanh";
  bool use_bias = true;
  InitializerPtr kernel_initializer;     ///< null: GlorotUniform
  InitializerPtr recurrent_initializer;  ///< null: Orthogonal
  InitializerPtr bias_initializer;       ///< null: Zeros
  RegularizerPtr kernel_regularizer, recurrent_regularizer, bias_regularizer;
  bool return_sequences = false;
  bool return_state = false;
  /// Process the sequence in reverse (the returned sequence is in processing order).
  bool go_backwards = false;
  std::string name;
};

// --- SimpleRNN --- h_t = activation(x_t kernel + h_{t-1} recurrent_kernel + bias);
// kernel [features, units], recurrent_kernel [units, units], bias [units].
class SimpleRNNImpl : public RecurrentLayer {
 public:
  explicit SimpleRNNImpl(int64_t units, SimpleRNNOptions options = {});
  std::string class_name() const override { return "SimpleRNN"; }
  Config get_config() const override;
  int num_states() const override { return 1; }
  std::shared_ptr<RecurrentLayer> clone_with(bool go_backwards, const std::string& name) const override;

 protected:
  void make_weights(int64_t features) override;
  Tensor project_inputs(const Tensor& x) const override;
  Step make_step() const override;

 private:
  SimpleRNNOptions options_;
};
// The holder also takes braced options: SimpleRNN(32, {.return_sequences = true}).
class SimpleRNN : public LayerHolder<SimpleRNNImpl> {
 public:
  using LayerHolder<SimpleRNNImpl>::LayerHolder;
  SimpleRNN(int64_t units, SimpleRNNOptions options)
      : LayerHolder(std::make_shared<SimpleRNNImpl>(units, std::move(options))) {}
};

struct LSTMOptions {
  std::string activation = "tanh";
  std::string recurrent_activation = "sigmoid";
  bool use_bias = true;
  InitializerPtr kernel_initializer;     ///< null: GlorotUniform
  InitializerPtr recurrent_initializer;  ///< null: Orthogonal
  InitializerPtr bias_initializer;       ///< null: Zeros
  /// The forget gate's bias starts at 1 (the rest from bias_initializer).
  bool unit_forget_bias = true;
  RegularizerPtr kernel_regularizer, recurrent_regularizer, bias_regularizer;
  bool return_sequences = false;
  bool return_state = false;
  bool go_backwards = false;
  std::string name;
};

// --- LSTM --- gates in Keras's order i, f, c, o: z = x_t kernel + h recurrent_kernel + bias,
// i = ra(z_i), f = ra(z_f), c = f * c + i * a(z_c), o = ra(z_o), h = o * a(c) (a: activation,
// ra: recurrent_activation); kernel [features, 4 units], recurrent_kernel [units, 4 units],
// bias [4 units]. States: h, c.
class LSTMImpl : public RecurrentLayer {
 public:
  explicit LSTMImpl(int64_t units, LSTMOptions options = {});
  std::string class_name() const override { return "LSTM"; }
  Config get_config() const override;
  int num_states() const override { return 2; }
  std::shared_ptr<RecurrentLayer> clone_with(bool go_backwards, const std::string& name) const override;

 protected:
  void make_weights(int64_t features) override;
  Tensor project_inputs(const Tensor& x) const override;
  Step make_step() const override;

 private:
  LSTMOptions options_;
};
// The holder also takes braced options: LSTM(32, {.return_sequences = true}).
class LSTM : public LayerHolder<LSTMImpl> {
 public:
  using LayerHolder<LSTMImpl>::LayerHolder;
  LSTM(int64_t units, LSTMOptions options)
      : LayerHolder(std::make_shared<LSTMImpl>(units, std::move(options))) {}
};

struct GRUOptions {
  std::string activation = "tanh";
  std::string recurrent_activation = "sigmoid";
  bool use_bias = true;
  InitializerPtr kernel_initializer;     ///< null: GlorotUniform
  InitializerPtr recurrent_initializer;  ///< null: Orthogonal
  InitializerPtr bias_initializer;       ///< null: Zeros
  RegularizerPtr kernel_regularizer, recurrent_regularizer, bias_regularizer;
  bool return_sequences = false;
  bool return_state = false;
  bool go_backwards = false;
  /// Apply the reset gate after the recurrent matmul (Keras 3's and cuDNN's default).
  bool reset_after = true;
  std::string name;
};

// --- GRU --- gates in Keras's order z, r, h; kernel [features, 3 units], recurrent_kernel
// [units, 3 units]. reset_after (bias [2, 3 units]: input bias, recurrent bias):
//   xz, xr, xh = x_t kernel + bias[0];  rz, rr, rh = h recurrent_kernel + bias[1]
//   z = ra(xz + rz), r = ra(xr + rr), hh = a(xh + r * rh), h = z * h + (1 - z) * hh.
// Otherwise (bias [3 units]) hh = a(xh + (r * h) recurrent_kernel[:, 2 units:]).
class GRUImpl : public RecurrentLayer {
 public:
  explicit GRUImpl(int64_t units, GRUOptions options = {});
  std::string class_name() const override { return "GRU"; }
  Config get_config() const override;
  int num_states() const override { return 1; }
  std::shared_ptr<RecurrentLayer> clone_with(bool go_backwards, const std::string& name) const override;

 protected:
  void make_weights(int64_t features) override;
  Tensor project_inputs(const Tensor& x) const override;
  Step make_step() const override;

 private:
  GRUOptions options_;
};
// The holder also takes braced options: GRU(32, {.return_sequences = true}).
class GRU : public LayerHolder<GRUImpl> {
 public:
  using LayerHolder<GRUImpl>::LayerHolder;
  GRU(int64_t units, GRUOptions options)
      : LayerHolder(std::make_shared<GRUImpl>(units, std::move(options))) {}
};

struct BidirectionalOptions {
  /// "concat" (on the last axis), "sum", "mul", "ave", or "" (Keras's None: both
  /// outputs are returned, forward then backward).
  std::string merge_mode = "concat";
  /// Null: a copy of the layer with go_backwards flipped. Otherwise a recurrent layer
  /// with go_backwards opposite to the layer's and the same return_sequences / return_state.
  LayerPtr backward_layer;
  std::string name;
};

// --- Bidirectional --- runs a forward copy ("forward_<name>") and a backward copy
// ("backward_<name>") of a recurrent layer, with separate weights, and merges their
// outputs; the backward sequence is reversed back to input order when return_sequences.
// With return_state: {output(s), forward states..., backward states...}; initial states
// are passed the same way: {x, forward states..., backward states...}.
class BidirectionalImpl : public Layer {
 public:
  explicit BidirectionalImpl(LayerPtr layer, BidirectionalOptions options = {});
  /// Builds both copies from [batch, timesteps, features].
  void build(const Shape& input_shape) override;
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, bool training) override;
  /// The first output of the TensorList call.
  Tensor call(const Tensor& x, bool training) override;
  std::string class_name() const override { return "Bidirectional"; }
  /// Layer's config plus "layer" (the forward copy), "merge_mode" and "backward_layer".
  Config get_config() const override;
  const std::shared_ptr<RecurrentLayer>& forward_layer() const { return forward_; }
  const std::shared_ptr<RecurrentLayer>& backward_layer() const { return backward_; }
  const std::string& merge_mode() const { return options_.merge_mode; }

 private:
  BidirectionalOptions options_;
  std::shared_ptr<RecurrentLayer> forward_, backward_;
};
// The holder also takes braced options: Bidirectional(LSTM(8), {.merge_mode = "sum"}).
class Bidirectional : public LayerHolder<BidirectionalImpl> {
 public:
  using LayerHolder<BidirectionalImpl>::LayerHolder;
  Bidirectional(LayerPtr layer, BidirectionalOptions options)
      : LayerHolder(std::make_shared<BidirectionalImpl>(std::move(layer), std::move(options))) {}
};

}  // namespace deepflow::keras::layers
