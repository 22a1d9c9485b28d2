// SPDX-License-Identifier: Apache-2.0
// A custom layer: build() makes weights with add_weight (trainable and not), call()
// uses them and the training flag, get_config() describes it; then it is used in a
// Sequential model like a built-in layer.
//
// NoisyScale: y = x * scale + uniform noise (only while training); it also counts the
// training batches it has seen in a non-trainable weight.
#include <nlohmann/json.hpp>

#include <cstdio>

#include "deepflow/deepflow.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/model.h"

using namespace deepflow;
namespace layers = keras::layers;

class NoisyScale : public keras::Layer {
 public:
  explicit NoisyScale(double stddev) : Layer(""), stddev_(stddev) {}
  std::string class_name() const override { return "NoisyScale"; }

  void build(const Shape& input_shape) override {
    scale_ = add_weight("scale", {input_shape.dim(-1)}, keras::initializers::Ones());
    seen_ = add_weight("batches_seen", {}, keras::initializers::Zeros(), /*trainable=*/false);
  }
  Tensor call(const Tensor& x, bool training) override {
    Tensor y = x * read(scale_);
    if (!training) return y;
    seen_.assign_add(scalar(1.0));
    return y + random_uniform_like(x, -stddev_, stddev_);
  }
  keras::Config get_config() const override {
    keras::Config c = Layer::get_config();
    c["stddev"] = stddev_;
    return c;
  }
  double batches_seen() const { return seen_.value().item<double>(); }

 private:
  double stddev_;
  Variable scale_, seen_;
};

int main() {
  set_random_seed(11);
  const int64_t n = 1024;
  Tensor x = random_normal({n, 4}, 0, 1, DType::Float32, 1);
  Tensor y = reduce_sum(x * constant({1.f, -2.f, 0.5f, 3.f}), {1}, true);

  auto noisy = keras::make_layer<NoisyScale>(0.05);
  auto model = std::make_shared<keras::Sequential>(
      std::vector<keras::LayerPtr>{layers::InputLayer(Shape{4}), noisy, layers::Dense(1)});
  model->compile({.optimizer = keras::optimizers::Adam({.learning_rate = 1e-2}), .loss = {"mse"}});
  model->fit(x, y, {.batch_size = 32, .epochs = 10, .verbose = 0});
  auto scores = model->evaluate(x, y, {.verbose = 0});
  std::printf("%s", model->summary().c_str());
  std::printf("mse %.5f; NoisyScale saw %.0f training batches; config %s\n", scores["loss"], noisy->batches_seen(),
              noisy->get_config().dump().c_str());
  return scores["loss"] < 0.05 && noisy->batches_seen() == 10 * 32 ? 0 : 1;
}
