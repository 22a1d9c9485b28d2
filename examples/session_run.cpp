// SPDX-License-Identifier: Apache-2.0
// TF1-style graph mode: build a graph with placeholders and variables once, then run
// a training step with Session::run many times, feeding batches and fetching the loss.
// (Variables hold their value from construction: no initializer op to run.)
#include <cstdio>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/session.h"

using namespace deepflow;

int main() {
  // Data: y = 3*x0 - 2*x1 + 1, 64 samples.
  Tensor xs = random_uniform({64, 2}, -1, 1, DType::Float32, 1);
  Tensor ys = matmul(xs, constant({3.f, -2.f}, {2, 1})) + 1.0;

  Variable w(zeros({2, 1}), "w"), b(zeros({1}), "b");
  auto g = std::make_shared<Graph>();
  Tensor x, y, loss;
  {
    GraphScope scope(g, {.auto_control_dependencies = true});  // updates run after the reads
    x = placeholder(DType::Float32, {64, 2}, "x");
    y = placeholder(DType::Float32, {64, 1}, "y");
    GradientTape tape;
    loss = reduce_mean(square(matmul(x, w.value()) + b.value() - y));
    std::vector<Tensor> grads = tape.gradient(loss, std::vector<Variable>{w, b});
    w.assign_sub(grads[0] * 0.1);
    b.assign_sub(grads[1] * 0.1);
  }
  const std::string train_op = g->node(g->num_nodes() - 1).name;  // the last update

  Session sess(g);
  for (int step = 0; step <= 100; ++step) {
    Tensor l = sess.run({{x, xs}, {"y", ys}}, {loss}, {train_op})[0];
    if (step % 20 == 0) std::printf("step %3d  loss %.6f\n", step, l.item<float>());
  }
  std::vector<float> wv = w.value().to_vector<float>();
  std::printf("w = [%.3f, %.3f], b = %.3f (want 3, -2, 1)\n", wv[0], wv[1], b.value().item<float>());
}
