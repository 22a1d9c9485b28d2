// SPDX-License-Identifier: Apache-2.0
#include "deepflow/keras/layer.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <map>
#include <mutex>
#include <unordered_map>

#include "deepflow/core/error.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/graph.h"
#include "deepflow/keras/serialization.h"
#include "deepflow/ops/op.h"
#include "deepflow/ops/ops.h"

namespace deepflow::keras {
namespace {

// Keras tensors are symbolic tensors of one process-wide graph: its nodes only give
// shapes (functional models re-run their layers, not this graph). Symbolic calls are
// serialized by one recursive mutex (a model called on Keras tensors calls its layers).
struct Functional {
  std::recursive_mutex mu;
  std::shared_ptr<Graph> graph = std::make_shared<Graph>();
  std::unordered_map<uint64_t, std::shared_ptr<const LayerNode>> history;  // by output tensor id
  std::unordered_map<uint64_t, Tensor> masks;                              // by tensor id
};

Functional& functional() {
  static auto* f = new Functional;  // never destroyed: Keras tensors may outlive main's locals
  return *f;
}

// Errors of a call carry the innermost layer's name and input types once.
class LayerError : public Error {
 public:
  using Error::Error;
};

std::string types_of(const TensorList& xs) {
  std::string s;
  for (const Tensor& x : xs) {
    if (!s.empty()) s += ", ";
    s += x.defined() ? std::string(dtype_name(x.dtype())) + x.shape().to_string() : "undefined";
  }
  return s;
}

std::string snake_case(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      const bool prev_lower = i > 0 && std::islower(static_cast<unsigned char>(name[i - 1]));
      const bool next_lower = i + 1 < name.size() && std::islower(static_cast<unsigned char>(name[i + 1]));
      if (i > 0 && (prev_lower || next_lower)) out += '_';
      out += char(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

std::string unique_name(const std::string& base) {
  static std::mutex mu;
  static std::map<std::string, int> counts;
  std::lock_guard<std::mutex> lock(mu);
  const int n = counts[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

}  // namespace

Layer::Layer(std::string name) : name_(std::move(name)), policy_(global_policy()) {}
Layer::~Layer() = default;

const std::string& Layer::name() const {
  if (name_.empty()) name_ = unique_name(snake_case(class_name()));
  return name_;
}

void Layer::build(const Shape&) {}
void Layer::build(const std::vector<Shape>& input_shapes) {
  if (input_shapes.size() == 1) build(input_shapes[0]);
}

Tensor Layer::call(const Tensor&, bool) { fail("[", name(), "] ", class_name(), " does not implement call()"); }

TensorList Layer::call(const TensorList& inputs, bool training) {
  DF_CHECK(inputs.size() == 1, "[", name(), "] ", class_name(), " takes one input, got ", inputs.size());
  return {call(inputs[0], training)};
}

std::string Layer::class_name() const { return "Layer"; }

Config Layer::get_config() const {
  return Config{{"name", name()}, {"trainable", trainable_}, {"dtype", policy_.name}};
}

void Layer::set_dtype_policy(const std::string& name) {
  DF_CHECK(!built_, "[", this->name(), "] set_dtype_policy after the layer was built");
  policy_ = Policy::from_name(name);
}

Tensor Layer::operator()(const Tensor& inputs, std::optional<bool> training) {
  TensorList out = (*this)(TensorList{inputs}, training);
  DF_CHECK(out.size() == 1, "[", name(), "] returned ", out.size(), " outputs where one was expected");
  return out[0];
}

TensorList Layer::operator()(const TensorList& inputs, std::optional<bool> training) {
  return call_layer(*this, inputs, training, nullptr);
}

TensorList Layer::operator()(const TensorList& inputs, const TensorList& masks, std::optional<bool> training) {
  DF_CHECK(masks.empty() || masks.size() == inputs.size(), "[", name(), "] takes one mask per input: ",
           inputs.size(), " inputs, ", masks.size(), " masks");
  return call_layer(*this, inputs, training, &masks);
}

TensorList Layer::compute_mask(const TensorList&, const TensorList& masks) const {
  if (!supports_masking_ || masks.empty() || !masks[0].defined()) return {};
  return {masks[0]};
}

TensorList Layer::call_masked(const TensorList& inputs, const TensorList&, bool training) {
  return call(inputs, training);
}

TensorList call_layer(Layer& layer, const TensorList& inputs, std::optional<bool> training,
                      const TensorList* explicit_masks) {
  bool symbolic = false;
  for (const Tensor& x : inputs) symbolic |= is_keras_tensor(x);
  const bool train = training.value_or(learning_phase());
  Functional& f = functional();
  std::unique_lock<std::recursive_mutex> lock(f.mu, std::defer_lock);
  std::optional<GraphScope> scope;
  TensorList masks;
  if (explicit_masks) masks = *explicit_masks;
  if (symbolic) {
    lock.lock();
    // Nested symbolic calls (a model's layers) reuse the enclosing scope.
    // A layer's build() runs with no build scope (its weights are made eagerly): a model
    // that calls its layers there (Sequential) needs the scope back.
    GraphScope* cur = GraphScope::current();
    if (!cur || cur->graph_ptr() != f.graph || current_build_scope() != cur) scope.emplace(f.graph);
    if (!explicit_masks) {
      // Keras's implicit propagation: the masks the inputs' producers computed.
      bool any = false;
      for (const Tensor& x : inputs) {
        auto it = x.defined() ? f.masks.find(x.id()) : f.masks.end();
        masks.push_back(it == f.masks.end() ? Tensor() : it->second);
        any |= masks.back().defined();
      }
      if (!any) masks.clear();
    }
  }
  bool masked = false;
  for (const Tensor& m : masks) masked |= m.defined();
  try {
    if (!layer.built_) {
      std::vector<Shape> shapes;
      for (const Tensor& x : inputs) shapes.push_back(x.shape());
      BuildScopeGuard eager(nullptr);  // weights are made now, even inside a trace
      layer.build(shapes);
      layer.built_ = true;
    }
    TensorList cast_inputs = inputs;
    const DType compute = layer.compute_dtype();
    for (Tensor& x : cast_inputs)
      if (x.defined() && is_floating(x.dtype()) && x.dtype() != compute) x = cast(x, compute);
    layer.call_losses_.clear();
    TensorList outputs = masked ? layer.call_masked(cast_inputs, masks, train) : layer.call(cast_inputs, train);
    if (layer.input_shapes_.empty()) {
      for (const Tensor& x : inputs) layer.input_shapes_.push_back(x.shape());
      for (const Tensor& y : outputs) layer.output_shapes_.push_back(y.defined() ? y.shape() : Shape{});
    }
    if (symbolic) {
      // A layer that passes an input through (Dropout at inference) still gives a tensor of
      // its own: histories are keyed by tensor id, and the input's must stay its producer's.
      for (Tensor& y : outputs) {
        bool passed_through = false;
        for (size_t i = 0; i < inputs.size(); ++i)
          passed_through |= y.defined() && ((inputs[i].defined() && y.id() == inputs[i].id()) ||
                                            (cast_inputs[i].defined() && y.id() == cast_inputs[i].id()));
        if (passed_through) y = identity(y);
      }
      if (!masked) masks.clear();
      TensorList output_masks = layer.compute_mask(inputs, masks);
      auto node = std::make_shared<LayerNode>(LayerNode{layer.shared_from_this(), inputs, outputs, masks, output_masks});
      for (size_t j = 0; j < outputs.size(); ++j) {
        if (!outputs[j].defined()) continue;
        f.history[outputs[j].id()] = node;
        if (j < output_masks.size() && output_masks[j].defined()) f.masks[outputs[j].id()] = output_masks[j];
      }
    }
    return outputs;
  } catch (const LayerError&) {
    throw;
  } catch (const std::bad_weak_ptr&) {
    throw LayerError(deepflow::detail::cat("[", layer.name(), "] a layer called on Keras tensors must be owned by a "
                                 "std::shared_ptr (make it with a holder, make_layer or std::make_shared)"));
  } catch (const Error& e) {
    // Only the library's errors get the layer's name; others (a Python exception raised
    // in a layer written in Python, bad_alloc) go up unchanged.
    throw LayerError(deepflow::detail::cat("[", layer.name(), " (", layer.class_name(), ")] ", e.what(),
                                 "; called on ", types_of(inputs)));
  }
}

// --- weights ---

Variable Layer::add_weight(const std::string& name, const Shape& shape, InitializerPtr initializer, bool trainable,
                           RegularizerPtr regularizer, std::optional<DType> dtype) {
  DF_CHECK(shape.is_fully_defined(), "[", this->name(), "] weight '", name, "' needs a known shape, got ", shape,
           " (is the input's last dim unknown?)");
  const DType dt = dtype.value_or(policy_.variable_dtype);
  if (!initializer) initializer = shape.rank() >= 2 ? initializers::GlorotUniform() : initializers::Zeros();
  Tensor init;
  {
    BuildScopeGuard eager(nullptr);
    init = (*initializer)(shape, dt);
  }
  Variable v(init, this->name() + "/" + name, trainable);
  weights_.push_back({v, std::move(regularizer)});
  return v;
}

void Layer::track_variable(const Variable& v, RegularizerPtr regularizer) {
  DF_CHECK(v.defined(), "[", name(), "] track_variable: an undefined variable");
  for (const Weight& w : weights_)
    if (w.var.id() == v.id()) return;
  weights_.push_back({v, std::move(regularizer)});
}

std::vector<Variable> Layer::trainable_weights() const {
  std::vector<Variable> out;
  if (!trainable_) return out;
  for (const Weight& w : weights_)
    if (w.var.trainable()) out.push_back(w.var);
  for (const LayerPtr& l : sublayers_)
    for (const Variable& v : l->trainable_weights()) out.push_back(v);
  return out;
}

std::vector<Variable> Layer::non_trainable_weights() const {
  std::vector<Variable> out;
  for (const Weight& w : weights_)
    if (!trainable_ || !w.var.trainable()) out.push_back(w.var);
  for (const LayerPtr& l : sublayers_) {
    // A frozen layer's sublayers are frozen too.
    for (const Variable& v : l->non_trainable_weights()) out.push_back(v);
    if (!trainable_)
      for (const Variable& v : l->trainable_weights()) out.push_back(v);
  }
  return out;
}

std::vector<Variable> Layer::weights() const {
  std::vector<Variable> out = trainable_weights();
  for (const Variable& v : non_trainable_weights()) out.push_back(v);
  // A layer shared by two sublayers appears once.
  std::vector<Variable> unique;
  std::unordered_map<uint64_t, bool> seen;
  for (const Variable& v : out)
    if (!seen[v.id()]) {
      seen[v.id()] = true;
      unique.push_back(v);
    }
  return unique;
}

TensorList Layer::get_weights() const {
  TensorList out;
  for (const Variable& v : weights()) out.push_back(v.value().clone());
  return out;
}

void Layer::set_weights(const TensorList& values) {
  std::vector<Variable> ws = weights();
  DF_CHECK(values.size() == ws.size(), "[", name(), ".set_weights] the layer has ", ws.size(), " weights, got ",
           values.size(), " values");
  for (size_t i = 0; i < ws.size(); ++i) {
    DF_CHECK(values[i].shape() == ws[i].shape() && values[i].dtype() == ws[i].dtype(), "[", name(),
             ".set_weights] weight '", ws[i].name(), "' is ", dtype_name(ws[i].dtype()), ws[i].shape(), ", got ",
             dtype_name(values[i].dtype()), values[i].shape());
    ws[i].assign(values[i]);
  }
}

int64_t Layer::count_params() const {
  int64_t n = 0;
  for (const Variable& v : weights()) n += v.shape().num_elements();
  return n;
}

Tensor Layer::read(const Variable& weight) const {
  Tensor v = weight.value();
  if (is_floating(v.dtype()) && v.dtype() != policy_.compute_dtype) return cast(v, policy_.compute_dtype);
  return v;
}

// --- sublayers and losses ---

void Layer::track_layer(std::shared_ptr<Layer> layer) {
  DF_CHECK(layer != nullptr, "[", name(), "] track() of a null layer");
  DF_CHECK(layer.get() != this, "[", name(), "] a layer cannot track itself");
  for (const LayerPtr& l : sublayers_)
    if (l == layer) return;
  sublayers_.push_back(std::move(layer));
}

void Layer::untrack_layer(const Layer* layer) {
  std::erase_if(sublayers_, [&](const LayerPtr& l) { return l.get() == layer; });
}

void Layer::add_loss(const Tensor& loss) { call_losses_.push_back(loss); }

TensorList Layer::losses() const {
  TensorList out;
  for (const Weight& w : weights_)
    if (w.regularizer) out.push_back((*w.regularizer)(w.var.value()));
  for (const Tensor& l : call_losses_) out.push_back(l);
  for (const LayerPtr& l : sublayers_)
    for (const Tensor& t : l->losses()) out.push_back(t);
  return out;
}

// --- Keras tensors ---

Tensor Input(const Shape& shape, const std::string& name, DType dtype, std::optional<int64_t> batch_size) {
  std::vector<int64_t> dims{batch_size.value_or(-1)};
  for (int i = 0; i < shape.rank(); ++i) dims.push_back(shape[i]);
  Functional& f = functional();
  std::lock_guard<std::recursive_mutex> lock(f.mu);
  GraphScope scope(f.graph);
  if (name.empty()) return placeholder(dtype, Shape(dims));
  Tensor t = placeholder(dtype, Shape(dims), unique_name(name));
  remember_input_name(t, name);
  return t;
}

Tensor keras_mask(const Tensor& t) {
  if (!is_keras_tensor(t)) return Tensor();
  Functional& f = functional();
  std::lock_guard<std::recursive_mutex> lock(f.mu);
  auto it = f.masks.find(t.id());
  return it == f.masks.end() ? Tensor() : it->second;
}

bool is_keras_tensor(const Tensor& t) {
  return t.defined() && t.is_symbolic() && t.impl()->symbol == std::static_pointer_cast<void>(functional().graph);
}

std::shared_ptr<const LayerNode> keras_history(const Tensor& t) {
  Functional& f = functional();
  std::lock_guard<std::recursive_mutex> lock(f.mu);
  auto it = f.history.find(t.id());
  return it == f.history.end() ? nullptr : it->second;
}

}  // namespace deepflow::keras
