// SPDX-License-Identifier: Apache-2.0
// Model construction (subclassed and functional), the functional call, summary and DOT.
#include "deepflow/keras/model.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "deepflow/core/error.h"

namespace deepflow::keras {
namespace {

// "(None, 28, 28, 1)", Keras's way of printing a shape with an unknown batch dim.
std::string keras_shape(const Shape& s) {
  std::string out = "(";
  for (int i = 0; i < s.rank(); ++i) {
    if (i) out += ", ";
    out += s[i] < 0 ? "None" : std::to_string(s[i]);
  }
  if (s.rank() == 1) out += ",";
  return out + ")";
}

std::string shapes_text(const std::vector<Shape>& shapes) {
  if (shapes.empty()) return "?";
  if (shapes.size() == 1) return keras_shape(shapes[0]);
  std::string out = "[";
  for (size_t i = 0; i < shapes.size(); ++i) out += (i ? ", " : "") + keras_shape(shapes[i]);
  return out + "]";
}

std::string with_commas(int64_t n) {
  std::string s = std::to_string(n), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

Model::Model(std::string name) : Layer(std::move(name)) {}

Model::Model(TensorList inputs, TensorList outputs, std::string name) : Layer(std::move(name)) {
  init_functional(std::move(inputs), std::move(outputs));
}

Model::~Model() = default;

std::string Model::class_name() const { return nodes_.empty() && inputs_.empty() ? "Model" : "Functional"; }

void Model::init_functional(TensorList inputs, TensorList outputs) {
  DF_CHECK(!inputs.empty() && !outputs.empty(), "[Model] a functional model needs inputs and outputs");
  std::unordered_set<uint64_t> input_ids;
  for (const Tensor& t : inputs) {
    DF_CHECK(is_keras_tensor(t) && !keras_history(t), "[Model] inputs must come from keras::Input, got ",
             t.defined() ? dtype_name(t.dtype()) + t.shape().to_string() : std::string("an undefined tensor"));
    input_ids.insert(t.id());
  }
  // Post-order DFS from the outputs: every node after the nodes it reads from.
  std::vector<std::shared_ptr<const LayerNode>> order;
  std::unordered_set<const LayerNode*> done;
  std::function<void(const Tensor&)> visit = [&](const Tensor& t) {
    DF_CHECK(is_keras_tensor(t), "[Model] outputs must be Keras tensors (layers called on keras::Input)");
    if (input_ids.count(t.id())) return;
    std::shared_ptr<const LayerNode> node = keras_history(t);
    DF_CHECK(node, "[Model] an output depends on a keras::Input of shape ", t.shape(),
             " that is not among the model's inputs");
    if (done.count(node.get())) return;
    done.insert(node.get());
    for (const Tensor& x : node->inputs) visit(x);
    for (const Tensor& m : node->masks)  // an explicit mask= from another node (a computed one has none)
      if (m.defined() && keras_history(m)) visit(m);
    order.push_back(node);
  };
  for (const Tensor& t : outputs) visit(t);
  inputs_ = std::move(inputs);
  outputs_ = std::move(outputs);
  nodes_ = std::move(order);
  for (const auto& node : nodes_) track_layer(node->layer);
  set_built();
}

void Model::reset_functional() {
  inputs_.clear();
  outputs_.clear();
  nodes_.clear();
}

TensorList Model::call(const TensorList& inputs, bool training) {
  DF_CHECK(!nodes_.empty() || !inputs_.empty(), "[", name(),
           "] a subclassed model must override call(); functional models are made from keras::Input");
  DF_CHECK(inputs.size() == inputs_.size(), "[", name(), "] takes ", inputs_.size(), " inputs, got ",
           inputs.size());
  std::unordered_map<uint64_t, Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    DF_CHECK(inputs[i].shape().compatible_with(inputs_[i].shape()), "[", name(), "] input ", i,
             " should have shape ", inputs_[i].shape(), ", got ", inputs[i].shape());
    values[inputs_[i].id()] = inputs[i];
  }
  // Masks are replayed like values: a node's masks are what its producers' compute_mask
  // gave on this call's tensors (or another node's output: Keras 3's explicit mask=).
  auto value_of = [&](const Tensor& symbolic) {
    auto it = symbolic.defined() ? values.find(symbolic.id()) : values.end();
    return it == values.end() ? Tensor() : it->second;
  };
  for (const auto& node : nodes_) {
    TensorList args, masks;
    for (const Tensor& x : node->inputs) args.push_back(values.at(x.id()));
    bool masked = false;
    for (const Tensor& m : node->masks) {
      masks.push_back(value_of(m));
      masked |= masks.back().defined();
    }
    if (!masked) masks.clear();
    TensorList outs = (*node->layer)(args, masks, training);
    for (size_t j = 0; j < outs.size() && j < node->outputs.size(); ++j) values[node->outputs[j].id()] = outs[j];
    bool gives_masks = false;
    for (const Tensor& m : node->output_masks) gives_masks |= m.defined();
    if (gives_masks) {
      const TensorList out_masks = node->layer->compute_mask(args, masks);
      for (size_t j = 0; j < out_masks.size() && j < node->output_masks.size(); ++j)
        if (node->output_masks[j].defined()) values[node->output_masks[j].id()] = out_masks[j];
    }
  }
  TensorList result;
  for (const Tensor& t : outputs_) result.push_back(values.at(t.id()));
  return result;
}

std::vector<LayerPtr> Model::model_layers() const {
  std::vector<LayerPtr> out;
  std::set<const Layer*> seen;
  for (const auto& node : nodes_)
    if (seen.insert(node->layer.get()).second) out.push_back(node->layer);
  if (nodes_.empty()) return layers();  // subclassed: the tracked sublayers
  return out;
}

LayerPtr Model::get_layer(const std::string& name) const {
  std::string known;
  for (const LayerPtr& l : model_layers()) {
    if (l->name() == name) return l;
    known += (known.empty() ? "" : ", ") + l->name();
  }
  fail("[Model.get_layer] no layer named '", name, "'; layers: ", known);
}

std::string Model::summary() const {
  const bool functional = !nodes_.empty() && class_name() != "Sequential";
  const size_t w1 = 34, w2 = 26, w3 = 12;
  const size_t width = w1 + w2 + w3 + (functional ? 30 : 0);
  std::string rule(width, '_'), dbl(width, '=');
  std::string out = "Model: \"" + name() + "\"\n" + rule + "\n";
  out += pad(" Layer (type)", w1) + pad("Output Shape", w2) + pad("Param #", w3) + (functional ? "Connected to" : "");
  out += "\n" + dbl + "\n";
  std::unordered_map<uint64_t, std::string> producer;  // tensor id -> layer name
  auto row = [&](const std::string& layer, const std::string& shape, int64_t params, const std::string& links) {
    out += pad(" " + layer, w1) + pad(shape, w2) + pad(with_commas(params), w3) + links + "\n";
  };
  if (functional) {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      producer[inputs_[i].id()] = "input_" + std::to_string(i);
      row("input_" + std::to_string(i) + " (InputLayer)", keras_shape(inputs_[i].shape()), 0, "");
    }
    for (const auto& node : nodes_) {
      std::string links;
      for (const Tensor& x : node->inputs) links += (links.empty() ? "" : ", ") + producer[x.id()];
      std::vector<Shape> shapes;
      for (const Tensor& y : node->outputs) {
        shapes.push_back(y.shape());
        producer[y.id()] = node->layer->name();
      }
      row(node->layer->name() + " (" + node->layer->class_name() + ")", shapes_text(shapes),
          node->layer->count_params(), links);
    }
  } else {
    // A Sequential's layers in order; each shows the shape of its first call.
    for (const LayerPtr& l : model_layers())
      row(l->name() + " (" + l->class_name() + ")", shapes_text(l->output_shapes()), l->count_params(), "");
  }
  int64_t trainable = 0, non_trainable = 0;
  for (const Variable& v : trainable_weights()) trainable += v.shape().num_elements();
  for (const Variable& v : non_trainable_weights()) non_trainable += v.shape().num_elements();
  out += dbl + "\n";
  out += "Total params: " + with_commas(trainable + non_trainable) + "\n";
  out += "Trainable params: " + with_commas(trainable) + "\n";
  out += "Non-trainable params: " + with_commas(non_trainable) + "\n" + rule + "\n";
  return out;
}

std::string Model::to_dot(bool show_shapes) const {
  std::string out = "digraph \"" + name() + "\" {\n  rankdir=TB;\n  node [shape=record];\n";
  auto label = [&](const std::string& n, const std::string& cls, const std::string& shape) {
    std::string l = n + ": " + cls;
    if (show_shapes) l += "|" + shape;
    return "\"" + n + "\" [label=\"{" + l + "}\"];\n";
  };
  std::unordered_map<uint64_t, std::string> producer;
  if (!nodes_.empty()) {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const std::string n = "input_" + std::to_string(i);
      producer[inputs_[i].id()] = n;
      out += "  " + label(n, "InputLayer", keras_shape(inputs_[i].shape()));
    }
    std::set<std::string> declared;
    for (const auto& node : nodes_) {
      std::vector<Shape> shapes;
      for (const Tensor& y : node->outputs) shapes.push_back(y.shape());
      const std::string& n = node->layer->name();
      if (declared.insert(n).second) out += "  " + label(n, node->layer->class_name(), shapes_text(shapes));
      for (const Tensor& x : node->inputs) out += "  \"" + producer[x.id()] + "\" -> \"" + n + "\";\n";
      for (const Tensor& y : node->outputs) producer[y.id()] = n;
    }
  } else {
    std::string prev;
    for (const LayerPtr& l : model_layers()) {
      out += "  " + label(l->name(), l->class_name(), shapes_text(l->output_shapes()));
      if (!prev.empty()) out += "  \"" + prev + "\" -> \"" + l->name() + "\";\n";
      prev = l->name();
    }
  }
  return out + "}\n";
}

namespace utils {

void plot_model(const Model& model, const std::string& to_file, bool show_shapes) {
  const std::string dot = model.to_dot(show_shapes);
  std::FILE* f = std::fopen(to_file.c_str(), "wb");
  DF_CHECK(f != nullptr, "[plot_model] cannot write '", to_file, "'");
  const bool ok = std::fwrite(dot.data(), 1, dot.size(), f) == dot.size();
  DF_CHECK(std::fclose(f) == 0 && ok, "[plot_model] writing '", to_file, "' failed");
}

}  // namespace utils
}  // namespace deepflow::keras
