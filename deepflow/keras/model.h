// SPDX-License-Identifier: Apache-2.0
// Models (tf.keras.Model): three ways to build one, and compile / fit / evaluate /
// predict.
//
//   Sequential:   auto model = std::make_shared<keras::Sequential>(std::vector<keras::LayerPtr>{
//                     keras::layers::InputLayer({784}), keras::layers::Dense(10)});
//   Functional:   Tensor in = keras::Input({784});
//                 Tensor out = keras::layers::Dense(10)(keras::layers::Dense(64, {.activation = "relu"})(in));
//                 auto model = std::make_shared<keras::Model>(TensorList{in}, TensorList{out});
//   Subclassed:   class Mlp : public keras::Model { ... TensorList call(const TensorList&, bool) override; };
//
//   model->compile({.optimizer = keras::optimizers::Adam(), .loss = "sparse_categorical_crossentropy",
//                   .metrics = {"accuracy"}});
//   keras::History h = model->fit(x_train, y_train, {.batch_size = 128, .epochs = 5, .validation_split = 0.1});
//   std::map<std::string, double> scores = model->evaluate(x_test, y_test);
//   Tensor probs = model->predict(x_test);
//
// The train step (forward, loss, gradients, optimizer update, metric updates) is a
// traced function by default (deepflow::function, with the batch dim unknown so the
// last, smaller batch reuses the trace); `run_eagerly` runs it eagerly instead. The
// progress bar follows Keras: "Epoch 1/5", then "469/469 [======] - 3s 6ms/step -
// loss: 0.2113 - accuracy: 0.9371 - val_loss: ..." (verbose 1: a bar redrawn in place
// on a terminal, one line per epoch otherwise; 2: one line per epoch; 0: silent).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "deepflow/data/dataset.h"
#include "deepflow/keras/layer.h"
#include "deepflow/keras/losses.h"
#include "deepflow/keras/metrics.h"
#include "deepflow/keras/optimizers.h"

namespace deepflow::keras {

class Callback;
using CallbackPtr = std::shared_ptr<Callback>;
class Model;

/// A loss given by name or object.
struct LossSpec {
  LossSpec() = default;
  LossSpec(const char* name) : name(name) {}          // NOLINT
  LossSpec(std::string name) : name(std::move(name)) {}  // NOLINT
  LossSpec(LossPtr loss) : loss(std::move(loss)) {}   // NOLINT
  std::string name;
  LossPtr loss;
};
/// A metric given by name or object.
struct MetricSpec {
  MetricSpec(const char* name) : name(name) {}          // NOLINT
  MetricSpec(std::string name) : name(std::move(name)) {}  // NOLINT
  MetricSpec(MetricPtr metric) : metric(std::move(metric)) {}  // NOLINT
  std::string name;
  MetricPtr metric;
};
/// An optimizer given by name or object.
struct OptimizerSpec {
  OptimizerSpec() = default;
  OptimizerSpec(const char* name) : name(name) {}          // NOLINT
  OptimizerSpec(std::string name) : name(std::move(name)) {}  // NOLINT
  OptimizerSpec(OptimizerPtr opt) : optimizer(std::move(opt)) {}  // NOLINT
  std::string name;
  OptimizerPtr optimizer;
};

struct CompileOptions {
  OptimizerSpec optimizer = "rmsprop";
  /// One loss for a single-output model; several (one per output) otherwise.
  std::vector<LossSpec> loss;
  std::vector<MetricSpec> metrics;
  std::vector<double> loss_weights;
  /// Run the train / test / predict steps eagerly instead of as traced functions.
  bool run_eagerly = false;
};

struct FitOptions {
  int64_t batch_size = 32;
  int epochs = 1;
  int verbose = 1;
  std::vector<CallbackPtr> callbacks;
  /// The last fraction of x/y (before shuffling) held out for validation.
  double validation_split = 0.0;
  /// Explicit validation inputs and targets (take precedence over validation_split).
  TensorList validation_x, validation_y;
  bool shuffle = true;
  int initial_epoch = 0;
  /// Per-sample weights [samples] for the loss and the metrics (optional); with a
  /// validation_split only the training part's weights are used.
  Tensor sample_weight;
  /// Shuffling seed (unset: the global generator).
  std::optional<int64_t> seed;
  /// fit(dataset): batches per epoch; -1: one pass over the dataset per epoch. When
  /// set, the dataset's iterator carries on across epochs (Keras semantics), and a
  /// finite dataset that runs out stops training with a warning.
  int64_t steps_per_epoch = -1;
  /// fit(dataset): validation batches, (x, y) elements, evaluated after each epoch.
  data::Dataset validation_data;
};

struct EvaluateOptions {
  int64_t batch_size = 32;
  int verbose = 1;
  std::vector<CallbackPtr> callbacks;
};

struct PredictOptions {
  int64_t batch_size = 32;
  int verbose = 0;
};

/// What fit() returns: per epoch, each logged value ("loss", "accuracy", "val_loss", ...).
struct History {
  std::map<std::string, std::vector<double>> history;
  std::vector<int> epoch;
};

class Model : public Layer {
 public:
  /// A subclassed model: override call().
  explicit Model(std::string name = "");
  /// A functional model from Keras tensors (keras::Input and layer calls on them):
  /// the layer graph between them is recorded and re-run on real inputs.
  Model(TensorList inputs, TensorList outputs, std::string name = "");
  ~Model() override;

  std::string class_name() const override;
  TensorList call(const TensorList& inputs, bool training) override;
  using Layer::call;

  /// Functional and Sequential models: the layers in order (Keras's model.layers).
  virtual std::vector<LayerPtr> model_layers() const;
  /// A layer by name; throws "[Model.get_layer] no layer named 'x'; layers: ...".
  LayerPtr get_layer(const std::string& name) const;

  void compile(CompileOptions options);
  /// x: one tensor per model input; y: one per output. The first dim is the sample dim.
  History fit(const TensorList& x, const TensorList& y, FitOptions options = {});
  History fit(const Tensor& x, const Tensor& y, FitOptions options = {}) {
    return fit(TensorList{x}, TensorList{y}, std::move(options));
  }
  /// Trains on a dataset of batches: elements (x..., y...) or (x..., y..., sample_weight),
  /// with one x per model input and one y per output (a dict element is read by
  /// position). Batching and shuffling are the dataset's: batch_size, shuffle,
  /// validation_split and seed are not used. An infinite dataset needs steps_per_epoch.
  History fit(const data::Dataset& dataset, FitOptions options = {});
  /// {"loss": ..., metric names: ...} over the whole data.
  std::map<std::string, double> evaluate(const TensorList& x, const TensorList& y, EvaluateOptions options = {});
  std::map<std::string, double> evaluate(const Tensor& x, const Tensor& y, EvaluateOptions options = {}) {
    return evaluate(TensorList{x}, TensorList{y}, std::move(options));
  }
  /// Over a finite dataset of (x..., y...) batches.
  std::map<std::string, double> evaluate(const data::Dataset& dataset, EvaluateOptions options = {});
  /// The outputs over the whole data, batch by batch (training false).
  TensorList predict(const TensorList& x, PredictOptions options = {});
  Tensor predict(const Tensor& x, PredictOptions options = {}) { return predict(TensorList{x}, options)[0]; }
  /// The outputs over a finite dataset of batches; components after the model's inputs
  /// (targets, weights) are ignored, as Keras does.
  TensorList predict(const data::Dataset& dataset, PredictOptions options = {});

  /// One optimizer step on one batch; returns the logs (loss and metrics so far).
  /// sample_weight (optional): one weight per sample of the batch.
  std::map<std::string, double> train_on_batch(const TensorList& x, const TensorList& y,
                                               const Tensor& sample_weight = Tensor());
  std::map<std::string, double> test_on_batch(const TensorList& x, const TensorList& y);

  /// The Keras-like table: layer (type), output shape, params; totals of trainable and
  /// non-trainable parameters. Functional models add a "Connected to" column.
  std::string summary() const;
  /// Graphviz DOT of the layer graph (tf.keras.utils.plot_model without the rendering).
  std::string to_dot(bool show_shapes = true) const;

  /// Saves / loads every weight (weights() order, by name) to one file, atomically.
  void save_weights(const std::string& path) const;
  void load_weights(const std::string& path);

  bool compiled() const { return compiled_ != nullptr; }
  OptimizerPtr optimizer() const;
  /// Under "mixed_float16": the dynamic loss scale now (the loss is multiplied by it
  /// before differentiation, a step with non-finite gradients is skipped and halves it,
  /// 2000 good steps double it; as Keras's LossScaleOptimizer). 0 for other policies.
  double loss_scale() const;
  /// The metric objects that fit/evaluate report (the loss tracker first).
  std::vector<MetricPtr> metrics() const;
  /// Set by a callback to end fit() after the current batch.
  bool stop_training = false;

  /// Functional models: the Keras tensors they were built from.
  const TensorList& inputs() const { return inputs_; }
  const TensorList& outputs() const { return outputs_; }

  struct Compiled;

 protected:
  /// For Sequential: sets the functional graph once the input shape is known.
  void init_functional(TensorList inputs, TensorList outputs);
  /// For Sequential: drops the functional graph (before it is recorded anew).
  void reset_functional();

 private:
  TensorList inputs_, outputs_;
  std::vector<std::shared_ptr<const LayerNode>> nodes_;  // topological order
  std::shared_ptr<Compiled> compiled_;

  // For keras::save_model (deepflow/io/keras_saving.h), as Keras's get_compile_config():
 public:
  /// The options of the last compile() (null before): saved as the model's compile config.
  const std::shared_ptr<const CompileOptions>& compile_options() const { return compile_options_; }

 private:
  std::shared_ptr<const CompileOptions> compile_options_;  // set by compile()
};
using ModelPtr = std::shared_ptr<Model>;

/// A linear stack of layers (tf.keras.Sequential). With an InputLayer first (or after
/// build(input_shape) / the first call) it is a functional model of its layers.
class Sequential : public Model {
 public:
  explicit Sequential(std::vector<LayerPtr> layers = {}, std::string name = "");
  /// Appends a layer (an InputLayer only first).
  void add(LayerPtr layer);
  /// Removes the last layer (its weights leave the model).
  void pop();
  /// Builds the layers for inputs [batch, ...]; the batch dim is kept unknown (None).
  void build(const Shape& input_shape) override;
  using Layer::build;
  TensorList call(const TensorList& inputs, bool training) override;
  /// With the input's mask passed to the first layer.
  TensorList call_masked(const TensorList& inputs, const TensorList& masks, bool training) override;
  using Layer::call;
  std::string class_name() const override { return "Sequential"; }
  std::vector<LayerPtr> model_layers() const override;

 private:
  /// Records the stack as a functional graph again, when its input shape is known.
  void record();
  TensorList run(const TensorList& inputs, TensorList mask, bool training);
  std::vector<LayerPtr> stack_;
};

namespace utils {
/// Writes model.to_dot(show_shapes) to `to_file` (tf.keras.utils.plot_model without the
/// rendering: `dot -Tpng model.dot -o model.png` draws it). Throws naming the path.
void plot_model(const Model& model, const std::string& to_file, bool show_shapes = true);
}  // namespace utils

}  // namespace deepflow::keras
