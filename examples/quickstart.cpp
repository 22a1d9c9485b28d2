// SPDX-License-Identifier: Apache-2.0
// The README's example, built with the other examples so it stays true.
#include <iostream>

#include "deepflow/deepflow.h"
using namespace deepflow;

int main() {
  Variable w(random_normal({3, 1}, 0, 1, DType::Float32, /*seed=*/7), "w");
  Tensor x = random_normal({64, 3}), y = matmul(x, constant({1.f, -2.f, 0.5f}, {3, 1}));
  for (int step = 0; step < 200; ++step) {
    GradientTape tape;                                   // watches trainable variables
    Tensor loss = reduce_mean(square(matmul(x, w) - y));
    w.assign_sub(tape.gradient(loss, w) * 0.1);
  }
  std::cout << w.value() << "\n";                       // ~[[1], [-2], [0.5]]
}
