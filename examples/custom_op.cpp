// SPDX-License-Identifier: Apache-2.0
// Registering your own op from a program, without rebuilding the library: the
// same OpDef (schema, infer, vjp) and kernel registration the library uses.
// Here: swish(x) = x * sigmoid(beta * x), with its gradient.
#include <cmath>
#include <cstdio>

#include "deepflow/deepflow.h"
#include "deepflow/ops/kernel.h"

using namespace deepflow;

static OpId swish_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "my_swish",
        .num_inputs = 1,
        .attrs = {{"beta", 1.0}},
        .infer = [](const OpCall& c, TypeList& out) {
          DF_CHECK(c.in(0).dtype() == DType::Float32, "[my_swish] expects float32, got ", dtype_name(c.in(0).dtype()));
          out.push_back({DType::Float32, c.in(0).shape()});
        },
        // d/dx x*s(bx) = s(bx) + b*x*s(bx)*(1 - s(bx)), written with public ops.
        .vjp = [](const OpCall& c, const TensorList& g) {
          Tensor bx = c.in(0) * c.attr_float("beta");
          Tensor s = sigmoid(bx);
          return TensorList{g[0] * (s + bx * s * (1.0 - s))};
        },
    });
    register_kernel(op, KernelDef{.name = "ref", .run = [](const OpCall& c, TensorList& out) {
                      const float beta = float(c.attr_float("beta"));
                      const float* x = c.in(0).data<float>();
                      float* y = out[0].data<float>();
                      for (int64_t i = 0; i < c.in(0).size(); ++i) y[i] = x[i] / (1.0f + std::exp(-beta * x[i]));
                    }});
    return op;
  }();
  return id;
}

Tensor swish(const Tensor& x, double beta = 1.0) { return dispatch1(swish_op(), {x}, {{"beta", beta}}); }

int main() {
  Tensor x = constant({-2.f, 0.f, 2.f});
  GradientTape tape;
  tape.watch(x);
  Tensor y = swish(x);
  std::printf("swish(x) = %s\n", y.to_string().c_str());
  std::printf("d/dx     = %s\n", tape.gradient(y, x).to_string().c_str());
}
