// SPDX-License-Identifier: Apache-2.0
// A functional model with two inputs, a shared layer and a residual connection.
//
// Task (synthetic): two vectors a and b in R^8; the label is 1 when a . b > 0.
//   a -> encoder -> ha --+--> add(ha, dense(ha)) --+
//   b -> encoder -> hb --|------------------------ concat -> dense 1 (sigmoid)
// The same `encoder` layer (one set of weights) encodes both inputs.
#include <cstdio>

#include "deepflow/deepflow.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/model.h"

using namespace deepflow;
namespace layers = keras::layers;

int main() {
  set_random_seed(7);
  const int64_t n = 4096;
  Tensor a = random_normal({n, 8}, 0, 1, DType::Float32, 1), b = random_normal({n, 8}, 0, 1, DType::Float32, 2);
  Tensor y = cast(greater(reduce_sum(a * b, {1}, true), scalar(0.0)), DType::Float32);  // [n, 1]

  Tensor in_a = keras::Input({8}, "a"), in_b = keras::Input({8}, "b");
  auto encoder = layers::Dense(32, "relu");
  Tensor ha = encoder(in_a), hb = encoder(in_b);
  Tensor residual = layers::Add()({ha, layers::Dense(32, "relu")(ha)})[0];
  Tensor merged = layers::Concatenate()({residual, hb})[0];
  Tensor hidden = layers::Dense(32, "relu")(merged);
  Tensor out = layers::Dense(1, "sigmoid")(hidden);
  auto model = std::make_shared<keras::Model>(TensorList{in_a, in_b}, TensorList{out}, "two_inputs");
  std::printf("%s", model->summary().c_str());
  std::printf("%s", model->to_dot().c_str());

  model->compile({.optimizer = keras::optimizers::Adam({.learning_rate = 3e-3}),
                  .loss = {"binary_crossentropy"}, .metrics = {"accuracy"}});
  model->fit({a, b}, {y}, {.batch_size = 64, .epochs = 8, .verbose = 2, .validation_split = 0.2});
  auto scores = model->evaluate({a, b}, {y}, {.verbose = 0});
  std::printf("accuracy %.4f\n", scores["accuracy"]);
  return scores["accuracy"] > 0.85 ? 0 : 1;
}
