// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/layers/rnn.h"

#include <nlohmann/json.hpp>

#include "deepflow/core/error.h"
#include "deepflow/function/control_flow.h"
#include "deepflow/keras/activations.h"
#include "deepflow/keras/serialization.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras::layers {
namespace {

std::string activation_name(const std::string& a) { return a.empty() ? "linear" : a; }

// Keras's unit_forget_bias: [base(units), ones(units), base(2 units)] for the gates i, f, c, o.
class UnitForgetBias : public Initializer {
 public:
  UnitForgetBias(InitializerPtr base, int64_t units) : base_(std::move(base)), units_(units) {}
  Tensor operator()(const Shape& shape, DType dtype) const override {
    DF_CHECK(shape.rank() == 1 && shape[0] == 4 * units_, "[LSTM] the bias of ", units_, " units must have shape [",
             4 * units_, "], got ", shape);
    return concat({(*base_)({units_}, dtype), (*initializers::Ones())({units_}, dtype), (*base_)({2 * units_}, dtype)},
                  0);
  }
  std::string class_name() const override { return "UnitForgetBias"; }

 private:
  InitializerPtr base_;
  int64_t units_;
};

InitializerPtr or_default(const InitializerPtr& init, InitializerPtr fallback) { return init ? init : fallback; }

// Row `row` of a [2, n] bias as an [n] vector (GRU's input and recurrent biases).
Tensor bias_row(const Tensor& bias, int64_t row) {
  return reshape(slice(bias, {row, 0}, {1, -1}), {bias.shape()[1]});
}

}  // namespace

// --- RecurrentLayer ---

RecurrentLayer::RecurrentLayer(const char* who, int64_t units, bool return_sequences, bool return_state,
                               bool go_backwards, std::string name)
    : Layer(std::move(name)),
      units_(units),
      return_sequences_(return_sequences),
      return_state_(return_state),
      go_backwards_(go_backwards) {
  DF_CHECK(units > 0, "[", who, "] units must be positive, got ", units);
}

void RecurrentLayer::build(const Shape& input_shape) {
  DF_CHECK(input_shape.rank() == 3, "[", name(), "] expects inputs of rank 3 (batch, timesteps, features), got ",
           input_shape);
  DF_CHECK(input_shape[2] >= 0, "[", name(), "] needs inputs with a known features dim, got ", input_shape);
  make_weights(input_shape[2]);
}

void RecurrentLayer::build(const std::vector<Shape>& input_shapes) {
  DF_CHECK(!input_shapes.empty(), "[", name(), "] needs an input");
  build(input_shapes[0]);
}

Tensor RecurrentLayer::call(const Tensor& x, bool training) { return call(TensorList{x}, training)[0]; }

TensorList RecurrentLayer::call(const TensorList& inputs, bool) { return run(inputs, Tensor()); }

TensorList RecurrentLayer::call_masked(const TensorList& inputs, const TensorList& masks, bool) {
  return run(inputs, masks.empty() ? Tensor() : masks[0]);
}

TensorList RecurrentLayer::compute_mask(const TensorList&, const TensorList& masks) const {
  if (!return_sequences_ || masks.empty() || !masks[0].defined()) return {};
  return {masks[0]};  // the states of return_state carry none
}

TensorList RecurrentLayer::run(const TensorList& inputs, const Tensor& mask) {
  const int n = num_states();
  DF_CHECK(inputs.size() == 1 || inputs.size() == size_t(1 + n), "[", name(), "] takes the inputs and ", n,
           " initial state(s), got ", inputs.size(), " tensors");
  const Tensor& x = inputs[0];
  DF_CHECK(x.rank() == 3, "[", name(), "] expects inputs of rank 3 (batch, timesteps, features), got ", x.shape());
  const int64_t features = kernel_.shape()[0];
  DF_CHECK(x.shape()[2] < 0 || x.shape()[2] == features, "[", name(), "] expects inputs with ", features,
           " features, got ", x.shape());
  const int64_t steps = x.shape()[1];
  DF_CHECK(steps != 0, "[", name(), "] needs at least one timestep, got ", x.shape());
  for (size_t i = 1; i < inputs.size(); ++i)
    DF_CHECK(inputs[i].shape().compatible_with(Shape{-1, units_}), "[", name(), "] initial state ", i - 1,
             " must have shape [batch, ", units_, "], got ", inputs[size_t(i)].shape());
  Tensor step_mask;  // time-major [timesteps, batch] bool, in processing order
  if (mask.defined()) {
    DF_CHECK(mask.rank() == 2 && mask.shape().compatible_with(Shape{x.shape()[0], steps}), "[", name(),
             "] expects a mask of shape [batch, timesteps] for inputs ", x.shape(), ", got ", mask.shape());
    const Tensor m = mask.dtype() == DType::Bool ? mask : cast(mask, DType::Bool);
    step_mask = transpose(go_backwards_ ? reverse(m, {1}) : m, {1, 0});
  }
  const Tensor xs = go_backwards_ ? reverse(x, {1}) : x;
  const Tensor time_major = transpose(xs, {1, 0, 2});
  const TensorList initial(inputs.begin() + 1, inputs.end());
  return steps > 0 ? run_unrolled(time_major, step_mask, initial, steps) : run_loop(time_major, step_mask, initial);
}

namespace {

// Keras's masked step: where the mask is false the states and the output keep their
// previous values (the output starts at zeros).
TensorList hold_masked(const Tensor& m, const TensorList& updated, const TensorList& previous) {
  TensorList out;
  for (size_t i = 0; i < updated.size(); ++i) out.push_back(where(m, updated[i], previous[i]));
  return out;
}

}  // namespace

// The loop unrolled over a static step count: one rank-2 matmul projects every step
// (rank 2 also keeps clear of the traced fused_matmul's small path, which mishandles
// rank-3 inputs as of this writing), then each step adds h @ recurrent_kernel.
TensorList RecurrentLayer::run_unrolled(const Tensor& time_major, const Tensor& step_mask, const TensorList& initial,
                                        int64_t steps) {
  const int64_t features = kernel_.shape()[0], gates = kernel_.shape()[1];
  const Tensor xw = reshape(project_inputs(reshape(time_major, {-1, features})), {steps, -1, gates});
  std::vector<Tensor> per_step = split(xw, steps, 0);
  for (Tensor& t : per_step) t = reshape(t, {-1, gates});
  std::vector<Tensor> masks;
  if (step_mask.defined()) {
    masks = split(step_mask, steps, 0);
    for (Tensor& m : masks) m = reshape(m, {-1, 1});
  }
  // Zeros [batch, units] without naming the (maybe unknown) batch size.
  const Tensor zero = zeros_like(slice(per_step[0], {0, 0}, {-1, units_}));
  TensorList states = initial.empty() ? TensorList(size_t(num_states()), zero) : initial;
  Tensor output = zero;
  const Step step = make_step();
  std::vector<Tensor> outputs;
  for (size_t t = 0; t < per_step.size(); ++t) {
    TensorList next = step(per_step[t], states);
    if (masks.empty()) {
      output = next[0];
      states = std::move(next);
    } else {
      output = where(masks[t], next[0], output);
      states = hold_masked(masks[t], next, states);
    }
    if (return_sequences_) outputs.push_back(output);
  }
  TensorList result{return_sequences_ ? stack(outputs, 1) : output};
  if (return_state_) result.insert(result.end(), states.begin(), states.end());
  return result;
}

// An unknown step count (a functional model on (None, features) inputs, a signature
// exported for any length): a while_loop over the steps, each projected in the body.
// return_sequences fills a [timesteps, batch, units] buffer one row per step. This
// loop keeps no history (its shapes are not static), so it has no gradient; training
// runs on batches of known length, which take the unrolled path.
TensorList RecurrentLayer::run_loop(const Tensor& time_major, const Tensor& step_mask, const TensorList& initial) {
  const int n = num_states();
  // [timesteps, batch, 1] zeros: the run-time extents without naming them.
  const Tensor column = zeros_like(slice(time_major, {0, 0, 0}, {-1, -1, 1}));
  const Tensor per_step = reduce_sum(column, {1, 2});                                 // [timesteps] zeros
  const Tensor unit_row = zeros_like(slice(read(recurrent_kernel_), {0, 0}, {1, units_}));  // [1, units]
  const Tensor count = size(per_step);
  const Tensor zero = reshape(slice(column, {0, 0, 0}, {1, -1, 1}), {-1, 1}) + unit_row;  // [batch, units]
  TensorList vars{scalar_like(count, 0.0)};
  for (int i = 0; i < n; ++i) vars.push_back(initial.empty() ? zero : initial[size_t(i)]);
  vars.push_back(zero);  // the last output
  Tensor positions;
  if (return_sequences_) {
    vars.push_back(column + unit_row);
    positions = cumsum(per_step + 1.0, 0) - 1.0;
  }
  const Step step = make_step();
  TensorList out = while_loop(
      [count](const TensorList& v) { return less(v[0], count); },
      [&](const TensorList& v) {
        const Tensor xw_t = project_inputs(gather(time_major, v[0], 0));
        const TensorList states(v.begin() + 1, v.begin() + 1 + n);
        TensorList next = step(xw_t, states);
        Tensor output = next[0];
        if (step_mask.defined()) {
          const Tensor m = reshape(gather(step_mask, v[0], 0), {-1, 1});
          output = where(m, output, v[size_t(1 + n)]);
          next = hold_masked(m, next, states);
        }
        TensorList body{v[0] + scalar_like(v[0], 1.0)};
        body.insert(body.end(), next.begin(), next.end());
        body.push_back(output);
        if (return_sequences_) {
          const Tensor row = reshape(equal(positions, cast(v[0], positions.dtype())), {-1, 1, 1});
          body.push_back(where(row, expand_dims(output, 0), v.back()));
        }
        return body;
      },
      vars);
  TensorList result{return_sequences_ ? transpose(out.back(), {1, 0, 2}) : out[size_t(1 + n)]};
  if (return_state_) result.insert(result.end(), out.begin() + 1, out.begin() + 1 + n);
  return result;
}

Config RecurrentLayer::get_config() const {
  Config c = Layer::get_config();
  c["units"] = units_;
  c["return_sequences"] = return_sequences_;
  c["return_state"] = return_state_;
  c["go_backwards"] = go_backwards_;
  c["stateful"] = false;
  c["dropout"] = 0.0;
  c["recurrent_dropout"] = 0.0;
  return c;
}

namespace {

// A clone keeps the original's dtype policy and trainability.
template <class Impl, class Options>
std::shared_ptr<RecurrentLayer> clone_of(const RecurrentLayer& self, Options options, bool go_backwards,
                                         const std::string& name) {
  options.go_backwards = go_backwards;
  options.name = name;
  auto copy = std::make_shared<Impl>(self.units(), std::move(options));
  copy->set_dtype_policy(self.dtype_policy().name);
  copy->set_trainable(self.trainable());
  return copy;
}

}  // namespace

// --- SimpleRNN ---

SimpleRNNImpl::SimpleRNNImpl(int64_t units, SimpleRNNOptions options)
    : RecurrentLayer("SimpleRNN", units, options.return_sequences, options.return_state, options.go_backwards,
                     options.name),
      options_(std::move(options)) {
  activations::check(options_.activation);
}

void SimpleRNNImpl::make_weights(int64_t features) {
  kernel_ = add_weight("kernel", {features, units()}, options_.kernel_initializer, true, options_.kernel_regularizer);
  recurrent_kernel_ = add_weight("recurrent_kernel", {units(), units()},
                                 or_default(options_.recurrent_initializer, initializers::Orthogonal()), true,
                                 options_.recurrent_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", {units()}, or_default(options_.bias_initializer, initializers::Zeros()), true,
                       options_.bias_regularizer);
}

Tensor SimpleRNNImpl::project_inputs(const Tensor& x) const {
  Tensor y = matmul(x, read(kernel_));
  return options_.use_bias ? y + read(bias_) : y;
}

RecurrentLayer::Step SimpleRNNImpl::make_step() const {
  const Tensor r = read(recurrent_kernel_);
  const activations::Activation act = activations::get(options_.activation);
  return [r, act](const Tensor& xw, const TensorList& s) { return TensorList{act(xw + matmul(s[0], r))}; };
}

Config SimpleRNNImpl::get_config() const {
  Config c = RecurrentLayer::get_config();
  c["activation"] = activation_name(options_.activation);
  c["use_bias"] = options_.use_bias;
  c["kernel_initializer"] = initializers::serialize(options_.kernel_initializer, "GlorotUniform");
  c["recurrent_initializer"] = initializers::serialize(options_.recurrent_initializer, "Orthogonal");
  c["bias_initializer"] = initializers::serialize(options_.bias_initializer, "Zeros");
  c["kernel_regularizer"] = regularizers::serialize(options_.kernel_regularizer);
  c["recurrent_regularizer"] = regularizers::serialize(options_.recurrent_regularizer);
  c["bias_regularizer"] = regularizers::serialize(options_.bias_regularizer);
  return c;
}

std::shared_ptr<RecurrentLayer> SimpleRNNImpl::clone_with(bool go_backwards, const std::string& name) const {
  return clone_of<SimpleRNNImpl>(*this, options_, go_backwards, name);
}

// --- LSTM ---

LSTMImpl::LSTMImpl(int64_t units, LSTMOptions options)
    : RecurrentLayer("LSTM", units, options.return_sequences, options.return_state, options.go_backwards, options.name),
      options_(std::move(options)) {
  activations::check(options_.activation);
  activations::check(options_.recurrent_activation);
}

void LSTMImpl::make_weights(int64_t features) {
  const int64_t u = units();
  kernel_ = add_weight("kernel", {features, 4 * u}, options_.kernel_initializer, true, options_.kernel_regularizer);
  recurrent_kernel_ = add_weight("recurrent_kernel", {u, 4 * u},
                                 or_default(options_.recurrent_initializer, initializers::Orthogonal()), true,
                                 options_.recurrent_regularizer);
  if (options_.use_bias) {
    InitializerPtr init = or_default(options_.bias_initializer, initializers::Zeros());
    if (options_.unit_forget_bias) init = std::make_shared<UnitForgetBias>(init, u);
    bias_ = add_weight("bias", {4 * u}, init, true, options_.bias_regularizer);
  }
}

Tensor LSTMImpl::project_inputs(const Tensor& x) const {
  Tensor y = matmul(x, read(kernel_));
  return options_.use_bias ? y + read(bias_) : y;
}

RecurrentLayer::Step LSTMImpl::make_step() const {
  const Tensor r = read(recurrent_kernel_);
  const activations::Activation act = activations::get(options_.activation);
  const activations::Activation gate = activations::get(options_.recurrent_activation);
  return [r, act, gate](const Tensor& xw, const TensorList& s) {
    const std::vector<Tensor> z = split(xw + matmul(s[0], r), 4, 1);  // i, f, c, o
    const Tensor c = gate(z[1]) * s[1] + gate(z[0]) * act(z[2]);
    const Tensor h = gate(z[3]) * act(c);
    return TensorList{h, c};
  };
}

Config LSTMImpl::get_config() const {
  Config c = RecurrentLayer::get_config();
  c["activation"] = activation_name(options_.activation);
  c["recurrent_activation"] = activation_name(options_.recurrent_activation);
  c["use_bias"] = options_.use_bias;
  c["kernel_initializer"] = initializers::serialize(options_.kernel_initializer, "GlorotUniform");
  c["recurrent_initializer"] = initializers::serialize(options_.recurrent_initializer, "Orthogonal");
  c["bias_initializer"] = initializers::serialize(options_.bias_initializer, "Zeros");
  c["unit_forget_bias"] = options_.unit_forget_bias;
  c["kernel_regularizer"] = regularizers::serialize(options_.kernel_regularizer);
  c["recurrent_regularizer"] = regularizers::serialize(options_.recurrent_regularizer);
  c["bias_regularizer"] = regularizers::serialize(options_.bias_regularizer);
  return c;
}

std::shared_ptr<RecurrentLayer> LSTMImpl::clone_with(bool go_backwards, const std::string& name) const {
  return clone_of<LSTMImpl>(*this, options_, go_backwards, name);
}

// --- GRU ---

GRUImpl::GRUImpl(int64_t units, GRUOptions options)
    : RecurrentLayer("GRU", units, options.return_sequences, options.return_state, options.go_backwards, options.name),
      options_(std::move(options)) {
  activations::check(options_.activation);
  activations::check(options_.recurrent_activation);
}

void GRUImpl::make_weights(int64_t features) {
  const int64_t u = units();
  kernel_ = add_weight("kernel", {features, 3 * u}, options_.kernel_initializer, true, options_.kernel_regularizer);
  recurrent_kernel_ = add_weight("recurrent_kernel", {u, 3 * u},
                                 or_default(options_.recurrent_initializer, initializers::Orthogonal()), true,
                                 options_.recurrent_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", options_.reset_after ? Shape{2, 3 * u} : Shape{3 * u},
                       or_default(options_.bias_initializer, initializers::Zeros()), true, options_.bias_regularizer);
}

Tensor GRUImpl::project_inputs(const Tensor& x) const {
  Tensor y = matmul(x, read(kernel_));
  if (!options_.use_bias) return y;
  return y + (options_.reset_after ? bias_row(read(bias_), 0) : read(bias_));
}

RecurrentLayer::Step GRUImpl::make_step() const {
  const int64_t u = units();
  const Tensor r = read(recurrent_kernel_);
  const activations::Activation act = activations::get(options_.activation);
  const activations::Activation gate = activations::get(options_.recurrent_activation);
  if (options_.reset_after) {
    const Tensor rb = options_.use_bias ? bias_row(read(bias_), 1) : Tensor();
    return [r, rb, act, gate](const Tensor& xw, const TensorList& s) {
      Tensor inner = matmul(s[0], r);
      if (rb.defined()) inner = inner + rb;
      const std::vector<Tensor> xs = split(xw, 3, 1), hs = split(inner, 3, 1);  // z, r, h
      const Tensor z = gate(xs[0] + hs[0]);
      const Tensor hh = act(xs[2] + gate(xs[1] + hs[1]) * hs[2]);
      return TensorList{z * s[0] + (1.0 - z) * hh};
    };
  }
  // reset_after false: the reset gate scales h before the candidate's recurrent matmul.
  const Tensor r_zr = slice(r, {0, 0}, {u, 2 * u}), r_h = slice(r, {0, 2 * u}, {u, u});
  return [r_zr, r_h, act, gate](const Tensor& xw, const TensorList& s) {
    const std::vector<Tensor> xs = split(xw, 3, 1), zr = split(matmul(s[0], r_zr), 2, 1);
    const Tensor z = gate(xs[0] + zr[0]);
    const Tensor hh = act(xs[2] + matmul(gate(xs[1] + zr[1]) * s[0], r_h));
    return TensorList{z * s[0] + (1.0 - z) * hh};
  };
}

Config GRUImpl::get_config() const {
  Config c = RecurrentLayer::get_config();
  c["activation"] = activation_name(options_.activation);
  c["recurrent_activation"] = activation_name(options_.recurrent_activation);
  c["use_bias"] = options_.use_bias;
  c["kernel_initializer"] = initializers::serialize(options_.kernel_initializer, "GlorotUniform");
  c["recurrent_initializer"] = initializers::serialize(options_.recurrent_initializer, "Orthogonal");
  c["bias_initializer"] = initializers::serialize(options_.bias_initializer, "Zeros");
  c["kernel_regularizer"] = regularizers::serialize(options_.kernel_regularizer);
  c["recurrent_regularizer"] = regularizers::serialize(options_.recurrent_regularizer);
  c["bias_regularizer"] = regularizers::serialize(options_.bias_regularizer);
  c["reset_after"] = options_.reset_after;
  return c;
}

std::shared_ptr<RecurrentLayer> GRUImpl::clone_with(bool go_backwards, const std::string& name) const {
  return clone_of<GRUImpl>(*this, options_, go_backwards, name);
}

// --- Bidirectional ---

namespace {

std::shared_ptr<RecurrentLayer> as_recurrent(const LayerPtr& layer, const char* what) {
  DF_CHECK(layer != nullptr, "[Bidirectional] ", what, " is null");
  auto rnn = std::dynamic_pointer_cast<RecurrentLayer>(layer);
  DF_CHECK(rnn != nullptr, "[Bidirectional] ", what, " must be a recurrent layer (SimpleRNN, LSTM or GRU), got ",
           layer->class_name(), " '", layer->name(), "'");
  return rnn;
}

}  // namespace

BidirectionalImpl::BidirectionalImpl(LayerPtr layer, BidirectionalOptions options)
    : Layer(options.name), options_(std::move(options)) {
  const std::string& m = options_.merge_mode;
  DF_CHECK(m == "concat" || m == "sum" || m == "mul" || m == "ave" || m.empty(),
           "[Bidirectional] merge_mode must be one of concat, sum, mul, ave or \"\" (None), got '", m, "'");
  auto rnn = as_recurrent(layer, "the layer");
  // Both copies come from the layer's config (as Keras 3), so the wrapped layer keeps no state.
  forward_ = rnn->clone_with(rnn->go_backwards(), "forward_" + rnn->name());
  if (options_.backward_layer) {
    backward_ = as_recurrent(options_.backward_layer, "backward_layer");
    DF_CHECK(backward_->go_backwards() != forward_->go_backwards(), "[Bidirectional] backward_layer '",
             backward_->name(), "' must have go_backwards ", forward_->go_backwards() ? "false" : "true");
    DF_CHECK(backward_->return_sequences() == forward_->return_sequences() &&
                 backward_->return_state() == forward_->return_state(),
             "[Bidirectional] backward_layer '", backward_->name(),
             "' must match the layer's return_sequences and return_state");
  } else {
    backward_ = rnn->clone_with(!rnn->go_backwards(), "backward_" + rnn->name());
  }
  track_layer(forward_);
  track_layer(backward_);
}

void BidirectionalImpl::build(const Shape& input_shape) {
  // Built here (not on their first call) so the weights exist once this layer is built.
  for (const auto& l : {forward_, backward_})
    if (!l->built()) {
      l->build(input_shape);
      l->set_built();
    }
}

void BidirectionalImpl::build(const std::vector<Shape>& input_shapes) {
  DF_CHECK(!input_shapes.empty(), "[", name(), "] needs an input");
  build(input_shapes[0]);
}

Tensor BidirectionalImpl::call(const Tensor& x, bool training) { return call(TensorList{x}, training)[0]; }

TensorList BidirectionalImpl::call(const TensorList& inputs, bool training) {
  const size_t nf = size_t(forward_->num_states()), nb = size_t(backward_->num_states());
  DF_CHECK(inputs.size() == 1 || inputs.size() == 1 + nf + nb, "[", name(), "] takes the inputs and ", nf + nb,
           " initial states (forward then backward), got ", inputs.size(), " tensors");
  TensorList fin{inputs[0]}, bin{inputs[0]};
  if (inputs.size() > 1) {
    fin.insert(fin.end(), inputs.begin() + 1, inputs.begin() + 1 + long(nf));
    bin.insert(bin.end(), inputs.begin() + 1 + long(nf), inputs.end());
  }
  const TensorList fy = (*forward_)(fin, training), by = (*backward_)(bin, training);
  const Tensor f = fy[0];
  const Tensor b = backward_->return_sequences() ? reverse(by[0], {1}) : by[0];
  const std::string& m = options_.merge_mode;
  TensorList out;
  if (m == "concat") out = {concat({f, b}, -1)};
  else if (m == "sum") out = {f + b};
  else if (m == "mul") out = {f * b};
  else if (m == "ave") out = {(f + b) * 0.5};
  else out = {f, b};
  if (forward_->return_state()) {
    out.insert(out.end(), fy.begin() + 1, fy.end());
    out.insert(out.end(), by.begin() + 1, by.end());
  }
  return out;
}

Config BidirectionalImpl::get_config() const {
  Config c = Layer::get_config();
  c["layer"] = Config{{"class_name", forward_->class_name()}, {"config", forward_->get_config()}};
  c["merge_mode"] = options_.merge_mode.empty() ? Config(nullptr) : Config(options_.merge_mode);
  c["backward_layer"] = Config{{"class_name", backward_->class_name()}, {"config", backward_->get_config()}};
  return c;
}

// --- registration (serialization.h) ---

namespace {

namespace ser = serialization;

// The fields SimpleRNN, LSTM and GRU share; unsupported features are refused by name.
template <class Options>
Options rnn_options(const char* cls, const Config& c) {
  for (const char* key : {"dropout", "recurrent_dropout"})
    DF_CHECK(ser::value_or(c, key, 0.0) == 0.0, "[keras.layers.deserialize] ", cls, " '", ser::name_of(c), "': ", key,
             " is not supported, got ", c.at(key).dump());
  DF_CHECK(!ser::value_or(c, "stateful", false), "[keras.layers.deserialize] ", cls, " '", ser::name_of(c),
           "': stateful is not supported");
  Options o;
  o.activation = c.contains("activation") ? ser::activation_of(c) : "tanh";
  o.use_bias = ser::value_or(c, "use_bias", true);
  o.kernel_initializer = ser::initializer_of(c, "kernel_initializer", "GlorotUniform");
  o.recurrent_initializer = ser::initializer_of(c, "recurrent_initializer", "Orthogonal");
  o.bias_initializer = ser::initializer_of(c, "bias_initializer", "Zeros");
  o.kernel_regularizer = ser::regularizer_of(c, "kernel_regularizer");
  o.recurrent_regularizer = ser::regularizer_of(c, "recurrent_regularizer");
  o.bias_regularizer = ser::regularizer_of(c, "bias_regularizer");
  o.return_sequences = ser::value_or(c, "return_sequences", false);
  o.return_state = ser::value_or(c, "return_state", false);
  o.go_backwards = ser::value_or(c, "go_backwards", false);
  o.name = ser::name_of(c);
  if constexpr (requires { o.recurrent_activation; })
    o.recurrent_activation = c.contains("recurrent_activation") ? ser::activation_of(c, "recurrent_activation")
                                                                : "sigmoid";
  return o;
}

// Bidirectional's config holds its forward copy ("forward_<name>") and its backward one;
// the wrapped layer is the forward copy under its original name, so the rebuilt
// wrapper's copies get the saved names (Keras 3 strips the prefix the same way).
LayerPtr bidirectional_from_config(const Config& c) {
  Config inner = c.at("layer");
  std::string name = ser::name_of(inner.at("config"));
  if (name.rfind("forward_", 0) == 0) inner["config"]["name"] = name.substr(8);
  BidirectionalOptions o{.merge_mode = c.contains("merge_mode") && !c["merge_mode"].is_null()
                                           ? c["merge_mode"].get<std::string>()
                                           : std::string(),
                         .name = ser::name_of(c)};
  if (c.contains("backward_layer") && !c["backward_layer"].is_null())
    o.backward_layer = layer_from_config(c["backward_layer"]);
  return Bidirectional(layer_from_config(inner), std::move(o));
}

const bool kRegistered = [] {
  register_layer("SimpleRNN", [](const Config& c) -> LayerPtr {
    return SimpleRNN(c.at("units").get<int64_t>(), rnn_options<SimpleRNNOptions>("SimpleRNN", c));
  });
  register_layer("LSTM", [](const Config& c) -> LayerPtr {
    auto o = rnn_options<LSTMOptions>("LSTM", c);
    o.unit_forget_bias = ser::value_or(c, "unit_forget_bias", true);
    return LSTM(c.at("units").get<int64_t>(), std::move(o));
  });
  register_layer("GRU", [](const Config& c) -> LayerPtr {
    auto o = rnn_options<GRUOptions>("GRU", c);
    o.reset_after = ser::value_or(c, "reset_after", true);
    return GRU(c.at("units").get<int64_t>(), std::move(o));
  });
  register_layer("Bidirectional", bidirectional_from_config);
  return true;
}();

}  // namespace
}  // namespace deepflow::keras::layers
