// SPDX-License-Identifier: Apache-2.0
// An input pipeline (tf.data style) feeding Keras training on MNIST:
//
//   from_tensor_slices -> shuffle -> map(normalize, parallel) -> batch -> prefetch -> fit
//
// Usage: data_pipeline [training images (default: all 60000)] [epochs (default 1)]
// Exits non-zero when the test accuracy is below 90%.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "deepflow/deepflow.h"
#include "deepflow/keras/datasets/mnist.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/model.h"

using namespace deepflow;
using data::Dataset;
using data::Element;
using data::kAutotune;
namespace layers = keras::layers;

// uint8 [28, 28] -> float32 [784] in [0, 1]; the label becomes int32.
Element normalize(const Element& e) {
  return Element{reshape(cast(e[0], DType::Float32) / 255.0, {784}), cast(e[1], DType::Int32)};
}

int main(int argc, char** argv) {
  try {
    auto [train, test] = keras::datasets::mnist::load_data();
    const int64_t n = argc > 1 ? std::min<int64_t>(std::atoll(argv[1]), train.x.dim(0)) : train.x.dim(0);
    const int epochs = argc > 2 ? std::atoi(argv[2]) : 1;
    if (n < 1 || epochs < 1) fail("[data_pipeline] usage: data_pipeline [images > 0] [epochs > 0]");

    Dataset train_ds = Dataset::from_tensor_slices({train.x.slice0(0, n), train.y.slice0(0, n)})
                           .shuffle(10000, {.seed = 1})
                           .map(normalize, {.num_parallel_calls = kAutotune})
                           .batch(128)
                           .prefetch(kAutotune);
    Dataset test_ds = Dataset::from_tensor_slices({test.x, test.y}).map(normalize).batch(1000);
    std::printf("element_spec: %s, %lld batches per epoch\n",
                Dataset::from_tensor_slices({train.x, train.y}).batch(128).element_spec().to_string().c_str(),
                (long long)train_ds.cardinality());

    set_random_seed(1);
    auto model = std::make_shared<keras::Sequential>(std::vector<keras::LayerPtr>{
        layers::InputLayer(Shape{784}),
        layers::Dense(128, "relu"),
        layers::Dense(10),
    });
    model->compile({.optimizer = "adam",
                    .loss = {keras::losses::SparseCategoricalCrossentropy({.from_logits = true})},
                    .metrics = {"accuracy"}});
    const auto start = std::chrono::steady_clock::now();
    model->fit(train_ds, {.epochs = epochs, .verbose = 2});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto scores = model->evaluate(test_ds, {.verbose = 0});
    std::printf("trained on %lld images x %d epoch(s) in %.1f s; test accuracy %.4f\n", (long long)n, epochs,
                seconds, scores["accuracy"]);
    return scores["accuracy"] > 0.9 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "data_pipeline: %s\n", e.what());
    return 1;
  }
}
