// SPDX-License-Identifier: Apache-2.0
// Keras serialization: every built-in layer round-trips through its config (equal config,
// equal outputs with the same weights); Sequential and functional model configs and JSON
// (shared layers, several inputs and outputs, nested models); custom layers through the
// registry; the errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "deepflow/deepflow.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/model.h"
#include "deepflow/keras/serialization.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::expect_near;

struct Case {
  LayerPtr layer;
  TensorList inputs;
};

Tensor rnd(const Shape& s, int64_t seed) { return random_normal(s, 0, 1, DType::Float32, seed); }

std::vector<Case> every_layer() {
  using namespace layers;
  const Tensor x2 = rnd({2, 4}, 1), seq = rnd({2, 6, 3}, 2), img = rnd({2, 6, 6, 3}, 3);
  const Tensor a = rnd({2, 3}, 4), b = rnd({2, 3}, 5);
  const Tensor ids = constant(std::vector<int32_t>{1, 4, 0, 9, 3, 3}, {2, 3});
  auto l2 = regularizers::L2(0.02);
  return {
      {InputLayer(Shape{4}, DType::Float32, "ser_in"), {x2}},
      {Dense(5, {.activation = "relu", .use_bias = true, .kernel_initializer = initializers::HeNormal(7),
                 .bias_initializer = initializers::Constant(0.25), .kernel_regularizer = l2}),
       {x2}},
      {Dense(3, {.use_bias = false, .kernel_initializer = initializers::Zeros()}), {x2}},
      {Activation("tanh"), {x2}},
      {Flatten(), {img}},
      {Reshape(Shape{-1, 3}), {seq}},
      {Dropout(0.3, 5), {x2}},
      {Conv1D(4, 3, {.padding = "causal", .dilation_rate = 2, .activation = "elu"}), {seq}},
      {Conv1D(6, 2, {.strides = 2, .groups = 3, .bias_regularizer = regularizers::L1(0.1)}), {seq}},
      {Conv2D(4, {3, 2}, {.strides = 2, .padding = "same", .kernel_initializer = initializers::LecunUniform(1)}),
       {img}},
      {Conv2DTranspose(2, {3, 3}, {.strides = 2, .padding = "same", .output_padding = 1}), {img}},
      {DepthwiseConv2D({3, 3}, {.padding = "same", .depth_multiplier = 2, .dilation_rate = 2}), {img}},
      {SeparableConv2D(4, {3, 3}, {.dilation_rate = 1, .depth_multiplier = 2, .activation = "relu",
                                   .pointwise_regularizer = l2}),
       {img}},
      {MaxPooling1D(2), {seq}},
      {AveragePooling1D(3, {.strides = 1, .padding = "same"}), {seq}},
      {MaxPooling2D({2, 3}, {.strides = {1, 2}}), {img}},
      {AveragePooling2D(2, {.padding = "same"}), {img}},
      {GlobalAveragePooling1D({.keepdims = true}), {seq}},
      {GlobalMaxPooling1D(), {seq}},
      {GlobalAveragePooling2D(), {img}},
      {GlobalMaxPooling2D({.keepdims = true}), {img}},
      {Embedding(10, 4, {.embeddings_regularizer = l2}), {ids}},
      {Add(), {a, b}},
      {Subtract(), {a, b}},
      {Multiply(), {a, b}},
      {Average(), {a, b}},
      {Maximum(), {a, b}},
      {Minimum(), {a, b}},
      {Concatenate(0), {a, b}},
      {BatchNormalization({.axis = -1, .momentum = 0.9, .epsilon = 1e-2, .center = false,
                           .moving_variance_initializer = initializers::Constant(2.0)}),
       {img}},
      {BatchNormalization({.axis = 1, .scale = false}), {seq}},
      {LayerNormalization({.axis = {1, 2}, .epsilon = 1e-5, .gamma_regularizer = l2}), {seq}},
      {SimpleRNN(4, {.activation = "relu", .return_sequences = true}), {seq}},
      {LSTM(4, {.unit_forget_bias = false, .return_state = true}), {seq}},
      {GRU(3, {.return_sequences = true, .go_backwards = true, .reset_after = false}), {seq}},
      {Bidirectional(LSTM(3), {.merge_mode = "sum"}), {seq}},
      {Bidirectional(GRU(2, {.return_sequences = true}), {.merge_mode = ""}), {seq}},
      {MultiHeadAttention(2, 4, {.value_dim = 3, .output_shape = 5, .use_causal_mask = true, .seed = 9}),
       {seq, rnd({2, 6, 3}, 6)}},
      {ZeroPadding2D(std::pair<int64_t, int64_t>{1, 2}, std::pair<int64_t, int64_t>{0, 1}), {img}},
      {Rescaling(1.0 / 255, -0.5), {img}},
      {Normalization({.mean = std::vector<double>{0.5}, .variance = std::vector<double>{4.0}, .invert = true}), {img}},
      {Normalization(), {seq}},
  };
}

TEST(LayerSerialization, EveryBuiltinLayerRoundTrips) {
  std::set<std::string> covered;
  for (const Case& c : every_layer()) {
    const Layer& orig = *c.layer;
    SCOPED_TRACE(orig.class_name() + " " + orig.name());
    covered.insert(orig.class_name());
    const TensorList want = (*c.layer)(c.inputs, false);
    const Config config = serialize_layer(orig);
    ASSERT_EQ(config["class_name"], orig.class_name());
    // Through JSON text, as a file holds it.
    LayerPtr copy = layer_from_config(Config::parse(config.dump()));
    ASSERT_NE(copy, nullptr);
    EXPECT_EQ(copy->class_name(), orig.class_name());
    EXPECT_EQ(copy->name(), orig.name());
    EXPECT_EQ(copy->get_config(), orig.get_config()) << copy->get_config().dump() << "\nvs\n"
                                                     << orig.get_config().dump();
    (*copy)(c.inputs, false);  // builds
    copy->set_weights(orig.get_weights());
    const TensorList got = (*copy)(c.inputs, false);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_near(got[i], want[i], 1e-6);
    EXPECT_EQ(copy->losses().size(), orig.losses().size());  // regularizers came back
  }
  for (const std::string& name : registered_layers()) {
    // ReLU is read as an Activation (ReadsKerasSpellings), never written.
    if (name == "Sequential" || name == "Functional" || name == "ScaleBy" || name == "Shift" || name == "ReLU")
      continue;
    EXPECT_TRUE(covered.count(name)) << name << " is not tested";
  }
}

TEST(LayerSerialization, TrainableAndDtypePolicyComeBack) {
  layers::Dense d(2, {.name = "frozen_bf16"});
  d->set_trainable(false);
  d->set_dtype_policy("mixed_bfloat16");
  LayerPtr copy = layer_from_config(serialize_layer(*d));
  EXPECT_FALSE(copy->trainable());
  EXPECT_EQ(copy->dtype_policy().name, "mixed_bfloat16");
  EXPECT_EQ(copy->get_config(), d->get_config());
}

TEST(LayerSerialization, ReadsKerasSpellings) {
  // Keras writes initializers by name, kernel sizes as ints, axis lists, Keras 3 dtype policies.
  Config c = Config::parse(R"({"class_name": "Conv2D", "config": {"name": "k", "filters": 2, "kernel_size": 3,
      "strides": [1, 1], "padding": "valid", "kernel_initializer": "he_uniform",
      "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}}}})");
  LayerPtr l = layer_from_config(c);
  EXPECT_EQ(l->get_config()["kernel_size"], Config::parse("[3, 3]"));
  EXPECT_EQ(l->get_config()["kernel_initializer"]["class_name"], "HeUniform");
  // keras.layers.ReLU as the equivalent Activation.
  LayerPtr relu6 = layer_from_config(Config::parse(R"({"class_name": "ReLU", "config": {"name": "r6", "max_value": 6.0,
      "negative_slope": 0.0, "threshold": 0.0}})"));
  EXPECT_EQ(relu6->class_name(), "Activation");
  EXPECT_EQ(relu6->name(), "r6");
  EXPECT_EQ(relu6->get_config()["activation"], "relu6");
  EXPECT_EQ(layer_from_config(Config::parse(R"({"class_name": "ReLU", "config": {}})"))->get_config()["activation"],
            "relu");
  EXPECT_THAT(error_of([] {
                layer_from_config(Config::parse(R"({"class_name": "ReLU", "config": {"name": "leaky",
                    "negative_slope": 0.1}})"));
              }),
              HasSubstr("ReLU 'leaky': only max_value None or 6"));
  LayerPtr bn = layer_from_config(Config::parse(R"({"class_name": "BatchNormalization", "config": {"axis": [3]}})"));
  EXPECT_EQ(bn->get_config()["axis"], 3);
}

TEST(LayerSerialization, Errors) {
  EXPECT_THAT(error_of([] { layer_from_config(Config::parse(R"({"class_name": "Foo", "config": {}})")); }),
              HasSubstr("[keras.layers.deserialize] unknown layer class 'Foo'; register it with "
                        "keras::register_layer(\"Foo\", factory) or DF_KERAS_REGISTER_LAYER(Foo)"));
  EXPECT_THAT(error_of([] { layer_from_config(Config::parse(R"({"config": {}})")); }),
              HasSubstr("expects {\"class_name\": ..., \"config\": {...}}"));
  EXPECT_THAT(error_of([] { layer_from_config(Config::parse(R"({"class_name": "Dense", "config": {"name": "d"}})")); }),
              HasSubstr("bad config for Dense 'd'"));
  EXPECT_THAT(
      error_of([] { layer_from_config(Config::parse(R"({"class_name": "Dense", "config": {"units": "x"}})")); }),
      HasSubstr("bad config for Dense"));
  EXPECT_THAT(error_of([] { layer_from_config(Config::parse(R"({"class_name": "Dense", "config": {"units": 0}})")); }),
              HasSubstr("[Dense] units must be positive, got 0"));
  EXPECT_THAT(error_of([] {
                layer_from_config(Config::parse(R"({"class_name": "LSTM", "config": {"units": 2, "dropout": 0.5}})"));
              }),
              HasSubstr("dropout is not supported"));
  EXPECT_THAT(error_of([] {
                layer_from_config(Config::parse(
                    R"({"class_name": "Conv2D", "config": {"filters": 2, "kernel_size": 3, "data_format": "channels_first"}})"));
              }),
              HasSubstr("only data_format \"channels_last\" is supported"));
}

TEST(CompileConfig, RoundTripsNamesAndObjects) {
  const CompileOptions options{
      .optimizer = optimizers::Adam({.learning_rate = schedules::ExponentialDecay(
                                         {.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5}),
                                     .clipnorm = 1.0,
                                     .beta_1 = 0.8}),
      .loss = {losses::SparseCategoricalCrossentropy({.from_logits = true}), "mse"},
      .metrics = {"accuracy", metrics::SparseTopKCategoricalAccuracy(3, "top3"), metrics::AUC(50),
                  metrics::Precision(0.25)},
      .loss_weights = {1.0, 0.1},
      .run_eagerly = true};
  const Config c = compile_config(options);
  EXPECT_EQ(c["loss"][1], "mse");
  EXPECT_EQ(c["loss"][0]["class_name"], "SparseCategoricalCrossentropy");
  EXPECT_EQ(c["metrics"][0], "accuracy");
  EXPECT_EQ(c["metrics"][1]["config"]["k"], 3);
  EXPECT_EQ(c["optimizer"]["config"]["beta_1"], 0.8);
  const CompileOptions back = compile_options_from_config(Config::parse(c.dump()));
  EXPECT_EQ(compile_config(back), c);
  EXPECT_EQ(back.metrics[1].metric->name(), "top3");
  EXPECT_TRUE(back.run_eagerly);
  // A single loss is written bare, as Keras does; a name optimizer stays a name.
  const Config single = compile_config({.loss = {"mae"}});
  EXPECT_EQ(single["loss"], "mae");
  EXPECT_EQ(single["optimizer"], "rmsprop");
  EXPECT_EQ(compile_config(compile_options_from_config(single)), single);

  EXPECT_THAT(error_of([] { compile_options_from_config(Config::parse(R"({"optimizer": "adam"})")); }),
              HasSubstr("[keras.compile_from_config] the config has no loss"));
  EXPECT_THAT(error_of([] {
                compile_options_from_config(Config::parse(
                    R"({"loss": "mse", "metrics": [{"class_name": "MeanMetricWrapper", "config": {"name": "f"}}]})"));
              }),
              HasSubstr("cannot rebuild metric 'f' of class 'MeanMetricWrapper'"));
}

// --- a custom layer through the registry ---

class ScaleBy : public Layer {
 public:
  explicit ScaleBy(double init, std::string name = "") : Layer(std::move(name)), init_(init) {}
  static LayerPtr from_config(const Config& c) {
    return std::make_shared<ScaleBy>(c.at("init").get<double>(), serialization::name_of(c));
  }
  std::string class_name() const override { return "ScaleBy"; }
  Config get_config() const override {
    Config c = Layer::get_config();
    c["init"] = init_;
    return c;
  }
  void build(const Shape& s) override { w_ = add_weight("w", {s.dim(-1)}, initializers::Constant(init_)); }
  Tensor call(const Tensor& x, bool) override { return x * read(w_); }
  using Layer::call;

 private:
  double init_;
  Variable w_;
};
DF_KERAS_REGISTER_LAYER(ScaleBy);

// Constructible from its config: the registry's other form.
class Shift : public Layer {
 public:
  explicit Shift(const Config& c) : Layer(serialization::name_of(c)), by_(c.value("by", 0.0)) {}
  std::string class_name() const override { return "Shift"; }
  Config get_config() const override {
    Config c = Layer::get_config();
    c["by"] = by_;
    return c;
  }
  Tensor call(const Tensor& x, bool) override { return x + by_; }
  using Layer::call;

 private:
  double by_;
};
DF_KERAS_REGISTER_LAYER(Shift);

TEST(LayerSerialization, CustomLayersThroughTheRegistry) {
  EXPECT_TRUE(is_layer_registered("ScaleBy"));
  EXPECT_TRUE(is_layer_registered("Shift"));
  auto model = std::make_shared<Sequential>(std::vector<LayerPtr>{
      layers::InputLayer(Shape{3}), std::make_shared<ScaleBy>(2.5, "scale"),
      std::make_shared<Shift>(Config{{"name", "shift"}, {"by", -1.0}}), layers::Dense(2)});
  ModelPtr copy = model_from_json(model_to_json(*model));
  EXPECT_EQ(model_to_config(*copy), model_to_config(*model));
  copy->set_weights(model->get_weights());
  const Tensor x = rnd({4, 3}, 11);
  expect_near((*copy)(x), (*model)(x), 1e-6);
  EXPECT_EQ(copy->get_layer("scale")->class_name(), "ScaleBy");
}

// --- models ---

TEST(ModelSerialization, SequentialRoundTrip) {
  auto model = std::make_shared<Sequential>(
      std::vector<LayerPtr>{layers::InputLayer(Shape{6}, DType::Float32, "features"),
                            layers::Dense(8, {.activation = "relu", .name = "hidden"}), layers::Dropout(0.5),
                            layers::BatchNormalization(), layers::Dense(3, {.name = "logits"})},
      "seq_roundtrip");
  const Config config = model_to_config(*model);
  EXPECT_EQ(config["class_name"], "Sequential");
  EXPECT_EQ(config["config"]["name"], "seq_roundtrip");
  ASSERT_EQ(config["config"]["layers"].size(), 5u);
  EXPECT_EQ(config["config"]["layers"][0]["class_name"], "InputLayer");
  EXPECT_EQ(config["config"]["layers"][0]["config"]["batch_shape"], Config::parse("[null, 6]"));
  EXPECT_EQ(config["config"]["layers"][1]["config"]["name"], "hidden");

  ModelPtr copy = model_from_json(model_to_json(*model, 2));
  EXPECT_EQ(copy->class_name(), "Sequential");
  EXPECT_EQ(copy->name(), "seq_roundtrip");
  EXPECT_EQ(model_to_config(*copy), config);
  // The rebuilt input keeps its name even though "features" is taken in this process.
  EXPECT_EQ(model_to_config(*copy)["config"]["layers"][0]["config"]["name"], "features");
  copy->set_weights(model->get_weights());
  const Tensor x = rnd({5, 6}, 12);
  expect_near(copy->predict(x), model->predict(x), 1e-6);
  EXPECT_EQ(copy->summary().size(), model->summary().size());
}

TEST(ModelSerialization, SequentialBuiltFromAShape) {
  auto model = std::make_shared<Sequential>(std::vector<LayerPtr>{layers::Dense(4), layers::Dense(1)});
  const Config unbuilt = model_to_config(*model);
  EXPECT_EQ(unbuilt["config"]["layers"].size(), 2u);  // no input shape yet
  EXPECT_FALSE(model_from_config(unbuilt)->built());
  model->build(Shape{-1, 7});
  const Config built = model_to_config(*model);
  ASSERT_EQ(built["config"]["layers"].size(), 3u);
  EXPECT_EQ(built["config"]["layers"][0]["config"]["batch_shape"], Config::parse("[null, 7]"));
  ModelPtr copy = model_from_config(built);
  EXPECT_TRUE(copy->built());
  EXPECT_EQ(model_to_config(*copy), built);
  EXPECT_EQ(copy->count_params(), model->count_params());
}

TEST(ModelSerialization, FunctionalSharedLayersManyInputsAndOutputs) {
  Tensor left = Input({4}, "ser_left"), right = Input({4}, "ser_right");
  layers::Dense shared(5, {.activation = "tanh", .name = "ser_shared"});
  Tensor hl = shared(left), hr = shared(right);  // one layer, two nodes
  Tensor joined = layers::Concatenate(-1, "ser_concat")(TensorList{hl, hr})[0];
  Tensor score = layers::Dense(1, {.name = "ser_score"})(joined);
  Tensor diff = layers::Subtract("ser_diff")(TensorList{hl, hr})[0];
  auto inner = std::make_shared<Sequential>(
      std::vector<LayerPtr>{layers::InputLayer(Shape{5}), layers::Dense(2, {.name = "ser_inner_dense"})},
      "ser_inner");
  Tensor nested = (*inner)(diff);  // a model used as a layer
  auto model = std::make_shared<Model>(TensorList{left, right}, TensorList{score, nested, hl}, "siamese");

  const Config config = model_to_config(*model);
  EXPECT_EQ(config["class_name"], "Functional");
  const Config& c = config["config"];
  EXPECT_EQ(c["input_layers"], Config::parse(R"([["ser_left", 0, 0], ["ser_right", 0, 0]])"));
  EXPECT_EQ(c["output_layers"], Config::parse(R"([["ser_score", 0, 0], ["ser_inner", 0, 0], ["ser_shared", 0, 0]])"));
  const Config* shared_entry = nullptr;
  for (const Config& l : c["layers"])
    if (l["name"] == "ser_shared") shared_entry = &l;
  ASSERT_NE(shared_entry, nullptr);
  ASSERT_EQ((*shared_entry)["inbound_nodes"].size(), 2u);  // called twice
  EXPECT_EQ((*shared_entry)["inbound_nodes"][1]["args"][0]["config"]["keras_history"],
            Config::parse(R"(["ser_right", 0, 0])"));

  ModelPtr copy = model_from_json(model_to_json(*model));
  EXPECT_EQ(copy->class_name(), "Functional");
  EXPECT_EQ(model_to_config(*copy), config);
  ASSERT_EQ(copy->weights().size(), model->weights().size());
  copy->set_weights(model->get_weights());
  const TensorList x{rnd({3, 4}, 13), rnd({3, 4}, 14)};
  const TensorList want = (*model)(x, false), got = (*copy)(x, false);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) expect_near(got[i], want[i], 1e-6);
}

// Two models whose Inputs were given one name both keep it (the graph node of the second
// is renamed to stay unique, the Keras name is not).
TEST(ModelSerialization, InputNamesAreKeptWhenGivenTwice) {
  for (int i = 0; i < 2; ++i) {
    Tensor in = Input({3}, "ser_twice");
    auto m = std::make_shared<Model>(TensorList{in}, TensorList{layers::Dense(1)(in)});
    const Config c = model_to_config(*m);
    EXPECT_EQ(c["config"]["input_layers"], Config::parse(R"([["ser_twice", 0, 0]])")) << "model " << i;
    EXPECT_EQ(c["config"]["layers"][0]["name"], "ser_twice");
  }
}

TEST(ModelSerialization, ReadsKeras2InboundNodes) {
  // Keras 2's form: inbound_nodes [[["layer", node, tensor, {}], ...]] and the model class "Model".
  const std::string json = R"({"class_name": "Model", "config": {"name": "k2",
    "layers": [
      {"class_name": "InputLayer", "name": "k2_in", "config": {"name": "k2_in", "batch_input_shape": [null, 3],
       "dtype": "float32"}, "inbound_nodes": []},
      {"class_name": "Dense", "name": "k2_d", "config": {"name": "k2_d", "units": 2}, "inbound_nodes": [[["k2_in", 0, 0, {}]]]},
      {"class_name": "Add", "name": "k2_add", "config": {"name": "k2_add"},
       "inbound_nodes": [[["k2_d", 0, 0, {}], ["k2_d", 0, 0, {}]]]}],
    "input_layers": [["k2_in", 0, 0]], "output_layers": [["k2_add", 0, 0]]}})";
  ModelPtr m = model_from_json(json);
  const Tensor x = ones({2, 3});
  LayerPtr d = m->get_layer("k2_d");
  expect_near((*m)(x), (*d)(x) * 2.0, 1e-6);
}

class Subclassed : public Model {
 public:
  Subclassed() : Model("subclassed") { dense_ = track(layers::Dense(2)); }
  TensorList call(const TensorList& x, bool) override { return {dense_(x[0])}; }
  using Model::call;

 private:
  layers::Dense dense_{nullptr};
};

// Dropout at inference passes its input through: the functional graph must still see the
// layers before it (the Keras files of the TF corpus have Dropout before the head).
TEST(ModelSerialization, PassThroughLayersKeepTheGraph) {
  Tensor in = Input({4}, "ser_pass_in");
  Tensor h = layers::Dense(3, {.name = "ser_pass_hidden"})(in);
  Tensor d = layers::Dropout(0.5)(h, false);
  auto model = std::make_shared<Model>(TensorList{in}, TensorList{layers::Dense(2, {.name = "ser_pass_out"})(d)});
  ASSERT_EQ(model->model_layers().size(), 3u);
  EXPECT_EQ(model->model_layers()[0]->name(), "ser_pass_hidden");
  ModelPtr copy = model_from_config(model_to_config(*model));
  EXPECT_EQ(copy->model_layers().size(), 3u);
  copy->set_weights(model->get_weights());
  const Tensor x = rnd({2, 4}, 21);
  expect_near(copy->predict(x), model->predict(x), 1e-6);
}

TEST(ModelSerialization, Errors) {
  Subclassed sub;
  EXPECT_FALSE(is_config_model(sub));
  EXPECT_THAT(error_of([&] { model_to_config(sub); }),
              HasSubstr("[keras.models.model_to_config] model 'subclassed' is a subclassed model"));
  EXPECT_THAT(error_of([] { model_from_json("{\"class_name\": "); }), HasSubstr("[keras.models.model_from_json]"));
  EXPECT_THAT(error_of([] { model_from_json(R"({"class_name": "Dense", "config": {"units": 2}})"); }),
              HasSubstr("class 'Dense' is a layer, not a model"));
  EXPECT_THAT(error_of([] {
                model_from_json(R"({"class_name": "Functional", "config": {"name": "bad", "layers": [
                  {"class_name": "Dense", "name": "bad_d", "config": {"name": "bad_d", "units": 2},
                   "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
                     "config": {"keras_history": ["nowhere", 0, 0]}}], "kwargs": {}}]}],
                  "input_layers": [], "output_layers": [["bad_d", 0, 0]]}})");
              }),
              HasSubstr("layer 'bad_d' reads from unknown layer 'nowhere'"));
  EXPECT_THAT(error_of([] {
                model_from_json(R"({"class_name": "Functional", "config": {"name": "cyc", "layers": [
                  {"class_name": "Dense", "name": "cyc_d", "config": {"name": "cyc_d", "units": 2},
                   "inbound_nodes": [[["cyc_d", 0, 0, {}]]]}],
                  "input_layers": [], "output_layers": [["cyc_d", 0, 0]]}})");
              }),
              HasSubstr("cannot resolve the inbound nodes of layer 'cyc_d'"));
  EXPECT_THAT(error_of([] {
                model_from_json(R"({"class_name": "Sequential", "config": {"layers": [
                  {"class_name": "NotALayer", "config": {}}]}})");
              }),
              HasSubstr("unknown layer class 'NotALayer'"));
}

}  // namespace
}  // namespace deepflow::keras
