// SPDX-License-Identifier: Apache-2.0
#include "deepflow/lite/interpreter.h"

#include "deepflow/lite/error.h"
#include "deepflow/lite/kernel.h"
#include "schema/tflite_generated.h"

namespace deepflow::lite {

Interpreter::Interpreter(std::shared_ptr<const Model> model, int num_threads)
    : Interpreter(std::move(model), OpResolver::builtins(), num_threads) {}

Interpreter::Interpreter(std::shared_ptr<const Model> model, const OpResolver& resolver, int num_threads)
    : model_(std::move(model)) {
  DF_LITE_CHECK(model_, "[lite.Interpreter] no model");
  DF_LITE_CHECK(num_threads >= 1, "[lite.Interpreter] num_threads must be at least 1, not ", num_threads);
  pool_ = std::make_unique<ThreadPool>(num_threads);
  const int n = static_cast<int>(model_->fb()->subgraphs()->size());
  for (int s = 0; s < n; ++s) subgraphs_.push_back(std::make_unique<Subgraph>(*this, *model_, s, resolver));
  if (const auto* sigs = model_->fb()->signature_defs()) {
    for (const fb::SignatureDef* sig : *sigs) {
      auto maps = [](const flatbuffers::Vector<flatbuffers::Offset<fb::TensorMap>>* v) {
        std::vector<std::pair<std::string, int>> out;
        if (v)
          for (const fb::TensorMap* m : *v)
            out.emplace_back(m->name() ? m->name()->str() : "", static_cast<int>(m->tensor_index()));
        return out;
      };
      const std::string key = sig->signature_key() ? sig->signature_key()->str() : "";
      runners_.emplace(key, std::make_unique<SignatureRunner>(*subgraphs_[sig->subgraph_index()], key,
                                                               maps(sig->inputs()), maps(sig->outputs())));
    }
  }
}

Interpreter::~Interpreter() = default;

Tensor& Interpreter::input_tensor(int i) {
  DF_LITE_CHECK(i >= 0 && i < static_cast<int>(inputs().size()), "[lite.Interpreter] input ", i,
                " is out of range: the model has ", inputs().size(), " inputs");
  return tensor(inputs()[static_cast<size_t>(i)]);
}

Tensor& Interpreter::output_tensor(int i) {
  DF_LITE_CHECK(i >= 0 && i < static_cast<int>(outputs().size()), "[lite.Interpreter] output ", i,
                " is out of range: the model has ", outputs().size(), " outputs");
  return tensor(outputs()[static_cast<size_t>(i)]);
}

void Interpreter::resize_input_tensor(int tensor_index, const std::vector<int>& shape, bool strict) {
  subgraphs_[0]->resize_input(tensor_index, shape, strict);
}

void Interpreter::allocate_tensors() { subgraphs_[0]->allocate_tensors(); }

void Interpreter::invoke() { subgraphs_[0]->invoke(); }

Subgraph& Interpreter::subgraph(int index) {
  DF_LITE_CHECK(index >= 0 && index < num_subgraphs(), "[lite.Interpreter] subgraph ", index,
                " is out of range: the model has ", num_subgraphs());
  return *subgraphs_[static_cast<size_t>(index)];
}

std::vector<std::string> Interpreter::signature_keys() const {
  std::vector<std::string> keys;
  if (const auto* sigs = model_->fb()->signature_defs())
    for (const fb::SignatureDef* sig : *sigs) keys.push_back(sig->signature_key() ? sig->signature_key()->str() : "");
  return keys;
}

SignatureRunner& Interpreter::get_signature_runner(const std::string& key) {
  if (key.empty()) {
    DF_LITE_CHECK(runners_.size() == 1, "[lite.get_signature_runner] the model has ", runners_.size(),
                  " signatures: name one");
    return *runners_.begin()->second;
  }
  const auto it = runners_.find(key);
  if (it == runners_.end()) {
    std::string known;
    for (const auto& k : signature_keys()) known += (known.empty() ? "" : ", ") + k;
    fail("[lite.get_signature_runner] no signature '", key, "'; the model has: ", known.empty() ? "none" : known);
  }
  return *it->second;
}

SignatureRunner::SignatureRunner(Subgraph& subgraph, std::string key, std::vector<std::pair<std::string, int>> inputs,
                                 std::vector<std::pair<std::string, int>> outputs)
    : subgraph_(&subgraph), key_(std::move(key)), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}

std::vector<std::string> SignatureRunner::input_names() const {
  std::vector<std::string> names;
  for (const auto& [name, index] : inputs_) names.push_back(name);
  return names;
}

std::vector<std::string> SignatureRunner::output_names() const {
  std::vector<std::string> names;
  for (const auto& [name, index] : outputs_) names.push_back(name);
  return names;
}

int SignatureRunner::find(const std::vector<std::pair<std::string, int>>& list, const std::string& name,
                          const char* what) const {
  for (const auto& [n, index] : list)
    if (n == name) return index;
  std::string known;
  for (const auto& [n, index] : list) known += (known.empty() ? "" : ", ") + n;
  fail("[lite.SignatureRunner] signature '", key_, "' has no ", what, " '", name, "'; it has: ", known);
}

Tensor& SignatureRunner::input(const std::string& name) { return subgraph_->tensor(find(inputs_, name, "input")); }
Tensor& SignatureRunner::output(const std::string& name) { return subgraph_->tensor(find(outputs_, name, "output")); }

void SignatureRunner::resize_input(const std::string& name, const std::vector<int>& shape) {
  subgraph_->resize_input(find(inputs_, name, "input"), shape);
}

}  // namespace deepflow::lite
