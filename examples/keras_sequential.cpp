// SPDX-License-Identifier: Apache-2.0
// A Sequential MLP on MNIST: load, normalize, build, compile, fit, evaluate, predict.
//
// Usage: keras_sequential [epochs]   (MNIST comes from scripts/fetch-data.sh)
#include <cstdio>
#include <cstdlib>

#include "deepflow/deepflow.h"
#include "deepflow/keras/datasets/mnist.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/model.h"

using namespace deepflow;
namespace layers = keras::layers;

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 3;
  auto [train, test] = keras::datasets::mnist::load_data();
  // uint8 [n, 28, 28] -> float32 [n, 784] in [0, 1]; labels as int32
  Tensor x_train = reshape(cast(train.x, DType::Float32) / 255.0, {-1, 784});
  Tensor x_test = reshape(cast(test.x, DType::Float32) / 255.0, {-1, 784});
  Tensor y_train = cast(train.y, DType::Int32), y_test = cast(test.y, DType::Int32);

  set_random_seed(1);
  auto model = std::make_shared<keras::Sequential>(std::vector<keras::LayerPtr>{
      layers::InputLayer(Shape{784}),
      layers::Dense(128, "relu"),
      layers::Dropout(0.2),
      layers::Dense(10),
  });
  std::printf("%s", model->summary().c_str());
  model->compile({.optimizer = "adam",
                  .loss = {keras::losses::SparseCategoricalCrossentropy({.from_logits = true})},
                  .metrics = {"accuracy"}});
  keras::History history = model->fit(x_train, y_train, {.batch_size = 64, .epochs = epochs, .verbose = 2});
  auto scores = model->evaluate(x_test, y_test, {.verbose = 0});
  std::printf("test accuracy %.4f (train accuracy per epoch:", scores["accuracy"]);
  for (double a : history.history["accuracy"]) std::printf(" %.4f", a);
  std::printf(")\n");

  // Probabilities for the first five test images.
  Tensor logits = model->predict(slice(x_test, {0, 0}, {5, 784}));
  std::printf("predicted %s, true %s\n", argmax(logits, 1).to_string().c_str(),
              slice(y_test, {0}, {5}).to_string().c_str());
  return scores["accuracy"] > 0.9 ? 0 : 1;
}
