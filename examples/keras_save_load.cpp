// SPDX-License-Identifier: Apache-2.0
// Saving and loading a Keras model (keras::save_model / keras::load_model):
//   1. a functional model with a custom layer is trained for 3 epochs and saved;
//   2. load_model rebuilds it (the custom layer through the registry), and its
//      predictions equal the original's;
//   3. training goes on from the saved optimizer state for 2 more epochs;
//   4. the SavedModel's serving signature runs without any model code.
// Usage: keras_save_load [dir]   (default: a fresh directory under /tmp)
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "deepflow/deepflow.h"
#include "deepflow/io/keras_saving.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/serialization.h"

using namespace deepflow;
namespace layers = keras::layers;

// y = x * scale, one learned scale per feature; rebuilt from {"name", "trainable", "dtype"}.
class FeatureScale : public keras::Layer {
 public:
  explicit FeatureScale(std::string name = "") : Layer(std::move(name)) {}
  static keras::LayerPtr from_config(const keras::Config& c) {
    return std::make_shared<FeatureScale>(keras::serialization::name_of(c));
  }
  std::string class_name() const override { return "FeatureScale"; }
  void build(const Shape& in) override { scale_ = add_weight("scale", {in.dim(-1)}, keras::initializers::Ones()); }
  Tensor call(const Tensor& x, bool) override { return x * read(scale_); }
  using Layer::call;

 private:
  Variable scale_;
};
DF_KERAS_REGISTER_LAYER(FeatureScale);

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1]
                                   : (std::filesystem::temp_directory_path() /
                                      ("deepflow_keras_save_load_" + std::to_string(::getpid())))
                                         .string();
  set_random_seed(7);
  const int64_t n = 512;
  Tensor x = random_normal({n, 4}, 0, 1, DType::Float32, 1);
  Tensor y = reduce_sum(x * constant({1.f, -2.f, 0.5f, 3.f}), {1}, true);

  Tensor in = keras::Input({4}, "features");
  Tensor h = keras::make_layer<FeatureScale>("scale")(in);
  h = layers::Dense(16, {.activation = "relu", .name = "hidden"})(h);
  Tensor out = layers::Dense(1, {.name = "target"})(h);
  auto model = std::make_shared<keras::Model>(TensorList{in}, TensorList{out}, "regressor");
  model->compile({.optimizer = keras::optimizers::Adam({.learning_rate = 1e-2}), .loss = {"mse"}});
  model->fit(x, y, {.batch_size = 32, .epochs = 3, .verbose = 0});
  const double before = model->evaluate(x, y, {.verbose = 0}).at("loss");

  keras::save_model(*model, dir);
  std::printf("saved to %s\n", dir.c_str());

  keras::ModelPtr loaded = keras::load_model(dir);
  const double diff = reduce_max(abs(loaded->predict(x) - model->predict(x))).item<double>();
  std::printf("loaded '%s': max |prediction difference| %.3g, optimizer step %lld\n", loaded->name().c_str(), diff,
              static_cast<long long>(loaded->optimizer()->iterations().value().item<int64_t>()));

  loaded->fit(x, y, {.batch_size = 32, .epochs = 5, .verbose = 0, .initial_epoch = 3});
  const double after = loaded->evaluate(x, y, {.verbose = 0}).at("loss");
  std::printf("mse after 3 epochs %.4f, after 2 more from the saved state %.4f\n", before, after);

  // The forward pass alone, as any SavedModel consumer (or `deepflow saved_model run`) sees it.
  io::SavedModel sm = io::load_saved_model(dir);
  Tensor served = sm.signature("serving_default")({{"features", x}}).at("target");
  const double served_diff = reduce_max(abs(served - model->predict(x))).item<double>();
  std::printf("serving_default: inputs 'features', outputs 'target', max |difference| %.3g\n", served_diff);

  if (argc <= 1) std::filesystem::remove_all(dir);
  return diff < 1e-6 && served_diff < 1e-5 && after < before ? 0 : 1;
}
