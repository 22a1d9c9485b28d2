// SPDX-License-Identifier: Apache-2.0
// Sequential: a stack of layers. Once the input shape is known (an InputLayer first,
// build(), or the first call) the stack is also recorded as a functional graph, so
// summary() shows every output shape before any data has run.
#include <nlohmann/json.hpp>

#include "deepflow/core/error.h"
#include "deepflow/keras/layers/core.h"
#include "deepflow/keras/model.h"

namespace deepflow::keras {

Sequential::Sequential(std::vector<LayerPtr> layers, std::string name) : Model(std::move(name)) {
  for (LayerPtr& l : layers) add(std::move(l));
}

void Sequential::add(LayerPtr layer) {
  DF_CHECK(layer != nullptr, "[", name(), ".add] got a null layer");
  auto* input = dynamic_cast<layers::InputLayerImpl*>(layer.get());
  DF_CHECK(!input || stack_.empty(), "[", name(), ".add] an InputLayer can only be the first layer");
  stack_.push_back(layer);
  if (!input) track_layer(layer);
  record();  // with a known input, builds the new layer now
}

void Sequential::pop() {
  DF_CHECK(!stack_.empty(), "[", name(), ".pop] the model has no layers");
  untrack_layer(stack_.back().get());
  stack_.pop_back();
  record();
}

void Sequential::record() {
  Tensor in;
  if (!stack_.empty())
    if (auto* first = dynamic_cast<layers::InputLayerImpl*>(stack_.front().get())) in = first->output();
  if (!in.defined() && !inputs().empty()) {
    // Built from a shape: the batch dim stays unknown (Keras's None).
    const Shape& s = inputs()[0].shape();
    in = Input(Shape(std::vector<int64_t>(s.begin() + 1, s.end())), "", inputs()[0].dtype());
  }
  reset_functional();
  if (!in.defined()) return;
  Tensor x = in;
  for (const LayerPtr& l : stack_)
    if (!dynamic_cast<layers::InputLayerImpl*>(l.get())) x = (*l)(x, false);
  set_built();
  if (x.id() != in.id()) init_functional({in}, {x});
}

void Sequential::build(const Shape& input_shape) {
  DF_CHECK(input_shape.rank() >= 1, "[", name(), ".build] expects a shape with a batch dim, got ", input_shape);
  if (!stack_.empty() && dynamic_cast<layers::InputLayerImpl*>(stack_.front().get())) return;
  // The batch dim stays unknown (Keras's None), whatever batch the first call had.
  Tensor in = Input(Shape(std::vector<int64_t>(input_shape.begin() + 1, input_shape.end())));
  Tensor x = in;
  for (const LayerPtr& l : stack_) x = (*l)(x, false);
  if (!stack_.empty()) init_functional({in}, {x});
}

TensorList Sequential::call(const TensorList& inputs, bool training) { return run(inputs, {}, training); }

TensorList Sequential::call_masked(const TensorList& inputs, const TensorList& masks, bool training) {
  return run(inputs, masks, training);
}

// Keras's mask propagation: each layer gets the mask the previous one computed
// (Embedding(mask_zero) -> an RNN), the first one the model's input mask.
TensorList Sequential::run(const TensorList& inputs, TensorList mask, bool training) {
  DF_CHECK(inputs.size() == 1, "[", name(), "] a Sequential model takes one input, got ", inputs.size());
  DF_CHECK(!stack_.empty(), "[", name(), "] has no layers");
  Tensor x = inputs[0];
  for (const LayerPtr& l : stack_) {
    const TensorList out = (*l)(TensorList{x}, mask, training);
    DF_CHECK(out.size() == 1, "[", l->name(), "] returned ", out.size(), " outputs where one was expected");
    const TensorList next = l->compute_mask({x}, mask);
    mask = !next.empty() && next[0].defined() ? TensorList{next[0]} : TensorList{};
    x = out[0];
  }
  return {x};
}

std::vector<LayerPtr> Sequential::model_layers() const {
  std::vector<LayerPtr> out;
  for (const LayerPtr& l : stack_)
    if (!dynamic_cast<layers::InputLayerImpl*>(l.get())) out.push_back(l);
  return out;
}

}  // namespace deepflow::keras
