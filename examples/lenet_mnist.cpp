// SPDX-License-Identifier: Apache-2.0
// deepflow's half of the MNIST accuracy comparison with PyTorch (scripts/compare-mnist.sh;
// bench/mnist_accuracy.py is the torch half): the LeNet-style CNN
//
//   conv 5x5x32 same relu -> max pool 2 -> conv 5x5x64 same relu -> max pool 2 ->
//   flatten -> dense 1024 relu -> dense 10 (logits)
//
// trained with fit() on the 60k training images (no validation split, no augmentation,
// no dropout), batch 64, Adam 1e-3, sparse categorical cross-entropy from logits, then
// evaluated on the 10k test images. Threads: OMP_NUM_THREADS (the script sets 2).
// The last line is `test_accuracy <fraction>`, which the script reads.
//
// Usage: lenet_mnist [epochs (default 2)] [mnist dir (default: load_data's)]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "deepflow/deepflow.h"
#include "deepflow/keras/datasets/mnist.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/model.h"

using namespace deepflow;
namespace layers = keras::layers;

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 2;
  try {
    if (epochs < 1) fail("[lenet_mnist] epochs must be positive, got '", argv[1], "'");
    const auto start = std::chrono::steady_clock::now();
    auto [train, test] =
        argc > 2 ? keras::datasets::mnist::load_data(argv[2]) : keras::datasets::mnist::load_data();
    // uint8 [n, 28, 28] -> float32 [n, 28, 28, 1] in [0, 1]
    auto prepare = [](const Tensor& images) {
      return reshape(cast(images, DType::Float32) / 255.0, {images.dim(0), 28, 28, 1});
    };
    Tensor x_train = prepare(train.x), x_test = prepare(test.x);
    Tensor y_train = cast(train.y, DType::Int32), y_test = cast(test.y, DType::Int32);

    set_random_seed(42);
    auto model = std::make_shared<keras::Sequential>(std::vector<keras::LayerPtr>{
        layers::InputLayer(Shape{28, 28, 1}),
        layers::Conv2D(32, 5, {.padding = "same", .activation = "relu"}),
        layers::MaxPooling2D(2),
        layers::Conv2D(64, 5, {.padding = "same", .activation = "relu"}),
        layers::MaxPooling2D(2),
        layers::Flatten(),
        layers::Dense(1024, "relu"),
        layers::Dense(10),
    }, "lenet");
    model->compile({.optimizer = keras::optimizers::Adam({.learning_rate = 1e-3}),
                    .loss = {keras::losses::SparseCategoricalCrossentropy({.from_logits = true})},
                    .metrics = {"accuracy"}});
    model->fit(x_train, y_train, {.batch_size = 64, .epochs = epochs, .verbose = 2, .seed = 42});

    auto scores = model->evaluate(x_test, y_test, {.batch_size = 1000, .verbose = 0});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("deepflow: %d epochs in %.1f s, test loss %.4f\n", epochs, seconds, scores["loss"]);
    std::printf("test_accuracy %.4f\n", scores["accuracy"]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lenet_mnist: %s\n", e.what());
    return 1;
  }
}
