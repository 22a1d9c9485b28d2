// SPDX-License-Identifier: Apache-2.0
// keras::save_model / load_model: a Keras model as a SavedModel plus its configs.
#include "deepflow/io/keras_saving.h"

#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "deepflow/core/error.h"
#include "deepflow/io/atomic_file.h"
#include "deepflow/io/bundle.h"
#include "deepflow/io/keras_file.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/keras/serialization.h"

namespace deepflow::keras {
namespace {

constexpr char kFormat[] = "deepflow.keras";
constexpr int kFormatVersion = 1;

// Keras's names for the serving signature's keys: the Input layers and the output layers
// of the model config. Empty when the config has none (subclassed: the SavedModel defaults).
struct SignatureNames {
  std::vector<std::string> inputs, outputs;
};

SignatureNames signature_names(const Config& model_config) {
  SignatureNames n;
  if (model_config.is_null()) return n;
  const Config& c = model_config["config"];
  if (model_config["class_name"] == "Functional") {
    for (const Config& h : c["input_layers"]) n.inputs.push_back(h[0].get<std::string>());
    for (const Config& h : c["output_layers"]) n.outputs.push_back(h[0].get<std::string>());
  } else if (model_config["class_name"] == "Sequential" && !c["layers"].empty()) {
    if (c["layers"][0]["class_name"] == "InputLayer") n.inputs.push_back(c["layers"][0]["config"]["name"]);
    n.outputs.push_back(c["layers"].back()["config"]["name"]);
  }
  // A layer with several outputs (or one listed twice) would give a key twice.
  const std::set<std::string> unique(n.outputs.begin(), n.outputs.end());
  if (unique.size() != n.outputs.size())
    for (size_t i = 0; i < n.outputs.size(); ++i) n.outputs[i] = "output_" + std::to_string(i);
  if (std::set<std::string>(n.inputs.begin(), n.inputs.end()).size() != n.inputs.size()) n.inputs.clear();
  return n;
}

Signature serving_signature(const Model& model, const SaveModelOptions& options, const std::string& dir) {
  if (options.input_signature) return *options.input_signature;
  Signature sig;
  if (!model.inputs().empty()) {
    for (const Tensor& t : model.inputs()) {
      Shape s = t.shape();
      if (s.rank() > 0) s[0] = -1;
      sig.push_back({t.dtype(), s});
    }
    return sig;
  }
  DF_CHECK(!model.input_shapes().empty(), "[keras.save_model] ", dir, ": model '", model.name(),
           "' has never been called, so its input signature is unknown: call it once, or set "
           "SaveModelOptions::input_signature");
  for (Shape s : model.input_shapes()) {
    if (s.rank() > 0) s[0] = -1;
    sig.push_back({DType::Float32, s});
  }
  return sig;
}

std::vector<std::string> names_of(const std::vector<Variable>& vars) {
  std::vector<std::string> out;
  for (const Variable& v : vars) out.push_back(v.name());
  return out;
}

// The SavedModel keys variables by name: two different variables with one name could
// not be told apart when loading.
void check_unique(const std::vector<Variable>& vars, const std::string& dir) {
  std::map<std::string, uint64_t> seen;
  for (const Variable& v : vars) {
    auto [it, fresh] = seen.emplace(v.name(), v.id());
    DF_CHECK(fresh || it->second == v.id(), "[keras.save_model] ", dir, ": two variables are named '", v.name(),
             "' (give the layers unique names)");
  }
}

// Assigns saved tensors to `targets` in order: saved_names[i] -> targets[i].
void restore(const std::vector<Variable>& targets, const Config& saved_names, const io::MetaGraphInfo& info,
             const io::BundleReader& bundle, const std::string& what, const std::string& dir) {
  const std::string at = "[keras.load_model] " + dir + ": ";
  DF_CHECK(saved_names.is_array() && saved_names.size() == targets.size(), at, "the rebuilt ", what, " has ",
           targets.size(), " variables, the file lists ", saved_names.is_array() ? saved_names.size() : 0);
  std::map<std::string, const io::VariableInfo*> by_name;
  for (const io::VariableInfo& v : info.variables) by_name[v.name] = &v;
  for (size_t i = 0; i < targets.size(); ++i) {
    const std::string name = saved_names[i].get<std::string>();
    auto it = by_name.find(name);
    DF_CHECK(it != by_name.end(), at, "variable '", name, "' of the ", what, " is not in the SavedModel");
    Tensor value = bundle.read(it->second->checkpoint_key);
    Variable target = targets[i];
    DF_CHECK(value.dtype() == target.dtype() && value.shape() == target.shape(), at, "variable '", name, "' is ",
             dtype_name(value.dtype()), value.shape(), " in the file but ", dtype_name(target.dtype()),
             target.shape(), " in the rebuilt ", what, " ('", target.name(), "')");
    target.assign(value);
  }
}

}  // namespace

void save_model(Model& model, const std::string& dir, const SaveModelOptions& options) {
  const std::string at = "[keras.save_model] " + dir + ": ";
  if (is_keras_file_path(dir)) {  // "x.keras": Keras 3's file, as Keras's model.save does
    DF_CHECK(options.overwrite || !io::detail::file_exists(dir), at, "the file exists and overwrite is false");
    save_keras_file(model, dir);
    return;
  }
  const Config model_config = is_config_model(model) ? model_to_config(model) : Config(nullptr);
  const std::vector<Variable> weights = model.weights();
  OptimizerPtr optimizer = model.optimizer();
  std::vector<Variable> opt_vars;
  if (options.include_optimizer && optimizer) opt_vars = optimizer->variables();
  std::vector<Variable> all = weights;
  all.insert(all.end(), opt_vars.begin(), opt_vars.end());
  check_unique(all, dir);

  Config meta{{"format", kFormat},
              {"format_version", kFormatVersion},
              {"class_name", model.class_name()},
              {"name", model.name()},
              {"model_config", model_config},
              {"compile_config", nullptr},
              {"weights", names_of(weights)},
              {"optimizer_variables", nullptr}};
  if (model.compile_options()) meta["compile_config"] = compile_config(*model.compile_options(), optimizer.get());
  if (options.include_optimizer && optimizer) meta["optimizer_variables"] = names_of(opt_vars);
  if (!options.extra_metadata.empty()) {
    Config extra;
    try {
      extra = Config::parse(options.extra_metadata);
    } catch (const nlohmann::json::exception& e) {
      fail(at, "extra_metadata is not JSON: ", e.what());
    }
    DF_CHECK(extra.is_object(), at, "extra_metadata must be a JSON object, got ", extra.dump());
    for (const auto& [k, v] : extra.items()) {
      DF_CHECK(!meta.contains(k), at, "extra_metadata may not replace '", k, "'");
      meta[k] = v;
    }
  }

  // The forward pass in inference mode, one trace for any batch size.
  const Signature sig = serving_signature(model, options, dir);
  Function serve = function([&model](const TensorList& xs) { return model(xs, false); },
                            FunctionOptions{.name = model.name(), .input_signature = sig});
  ConcreteFunction fn;
  try {
    fn = serve.get_concrete_function();
  } catch (const Error& e) {
    fail(at, "tracing the forward pass of '", model.name(), "' for ", signature_to_string(sig), " failed: ", e.what());
  }
  const SignatureNames names = signature_names(model_config);
  io::SignatureSpec spec{.key = io::kDefaultServingSignatureKey, .fn = fn};
  if (names.inputs.size() == sig.size()) spec.input_names = names.inputs;
  if (names.outputs.size() == fn.outputs().size()) spec.output_names = names.outputs;
  io::save_saved_model(dir, {spec},
                       io::SaveOptions{.object_metadata = meta.dump(), .extra_variables = all,
                                       .overwrite = options.overwrite, .format = options.format});
}

namespace {

// The serve MetaGraph's description and its Keras metadata, checked.
struct SavedKeras {
  io::MetaGraphInfo info;
  Config meta;
};

SavedKeras read_saved_keras(const std::string& dir) {
  const std::string at = "[keras.load_model] " + dir + ": ";
  const std::vector<io::MetaGraphInfo> infos = io::read_saved_model_info(dir);
  const io::MetaGraphInfo* info = nullptr;
  for (const io::MetaGraphInfo& mg : infos)
    if (io::tag_set_string(mg.tags) == io::kServeTag) info = &mg;
  DF_CHECK(info != nullptr, at, "no MetaGraph with the tag set 'serve'");
  Config meta;
  try {
    meta = Config::parse(info->object_metadata);
  } catch (const nlohmann::json::exception&) {
    meta = nullptr;
  }
  DF_CHECK(meta.is_object() && meta.value("format", "") == kFormat, at,
           "not a Keras model (its object_metadata has no deepflow.keras config); load it with io::load_saved_model");
  DF_CHECK(meta.value("format_version", 0) <= kFormatVersion, at, "Keras metadata version ",
           meta.value("format_version", 0), " is newer than this library reads (", kFormatVersion, ")");
  return {*info, std::move(meta)};
}

void restore_state(Model& model, const SavedKeras& saved, const std::string& dir, bool optimizer) {
  const Config& meta = saved.meta;
  io::BundleReader bundle(dir + "/variables/variables", io::BundleReadOptions{.mmap = false});
  restore(model.weights(), meta["weights"], saved.info, bundle, "model", dir);
  OptimizerPtr opt = model.optimizer();
  if (optimizer && opt && meta.contains("optimizer_variables") && !meta["optimizer_variables"].is_null()) {
    // A trained optimizer saved its slots too: they exist once it is built for the
    // trainable weights, in the order the saved one made them (fit builds it the same
    // way). One that never stepped saved only its iterations and learning rate.
    if (meta["optimizer_variables"].size() > opt->variables().size()) opt->build(model.trainable_weights());
    restore(opt->variables(), meta["optimizer_variables"], saved.info, bundle, "optimizer", dir);
  }
}

// Runs `body`, turning JSON errors and core errors into "[keras.load_model] <dir>: ...".
template <class F>
auto with_load_errors(const std::string& dir, F&& body) {
  const std::string at = "[keras.load_model] " + dir + ": ";
  try {
    return body();
  } catch (const nlohmann::json::exception& e) {
    fail(at, "bad Keras metadata: ", e.what());
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind("[keras.load_model]", 0) == 0) throw;
    fail(at, msg);
  }
}

}  // namespace

ModelPtr load_model(const std::string& dir, const LoadModelOptions& options) {
  const std::string at = "[keras.load_model] " + dir + ": ";
  if (is_keras_file_path(dir)) return load_keras_file(dir);
  const SavedKeras saved = read_saved_keras(dir);
  const Config& meta = saved.meta;
  DF_CHECK(!meta["model_config"].is_null(), at, "model '", meta.value("name", ""), "' is a subclassed model (class ",
           meta.value("class_name", "?"), "): its layer graph is C++ code, so it cannot be rebuilt without it. Load "
           "it with io::load_saved_model(dir) and call its 'serving_default' signature");
  return with_load_errors(dir, [&] {
    ModelPtr model = model_from_config(meta["model_config"]);
    const bool compile = options.compile && !meta["compile_config"].is_null();
    if (compile) model->compile(compile_options_from_config(meta["compile_config"]));
    restore_state(*model, saved, dir, compile);
    return model;
  });
}

std::string read_model_metadata(const std::string& dir) { return read_saved_keras(dir).meta.dump(); }

void restore_model_state(Model& model, const std::string& dir, bool optimizer) {
  const SavedKeras saved = read_saved_keras(dir);
  with_load_errors(dir, [&] {
    restore_state(model, saved, dir, optimizer);
    return 0;
  });
}

}  // namespace deepflow::keras
