// SPDX-License-Identifier: Apache-2.0
// A custom training loop: the same layers, optimizer, loss and metric objects that
// fit() uses, driven by hand with GradientTape; the step is a traced function
// (deepflow::function, the tf.function role), with a smaller last batch served by
// the same trace.
//
// Task (synthetic): regression y = sin(3 x0) + x1^2 with noise.
#include <cstdio>

#include "deepflow/deepflow.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/losses.h"
#include "deepflow/keras/metrics.h"
#include "deepflow/keras/model.h"
#include "deepflow/keras/optimizers.h"

using namespace deepflow;
namespace layers = keras::layers;

int main() {
  set_random_seed(5);
  const int64_t n = 2000, batch = 128;
  Tensor x = random_uniform({n, 2}, -1, 1, DType::Float32, 1);
  Tensor x0 = slice(x, {0, 0}, {n, 1}), x1 = slice(x, {0, 1}, {n, 1});
  Tensor y = sin(x0 * 3.0) + square(x1) + random_normal({n, 1}, 0, 0.05, DType::Float32, 2);

  auto model = std::make_shared<keras::Sequential>(std::vector<keras::LayerPtr>{
      layers::InputLayer(Shape{2}), layers::Dense(64, "tanh"), layers::Dense(64, "tanh"), layers::Dense(1)});
  auto optimizer = keras::optimizers::Adam({.learning_rate = 3e-3});
  auto loss_fn = keras::losses::MeanSquaredError();
  auto mae = keras::metrics::MeanAbsoluteError();
  optimizer->build(model->trainable_weights());  // slots exist before the step is traced

  Function train_step = function(
      [&](const Tensor& xb, const Tensor& yb) {
        GradientTape tape;
        Tensor pred = (*model)(xb, true);
        Tensor loss = (*loss_fn)(yb, pred);
        std::vector<Variable> vars = model->trainable_weights();
        optimizer->apply_gradients(tape.gradient(loss, vars), vars);
        mae->update_state(yb, pred);
        return loss;
      },
      {.name = "train_step"});

  for (int epoch = 0; epoch < 20; ++epoch) {
    mae->reset_state();
    double loss = 0;
    for (int64_t begin = 0; begin < n; begin += batch) {
      const int64_t end = std::min(n, begin + batch);
      loss = train_step(x.slice0(begin, end), y.slice0(begin, end))[0].item<double>();
    }
    if (epoch % 5 == 4)
      std::printf("epoch %2d: last batch loss %.4f, mae %.4f\n", epoch + 1, loss, mae->result().item<double>());
  }
  std::printf("traces: %d (the last, smaller batch reused the first trace after one generalization)\n",
              train_step.trace_count());
  const double final_mae = mae->result().item<double>();
  return final_mae < 0.1 ? 0 : 1;
}
