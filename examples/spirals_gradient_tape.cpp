// SPDX-License-Identifier: Apache-2.0
// A two-layer network learns the two-spirals problem
// with GradientTape and plain SGD with momentum, in eager mode. Prints the loss
// per epoch, the final accuracy and the total time.
//
// (No Keras here: this shows the core underneath it:
// tensors, ops, variables, autodiff.)
#include <chrono>
#include <cmath>
#include <cstdio>

#include "deepflow/deepflow.h"

using namespace deepflow;

namespace {

// Two interleaved spirals, n points each, labels 0 and 1, with seeded noise.
std::pair<Tensor, Tensor> spirals(int64_t n, int64_t seed) {
  Tensor noise = random_normal({2 * n, 2}, 0, 0.15, DType::Float32, seed);
  std::vector<float> xy(size_t(4 * n));
  std::vector<int64_t> label(size_t(2 * n));
  const float* e = noise.data<float>();
  for (int64_t i = 0; i < 2 * n; ++i) {
    double t = 0.25 + 3.5 * double(i % n) / double(n);  // angle / pi
    double r = t / 3.75;
    double s = i < n ? 1.0 : -1.0;
    xy[size_t(2 * i)] = float(s * r * std::cos(M_PI * t) * 2) + e[2 * i] * float(r);
    xy[size_t(2 * i + 1)] = float(s * r * std::sin(M_PI * t) * 2) + e[2 * i + 1] * float(r);
    label[size_t(i)] = i < n ? 0 : 1;
  }
  return {constant(xy, {2 * n, 2}), constant(label, {2 * n})};
}

Tensor forward(const Tensor& x, const std::vector<Variable>& p) {
  Tensor h = tanh(matmul(x, p[0]) + p[1]);
  h = tanh(matmul(h, p[2]) + p[3]);
  return matmul(h, p[4]) + p[5];
}

}  // namespace

int main() {
  auto start = std::chrono::steady_clock::now();
  set_random_seed(42);
  auto [x, y] = spirals(1000, 1);
  auto [x_test, y_test] = spirals(500, 2);
  const int64_t hidden = 64;
  std::vector<Variable> params = {
      Variable(truncated_normal({2, hidden}, 0, std::sqrt(1.0 / 2), DType::Float32, 1), "dense1/kernel"),
      Variable(zeros({hidden}), "dense1/bias"),
      Variable(truncated_normal({hidden, hidden}, 0, std::sqrt(1.0 / hidden), DType::Float32, 2), "dense2/kernel"),
      Variable(zeros({hidden}), "dense2/bias"),
      Variable(truncated_normal({hidden, 2}, 0, std::sqrt(1.0 / hidden), DType::Float32, 3), "logits/kernel"),
      Variable(zeros({2}), "logits/bias"),
  };
  std::vector<Variable> velocity;
  for (const Variable& p : params) velocity.emplace_back(zeros(p.shape()), p.name() + "/momentum", false);

  const int epochs = 200, batch = 100;
  const double lr = 0.1, momentum = 0.9;
  const int64_t n = x.dim(0);
  std::printf("deepflow demo: 2-64-64-2 tanh network on two spirals (%lld points), SGD momentum %.1f\n",
              static_cast<long long>(n), momentum);
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    Tensor perm = top_k(random_uniform({n}), n).second;  // a random permutation
    double total = 0;
    for (int64_t b = 0; b < n; b += batch) {
      Tensor idx = slice(perm, {b}, {batch});
      Tensor xb = gather(x, idx), yb = gather(y, idx);
      GradientTape tape;
      Tensor loss = reduce_mean(sparse_softmax_cross_entropy_with_logits(yb, forward(xb, params)));
      std::vector<Tensor> grads = tape.gradient(loss, params);
      for (size_t i = 0; i < params.size(); ++i) {
        velocity[i].assign(velocity[i].value() * momentum - grads[i] * lr);
        params[i].assign_add(velocity[i].value());
      }
      total += loss.item<double>();
    }
    if (epoch % 25 == 0 || epoch == 1)
      std::printf("epoch %2d  loss %.4f\n", epoch, total / double(n / batch));
  }
  auto accuracy = [&](const Tensor& xs, const Tensor& ys) {
    return reduce_mean(cast(equal(argmax(forward(xs, params), 1), ys), DType::Float32)).item<double>();
  };
  double train_acc = accuracy(x, y), test_acc = accuracy(x_test, y_test);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("train accuracy %.2f%%, test accuracy %.2f%% (%lld held-out points)\ntotal time %.2f s\n",
              100 * train_acc, 100 * test_acc, static_cast<long long>(x_test.dim(0)), secs);
  return test_acc > 0.95 ? 0 : 1;
}
