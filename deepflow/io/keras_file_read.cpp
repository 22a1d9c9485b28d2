// SPDX-License-Identifier: Apache-2.0
// Reading Keras model files (keras_file.h): the .keras zip and legacy tf-keras .h5.
#include <zip.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "deepflow/core/error.h"
#include "deepflow/io/atomic_file.h"
#include "deepflow/io/keras_file.h"
#include "deepflow/io/keras_file_layout.h"
#include "deepflow/io/keras_h5.h"
#include "deepflow/keras/layers/keras_ops.h"
#include "deepflow/keras/serialization.h"

namespace deepflow::keras {
namespace {

constexpr char kWeightsMember[] = "model.weights.h5";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && std::equal(suffix.rbegin(), suffix.rend(), s.rbegin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

// --- the zip container ---

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

ZipPtr open_zip(std::string_view bytes, const std::string& at) {
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &err);
  if (!src) fail(at, "cannot read the archive: ", zip_error_strerror(&err));
  zip_t* z = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!z) {
    zip_source_free(src);
    const std::string why = zip_error_strerror(&err);
    zip_error_fini(&err);
    fail(at, "not a readable zip archive (", why, ")");
  }
  zip_error_fini(&err);
  return ZipPtr(z);
}

// A member's bytes, nullopt when absent. The declared size is bounded by the archive's
// (Keras's own guard against decompression bombs allows 100x), and the whole member is
// read so that libzip checks its CRC.
std::optional<std::string> read_member(zip_t* z, const char* name, size_t archive_size, const std::string& at) {
  const zip_int64_t index = zip_name_locate(z, name, 0);
  if (index < 0) return std::nullopt;
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(z, zip_uint64_t(index), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
    fail(at, "cannot read the size of member ", name, ": ", zip_strerror(z));
  const uint64_t limit = 100 * uint64_t(archive_size) + (uint64_t(1) << 20);
  if (st.size > limit) fail(at, "member ", name, " claims ", st.size, " bytes, too many for a ", archive_size, "-byte archive");
  zip_file_t* f = zip_fopen_index(z, zip_uint64_t(index), 0);
  if (!f) fail(at, "cannot open member ", name, ": ", zip_strerror(z));
  std::string out(size_t(st.size), '\0');
  size_t got = 0;
  std::string error;
  while (error.empty()) {
    char probe;
    char* dst = got < out.size() ? out.data() + got : &probe;
    const zip_int64_t n = zip_fread(f, dst, got < out.size() ? out.size() - got : 1);
    if (n < 0) error = zip_file_strerror(f);
    else if (n == 0) break;
    else if (got >= out.size()) error = "more data than its declared size";
    else got += size_t(n);
  }
  const int closed = zip_fclose(f);
  if (error.empty() && got != out.size()) error = "it ends after " + std::to_string(got) + " of " + std::to_string(out.size()) + " bytes";
  if (error.empty() && closed != 0) error = zip_error_strerror(zip_get_error(z));
  if (!error.empty()) fail(at, "cannot read member ", name, ": ", error);
  return out;
}

Config parse_json(const std::string& text, const std::string& what, const std::string& at) {
  try {
    return Config::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(at, what, " is not valid JSON: ", e.what());
  }
}

// --- the model ---

// Every layer (nested models included) of a class that is not registered, named with its
// layer, so that one message lists all that is missing.
void missing_classes(const Config& entry, std::vector<std::string>& out) {
  if (!entry.is_object() || !entry.contains("class_name") || !entry["class_name"].is_string()) return;
  const std::string cls = entry["class_name"].get<std::string>();
  const Config* c = entry.contains("config") && entry["config"].is_object() ? &entry["config"] : nullptr;
  const bool op = serialization::is_keras_op_entry(entry);
  if (op ? !layers::is_keras_op_class(cls) : !is_layer_registered(cls) && cls != "Model") {
    std::string name = entry.contains("name") && entry["name"].is_string() ? entry["name"].get<std::string>() : "";
    if (name.empty() && c) name = serialization::name_of(*c);
    out.push_back("'" + name + "' (class " + cls + ")");
  }
  if (c && c->contains("layers") && (*c)["layers"].is_array())
    for (const Config& child : (*c)["layers"]) missing_classes(child, out);
  if (c && c->contains("layer")) missing_classes((*c)["layer"], out);  // wrappers (Bidirectional)
}

ModelPtr build_model(const Config& config, const std::string& at) {
  DF_CHECK(config.is_object() && config.contains("class_name"), at, "the model config is not a {\"class_name\", "
           "\"config\"} object");
  std::vector<std::string> missing;
  missing_classes(config, missing);
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    fail(at, "[keras.layers.deserialize] deepflow has no layer class (or Keras op) for ", list,
         "; register one with keras::register_layer or DF_KERAS_REGISTER_LAYER (deepflow/keras/serialization.h)");
  }
  ModelPtr model = model_from_config(config);
  // A Sequential written without an InputLayer is built from its build_config.
  if (!model->built() && config.contains("build_config") && config["build_config"].is_object()) {
    const Config& shape = config["build_config"].value("input_shape", Config());
    if (shape.is_array()) {
      std::vector<int64_t> dims;
      for (const Config& d : shape) dims.push_back(d.is_null() ? -1 : d.get<int64_t>());
      model->build(Shape(dims));
    }
  }
  return model;
}

// Checks a dataset against the weight it is for; the message names both.
void check_dataset(const io::h5::Dataset& d, const Variable& target, const std::string& layer, size_t index,
                   const std::string& at) {
  const Shape shape = d.shape();
  const DType dtype = d.dtype();
  DF_CHECK(shape == target.shape() && dtype == target.dtype(), at, "layer '", layer, "' weight ", index, " ('",
           target.name(), "'): '", d.path(), "' is ", dtype_name(dtype), shape, " in the file, the rebuilt layer's is ",
           dtype_name(target.dtype()), target.shape());
}

void assign_all(const std::vector<std::pair<Variable, Tensor>>& values) {
  for (const auto& [var, value] : values) {
    Variable v = var;
    v.assign(value);
  }
}

// Keras 3's model.weights.h5: one group of datasets "0".."n-1" per layer (keras_file_layout.h).
void load_keras3_weights(Model& model, const Config& config, const io::h5::File& file, const std::string& at) {
  io::h5::Group root = file.root();
  std::vector<detail::VarGroup> groups;
  detail::var_groups(model, "", &config, groups, at);
  // Files of Keras 2.13 named the layers list "_layer_checkpoint_dependencies".
  const bool old_names = !root.has_group("layers") && root.has_group("_layer_checkpoint_dependencies");
  std::vector<std::pair<Variable, Tensor>> values;
  for (const detail::VarGroup& g : groups) {
    std::string path = g.path;
    if (old_names)
      for (size_t p = path.find("layers"); p != std::string::npos; p = path.find("layers", p + 30))
        if (p == 0 || path[p - 1] == '/') path.replace(p, 6, "_layer_checkpoint_dependencies");
    if (!root.has_group(path) && path.size() > 5) {
      // Older Keras releases saved some sublayers under their private names ("_key_dense").
      const size_t slash = path.rfind('/', path.size() - 6);
      std::string alt = path;
      alt.insert(slash == std::string::npos ? 0 : slash + 1, "_");
      if (root.has_group(alt)) path = alt;
    }
    if (!root.has_group(path)) {
      DF_CHECK(g.vars.empty(), at, "layer '", g.layer, "' has ", g.vars.size(), " weights but ", kWeightsMember,
               " has no group '", path, "'");
      continue;
    }
    io::h5::Group vars = root.group(path);
    const std::vector<std::string> members = vars.members();
    DF_CHECK(members.size() == g.vars.size(), at, "layer '", g.layer, "': '", path, "' holds ", members.size(),
             " variables, the rebuilt layer has ", g.vars.size());
    for (size_t i = 0; i < g.vars.size(); ++i) {
      DF_CHECK(vars.has(std::to_string(i)), at, "layer '", g.layer, "': '", path, "' has no variable ", i);
      io::h5::Dataset d = vars.dataset(std::to_string(i));
      check_dataset(d, g.vars[i], g.layer, i, at);
      values.push_back({g.vars[i], d.read()});
    }
  }
  assign_all(values);
}

// tf-keras's .h5: model_weights/<layer>/<weight name> in the order of weight_names.
void load_legacy_weights(Model& model, const io::h5::Group& root, const std::string& at) {
  const io::h5::Group mw = root.has_group("model_weights") ? root.group("model_weights") : root;
  const auto layer_names = mw.string_attr("layer_names");
  DF_CHECK(layer_names.has_value(), at, "'", mw.path(), "' has no layer_names attribute");
  std::set<std::string> loaded;
  std::vector<std::pair<Variable, Tensor>> values;
  for (const std::string& lname : *layer_names) {
    DF_CHECK(mw.has_group(lname), at, "layer_names lists '", lname, "', which has no group in '", mw.path(), "'");
    const io::h5::Group g = mw.group(lname);
    const auto weight_names = g.string_attr("weight_names");
    DF_CHECK(weight_names.has_value(), at, "group '", g.path(), "' has no weight_names attribute");
    if (weight_names->empty()) continue;
    LayerPtr layer;
    for (const LayerPtr& l : model.model_layers())
      if (l->name() == lname) layer = l;
    DF_CHECK(layer != nullptr, at, "the file has weights for layer '", lname, "', which the model config lacks");
    const std::vector<Variable> vars = layer->weights();
    DF_CHECK(vars.size() == weight_names->size(), at, "layer '", lname, "' has ", vars.size(),
             " weights in deepflow but ", weight_names->size(), " in the file");
    for (size_t i = 0; i < vars.size(); ++i) {
      DF_CHECK(g.has((*weight_names)[i]), at, "layer '", lname, "': weight '", (*weight_names)[i],
               "' is listed but not stored");
      io::h5::Dataset d = g.dataset((*weight_names)[i]);
      check_dataset(d, vars[i], lname, i, at);
      values.push_back({vars[i], d.read()});
    }
    loaded.insert(lname);
  }
  for (const LayerPtr& l : model.model_layers())
    DF_CHECK(l->weights().empty() || loaded.count(l->name()), at, "layer '", l->name(), "' has ", l->weights().size(),
             " weights, but the file stores none for it");
  assign_all(values);
}

// A Keras file taken apart: its model config and where its weights are.
struct KerasFileParts {
  Config config;
  std::optional<io::h5::File> keras3_weights;  // model.weights.h5 of a .keras zip
  std::optional<io::h5::File> legacy;         // a tf-keras .h5 file
};

KerasFileParts parse_keras_zip(std::string_view bytes, const std::string& name, const std::string& at) {
  ZipPtr zip = open_zip(bytes, at);
  const auto config_text = read_member(zip.get(), "config.json", bytes.size(), at);
  DF_CHECK(config_text.has_value(), at, "the archive has no config.json: not a .keras file");
  if (const auto meta = read_member(zip.get(), "metadata.json", bytes.size(), at))
    DF_CHECK(parse_json(*meta, "metadata.json", at).is_object(), at, "metadata.json is not a JSON object");
  KerasFileParts parts;
  parts.config = parse_json(*config_text, "config.json", at);
  // Opened before any layer is built: a damaged member fails fast.
  if (const auto h5 = read_member(zip.get(), kWeightsMember, bytes.size(), at))
    parts.keras3_weights.emplace(io::h5::File::open_image(*h5, {at, std::string(kWeightsMember) + " (in " + name + ")"}));
  return parts;
}

KerasFileParts parse_legacy_h5(std::string_view bytes, const std::string& name, const std::string& at) {
  KerasFileParts parts;
  parts.legacy.emplace(io::h5::File::open_image(bytes, {at, name}));
  const auto model_config = parts.legacy->root().string_attr1("model_config");
  DF_CHECK(model_config.has_value(), at, "the HDF5 file has no model_config attribute: it holds weights only "
           "(model.save_weights); build the model and load them with Model::load_weights");
  parts.config = parse_json(*model_config, "the model_config attribute", at);
  return parts;
}

void restore_weights(Model& model, const KerasFileParts& parts, const std::string& name, const std::string& at) {
  if (parts.legacy) load_legacy_weights(model, parts.legacy->root(), at);
  else if (parts.keras3_weights) load_keras3_weights(model, parts.config, *parts.keras3_weights, at);
  else DF_CHECK(model.weights().empty(), at, "the archive has no ", kWeightsMember, " but the model has weights");
}

// Runs `body` on the file's parts, every failure an error starting "[keras.load_model] <name>: ".
template <class F>
auto with_parts(std::string_view bytes, const std::string& name, F&& body) {
  const std::string at = "[keras.load_model] " + name + ": ";
  try {
    if (bytes.substr(0, 2) == "PK") return body(parse_keras_zip(bytes, name, at), at);
    if (io::h5::is_hdf5(bytes)) return body(parse_legacy_h5(bytes, name, at), at);
  } catch (const nlohmann::json::exception& e) {
    fail(at, "bad model config: ", e.what());
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind("[keras.load_model]", 0) == 0) throw;
    fail(at, msg);
  }
  fail(at, "neither a .keras zip archive nor an HDF5 (.h5) file (", bytes.size(), " bytes)");
}

}  // namespace

bool is_keras_file_path(const std::string& path) {
  return ends_with(path, ".keras") || ends_with(path, ".h5") || ends_with(path, ".hdf5");
}

ModelPtr load_keras_file_from_memory(std::string_view bytes, const std::string& name) {
  return with_parts(bytes, name, [&](const KerasFileParts& parts, const std::string& at) {
    ModelPtr model = build_model(parts.config, at);
    restore_weights(*model, parts, name, at);
    return model;
  });
}

ModelPtr load_keras_file(const std::string& path) {
  const std::string bytes = io::detail::read_file(path, "[keras.load_model] ");
  return load_keras_file_from_memory(bytes, path);
}

std::string read_keras_file_config(const std::string& path) {
  const std::string bytes = io::detail::read_file(path, "[keras.load_model] ");
  return with_parts(bytes, path, [](const KerasFileParts& parts, const std::string&) { return parts.config.dump(); });
}

void restore_keras_file_weights(Model& model, const std::string& path) {
  const std::string bytes = io::detail::read_file(path, "[keras.load_model] ");
  with_parts(bytes, path, [&](const KerasFileParts& parts, const std::string& at) {
    restore_weights(model, parts, path, at);
    return 0;
  });
}

}  // namespace deepflow::keras
