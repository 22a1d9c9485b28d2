// SPDX-License-Identifier: Apache-2.0
// The layer registry, and Sequential / functional model configs (Keras 3's format).
#include "deepflow/keras/serialization.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "deepflow/core/error.h"
#include "deepflow/graph/graph.h"
#include "deepflow/keras/layers/core.h"
#include "deepflow/keras/layers/keras_ops.h"

namespace deepflow::keras {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, LayerFactory> factories;
};

Registry& registry() {
  static auto* r = new Registry;  // never destroyed: registrations run from static initializers
  return *r;
}

// The Input names model_from_config asked for, by Keras tensor id: Input() makes names
// unique process-wide ("x" becomes "x_1" when a model named x's input before), and a
// rebuilt model's config must keep the names of the one it came from.
struct InputNames {
  std::mutex mu;
  std::unordered_map<uint64_t, std::string> by_tensor;
};

InputNames& input_names() {
  static auto* n = new InputNames;
  return *n;
}


// The InputLayer name of a model input: the name it was rebuilt with, else the
// placeholder's (what keras::Input was given), else Keras's default.
std::string input_name(const Tensor& t, size_t index) {
  {
    InputNames& n = input_names();
    std::lock_guard<std::mutex> lock(n.mu);
    auto it = n.by_tensor.find(t.id());
    if (it != n.by_tensor.end()) return it->second;
  }
  // Keras tensors live in one process-wide graph; a node's name never changes once added
  // (reading it races only with a concurrent keras::Input growing the node list).
  if (t.is_symbolic() && t.impl()->symbol && t.impl()->symbol_node >= 0) {
    const auto* g = static_cast<const Graph*>(t.impl()->symbol.get());
    std::string name = g->node(t.impl()->symbol_node).name;
    if (name.rfind("placeholder", 0) != 0) return name;  // an unnamed Input: Keras's default below
  }
  return index == 0 ? "input_layer" : "input_layer_" + std::to_string(index);
}

Config shape_json(const Shape& s) {
  Config out = Config::array();
  for (int i = 0; i < s.rank(); ++i) out.push_back(s[i] < 0 ? Config(nullptr) : Config(s[i]));
  return out;
}

Shape shape_from_json(const Config& j, const std::string& what) {
  DF_CHECK(j.is_array(), "[keras.models.model_from_config] ", what, " must be a list of dims, got ", j.dump());
  std::vector<int64_t> dims;
  for (const Config& d : j) dims.push_back(d.is_null() ? -1 : d.get<int64_t>());
  return Shape(dims);
}

Config input_layer_entry(const Tensor& t, const std::string& name) {
  Config c{{"name", name},
           {"trainable", true},
           {"dtype", dtype_name(t.dtype())},
           {"batch_shape", shape_json(t.shape())},
           {"sparse", false}};
  return Config{{"class_name", "InputLayer"}, {"config", c}};
}

// An Input tensor from an InputLayer config (batch_shape, or Keras 2's batch_input_shape).
Tensor make_input(const Config& c) {
  const std::string name = serialization::name_of(c);
  const char* key = c.contains("batch_shape") ? "batch_shape" : "batch_input_shape";
  DF_CHECK(c.contains(key), "[keras.models.model_from_config] InputLayer '", name, "' has no batch_shape");
  const Shape bs = shape_from_json(c.at(key), "InputLayer '" + name + "' batch_shape");
  DF_CHECK(bs.rank() >= 1, "[keras.models.model_from_config] InputLayer '", name, "' batch_shape needs a batch dim");
  const DType dt = c.contains("dtype") && c["dtype"].is_string() ? dtype_from_name(c["dtype"].get<std::string>())
                                                                 : DType::Float32;
  std::optional<int64_t> batch;
  if (bs[0] >= 0) batch = bs[0];
  Tensor t = Input(Shape(std::vector<int64_t>(bs.begin() + 1, bs.end())), name, dt, batch);
  remember_input_name(t, name.empty() ? "input_layer" : name);
  return t;
}

bool is_model_class(const std::string& cls) { return cls == "Sequential" || cls == "Functional"; }

// Where a Keras tensor came from inside a model: Keras's keras_history [layer, node, tensor].
struct History {
  std::string layer;
  int64_t node = 0, tensor = 0;
};

Config history_json(const History& h) { return Config::array({h.layer, h.node, h.tensor}); }

Config functional_config(const Model& model) {
  const char* at = "[keras.models.model_to_config] ";
  std::unordered_map<uint64_t, History> where;  // Keras tensor id -> its history
  std::set<std::string> names;
  Config layers = Config::array(), input_layers = Config::array(), output_layers = Config::array();
  for (size_t i = 0; i < model.inputs().size(); ++i) {
    const Tensor& t = model.inputs()[i];
    const std::string name = input_name(t, i);
    DF_CHECK(names.insert(name).second, at, "model '", model.name(), "' has two inputs named '", name, "'");
    where[t.id()] = {name, 0, 0};
    Config entry = input_layer_entry(t, name);
    entry["name"] = name;
    entry["inbound_nodes"] = Config::array();
    layers.push_back(entry);
    input_layers.push_back(history_json(where[t.id()]));
  }
  // The nodes in topological order (a post-order walk from the outputs, as Model's).
  std::vector<std::shared_ptr<const LayerNode>> order;
  std::unordered_set<const LayerNode*> seen;
  std::function<void(const Tensor&)> visit = [&](const Tensor& t) {
    if (where.count(t.id())) return;
    std::shared_ptr<const LayerNode> node = keras_history(t);
    DF_CHECK(node, at, "model '", model.name(), "' reads a Keras tensor of shape ", t.shape(),
             " that no layer or input of the model produced");
    if (!seen.insert(node.get()).second) return;
    for (const Tensor& x : node->inputs) visit(x);
    for (const Tensor& m : node->masks)
      if (m.defined() && keras_history(m)) visit(m);  // an explicit mask= (a computed one has no node)
    order.push_back(node);
  };
  for (const Tensor& t : model.outputs()) visit(t);

  std::unordered_map<const Layer*, size_t> entry_of;  // layer -> index in `layers`
  for (const auto& node : order) {
    const Layer* layer = node->layer.get();
    auto it = entry_of.find(layer);
    if (it == entry_of.end()) {
      const std::string& name = layer->name();
      DF_CHECK(names.insert(name).second, at, "model '", model.name(), "' has two layers (or inputs) named '",
               name, "'; layer names must be unique within a model");
      Config entry = serialize_layer(*layer);
      if (dynamic_cast<const layers::KerasOpImpl*>(layer)) {
        entry["module"] = layers::kKerasOpsModule;
        entry["registered_name"] = layer->class_name();
      }
      entry["name"] = name;
      entry["inbound_nodes"] = Config::array();
      it = entry_of.emplace(layer, layers.size()).first;
      layers.push_back(std::move(entry));
    }
    Config& entry = layers[it->second];
    const int64_t node_index = int64_t(entry["inbound_nodes"].size());
    auto keras_tensor = [&](const Tensor& x) {
      return Config{{"class_name", "__keras_tensor__"},
                    {"config", {{"shape", shape_json(x.shape())},
                                {"dtype", dtype_name(x.dtype())},
                                {"keras_history", history_json(where.at(x.id()))}}}};
    };
    Config args = Config::array();
    for (const Tensor& x : node->inputs) args.push_back(keras_tensor(x));
    // Keras 3: a single tensor is the first positional argument, several are a list; an
    // op's args mix its tensors with constants.
    Config call_args = node->inputs.size() == 1 ? args : Config::array({args});
    if (const auto* op = dynamic_cast<const layers::KerasOpImpl*>(layer)) call_args = op->call_args(args);
    Config kwargs = Config::object();
    Config masks = Config::array();
    bool explicit_mask = false;
    for (const Tensor& m : node->masks) {
      const bool has = m.defined() && where.count(m.id());
      masks.push_back(has ? keras_tensor(m) : Config(nullptr));
      explicit_mask |= has;
    }
    if (explicit_mask) kwargs["mask"] = masks.size() == 1 ? masks[0] : masks;
    entry["inbound_nodes"].push_back(Config{{"args", call_args}, {"kwargs", kwargs}});
    for (size_t j = 0; j < node->outputs.size(); ++j)
      if (node->outputs[j].defined()) where[node->outputs[j].id()] = {layer->name(), node_index, int64_t(j)};
  }
  for (const Tensor& t : model.outputs()) output_layers.push_back(history_json(where.at(t.id())));
  Config c{{"name", model.name()},  {"trainable", model.trainable()},       {"layers", layers},
           {"input_layers", input_layers}, {"output_layers", output_layers}};
  return Config{{"class_name", "Functional"}, {"config", c}};
}

Config sequential_config(const Model& model) {
  Config layers = Config::array();
  if (!model.inputs().empty()) layers.push_back(input_layer_entry(model.inputs()[0], input_name(model.inputs()[0], 0)));
  for (const LayerPtr& l : model.model_layers()) layers.push_back(serialize_layer(*l));
  Config c{{"name", model.name()},
           {"trainable", model.trainable()},
           {"dtype", model.dtype_policy().name},
           {"layers", layers}};
  return Config{{"class_name", "Sequential"}, {"config", c}};
}

ModelPtr sequential_from_config(const Config& c) {
  auto model = std::make_shared<Sequential>(std::vector<LayerPtr>{}, serialization::name_of(c));
  DF_CHECK(c.contains("layers") && c["layers"].is_array(),
           "[keras.models.model_from_config] Sequential config needs a \"layers\" list, got ", c.dump());
  for (const Config& lc : c["layers"]) {
    LayerPtr layer = layer_from_config(lc);
    if (auto* in = dynamic_cast<layers::InputLayerImpl*>(layer.get())) remember_input_name(in->output(), in->name());
    model->add(layer);
  }
  // Keras 2 wrote the input shape of a Sequential without an InputLayer here.
  if (!model->built() && c.contains("build_input_shape") && !c["build_input_shape"].is_null())
    model->build(shape_from_json(c["build_input_shape"], "build_input_shape"));
  return model;
}

// Keras 3 inbound node {"args": [...], "kwargs": {}} or Keras 2 [[layer, node, tensor, kwargs], ...]:
// the histories of the call's input tensors.
std::vector<History> inbound_tensors(const Config& node, const std::string& layer) {
  std::vector<History> out;
  auto add = [&](const Config& h) {
    DF_CHECK(h.is_array() && h.size() >= 3 && h[0].is_string(), "[keras.models.model_from_config] layer '", layer,
             "': bad keras_history ", h.dump());
    out.push_back({h[0].get<std::string>(), h[1].get<int64_t>(), h[2].get<int64_t>()});
  };
  std::function<void(const Config&)> walk = [&](const Config& a) {
    if (a.is_object() && a.value("class_name", "") == "__keras_tensor__") add(a.at("config").at("keras_history"));
    else if (a.is_array())
      for (const Config& x : a) walk(x);
  };
  if (node.is_object()) walk(node.at("args"));
  else if (node.is_array())
    for (const Config& h : node) {
      add(h);
      // Keras 2 put further tensor arguments in the call's kwargs (MultiHeadAttention's value, key).
      if (h.is_array() && h.size() >= 4 && h[3].is_object())
        for (const char* key : {"value", "key"})
          if (h[3].contains(key) && h[3][key].is_array() && h[3][key].size() >= 3 && h[3][key][0].is_string())
            add(h[3][key]);
    }
  DF_CHECK(!out.empty(), "[keras.models.model_from_config] layer '", layer, "' has an inbound node without inputs: ",
           node.dump());
  return out;
}

// The histories of a Keras 3 node's kwargs["mask"] (one tensor or a list, null for none).
std::vector<std::optional<History>> inbound_masks(const Config& node, const std::string& layer) {
  std::vector<std::optional<History>> out;
  if (!node.is_object() || !node.contains("kwargs") || !node["kwargs"].is_object() || !node["kwargs"].contains("mask"))
    return out;
  const Config& m = node["kwargs"]["mask"];
  const Config list = m.is_array() ? m : Config::array({m});
  for (const Config& a : list) {
    if (a.is_object() && a.value("class_name", "") == "__keras_tensor__") {
      const Config& h = a.at("config").at("keras_history");
      DF_CHECK(h.is_array() && h.size() >= 3 && h[0].is_string(), "[keras.models.model_from_config] layer '", layer,
               "': bad mask keras_history ", h.dump());
      out.push_back(History{h[0].get<std::string>(), h[1].get<int64_t>(), h[2].get<int64_t>()});
    } else {
      out.push_back(std::nullopt);
    }
  }
  return out;
}

ModelPtr functional_from_config(const Config& c) {
  const char* at = "[keras.models.model_from_config] ";
  DF_CHECK(c.contains("layers") && c["layers"].is_array(), at, "a functional config needs a \"layers\" list");
  std::map<std::string, LayerPtr> by_name;
  std::map<std::string, std::vector<TensorList>> outputs;  // layer name -> outputs of each node
  struct Pending {
    std::string layer;
    const Config* node;
    size_t index;  // the call's position among the layer's calls
  };
  std::vector<Pending> pending;
  for (const Config& entry : c["layers"]) {
    DF_CHECK(entry.is_object() && entry.contains("class_name"), at, "bad layer entry ", entry.dump());
    const Config& lc = entry.contains("config") ? entry["config"] : Config::object();
    const std::string name = entry.contains("name") ? entry["name"].get<std::string>() : serialization::name_of(lc);
    DF_CHECK(!by_name.count(name), at, "two layers are named '", name, "'");
    if (entry["class_name"] == "InputLayer") {
      by_name[name] = nullptr;
      outputs[name].push_back({make_input(lc)});
      continue;
    }
    if (serialization::is_keras_op_entry(entry)) {
      // An op's constants are in its call's args, not its config.
      const std::string cls = entry["class_name"].get<std::string>();
      DF_CHECK(layers::is_keras_op_class(cls), at, "deepflow does not compute the Keras op '", name, "' (class ", cls,
               ", module ", entry.value("module", ""), ")");
      DF_CHECK(entry.contains("inbound_nodes") && entry["inbound_nodes"].is_array() &&
                   !entry["inbound_nodes"].empty() && entry["inbound_nodes"][0].is_object(),
               at, "the Keras op '", name, "' has no Keras 3 inbound node");
      by_name[name] = layers::KerasOp(cls, entry["inbound_nodes"][0].at("args"), name);
    } else {
      by_name[name] = layer_from_config(entry);
    }
    if (entry.contains("inbound_nodes")) {
      size_t index = 0;
      for (const Config& node : entry["inbound_nodes"]) pending.push_back({name, &node, index++});
    }
  }
  // A layer's later calls may read layers listed after it (shared layers): resolve
  // nodes as their inputs appear, in each layer's call order.
  while (!pending.empty()) {
    bool progress = false;
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->index != outputs[it->layer].size()) {  // an earlier call of this layer comes first
        ++it;
        continue;
      }
      TensorList args, masks;
      bool ready = true;
      // The tensor a history names; undefined (and ready false) while its node is pending.
      auto resolve = [&](const History& h) {
        DF_CHECK(by_name.count(h.layer), at, "layer '", it->layer, "' reads from unknown layer '", h.layer, "'");
        const auto& nodes = outputs[h.layer];
        if (h.node < 0 || size_t(h.node) >= nodes.size()) {
          ready = false;
          return Tensor();
        }
        DF_CHECK(h.tensor >= 0 && size_t(h.tensor) < nodes[size_t(h.node)].size(), at, "layer '", it->layer,
                 "' reads output ", h.tensor, " of '", h.layer, "', which has ", nodes[size_t(h.node)].size());
        return nodes[size_t(h.node)][size_t(h.tensor)];
      };
      for (const History& h : inbound_tensors(*it->node, it->layer)) {
        args.push_back(resolve(h));
        if (!ready) break;
      }
      for (const auto& h : inbound_masks(*it->node, it->layer)) {
        if (!ready) break;
        masks.push_back(h ? resolve(*h) : Tensor());
      }
      if (!ready) {
        ++it;
        continue;
      }
      LayerPtr layer = by_name.at(it->layer);
      if (masks.empty()) {
        outputs[it->layer].push_back((*layer)(args));
      } else {
        masks.resize(args.size());
        outputs[it->layer].push_back((*layer)(args, masks));
      }
      it = pending.erase(it);
      progress = true;
    }
    DF_CHECK(progress, at, "cannot resolve the inbound nodes of layer '", pending.front().layer,
             "' (a cycle, or a reference to a missing node)");
  }
  auto tensors_of = [&](const char* key) {
    TensorList out;
    DF_CHECK(c.contains(key) && c[key].is_array(), at, "a functional config needs \"", key, "\"");
    // Keras 2 wrote a single [name, node, tensor] without the outer list for one input.
    Config list = c[key];
    if (!list.empty() && list[0].is_string()) list = Config::array({list});
    for (const Config& h : list) {
      DF_CHECK(h.is_array() && h.size() >= 3, at, "bad ", key, " entry ", h.dump());
      const std::string name = h[0].get<std::string>();
      const size_t node = h[1].get<size_t>(), tensor = h[2].get<size_t>();
      DF_CHECK(outputs.count(name) && node < outputs[name].size() && tensor < outputs[name][node].size(), at, key,
               " names ", h.dump(), ", which the layers do not produce");
      out.push_back(outputs[name][node][tensor]);
    }
    return out;
  };
  TensorList ins = tensors_of("input_layers"), outs = tensors_of("output_layers");
  return std::make_shared<Model>(ins, outs, serialization::name_of(c));
}

}  // namespace

// --- the registry ---

bool serialization::is_keras_op_entry(const Config& entry) {
  return entry.is_object() && entry.contains("module") && entry["module"].is_string() &&
         entry["module"].get<std::string>().rfind("keras.src.ops", 0) == 0;
}

bool register_layer(const std::string& class_name, LayerFactory factory) {
  DF_CHECK(!class_name.empty() && factory, "[keras.register_layer] needs a class name and a factory");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.factories[class_name] = std::move(factory);
  return true;
}

bool is_layer_registered(const std::string& class_name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.factories.count(class_name) > 0;
}

std::vector<std::string> registered_layers() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [name, f] : r.factories) out.push_back(name);
  return out;
}

Config serialize_layer(const Layer& layer) {
  if (const auto* m = dynamic_cast<const Model*>(&layer); m && (is_model_class(m->class_name()) || m->class_name() == "Model"))
    return model_to_config(*m);
  return Config{{"class_name", layer.class_name()}, {"config", layer.get_config()}};
}

LayerPtr layer_from_config(const Config& config) {
  DF_CHECK(config.is_object() && config.contains("class_name") && config["class_name"].is_string(),
           "[keras.layers.deserialize] expects {\"class_name\": ..., \"config\": {...}}, got ", config.dump());
  const std::string cls = config["class_name"].get<std::string>();
  const Config c = config.contains("config") && config["config"].is_object() ? config["config"] : Config::object();
  LayerFactory factory;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.factories.find(cls);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    if (cls == "Model")
      fail("[keras.layers.deserialize] '", serialization::name_of(c), "' is a subclassed model (class Model): it has "
           "no config to rebuild it from; load its SavedModel with io::load_saved_model");
    fail("[keras.layers.deserialize] unknown layer class '", cls, "'; register it with keras::register_layer(\"", cls,
         "\", factory) or DF_KERAS_REGISTER_LAYER(", cls, ") (deepflow/keras/serialization.h)");
  }
  LayerPtr layer;
  try {
    layer = factory(c);
  } catch (const nlohmann::json::exception& e) {
    fail("[keras.layers.deserialize] bad config for ", cls, " '", serialization::name_of(c), "': ", e.what(),
         "; config ", c.dump());
  }
  DF_CHECK(layer != nullptr, "[keras.layers.deserialize] the factory of ", cls, " returned a null layer");
  if (c.contains("trainable") && c["trainable"].is_boolean()) layer->set_trainable(c["trainable"].get<bool>());
  // Keras 3 writes the policy as a name or as {"class_name": "DTypePolicy", "config": {"name": ...}}.
  std::string policy;
  if (c.contains("dtype") && c["dtype"].is_string()) policy = c["dtype"].get<std::string>();
  else if (c.contains("dtype") && c["dtype"].is_object() && c["dtype"].contains("config"))
    policy = serialization::name_of(c["dtype"]["config"]);
  if (!policy.empty() && !layer->built() && policy != layer->dtype_policy().name) layer->set_dtype_policy(policy);
  return layer;
}

// --- models ---

bool is_config_model(const Model& model) {
  const std::string cls = model.class_name();
  return is_model_class(cls) || (cls != "Model" && is_layer_registered(cls));
}

Config model_to_config(const Model& model) {
  const std::string cls = model.class_name();
  if (cls == "Sequential") return sequential_config(model);
  if (cls == "Functional") return functional_config(model);
  DF_CHECK(cls != "Model", "[keras.models.model_to_config] model '", model.name(),
           "' is a subclassed model (class Model): its layer graph is C++ code, not a config. keras::save_model "
           "keeps its traced serving function (load it with io::load_saved_model)");
  return Config{{"class_name", cls}, {"config", model.get_config()}};
}

ModelPtr model_from_config(const Config& config) {
  DF_CHECK(config.is_object() && config.contains("class_name") && config["class_name"].is_string(),
           "[keras.models.model_from_config] expects {\"class_name\": ..., \"config\": {...}}, got ", config.dump());
  const std::string cls = config["class_name"].get<std::string>();
  const Config c = config.contains("config") && config["config"].is_object() ? config["config"] : Config::object();
  ModelPtr model;
  try {
    // Keras 2 called functional models "Model" (with a layers list) or "Functional".
    if (cls == "Sequential") model = sequential_from_config(c);
    else if (cls == "Functional" || (cls == "Model" && c.contains("layers"))) model = functional_from_config(c);
  } catch (const nlohmann::json::exception& e) {
    fail("[keras.models.model_from_config] bad ", cls, " config '", serialization::name_of(c), "': ", e.what());
  }
  if (!model) {
    LayerPtr layer = layer_from_config(config);  // a registered custom Model subclass
    model = std::dynamic_pointer_cast<Model>(layer);
    DF_CHECK(model != nullptr, "[keras.models.model_from_config] class '", cls, "' is a layer, not a model");
    return model;
  }
  if (c.contains("trainable") && c["trainable"].is_boolean()) model->set_trainable(c["trainable"].get<bool>());
  return model;
}

std::string model_to_json(const Model& model, int indent) { return model_to_config(model).dump(indent); }

ModelPtr model_from_json(const std::string& json) {
  Config c;
  try {
    c = Config::parse(json);
  } catch (const nlohmann::json::exception& e) {
    fail("[keras.models.model_from_json] not valid JSON: ", e.what());
  }
  return model_from_config(c);
}

// --- compile configs ---

Config compile_config(const CompileOptions& options, const Optimizer* optimizer) {
  Config c = Config::object();
  if (optimizer) c["optimizer"] = optimizers::serialize(*optimizer);
  else if (options.optimizer.optimizer) c["optimizer"] = optimizers::serialize(*options.optimizer.optimizer);
  else c["optimizer"] = options.optimizer.name;
  Config losses = Config::array();
  for (const LossSpec& l : options.loss) losses.push_back(l.loss ? losses::serialize(*l.loss) : Config(l.name));
  c["loss"] = losses.size() == 1 ? losses[0] : losses;
  Config metrics = Config::array();
  for (const MetricSpec& m : options.metrics)
    metrics.push_back(m.metric ? Config{{"class_name", m.metric->class_name()}, {"config", m.metric->get_config()}}
                               : Config(m.name));
  c["metrics"] = metrics;
  c["loss_weights"] = options.loss_weights.empty() ? Config(nullptr) : Config(options.loss_weights);
  c["run_eagerly"] = options.run_eagerly;
  return c;
}

CompileOptions compile_options_from_config(const Config& c) {
  const char* at = "[keras.compile_from_config] ";
  DF_CHECK(c.is_object(), at, "expects an object, got ", c.dump());
  CompileOptions o;
  try {
    if (c.contains("optimizer") && !c["optimizer"].is_null())
      o.optimizer = c["optimizer"].is_string() ? OptimizerSpec(c["optimizer"].get<std::string>())
                                               : OptimizerSpec(optimizers::deserialize(c["optimizer"]));
    DF_CHECK(c.contains("loss") && !c["loss"].is_null(), at, "the config has no loss: ", c.dump());
    const Config losses = c["loss"].is_array() ? c["loss"] : Config::array({c["loss"]});
    for (const Config& l : losses)
      o.loss.push_back(l.is_string() ? LossSpec(l.get<std::string>()) : LossSpec(losses::deserialize(l)));
    if (c.contains("metrics") && c["metrics"].is_array())
      for (const Config& m : c["metrics"])
        o.metrics.push_back(m.is_string() ? MetricSpec(m.get<std::string>()) : MetricSpec(metric_from_config(m)));
    if (c.contains("loss_weights") && c["loss_weights"].is_array())
      o.loss_weights = c["loss_weights"].get<std::vector<double>>();
    o.run_eagerly = serialization::value_or(c, "run_eagerly", false);
  } catch (const nlohmann::json::exception& e) {
    fail(at, "bad compile config ", c.dump(), ": ", e.what());
  }
  return o;
}

MetricPtr metric_from_config(const Config& config) {
  namespace ser = serialization;
  DF_CHECK(config.is_object() && config.contains("class_name"),
           "[keras.metrics.deserialize] expects {\"class_name\": ..., \"config\": {...}}, got ", config.dump());
  const std::string cls = config["class_name"].get<std::string>();
  const Config c = config.contains("config") ? config["config"] : Config::object();
  const std::string name = ser::name_of(c);
  auto named = [&](const char* fallback) { return name.empty() ? std::string(fallback) : name; };
  if (cls == "Accuracy") return metrics::Accuracy(named("accuracy"));
  if (cls == "BinaryAccuracy") return metrics::BinaryAccuracy(named("binary_accuracy"), ser::value_or(c, "threshold", 0.5));
  if (cls == "CategoricalAccuracy") return metrics::CategoricalAccuracy(named("categorical_accuracy"));
  if (cls == "SparseCategoricalAccuracy") return metrics::SparseCategoricalAccuracy(named("sparse_categorical_accuracy"));
  if (cls == "SparseTopKCategoricalAccuracy")
    return metrics::SparseTopKCategoricalAccuracy(ser::value_or(c, "k", 5), named("sparse_top_k_categorical_accuracy"));
  if (cls == "TopKCategoricalAccuracy")
    return metrics::TopKCategoricalAccuracy(ser::value_or(c, "k", 5), named("top_k_categorical_accuracy"));
  if (cls == "Precision") return metrics::Precision(ser::value_or(c, "thresholds", 0.5), named("precision"));
  if (cls == "Recall") return metrics::Recall(ser::value_or(c, "thresholds", 0.5), named("recall"));
  if (cls == "AUC") return metrics::AUC(ser::value_or(c, "num_thresholds", 200), named("auc"));
  if (cls == "MeanSquaredError") return metrics::MeanSquaredError(named("mean_squared_error"));
  if (cls == "MeanAbsoluteError") return metrics::MeanAbsoluteError(named("mean_absolute_error"));
  if (cls == "Mean") return std::make_shared<metrics::Mean>(named("mean"));
  fail("[keras.metrics.deserialize] cannot rebuild metric '", name, "' of class '", cls,
       "' from its config (built-in metric classes only; a MeanMetricWrapper's function is code)");
}

// --- factory helpers ---

namespace serialization {

std::string name_of(const Config& c) {
  return c.is_object() && c.contains("name") && c["name"].is_string() ? c["name"].get<std::string>() : "";
}

InitializerPtr initializer_of(const Config& c, const char* key, const char* default_class) {
  auto it = c.find(key);
  if (it == c.end() || it->is_null()) return nullptr;
  if (it->is_string()) return initializers::get(it->get<std::string>());
  const bool is_default = it->value("class_name", "") == default_class &&
                          (!it->contains("config") || (*it)["config"].empty());
  return is_default ? nullptr : initializers::deserialize(*it);
}

RegularizerPtr regularizer_of(const Config& c, const char* key) {
  auto it = c.find(key);
  return it == c.end() || it->is_null() ? nullptr : regularizers::deserialize(*it);
}

std::string activation_of(const Config& c, const char* key) {
  auto it = c.find(key);
  if (it == c.end() || it->is_null()) return "";
  const std::string a = it->get<std::string>();
  return a == "linear" ? "" : a;
}

std::vector<int64_t> ints_of(const Config& c, const char* key) {
  const Config& v = c.at(key);
  if (v.is_number_integer()) return {v.get<int64_t>()};
  return v.get<std::vector<int64_t>>();
}

std::optional<int64_t> optional_int_of(const Config& c, const char* key) {
  auto it = c.find(key);
  if (it == c.end() || it->is_null()) return std::nullopt;
  return it->get<int64_t>();
}

}  // namespace serialization

namespace {
// Models are layers too (a model inside a model): their classes resolve here.
const bool kModelsRegistered = [] {
  register_layer("Sequential", [](const Config& c) -> LayerPtr {
    return model_from_config(Config{{"class_name", "Sequential"}, {"config", c}});
  });
  register_layer("Functional", [](const Config& c) -> LayerPtr {
    return model_from_config(Config{{"class_name", "Functional"}, {"config", c}});
  });
  return true;
}();
}  // namespace

void remember_input_name(const Tensor& t, const std::string& name) {
  InputNames& n = input_names();
  std::lock_guard<std::mutex> lock(n.mu);
  n.by_tensor[t.id()] = name;
}

}  // namespace deepflow::keras
