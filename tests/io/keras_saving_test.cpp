// SPDX-License-Identifier: Apache-2.0
// keras::save_model / load_model: round trips of Sequential and functional models, the
// serving signature, resuming training (2 + 1 epochs == 3 epochs with Adam), custom
// layers through the registry, subclassed models, and the errors.
#include "deepflow/io/keras_saving.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "deepflow/deepflow.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/serialization.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::expect_near;
using testing::TempDir;

Tensor rnd(const Shape& s, int64_t seed) { return random_normal(s, 0, 1, DType::Float32, seed); }

// y = x . [1, -2, 0.5, 3] + noise-free: a regression any small MLP fits.
std::pair<Tensor, Tensor> regression_data(int64_t n) {
  Tensor x = rnd({n, 4}, 21);
  Tensor y = reduce_sum(x * constant({1.f, -2.f, 0.5f, 3.f}), {1}, true);
  return {x, y};
}

void expect_same_weights(const Model& a, const Model& b, double tol) {
  const TensorList wa = a.get_weights(), wb = b.get_weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) expect_near(wb[i], wa[i], tol);
}

TEST(KerasSaving, SequentialRoundTripWithSignatureAndCompileConfig) {
  TempDir tmp;
  auto model = std::make_shared<Sequential>(
      std::vector<LayerPtr>{layers::InputLayer(Shape{4}, DType::Float32, "ks_features"),
                            layers::Dense(8, {.activation = "relu", .name = "ks_hidden"}),
                            layers::BatchNormalization({.name = "ks_bn"}), layers::Dense(1, {.name = "ks_out"})},
      "ks_regressor");
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = {"mse"}, .metrics = {"mae"}});
  ASSERT_NE(model->compile_options(), nullptr) << "Model::compile() must record its options for save_model";
  auto [x, y] = regression_data(64);
  model->fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0});
  const std::string dir = tmp / "model";
  save_model(*model, dir);
  for (const char* f : {"saved_model.pb", "variables/variables.index", "variables/variables.data-00000-of-00001"})
    EXPECT_TRUE(testing::file_exists(dir + "/" + f)) << f;

  ModelPtr loaded = load_model(dir);
  EXPECT_EQ(loaded->class_name(), "Sequential");
  EXPECT_EQ(loaded->name(), "ks_regressor");
  EXPECT_EQ(model_to_config(*loaded), model_to_config(*model));
  expect_same_weights(*model, *loaded, 0);
  ASSERT_TRUE(loaded->compiled());
  EXPECT_EQ(loaded->optimizer()->name(), "Adam");
  EXPECT_EQ(loaded->optimizer()->iterations().value().item<int64_t>(), 4);  // 64 / 16 steps
  EXPECT_NEAR(loaded->optimizer()->current_learning_rate(), 0.01, 1e-9);
  expect_near(loaded->predict(x), model->predict(x), 1e-6);
  const auto scores = loaded->evaluate(x, y, {.verbose = 0});
  EXPECT_TRUE(scores.count("mae"));  // the metrics came back
  EXPECT_NEAR(scores.at("loss"), model->evaluate(x, y, {.verbose = 0}).at("loss"), 1e-5);

  // The serving signature runs without the model: inputs and outputs named after the layers.
  io::SavedModel sm = io::load_saved_model(dir);
  const io::LoadedSignature& serve = sm.signature("serving_default");
  ASSERT_TRUE(serve.inputs().count("ks_features"));
  EXPECT_EQ(serve.inputs().at("ks_features").shape, (Shape{-1, 4}));
  ASSERT_TRUE(serve.outputs().count("ks_out"));
  expect_near(serve({{"ks_features", x}}).at("ks_out"), model->predict(x), 1e-5);
  const Config meta = Config::parse(sm.object_metadata());
  EXPECT_EQ(meta["format"], "deepflow.keras");
  EXPECT_EQ(meta["compile_config"]["loss"], "mse");
  EXPECT_EQ(meta["compile_config"]["metrics"], Config::parse(R"(["mae"])"));
  EXPECT_EQ(meta["compile_config"]["optimizer"]["class_name"], "Adam");
  EXPECT_EQ(meta["weights"].size(), model->weights().size());
  EXPECT_EQ(meta["optimizer_variables"].size(), model->optimizer()->variables().size());
}

TEST(KerasSaving, ResumedTrainingEqualsOneRun) {
  TempDir tmp;
  auto [x, y] = regression_data(96);
  Tensor in = Input({4}, "ks_resume_in");
  Tensor h = layers::Dense(16, {.activation = "tanh", .name = "ks_resume_h"})(in);
  Tensor out = layers::Dense(1, {.name = "ks_resume_out"})(h);
  auto straight = std::make_shared<Model>(TensorList{in}, TensorList{out}, "ks_resume");
  ModelPtr resumed = model_from_config(model_to_config(*straight));
  resumed->set_weights(straight->get_weights());
  const CompileOptions compile{.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = {"mse"}};
  straight->compile(compile);
  CompileOptions compile2 = compile;
  compile2.optimizer = optimizers::Adam({.learning_rate = 0.01});
  resumed->compile(compile2);
  ASSERT_NE(resumed->compile_options(), nullptr) << "Model::compile() must record its options for save_model";
  const FitOptions fit{.batch_size = 16, .epochs = 3, .verbose = 0, .shuffle = false};

  straight->fit(x, y, fit);
  resumed->fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .shuffle = false});
  save_model(*resumed, tmp / "ckpt");
  ModelPtr loaded = load_model(tmp / "ckpt");
  loaded->fit(x, y, {.batch_size = 16, .epochs = 3, .verbose = 0, .shuffle = false, .initial_epoch = 2});
  EXPECT_EQ(loaded->optimizer()->iterations().value().item<int64_t>(), 18);
  expect_same_weights(*straight, *loaded, 1e-6);

  // Without the optimizer state the third epoch starts Adam afresh: a different result.
  save_model(*resumed, tmp / "no_opt", {.include_optimizer = false});
  ModelPtr fresh = load_model(tmp / "no_opt");
  EXPECT_EQ(fresh->optimizer()->iterations().value().item<int64_t>(), 0);
  fresh->fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0, .shuffle = false});
  const TensorList a = fresh->get_weights(), b = straight->get_weights();
  EXPECT_GT(reduce_max(abs(a[0] - b[0])).item<double>(), 1e-4);
}

// What a front end that rebuilds the model itself uses: the metadata (with its own extra
// members), then restore_model_state into a model it made and compiled.
TEST(KerasSaving, RestoreIntoAModelRebuiltElsewhere) {
  TempDir tmp;
  auto [x, y] = regression_data(32);
  Tensor in = Input({4}, "ks_rs_in");
  Tensor out = layers::Dense(2, {.name = "ks_rs_out"})(layers::Dense(5, {.name = "ks_rs_h"})(in));
  auto model = std::make_shared<Model>(TensorList{in}, TensorList{out}, "ks_rs");
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = {"mse"}});
  model->fit(x, concat({y, y}, 1), {.batch_size = 8, .epochs = 1, .verbose = 0});
  const std::string dir = tmp / "m";
  save_model(*model, dir, {.extra_metadata = R"({"frontend": {"class": "Mine"}})"});
  const Config meta = Config::parse(read_model_metadata(dir));
  EXPECT_EQ(meta["frontend"]["class"], "Mine");
  EXPECT_EQ(meta["name"], "ks_rs");

  ModelPtr rebuilt = model_from_config(meta["model_config"]);
  rebuilt->compile(compile_options_from_config(meta["compile_config"]));
  restore_model_state(*rebuilt, dir);
  expect_same_weights(*model, *rebuilt, 0);
  EXPECT_EQ(rebuilt->optimizer()->iterations().value().item<int64_t>(), 4);
  const std::vector<Variable> slots = rebuilt->optimizer()->variables(), want = model->optimizer()->variables();
  ASSERT_EQ(slots.size(), want.size());
  for (size_t i = 0; i < slots.size(); ++i) expect_near(slots[i].value(), want[i].value(), 0);

  // A rebuilt model of another shape is named in the error, and keeps its weights.
  Tensor in2 = Input({4}, "ks_rs_in2");
  auto other = std::make_shared<Model>(TensorList{in2}, TensorList{layers::Dense(3, {.name = "ks_rs_o2"})(in2)}, "o");
  EXPECT_THAT(error_of([&] { restore_model_state(*other, dir); }),
              HasSubstr("[keras.load_model] " + dir + ": the rebuilt model has 2 variables, the file lists 4"));
  EXPECT_THAT(error_of([&] { save_model(*model, tmp / "bad", {.extra_metadata = R"({"weights": 1})"}); }),
              HasSubstr("extra_metadata may not replace 'weights'"));
  EXPECT_THAT(error_of([&] { read_model_metadata(tmp / "missing"); }), HasSubstr(tmp / "missing"));
}

TEST(KerasSaving, FunctionalTwoInputsTwoOutputs) {
  TempDir tmp;
  Tensor a = Input({3}, "ks_fa"), b = Input({3}, "ks_fb");
  layers::Dense shared(4, {.activation = "relu", .name = "ks_fshared"});
  Tensor sum = layers::Add("ks_fadd")(TensorList{shared(a), shared(b)})[0];
  Tensor o1 = layers::Dense(2, {.name = "ks_fo1"})(sum);
  Tensor o2 = layers::Dense(1, {.activation = "sigmoid", .name = "ks_fo2"})(sum);
  auto model = std::make_shared<Model>(TensorList{a, b}, TensorList{o1, o2}, "ks_two");
  save_model(*model, tmp / "m");  // not compiled: no compile config
  ModelPtr loaded = load_model(tmp / "m");
  EXPECT_FALSE(loaded->compiled());
  // Compiled but never trained: the optimizer has no slots yet, and loads as such.
  model->compile({.optimizer = "sgd", .loss = {"mse", "binary_crossentropy"}, .loss_weights = {1.0, 0.5}});
  ASSERT_NE(model->compile_options(), nullptr) << "Model::compile() must record its options for save_model";
  save_model(*model, tmp / "compiled");
  ModelPtr compiled = load_model(tmp / "compiled");
  ASSERT_TRUE(compiled->compiled());
  EXPECT_EQ(compiled->optimizer()->name(), "SGD");
  EXPECT_EQ(compiled->compile_options()->loss_weights, (std::vector<double>{1.0, 0.5}));
  const TensorList xs{rnd({5, 3}, 31), rnd({5, 3}, 32)};
  const TensorList want = (*model)(xs, false), got = (*loaded)(xs, false);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) expect_near(got[i], want[i], 1e-6);

  io::SavedModel sm = io::load_saved_model(tmp / "m");
  const auto& serve = sm.signature("serving_default");
  auto outs = serve({{"ks_fa", xs[0]}, {"ks_fb", xs[1]}});
  expect_near(outs.at("ks_fo1"), want[0], 1e-5);
  expect_near(outs.at("ks_fo2"), want[1], 1e-5);
}

// --- custom layers ---

class KsScale : public Layer {
 public:
  explicit KsScale(int64_t grow = 0, std::string name = "") : Layer(std::move(name)), grow_(grow) {}
  static LayerPtr from_config(const Config& c) {
    return std::make_shared<KsScale>(c.value("grow", int64_t(0)), serialization::name_of(c));
  }
  std::string class_name() const override { return "KsScale"; }
  Config get_config() const override {
    Config c = Layer::get_config();
    c["grow"] = grow_;
    return c;
  }
  void build(const Shape& s) override { w_ = add_weight("w", {s.dim(-1) + grow_}, initializers::RandomNormal()); }
  Tensor call(const Tensor& x, bool) override { return x * slice(read(w_), {0}, {x.shape().dim(-1)}); }
  using Layer::call;

 private:
  int64_t grow_;
  Variable w_;
};
DF_KERAS_REGISTER_LAYER(KsScale);

// Its from_config makes a bigger weight than the saved one: the load must refuse it.
class KsLying : public KsScale {
 public:
  using KsScale::KsScale;
  static LayerPtr from_config(const Config& c) { return std::make_shared<KsLying>(1, serialization::name_of(c)); }
  std::string class_name() const override { return "KsLying"; }
};
DF_KERAS_REGISTER_LAYER(KsLying);

class KsUnregistered : public KsScale {
 public:
  using KsScale::KsScale;
  std::string class_name() const override { return "KsUnregistered"; }
};

TEST(KerasSaving, CustomLayers) {
  TempDir tmp;
  auto make = [](LayerPtr custom) {
    return std::make_shared<Sequential>(
        std::vector<LayerPtr>{layers::InputLayer(Shape{3}), std::move(custom), layers::Dense(2)});
  };
  const Tensor x = rnd({4, 3}, 41);
  auto ok = make(std::make_shared<KsScale>(0, "ks_scale"));
  save_model(*ok, tmp / "ok");
  ModelPtr loaded = load_model(tmp / "ok");
  EXPECT_EQ(loaded->get_layer("ks_scale")->class_name(), "KsScale");
  expect_near((*loaded)(x), (*ok)(x), 1e-6);

  auto unregistered = make(std::make_shared<KsUnregistered>(0, "ks_unreg"));
  save_model(*unregistered, tmp / "unreg");  // saving needs no registration
  EXPECT_THAT(error_of([&] { load_model(tmp / "unreg"); }),
              HasSubstr("[keras.layers.deserialize] unknown layer class 'KsUnregistered'; register it with"));
  EXPECT_THAT(error_of([&] { load_model(tmp / "unreg"); }), HasSubstr("[keras.load_model] " + tmp / "unreg"));

  auto lying = make(std::make_shared<KsLying>(0, "ks_lying"));
  save_model(*lying, tmp / "lying");
  EXPECT_THAT(error_of([&] { load_model(tmp / "lying"); }),
              HasSubstr("variable 'ks_lying/w' is float32[3] in the file but float32[4] in the rebuilt model"));
}

// --- subclassed models ---

class KsSubclassed : public Model {
 public:
  KsSubclassed() : Model("ks_subclassed") { dense_ = track(layers::Dense(2, {.name = "ks_sub_dense"})); }
  TensorList call(const TensorList& x, bool) override { return {relu(dense_(x[0])) * 2.0}; }
  using Model::call;

 private:
  layers::Dense dense_{nullptr};
};

TEST(KerasSaving, SubclassedModelKeepsItsServingFunctionOnly) {
  TempDir tmp;
  auto model = std::make_shared<KsSubclassed>();
  EXPECT_THAT(error_of([&] { save_model(*model, tmp / "never"); }), HasSubstr("has never been called"));
  const Tensor x = rnd({3, 5}, 51);
  const Tensor want = (*model)(x);
  save_model(*model, tmp / "sub");
  EXPECT_THAT(error_of([&] { load_model(tmp / "sub"); }),
              HasSubstr("model 'ks_subclassed' is a subclassed model (class Model)"));
  EXPECT_THAT(error_of([&] { load_model(tmp / "sub"); }), HasSubstr("io::load_saved_model"));
  io::SavedModel sm = io::load_saved_model(tmp / "sub");
  const auto& serve = sm.signature("serving_default");
  ASSERT_EQ(serve.inputs().size(), 1u);
  const std::string key = serve.inputs().begin()->first;
  expect_near(serve({{key, x}}).at("output_0"), want, 1e-6);
}

// --- errors ---

TEST(KerasSaving, Errors) {
  TempDir tmp;
  EXPECT_THAT(error_of([&] { load_model(tmp / "missing"); }), HasSubstr(tmp / "missing"));

  // A SavedModel of a plain function has no Keras metadata.
  Variable w(ones({2, 2}), "ks_plain/w");
  Function f = function([&](const Tensor& x) { return matmul(x, w.value()); },
                        {.input_signature = Signature{{DType::Float32, {-1, 2}}}});
  io::save_saved_model(tmp / "plain", {{.fn = f.get_concrete_function()}});
  EXPECT_THAT(error_of([&] { load_model(tmp / "plain"); }),
              HasSubstr("not a Keras model (its object_metadata has no deepflow.keras config)"));

  // A truncated saved_model.pb is the SavedModel reader's clear error, naming the file.
  auto model = std::make_shared<Sequential>(std::vector<LayerPtr>{layers::InputLayer(Shape{2}), layers::Dense(1)});
  save_model(*model, tmp / "trunc");
  const std::string pb = tmp / "trunc/saved_model.pb";
  const std::string bytes = testing::read_bytes(pb);
  testing::write_bytes(pb, bytes.substr(0, bytes.size() / 2));
  EXPECT_THAT(error_of([&] { load_model(tmp / "trunc"); }), HasSubstr("saved_model.pb"));

  // Keras's model.save overwrites; with overwrite off an existing model is kept.
  save_model(*model, tmp / "twice");
  EXPECT_THAT(error_of([&] { save_model(*model, tmp / "twice", {.overwrite = false}); }),
              HasSubstr("exists and is not empty"));
  save_model(*model, tmp / "twice");
  EXPECT_NO_THROW(load_model(tmp / "twice"));
}

}  // namespace
}  // namespace deepflow::keras
