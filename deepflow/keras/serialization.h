// SPDX-License-Identifier: Apache-2.0
// Keras serialization: the layer registry, layer and model configs, JSON
// (tf.keras.layers.serialize / deserialize, Model.get_config / from_config,
// model_to_json / model_from_json).
//
// A layer's config is Keras's `{"class_name": "Dense", "config": {"name": "dense",
// "units": 10, ...}}`; layer_from_config finds the class in the registry and calls
// its factory. Every built-in layer is registered. A Sequential is
// `{"class_name": "Sequential", "config": {"name", "layers": [InputLayer, ...]}}`, a
// functional model Keras 3's `{"class_name": "Functional", "config": {"name",
// "layers": [{..., "name", "inbound_nodes": [...]}], "input_layers", "output_layers"}}`
// (shared layers, several inputs and outputs, nested models).
//
//   std::string json = keras::model_to_json(*model);
//   keras::ModelPtr copy = keras::model_from_json(json);   // same architecture, new weights
//   copy->set_weights(model->get_weights());
//
// A custom layer is rebuilt through the registry: give it a `static LayerPtr
// from_config(const keras::Config&)` (or a constructor from a Config) and register it
// once, at namespace scope of a .cpp file:
//
//   class Scale : public keras::Layer {
//    public:
//     explicit Scale(double init, std::string name = "") : Layer(std::move(name)), init_(init) {}
//     static keras::LayerPtr from_config(const keras::Config& c) {
//       return std::make_shared<Scale>(c.at("init").get<double>(), keras::serialization::name_of(c));
//     }
//     std::string class_name() const override { return "Scale"; }
//     keras::Config get_config() const override {
//       keras::Config c = Layer::get_config();   // name, trainable, dtype
//       c["init"] = init_;
//       return c;
//     }
//     ...
//   };
//   DF_KERAS_REGISTER_LAYER(Scale);
//
// (or `keras::register_layer("Scale", factory)` from any code that runs before the
// load). The factory should pass config["name"] to the Layer constructor so the
// rebuilt layer keeps its name; layer_from_config itself applies "trainable" and the
// "dtype" policy. A class that is not registered fails with
// "[keras.layers.deserialize] unknown layer class 'Scale'; register it with ...".
//
// Subclassed models (a Model overriding call()) are code, not config: model_to_config
// refuses them, as Keras's get_config does; keras::save_model keeps their traced
// serving function instead (deepflow/io/keras_saving.h).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "deepflow/keras/layer.h"
#include "deepflow/keras/model.h"

namespace deepflow::keras {

/// Makes a layer from the "config" part of its serialized form.
using LayerFactory = std::function<LayerPtr(const Config& config)>;

/// Makes `class_name` known to layer_from_config (re-registering replaces). Returns
/// true, so it can initialize a static: `static bool r = register_layer(...)`.
bool register_layer(const std::string& class_name, LayerFactory factory);
/// Whether a class is registered (built-ins, Sequential and Functional included).
bool is_layer_registered(const std::string& class_name);
/// Every registered class name, sorted.
std::vector<std::string> registered_layers();

/// {"class_name": ..., "config": layer.get_config()}; models give model_to_config.
Config serialize_layer(const Layer& layer);
/// A new, unbuilt layer from {"class_name": ..., "config": {...}} (Keras's
/// layers.deserialize). Unknown class: "[keras.layers.deserialize] unknown layer class
/// 'Foo'; register it with ...". A config the factory cannot read names the class and
/// the problem.
LayerPtr layer_from_config(const Config& config);

/// A Sequential's or functional model's config (as above). Throws for a subclassed model.
Config model_to_config(const Model& model);
/// A new model with the config's layers and graph (fresh weights, not compiled).
ModelPtr model_from_config(const Config& config);
/// model_to_config as JSON text (indent < 0: one line).
std::string model_to_json(const Model& model, int indent = -1);
/// Parses the text (a JSON error names the offset) and calls model_from_config.
ModelPtr model_from_json(const std::string& json);

/// Records `name` as the InputLayer name of Keras tensor `t`: keras::Input keeps the name
/// it was given (as Keras does) even when its graph node needed a process-wide unique one.
void remember_input_name(const Tensor& t, const std::string& name);

/// Keras's compile config: {"optimizer": {"class_name", "config"} (or a name), "loss": a
/// name or {"class_name", "config"} (a list of them for several outputs), "metrics": names
/// or {"class_name", "config"}, "loss_weights": [...] or null, "run_eagerly"}. `optimizer`:
/// the live optimizer to describe (its config now: a learning rate a callback changed);
/// null: the one in the options.
Config compile_config(const CompileOptions& options, const Optimizer* optimizer = nullptr);
/// Options to compile() with, from a compile config: new optimizer, loss and metric objects.
/// An unknown class names it ("[keras.compile_from_config] ...").
CompileOptions compile_options_from_config(const Config& config);
/// A built-in metric from {"class_name", "config"} (Keras's metrics.deserialize).
MetricPtr metric_from_config(const Config& config);

/// Whether model_to_config can describe the model: Sequential and functional models
/// (and models of a registered custom class).
bool is_config_model(const Model& model);

/// Helpers for layer factories: each reads one config field, and a null or missing
/// field gives the layer's default.
namespace serialization {
/// config["name"], or "" (the layer then picks a unique name).
std::string name_of(const Config& c);
/// The initializer at `key`; null (the layer's default) when missing, null, or exactly
/// the default `{"class_name": default_class, "config": {}}` that get_config writes for one.
InitializerPtr initializer_of(const Config& c, const char* key, const char* default_class);
/// The regularizer at `key`, null when missing or null.
RegularizerPtr regularizer_of(const Config& c, const char* key);
/// An activation name ("linear" and null are "").
std::string activation_of(const Config& c, const char* key = "activation");
/// An int or a list of ints (Keras's "int or tuple" arguments).
std::vector<int64_t> ints_of(const Config& c, const char* key);
/// An int, or nullopt when missing or null (seeds, optional sizes).
std::optional<int64_t> optional_int_of(const Config& c, const char* key);
/// A layers-list entry for a Keras 3 operation (module "keras.src.ops.*", not a layer;
/// see layers/keras_ops.h).
bool is_keras_op_entry(const Config& entry);
/// c[key] as T, or `fallback` when missing or null.
template <class T>
T value_or(const Config& c, const char* key, T fallback) {
  auto it = c.find(key);
  return it == c.end() || it->is_null() ? fallback : it->template get<T>();
}
}  // namespace serialization

namespace detail {
template <class L>
LayerFactory layer_factory() {
  return [](const Config& c) -> LayerPtr {
    if constexpr (requires { L::from_config(c); }) return LayerPtr(L::from_config(c));
    else {
      static_assert(std::is_constructible_v<L, const Config&>,
                    "DF_KERAS_REGISTER_LAYER(L) needs a static L::from_config(const Config&) or a constructor "
                    "L(const Config&)");
      return std::make_shared<L>(c);
    }
  };
}
}  // namespace detail

#define DF_KERAS_CONCAT_INNER_(a, b) a##b
#define DF_KERAS_CONCAT_(a, b) DF_KERAS_CONCAT_INNER_(a, b)
/// Registers layer class `L` under the name "L" (use at namespace scope, once per
/// program): L::from_config(config) or L(config) rebuilds it.
#define DF_KERAS_REGISTER_LAYER(L) DF_KERAS_REGISTER_LAYER_AS(#L, L)
/// The same under another class name (a namespaced class: DF_KERAS_REGISTER_LAYER_AS("Scale", my::Scale)).
#define DF_KERAS_REGISTER_LAYER_AS(class_name, L)                                         \
  [[maybe_unused]] static const bool DF_KERAS_CONCAT_(df_keras_registered_layer_, __LINE__) = \
      ::deepflow::keras::register_layer(class_name, ::deepflow::keras::detail::layer_factory<L>())

}  // namespace deepflow::keras
