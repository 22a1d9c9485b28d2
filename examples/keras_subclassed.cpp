// SPDX-License-Identifier: Apache-2.0
// A subclassed model: layers as members (registered with track()), the forward pass in
// call(), trained with compile/fit like any other model.
//
// Task (synthetic): three Gaussian blobs in 2D, one class each.
#include <cstdio>

#include "deepflow/deepflow.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/model.h"

using namespace deepflow;
namespace layers = keras::layers;

class ResidualMlp : public keras::Model {
 public:
  explicit ResidualMlp(int64_t classes) : Model("residual_mlp") {
    inp_ = track(layers::Dense(32, "relu"));
    block_ = track(layers::Dense(32, "relu"));
    norm_ = track(layers::LayerNormalization());
    out_ = track(layers::Dense(classes));
  }
  TensorList call(const TensorList& inputs, bool training) override {
    Tensor h = inp_(inputs[0], training);
    h = norm_(h + block_(h, training), training);  // residual, then layer norm
    return {out_(h, training)};
  }
  using Model::call;

 private:
  layers::Dense inp_{nullptr}, block_{nullptr}, out_{nullptr};
  layers::LayerNormalization norm_{nullptr};
};

int main() {
  set_random_seed(3);
  const int64_t n = 3000;
  Tensor labels = cast(random_uniform({n}, 0, 3, DType::Float32, 1), DType::Int32);
  Tensor angle = cast(labels, DType::Float32) * (2 * 3.14159265 / 3);
  Tensor centers = stack({cos(angle), sin(angle)}, 1) * 3.0;
  Tensor x = centers + random_normal({n, 2}, 0, 0.8, DType::Float32, 2);

  auto model = std::make_shared<ResidualMlp>(3);
  model->compile({.optimizer = keras::optimizers::Adam({.learning_rate = 1e-2}),
                  .loss = {keras::losses::SparseCategoricalCrossentropy({.from_logits = true})},
                  .metrics = {"accuracy"}});
  model->fit(x, labels, {.batch_size = 100, .epochs = 5, .verbose = 2});
  std::printf("%s", model->summary().c_str());
  auto scores = model->evaluate(x, labels, {.verbose = 0});
  std::printf("accuracy %.4f\n", scores["accuracy"]);
  return scores["accuracy"] > 0.9 ? 0 : 1;
}
