// SPDX-License-Identifier: Apache-2.0
#include "deepflow/tf/tfjs_model.h"

#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "deepflow/core/error.h"
#include "deepflow/core/half.h"
#include "deepflow/tf/graph_eval.h"
#include "tensorflow/function.pb.h"
#include "tensorflow/graph.pb.h"
#include "tensorflow/node_def.pb.h"
#include "tensorflow/tensor.pb.h"

namespace deepflow::tf {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr const char* kWhere = "[tf::import_tfjs_model] ";

// One weightsManifest entry.
struct WeightSpec {
  std::string name, dtype;    // dtype: what the graph gets (the original dtype)
  std::vector<int64_t> dims;
  std::string stored;         // quantization dtype (uint8, uint16, float16), or "" when plain
  double min = 0, scale = 1;
  size_t group = 1;  // 1-based, as the shard files are named (group1-shard1of2.bin)
};

int tf_type_of(const std::string& dtype) {
  static const std::map<std::string, int> kTypes = {
      {"float32", 1}, {"int32", 3}, {"string", 7}, {"complex64", 8}, {"bool", 10}};
  auto it = kTypes.find(dtype);
  return it == kTypes.end() ? -1 : it->second;
}

WeightSpec parse_spec(const Json& w, size_t group, const std::string& source) {
  WeightSpec s;
  s.group = group;
  s.name = w.at("name").get<std::string>();
  const std::string what = source + ": weight '" + s.name + "'";
  s.dtype = w.at("dtype").get<std::string>();
  for (const Json& d : w.at("shape")) {
    const int64_t n = d.get<int64_t>();
    DF_CHECK(n >= 0, kWhere, what, ": shape has dim ", n);
    s.dims.push_back(n);
  }
  if (auto q = w.find("quantization"); q != w.end()) {
    s.stored = q->at("dtype").get<std::string>();
    if (auto o = q->find("original_dtype"); o != q->end()) s.dtype = o->get<std::string>();
    if (s.stored == "uint8" || s.stored == "uint16") {
      DF_CHECK(q->contains("min") && q->contains("scale"), kWhere, what, ": ", s.stored,
               " quantization needs min and scale");
      s.min = q->at("min").get<double>();
      s.scale = q->at("scale").get<double>();
      DF_CHECK(s.dtype == "float32" || s.dtype == "int32", kWhere, what, ": ", s.stored,
               " quantization of a ", s.dtype, " weight");
    } else {
      DF_CHECK(s.stored == "float16", kWhere, what, ": unknown quantization dtype '", s.stored,
               "' (uint8, uint16 or float16)");
      DF_CHECK(s.dtype == "float32", kWhere, what, ": float16 quantization of a ", s.dtype, " weight");
    }
  }
  const int t = tf_type_of(s.dtype);
  DF_CHECK(t >= 0, kWhere, what, ": unknown dtype '", s.dtype, "' (float32, int32, bool, string, complex64)");
  DF_CHECK(t != 8, kWhere, what, ": complex64 weights are not supported by deepflow");
  return s;
}

uint32_t read_le(const char* p, int bytes) {
  uint32_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint32_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

// Cuts weight `s` out of its group's bytes at `pos` (advanced past it) as a TensorProto.
tensorflow::TensorProto decode(const WeightSpec& s, std::string_view bytes, size_t& pos, const std::string& files,
                               const std::string& source) {
  const std::string what = source + ": weight '" + s.name + "'";
  const std::string stored = s.stored.empty() ? s.dtype : s.dtype + " as " + s.stored;
  const size_t left = bytes.size() - pos;
  // Every element takes at least one byte: a count past what is left is short data, and
  // checking it before multiplying on keeps the product from overflowing.
  size_t count = 1;
  for (int64_t d : s.dims) {
    if (d == 0) count = 0;
    if (count != 0) {
      DF_CHECK(size_t(d) <= left && count * size_t(d) <= left, kWhere, what, " (", stored, ", ",
               Shape(s.dims), ") runs past the end of weight group ", s.group, " (", bytes.size(), " bytes in ",
               files, "): a shard is missing or short");
      count *= size_t(d);
    }
  }
  tensorflow::TensorProto p;
  p.set_dtype(tensorflow::DataType(tf_type_of(s.dtype)));
  for (int64_t d : s.dims) p.mutable_tensor_shape()->add_dim()->set_size(d);
  auto need = [&](size_t n) {
    DF_CHECK(n <= bytes.size() - pos, kWhere, what, " (", stored, ", ", Shape(s.dims), ") needs ", n,
             " bytes at offset ", pos, " of weight group ", s.group, ", which has ", bytes.size(), " (", files,
             "): a shard is missing or short");
  };
  if (s.dtype == "string") {
    for (size_t i = 0; i < count; ++i) {
      need(4);
      const size_t n = read_le(bytes.data() + pos, 4);
      pos += 4;
      need(n);
      p.add_string_val(std::string(bytes.substr(pos, n)));
      pos += n;
    }
    return p;
  }
  const size_t width = s.stored.empty() ? (s.dtype == "bool" ? 1 : 4) : (s.stored == "uint8" ? 1 : 2);
  need(count * width);
  const char* q = bytes.data() + pos;
  pos += count * width;
  if (s.stored.empty()) {
    p.set_tensor_content(std::string(q, count * width));
    return p;
  }
  std::string content(count * 4, '\0');
  for (size_t i = 0; i < count; ++i) {
    const uint32_t raw = read_le(q + i * width, int(width));
    uint32_t out;
    if (s.stored == "float16") {
      const float f = Half::to_float(uint16_t(raw));
      std::memcpy(&out, &f, 4);
    } else if (s.dtype == "int32") {
      // TF.js's Math.round: halves go up (-0.5 -> 0, 2.5 -> 3).
      const double r = std::floor(double(raw) * s.scale + s.min + 0.5);
      DF_CHECK(r >= -2147483648.0 && r <= 2147483647.0, kWhere, what, ": dequantized value ", r,
               " is out of int32's range");
      const auto v = int32_t(r);
      std::memcpy(&out, &v, 4);
    } else {
      // In double, then rounded once, as the converter's own dequantize_weights does.
      const auto f = float(double(raw) * s.scale + s.min);
      std::memcpy(&out, &f, 4);
    }
    for (int b = 0; b < 4; ++b) content[i * 4 + size_t(b)] = char((out >> (8 * b)) & 0xff);
  }
  p.set_tensor_content(std::move(content));
  return p;
}

// Every weight of the manifest, by name.
std::map<std::string, tensorflow::TensorProto> read_weights(const Json& manifest, const std::string& source,
                                                            const TfjsFileReader& read_file) {
  std::map<std::string, tensorflow::TensorProto> out;
  DF_CHECK(manifest.is_array(), kWhere, source, ": weightsManifest must be a list of groups");
  for (size_t g = 0; g < manifest.size(); ++g) {
    const Json& group = manifest[g];
    std::string bytes, files;
    for (const Json& path : group.at("paths")) {
      const std::string file = path.get<std::string>();
      files += (files.empty() ? "" : ", ") + file;
      bytes += read_file(file);
    }
    size_t pos = 0;
    for (const Json& w : group.at("weights")) {
      WeightSpec s = parse_spec(w, g + 1, source);
      tensorflow::TensorProto p = decode(s, bytes, pos, files, source);
      DF_CHECK(out.emplace(s.name, std::move(p)).second, kWhere, source, ": weight '", s.name,
               "' is listed twice in weightsManifest");
    }
  }
  return out;
}

bool has_values(const tensorflow::TensorProto& t) {
  return !t.tensor_content().empty() || t.float_val_size() || t.double_val_size() || t.int_val_size() ||
         t.int64_val_size() || t.bool_val_size() || t.string_val_size() || t.half_val_size();
}

// Gives Const node `n` its weight (looked up as `name`), checking dtype and shape.
void fill_const(tensorflow::NodeDef& n, const std::string& name, std::map<std::string, tensorflow::TensorProto>& w,
                std::set<std::string>& used, const std::string& source) {
  auto it = w.find(name);
  tensorflow::TensorProto& value = *(*n.mutable_attr())["value"].mutable_tensor();
  if (it == w.end()) {
    bool no_elements = false;
    for (const auto& d : value.tensor_shape().dim()) no_elements |= d.size() == 0;
    DF_CHECK(has_values(value) || no_elements, kWhere, source, ": Const node '", name,
             "' has no value and no weight in weightsManifest");
    return;
  }
  const tensorflow::TensorProto& got = it->second;
  if (auto dt = n.attr().find("dtype"); dt != n.attr().end()) {
    DF_CHECK(dt->second.type() == got.dtype(), kWhere, source, ": weight '", name, "' is ",
             tensorflow::DataType_Name(got.dtype()), " but its Const node is ",
             tensorflow::DataType_Name(dt->second.type()));
  }
  if (value.has_tensor_shape() && value.tensor_shape().dim_size() > 0) {
    bool same = value.tensor_shape().dim_size() == got.tensor_shape().dim_size();
    for (int i = 0; same && i < got.tensor_shape().dim_size(); ++i) {
      same = value.tensor_shape().dim(i).size() == got.tensor_shape().dim(i).size();
    }
    DF_CHECK(same, kWhere, source, ": weight '", name, "' has shape ", got.tensor_shape().ShortDebugString(),
             " in weightsManifest but ", value.tensor_shape().ShortDebugString(), " in its Const node");
  }
  value = got;
  used.insert(name);
}

// The signature's names ("x:0") and keys, in the file's order.
void from_signature(const Json& sig, const char* side, std::vector<std::string>& names,
                    std::vector<std::string>& keys, const std::string& source) {
  if (!sig.contains(side)) return;
  for (const auto& [key, info] : sig.at(side).items()) {
    DF_CHECK(info.contains("name"), kWhere, source, ": signature ", side, " '", key, "' has no name");
    keys.push_back(key);
    names.push_back(info.at("name").get<std::string>());
  }
}

}  // namespace

GraphDefModel import_tfjs_model_from_bytes(std::string_view model_json, const std::string& source,
                                           const TfjsFileReader& read_file, std::vector<std::string> inputs,
                                           std::vector<std::string> outputs) {
  tensorflow::GraphDef graph;
  std::map<std::string, tensorflow::TensorProto> weights;
  std::vector<std::string> input_keys, output_keys;
  try {
    const Json model = Json::parse(model_json);
    DF_CHECK(model.is_object(), kWhere, source, ": not a TF.js model.json (not a JSON object)");
    const std::string format = model.value("format", std::string("graph-model"));
    DF_CHECK(format == "graph-model", kWhere, source, ": a TF.js '", format,
             "' (only graph models import: tensorflowjs_converter --output_format=tfjs_graph_model)");
    DF_CHECK(model.contains("modelTopology"), kWhere, source, ": no modelTopology");
    DF_CHECK(!model.contains("modelInitializer") || model.at("modelInitializer").value("node", Json::array()).empty(),
             kWhere, source, ": model initializers (lookup tables) are not supported");
    google::protobuf::util::JsonParseOptions o;
    o.ignore_unknown_fields = true;  // newer converters' extra fields carry no semantics we use
    auto status = google::protobuf::util::JsonStringToMessage(model.at("modelTopology").dump(), &graph, o);
    DF_CHECK(status.ok(), kWhere, source, ": modelTopology is not a GraphDef: ", status.ToString());
    weights = read_weights(model.value("weightsManifest", Json::array()), source, read_file);
    const Json* sig = model.contains("signature") ? &model.at("signature") : nullptr;
    if (!sig && model.contains("userDefinedMetadata") && model.at("userDefinedMetadata").contains("signature")) {
      sig = &model.at("userDefinedMetadata").at("signature");
    }
    if (sig && inputs.empty()) from_signature(*sig, "inputs", inputs, input_keys, source);
    if (sig && outputs.empty()) from_signature(*sig, "outputs", outputs, output_keys, source);
  } catch (const nlohmann::json::exception& e) {
    fail(kWhere, source, ": ", e.what());
  }
  std::set<std::string> used;
  for (auto& n : *graph.mutable_node()) {
    if (n.op() == "Const") fill_const(n, n.name(), weights, used, source);
  }
  for (auto& f : *graph.mutable_library()->mutable_function()) {
    const std::string prefix = f.signature().name() + "/";
    for (auto& n : *f.mutable_node_def()) {
      if (n.op() != "Const") continue;
      // The converter renames a function's Consts "<function>/<const>", in the body too.
      const bool prefixed = n.name().rfind(prefix, 0) != 0 && weights.count(prefix + n.name());
      fill_const(n, prefixed ? prefix + n.name() : n.name(), weights, used, source);
    }
  }
  for (const auto& [name, t] : weights) {
    DF_CHECK(used.count(name), kWhere, source, ": weight '", name, "' names no Const node of the graph");
  }
  GraphDefModel m = detail::import_graph_message(std::move(graph), source, std::move(inputs), std::move(outputs));
  m.input_keys = std::move(input_keys);
  m.output_keys = std::move(output_keys);
  return m;
}

GraphDefModel import_tfjs_model(const std::string& model_json_path, std::vector<std::string> inputs,
                                std::vector<std::string> outputs) {
  auto slurp = [](const fs::path& p, std::string& out) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return false;
    std::stringstream s;
    s << in.rdbuf();
    out = s.str();
    return true;
  };
  std::string text;
  DF_CHECK(slurp(model_json_path, text), kWhere, model_json_path, ": cannot open");
  const fs::path dir = fs::path(model_json_path).parent_path();
  const TfjsFileReader read = [&](const std::string& file) {
    std::string bytes;
    DF_CHECK(slurp(dir / file, bytes), kWhere, model_json_path, ": cannot read weight file ", (dir / file).string(),
             " (listed in weightsManifest)");
    return bytes;
  };
  return import_tfjs_model_from_bytes(text, model_json_path, read, std::move(inputs), std::move(outputs));
}

}  // namespace deepflow::tf
