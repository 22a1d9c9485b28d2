// SPDX-License-Identifier: Apache-2.0
// Keras 3's weight layout in model.weights.h5 (keras_file_layout.h).
#include "deepflow/io/keras_file_layout.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "deepflow/core/error.h"
#include "deepflow/keras/layers/keras_ops.h"
#include "deepflow/keras/serialization.h"

namespace deepflow::keras::detail {
namespace {

bool is_model_class(const std::string& cls) { return cls == "Sequential" || cls == "Functional"; }

std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "/" + b; }

// Keras's _get_unique_name: the first "dense", then "dense_1", "dense_2", ...
std::string unique_name(const std::string& name, std::map<std::string, int>& used) {
  auto it = used.find(name);
  if (it == used.end()) {
    used[name] = 0;
    return name;
  }
  return name + "_" + std::to_string(++it->second);
}

}  // namespace

std::string keras_snake_case(const std::string& class_name) {
  static const std::regex non_word("[^A-Za-z0-9_]+"), word_start("(.)([A-Z][a-z]+)"), lower_upper("([a-z])([A-Z])");
  std::string s = std::regex_replace(class_name, non_word, "");
  s = std::regex_replace(s, word_start, "$1_$2");
  s = std::regex_replace(s, lower_upper, "$1_$2");
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

std::vector<LayerPtr> keras_layer_order(const Model& model) {
  if (model.class_name() == "Sequential") return model.model_layers();
  std::unordered_set<uint64_t> inputs;
  for (const Tensor& t : model.inputs()) inputs.insert(t.id());
  // The depth-first walk from the outputs: nodes in finishing order, and each layer's
  // first-visit index (what Keras sorts layers of equal depth by).
  std::vector<const LayerNode*> finished_order;
  std::unordered_set<const LayerNode*> finished;
  std::unordered_map<const Layer*, size_t> first_visit;
  std::unordered_map<const Layer*, LayerPtr> owner;
  std::unordered_map<const LayerNode*, std::vector<const LayerNode*>> parents;
  std::vector<std::shared_ptr<const LayerNode>> keep;  // keep_alive of the nodes seen
  std::function<void(const Tensor&)> walk = [&](const Tensor& t) {
    if (inputs.count(t.id())) return;
    std::shared_ptr<const LayerNode> node = keras_history(t);
    if (!node || finished.count(node.get())) return;
    keep.push_back(node);
    first_visit.emplace(node->layer.get(), first_visit.size());
    owner.emplace(node->layer.get(), node->layer);
    auto& ps = parents[node.get()];
    TensorList reads = node->inputs;
    for (const Tensor& m : node->masks)  // an explicit mask= (Keras 3's NotEqual node)
      if (m.defined() && keras_history(m)) reads.push_back(m);
    for (const Tensor& x : reads) {
      walk(x);
      if (!inputs.count(x.id()))
        if (auto p = keras_history(x)) ps.push_back(p.get());
    }
    finished.insert(node.get());
    finished_order.push_back(node.get());
  };
  for (const Tensor& t : model.outputs()) walk(t);

  // Depths from the outputs (0) back towards the inputs; a layer called at several
  // depths takes the deepest.
  std::unordered_map<const LayerNode*, int64_t> node_depth;
  std::unordered_map<const Layer*, int64_t> layer_depth;
  for (auto it = finished_order.rbegin(); it != finished_order.rend(); ++it) {
    const LayerNode* node = *it;
    int64_t depth = node_depth[node];
    depth = std::max(depth, layer_depth[node->layer.get()]);
    layer_depth[node->layer.get()] = depth;
    node_depth[node] = depth;
    for (const LayerNode* p : parents[node]) node_depth[p] = std::max(depth + 1, node_depth[p]);
  }
  std::vector<const Layer*> layers;
  for (const auto& [layer, depth] : layer_depth) layers.push_back(layer);
  std::sort(layers.begin(), layers.end(), [&](const Layer* a, const Layer* b) {
    if (layer_depth[a] != layer_depth[b]) return layer_depth[a] > layer_depth[b];
    return first_visit[a] < first_visit[b];
  });
  std::vector<LayerPtr> out;
  for (const Layer* l : layers) out.push_back(owner.at(l));
  return out;
}

void var_groups(const Layer& layer, const std::string& path, const Config* entry, std::vector<VarGroup>& out,
                const std::string& who) {
  const std::string cls = layer.class_name();
  const auto* model = dynamic_cast<const Model*>(&layer);
  if (model && is_model_class(cls)) {
    out.push_back({join(path, "vars"), {}, layer.name()});
    std::vector<LayerPtr> children;
    std::vector<const Config*> child_entries;
    if (entry) {
      // The file's order: config.json lists the layers as Keras's model.layers had them.
      const Config& c = entry->contains("config") ? (*entry)["config"] : *entry;
      DF_CHECK(c.contains("layers") && c["layers"].is_array(), who, "model '", layer.name(),
               "': its config has no layers list");
      for (const Config& e : c["layers"]) {
        // Keras 3 ops (keras_ops.h) are listed but are not layers: no weights, no name taken.
        if (!e.is_object() || e.value("class_name", "") == "InputLayer" || serialization::is_keras_op_entry(e)) continue;
        const Config& lc = e.contains("config") && e["config"].is_object() ? e["config"] : e;
        const std::string name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>()
                                                                               : lc.value("name", std::string());
        children.push_back(model->get_layer(name));
        child_entries.push_back(&e);
      }
    } else {
      for (const LayerPtr& l : keras_layer_order(*model))
        if (!dynamic_cast<const layers::KerasOpImpl*>(l.get())) children.push_back(l);
      child_entries.assign(children.size(), nullptr);
    }
    std::map<std::string, int> used;
    for (size_t i = 0; i < children.size(); ++i) {
      const std::string name = unique_name(keras_snake_case(children[i]->class_name()), used);
      var_groups(*children[i], join(path, "layers/" + name), child_entries[i], out, who);
    }
    return;
  }
  // A front end's layer object that wraps one core layer (the Python classes) stands for it.
  const Layer* inner = &layer;
  while (inner->layers().size() == 1 && inner->layers()[0]->weights().size() == inner->weights().size())
    inner = inner->layers()[0].get();
  if (cls == "LSTM" || cls == "GRU" || cls == "SimpleRNN") {
    // Keras 3's recurrent layers hold their variables in their cell.
    out.push_back({join(path, "vars"), {}, layer.name()});
    out.push_back({join(path, "cell/vars"), layer.weights(), layer.name()});
    return;
  }
  if (cls == "Bidirectional" && inner->layers().size() == 2) {
    out.push_back({join(path, "vars"), {}, layer.name()});
    out.push_back({join(path, "forward_layer/vars"), {}, layer.name()});
    out.push_back({join(path, "forward_layer/cell/vars"), inner->layers()[0]->weights(), layer.name()});
    out.push_back({join(path, "backward_layer/vars"), {}, layer.name()});
    out.push_back({join(path, "backward_layer/cell/vars"), inner->layers()[1]->weights(), layer.name()});
    return;
  }
  if (cls == "MultiHeadAttention" && inner->layers().empty() && layer.weights().size() % 4 == 0) {
    // Keras 3 keeps each projection in an EinsumDense attribute (Keras 3.15 under its
    // public name; older files under "_query_dense", which the reader also tries); ours
    // are query, key, value, output (kernel, then bias when used), with Keras's shapes.
    const std::vector<Variable> w = layer.weights();
    const size_t per = w.size() / 4;
    out.push_back({join(path, "vars"), {}, layer.name()});
    const char* parts[] = {"query_dense", "key_dense", "value_dense", "output_dense"};
    for (size_t i = 0; i < 4; ++i)
      out.push_back({join(path, std::string(parts[i]) + "/vars"),
                     std::vector<Variable>(w.begin() + long(i * per), w.begin() + long((i + 1) * per)), layer.name()});
    return;
  }
  DF_CHECK(inner->layers().empty(), who, "layer '", layer.name(), "' (class ", cls,
           ") keeps weights in sublayers, and deepflow does not know where Keras files put those of a ", cls);
  out.push_back({join(path, "vars"), layer.weights(), layer.name()});
}

}  // namespace deepflow::keras::detail
