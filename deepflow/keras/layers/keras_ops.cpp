// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/layers/keras_ops.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>

#include "deepflow/core/error.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras::layers {
namespace {

using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

const std::map<std::string, Binary>& ops() {
  static const auto* table = new std::map<std::string, Binary>{
      {"NotEqual", [](const Tensor& a, const Tensor& b) { return not_equal(a, b); }},
      {"Equal", [](const Tensor& a, const Tensor& b) { return equal(a, b); }},
      {"Greater", [](const Tensor& a, const Tensor& b) { return greater(a, b); }},
      {"GreaterEqual", [](const Tensor& a, const Tensor& b) { return greater_equal(a, b); }},
      {"Less", [](const Tensor& a, const Tensor& b) { return less(a, b); }},
      {"LessEqual", [](const Tensor& a, const Tensor& b) { return less_equal(a, b); }},
      {"Add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
      {"Subtract", [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
      {"Multiply", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"Divide", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
      {"TrueDivide", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
      {"Maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"Minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
  };
  return *table;
}

bool is_tensor_arg(const Config& a) { return a.is_object() && a.value("class_name", "") == "__keras_tensor__"; }

}  // namespace

bool is_keras_op_class(const std::string& class_name) { return ops().count(class_name) > 0; }

KerasOpImpl::KerasOpImpl(std::string class_name, const Config& args, std::string name)
    : Layer(std::move(name)), class_name_(std::move(class_name)), args_json_(args.dump()) {
  DF_CHECK(is_keras_op_class(class_name_), "[KerasOp] deepflow does not compute the Keras op ", class_name_);
  DF_CHECK(args.is_array() && args.size() == 2, "[KerasOp] ", class_name_, " '", this->name(),
           "' takes two operands, got the args ", args_json_);
  for (const Config& a : args) {
    DF_CHECK(is_tensor_arg(a) || a.is_number() || a.is_boolean(), "[KerasOp] ", class_name_, " '", this->name(),
             "': an operand must be a tensor or a number, got ", a.dump());
    if (is_tensor_arg(a)) {
      operands_.push_back(std::nullopt);
      ++num_tensors_;
    } else {
      operands_.push_back(a.is_boolean() ? double(a.get<bool>()) : a.get<double>());
    }
  }
  DF_CHECK(num_tensors_ > 0, "[KerasOp] ", class_name_, " '", this->name(), "' has no tensor operand");
}

TensorList KerasOpImpl::call(const TensorList& inputs, bool) {
  DF_CHECK(inputs.size() == num_tensors_, "[", name(), "] ", class_name_, " takes ", num_tensors_,
           " tensor(s), got ", inputs.size());
  TensorList operands;
  size_t next = 0;
  for (const auto& c : operands_) operands.push_back(c ? scalar_like(inputs[0], *c) : inputs[next++]);
  return {ops().at(class_name_)(operands[0], operands[1])};
}

Config KerasOpImpl::get_config() const { return Config{{"name", name()}}; }

Config KerasOpImpl::call_args(const Config& tensors) const {
  DF_CHECK(tensors.is_array() && tensors.size() == num_tensors_, "[KerasOp] ", class_name_, " '", name(),
           "' writes ", num_tensors_, " tensor(s), got ", tensors.dump());
  Config out = Config::array();
  size_t next = 0;
  for (const Config& a : Config::parse(args_json_)) out.push_back(is_tensor_arg(a) ? tensors[next++] : a);
  return out;
}

}  // namespace deepflow::keras::layers
