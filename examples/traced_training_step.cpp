// SPDX-License-Identifier: Apache-2.0
// Trains a small MLP on synthetic data with a traced training step
// (deepflow::function, the tf.function role).
//
// The step computes the loss, takes gradients with a GradientTape and applies
// SGD with assign_sub, all inside the traced callable: the first call traces it
// into a graph (forward, gradient and update nodes), later calls only run that
// graph. The last batch of each epoch is smaller: the function generalizes the
// batch dim to unknown and traces once more, then serves every batch size.
#include <algorithm>
#include <cstdio>

#include "deepflow/deepflow.h"

using namespace deepflow;

int main() {
  set_random_seed(42);
  const int64_t n = 1000, features = 8, hidden = 32, classes = 3, batch = 96;

  // Synthetic data: the class is the argmax of a fixed random linear map of x.
  Tensor x_all = random_normal({n, features});
  Tensor truth = random_normal({features, classes});
  Tensor labels_all = one_hot(argmax(matmul(x_all, truth), -1), classes);

  Variable w1(random_normal({features, hidden}, 0, 0.3), "w1");
  Variable b1(zeros({hidden}), "b1");
  Variable w2(random_normal({hidden, classes}, 0, 0.3), "w2");
  Variable b2(zeros({classes}), "b2");
  std::vector<Variable> params = {w1, b1, w2, b2};

  int traces = 0;
  Function train_step = function(
      [&](const Tensor& x, const Tensor& labels) {
        ++traces;  // plain C++: runs while tracing, not on every step
        GradientTape tape;
        Tensor h = relu(matmul(x, w1.value()) + b1.value());
        Tensor logits = matmul(h, w2.value()) + b2.value();
        Tensor loss = reduce_mean(softmax_cross_entropy_with_logits(labels, logits));
        std::vector<Tensor> grads = tape.gradient(loss, params);
        for (size_t i = 0; i < params.size(); ++i) params[i].assign_sub(grads[i] * 0.5);
        return loss;
      },
      {.name = "train_step"});

  for (int epoch = 0; epoch < 10; ++epoch) {
    double total = 0;
    int batches = 0;
    for (int64_t start = 0; start < n; start += batch) {  // 10 batches of 96, then 40
      const int64_t rows = std::min(batch, n - start);
      Tensor x = slice(x_all, {start, 0}, {rows, features});
      Tensor y = slice(labels_all, {start, 0}, {rows, classes});
      total += train_step(x, y)[0].item<float>();
      ++batches;
    }
    std::printf("epoch %2d  loss %.4f\n", epoch, total / batches);
  }
  std::printf("train_step: %d traces for %d calls (trace_count %d):\n", traces, 10 * int((n + batch - 1) / batch),
              train_step.trace_count());
  for (const ConcreteFunction& cf : train_step.concrete_functions())
    std::printf("  %s: %d nodes traced, %d after the passes\n", signature_to_string(cf.inputs()).c_str(),
                cf.graph().num_nodes(), cf.optimized_graph().num_nodes());

  // Accuracy, traced too: 3 sizes, 2 traces again.
  Function accuracy = function(
      [&](const Tensor& x, const Tensor& labels) {
        Tensor logits = matmul(relu(matmul(x, w1.value()) + b1.value()), w2.value()) + b2.value();
        return reduce_mean(cast(equal(argmax(logits, -1), argmax(labels, -1)), DType::Float32));
      },
      {.name = "accuracy"});
  for (int64_t rows : {int64_t(1000), int64_t(200), int64_t(50)})
    std::printf("accuracy on %4lld rows: %.3f\n", (long long)rows,
                accuracy(slice(x_all, {0, 0}, {rows, features}), slice(labels_all, {0, 0}, {rows, classes}))[0]
                    .item<float>());
  std::printf("accuracy: trace_count %d\n", accuracy.trace_count());
  return 0;
}
