// SPDX-License-Identifier: Apache-2.0
// Writing .keras files Keras 3 loads (keras_file.h).
#include <zip.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <map>
#include <memory>

#include "deepflow/core/error.h"
#include "deepflow/io/atomic_file.h"
#include "deepflow/io/keras_file.h"
#include "deepflow/io/keras_file_layout.h"
#include "deepflow/io/keras_h5.h"
#include "deepflow/keras/serialization.h"

namespace deepflow::keras {
namespace {

// The Keras release whose file layout and configs this writer was checked against (the
// tests load its files with it); Keras reads metadata.json for information only.
constexpr char kKerasVersion[] = "3.15.1";

bool is_model_class(const std::string& cls) { return cls == "Sequential" || cls == "Functional"; }

bool ends_with(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// Keras 3 finds a class through "module" (its deserializer imports it from there).
const char* module_of_field(const std::string& key) {
  if (ends_with(key, "_initializer")) return "keras.initializers";
  if (ends_with(key, "_regularizer")) return "keras.regularizers";
  if (ends_with(key, "_constraint")) return "keras.constraints";
  if (key == "layer" || key == "backward_layer" || key == "cell") return "keras.layers";
  return "keras";
}

Config wrap(const Config& obj, const char* module) {
  return Config{{"module", module},
                {"class_name", obj["class_name"]},
                {"config", obj.contains("config") ? obj["config"] : Config::object()},
                {"registered_name", nullptr}};
}

Config keras3_model(const Model& model, const Config& mc, const std::string& at);

// A layer config's nested objects (initializers, a wrapped layer and its own) wrapped.
Config wrap_fields(Config c) {
  for (auto& [key, value] : c.items())
    if (value.is_object() && value.contains("class_name") && value.contains("config")) {
      const char* module = module_of_field(key);
      if (std::string(module) == "keras.layers") value["config"] = wrap_fields(value["config"]);
      value = wrap(value, module);
    }
  return c;
}

// A layer entry of a model's "layers" list, its nested objects wrapped.
Config keras3_layer(const Model& parent, const Config& entry, const std::string& at) {
  const std::string cls = entry.value("class_name", "");
  Config out;
  if (serialization::is_keras_op_entry(entry)) {
    out = entry;  // an op (layers/keras_ops.h): module and registered_name are set, its config is only a name
  } else if (is_model_class(cls)) {
    const std::string name = entry.contains("name") ? entry["name"].get<std::string>()
                                                    : serialization::name_of(entry["config"]);
    auto child = std::dynamic_pointer_cast<Model>(parent.get_layer(name));
    DF_CHECK(child != nullptr, at, "layer '", name, "' is listed as a ", cls, " but is not a model");
    out = keras3_model(*child, entry, at);
  } else {
    const Config c = wrap_fields(entry.contains("config") ? entry["config"] : Config::object());
    out = Config{{"module", "keras.layers"}, {"class_name", cls}, {"config", c}, {"registered_name", nullptr}};
  }
  for (const char* key : {"name", "inbound_nodes"})
    if (entry.contains(key)) out[key] = entry[key];
  return out;
}

// A Sequential's or functional model's config in Keras 3's form; a functional model's
// layers listed in the order Keras will compute for them, which the weight groups follow.
Config keras3_model(const Model& model, const Config& mc, const std::string& at) {
  const std::string cls = mc.value("class_name", "");
  Config c = mc["config"];
  Config layers = Config::array();
  if (cls == "Functional") {
    std::map<std::string, Config> by_name;
    for (const Config& e : c["layers"]) {
      if (e.value("class_name", "") == "InputLayer") layers.push_back(keras3_layer(model, e, at));
      else by_name[e["name"].get<std::string>()] = e;
    }
    for (const LayerPtr& l : detail::keras_layer_order(model)) {
      auto it = by_name.find(l->name());
      DF_CHECK(it != by_name.end(), at, "layer '", l->name(), "' of model '", model.name(), "' is not in its config");
      layers.push_back(keras3_layer(model, it->second, at));
    }
  } else {
    for (const Config& e : c["layers"]) layers.push_back(keras3_layer(model, e, at));
  }
  c["layers"] = layers;
  if (cls == "Functional")
    return Config{{"module", "keras.src.models.functional"}, {"class_name", "Functional"}, {"config", c},
                  {"registered_name", "Functional"}, {"build_config", {{"input_shape", nullptr}}}};
  Config build = Config{{"input_shape", nullptr}};
  if (!model.inputs().empty()) {
    Config shape = Config::array({nullptr});
    const Shape& s = model.inputs()[0].shape();
    for (int i = 1; i < s.rank(); ++i) shape.push_back(s[i] < 0 ? Config(nullptr) : Config(s[i]));
    build["input_shape"] = shape;
  }
  return Config{{"module", "keras"}, {"class_name", cls}, {"config", c}, {"registered_name", nullptr},
                {"build_config", build}};
}

io::h5::Group ensure_group(const io::h5::Group& root, const std::string& path) {
  io::h5::Group g = root;
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(start, end - start);
    g = g.has_group(part) ? g.group(part) : g.create_group(part);
    start = end + 1;
  }
  return g;
}

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};

// The members, stored uncompressed as Keras writes them, into one in-memory archive.
std::string zip_members(const std::vector<std::pair<std::string, std::string>>& members, const std::string& at) {
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* out = zip_source_buffer_create(nullptr, 0, 0, &err);
  if (!out) fail(at, "cannot make the archive: ", zip_error_strerror(&err));
  zip_source_keep(out);  // read back after zip_close
  std::unique_ptr<zip_source_t, void (*)(zip_source_t*)> out_guard(out, zip_source_free);
  zip_t* z = zip_open_from_source(out, ZIP_TRUNCATE, &err);
  if (!z) fail(at, "cannot make the archive: ", zip_error_strerror(&err));
  std::unique_ptr<zip_t, ZipCloser> zip(z);
  for (const auto& [name, bytes] : members) {
    zip_source_t* s = zip_source_buffer(z, bytes.data(), bytes.size(), 0);  // `members` outlives zip_close
    const zip_int64_t index = s ? zip_file_add(z, name.c_str(), s, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE) : -1;
    if (index < 0) {
      if (s) zip_source_free(s);
      fail(at, "cannot add ", name, " to the archive: ", zip_strerror(z));
    }
    zip_set_file_compression(z, zip_uint64_t(index), ZIP_CM_STORE, 0);
  }
  if (zip_close(z) != 0) fail(at, "cannot write the archive: ", zip_strerror(z));
  (void)zip.release();  // closed
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_source_stat(out, &st) != 0 || zip_source_open(out) != 0) fail(at, "cannot read back the archive");
  std::string bytes(size_t(st.size), '\0');
  const zip_int64_t n = zip_source_read(out, bytes.data(), bytes.size());
  zip_source_close(out);
  if (n != zip_int64_t(bytes.size())) fail(at, "cannot read back the archive");
  return bytes;
}

std::string now_string() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d@%H:%M:%S", &tm);
  return buf;
}

void check_savable(const Model& model, const std::string& at) {
  DF_CHECK(is_model_class(model.class_name()), at, "model '", model.name(), "' is a ", model.class_name(),
           " model: a .keras file holds Sequential and functional models (a subclassed model's graph is C++ code; "
           "save it as a SavedModel directory instead)");
}

}  // namespace

std::string keras_weights_h5_bytes(const Model& model, const std::string& name) {
  const std::string at = "[keras.save_model] " + name + ": ";
  check_savable(model, at);
  std::vector<detail::VarGroup> groups;
  detail::var_groups(model, "", nullptr, groups, at);
  io::h5::File file = io::h5::File::create_in_memory({at, std::string("model.weights.h5")});
  const io::h5::Group root = file.root();
  for (const detail::VarGroup& g : groups) {
    const io::h5::Group vars = ensure_group(root, g.path);
    vars.write_string_attr("name", g.layer);
    for (size_t i = 0; i < g.vars.size(); ++i) vars.write_dataset(std::to_string(i), g.vars[i].value());
  }
  return file.image();
}

std::string keras_file_bytes(const Model& model, const std::string& name) {
  const std::string at = "[keras.save_model] " + name + ": ";
  check_savable(model, at);
  Config config;
  try {
    config = keras3_model(model, model_to_config(model), at);
  } catch (const nlohmann::json::exception& e) {
    fail(at, "cannot write the model config: ", e.what());
  }
  const Config metadata{{"keras_version", kKerasVersion}, {"date_saved", now_string()}, {"saved_by", "deepflow"}};
  return zip_members({{"metadata.json", metadata.dump()},
                      {"config.json", config.dump()},
                      {"model.weights.h5", keras_weights_h5_bytes(model, name)}},
                     at);
}

void save_keras_file(const Model& model, const std::string& path) {
  const std::string at = "[keras.save_model] " + path + ": ";
  DF_CHECK(path.size() >= 6 && path.compare(path.size() - 6, 6, ".keras") == 0, at,
           "deepflow writes Keras files in the .keras format only (not the legacy .h5); name the file *.keras");
  io::detail::write_file_atomic(path, keras_file_bytes(model, path), "[keras.save_model] ");
}

}  // namespace deepflow::keras
