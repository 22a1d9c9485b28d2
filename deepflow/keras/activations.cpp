// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/activations.h"

#include <map>

#include "deepflow/core/error.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras::activations {
namespace {

const std::map<std::string, Activation>& table() {
  static const auto* t = new std::map<std::string, Activation>{
      {"linear", [](const Tensor& x) { return x; }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"relu6", [](const Tensor& x) { return relu6(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"softmax", [](const Tensor& x) { return softmax(x); }},
      {"log_softmax", [](const Tensor& x) { return log_softmax(x); }},
      {"elu", [](const Tensor& x) { return elu(x); }},
      {"selu", [](const Tensor& x) { return selu(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"softplus", [](const Tensor& x) { return softplus(x); }},
      {"softsign", [](const Tensor& x) { return x / (abs(x) + 1.0); }},
      {"swish", [](const Tensor& x) { return x * sigmoid(x); }},
      {"silu", [](const Tensor& x) { return x * sigmoid(x); }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); }},
      {"exponential", [](const Tensor& x) { return exp(x); }},
      {"hard_sigmoid", [](const Tensor& x) { return relu6(x + 3.0) / 6.0; }},
  };
  return *t;
}

}  // namespace

Activation get(const std::string& name) {
  if (name.empty()) return table().at("linear");
  auto it = table().find(name);
  if (it == table().end()) {
    std::string known;
    for (const auto& [n, f] : table()) known += (known.empty() ? "" : ", ") + n;
    fail("[activations] unknown activation '", name, "'; known: ", known);
  }
  return it->second;
}

Tensor apply(const std::string& name, const Tensor& x) { return get(name)(x); }

void check(const std::string& name) { get(name); }

}  // namespace deepflow::keras::activations
