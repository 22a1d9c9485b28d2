// SPDX-License-Identifier: Apache-2.0
// TensorFlow's SavedModels behind io::load_saved_model (io/saved_model_formats.h): the
// description `deepflow saved_model show` prints, and loading into an io::SavedModel whose
// signatures are the traced graphs of tf::load_tf_saved_model.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "deepflow/core/error.h"
#include "deepflow/io/saved_model_formats.h"
#include "deepflow/tf/op_importer.h"
#include "deepflow/tf/export.h"
#include "deepflow/tf/saved_model.h"
#include "tensorflow/meta_graph.pb.h"
#include "tensorflow/saved_model.pb.h"

namespace deepflow::tf {
namespace {

namespace fs = std::filesystem;

io::TensorInfo tensor_info(const tensorflow::TensorInfo& t) {
  io::TensorInfo out;
  out.name = t.name();
  try {
    out.type.dtype = require_dtype(t.dtype());
  } catch (const Error&) {
    out.type.dtype = DType::Float32;  // shown as described; loading names the dtype
  }
  std::vector<int64_t> dims;
  for (const auto& d : t.tensor_shape().dim()) dims.push_back(d.size() < 0 ? -1 : d.size());
  out.type.shape = Shape(dims);
  return out;
}

io::MetaGraphInfo info_of(const tensorflow::MetaGraphDef& mg) {
  io::MetaGraphInfo info;
  info.tags.assign(mg.meta_info_def().tags().begin(), mg.meta_info_def().tags().end());
  for (const auto& [key, sig] : mg.signature_def()) {
    if (key == "__saved_model_init_op") continue;
    io::SignatureInfo s;
    s.key = key;
    s.method_name = sig.method_name();
    for (const auto& [k, t] : sig.inputs()) s.inputs[k] = tensor_info(t);
    for (const auto& [k, t] : sig.outputs()) s.outputs[k] = tensor_info(t);
    info.signatures[key] = s;
  }
  for (const auto& a : mg.asset_file_def()) info.assets.push_back(a.filename());
  return info;
}

std::vector<io::MetaGraphInfo> tf_info(const std::string& dir) {
  std::ifstream in(fs::path(dir) / "saved_model.pb", std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  tensorflow::SavedModel m;
  DF_CHECK(m.ParseFromString(bytes.str()), "[tf::import] ", dir, "/saved_model.pb: does not parse");
  std::vector<io::MetaGraphInfo> out;
  for (const auto& mg : m.meta_graphs()) out.push_back(info_of(mg));
  return out;
}

io::SavedModel tf_load(const std::string& dir, const std::vector<std::string>& tags, const io::LoadOptions& options) {
  TfSavedModel m = load_tf_saved_model(dir, tags);
  io::MetaGraphInfo info = info_of(m.meta_graph());
  std::vector<io::GraphSignature> sigs;
  for (const std::string& key : m.signature_keys()) {
    const TfSignature& s = m.signature(key);
    Signature in;
    for (const auto& [k, t] : s.inputs()) in.push_back(t);
    ConcreteFunction f = s.traced_function().get_concrete_function(in);
    io::GraphSignature g;
    g.info = info.signatures.at(key);
    g.graph = f.graph_ptr();
    // The traces read the model's state (its functions, tables), so they keep it alive.
    g.specialize = [m, key](const std::vector<TensorType>& types) {
      return m.signature(key).traced_function().get_concrete_function(types).graph_ptr();
    };
    sigs.push_back(std::move(g));
  }
  for (const auto& [name, v] : m.variables()) {
    io::VariableInfo vi;
    vi.name = name;
    vi.dtype = v.value().dtype();
    vi.shape = v.value().shape();
    info.variables.push_back(vi);
  }
  return io::make_saved_model(dir, std::move(info), m.variables(), sigs, options);
}

}  // namespace

void register_tf_saved_model_format() {
  io::register_saved_model_format(
      {.name = "TensorFlow", .accepts = is_tf_saved_model, .info = tf_info, .load = tf_load, .save = save_tf_saved_model});
}

}  // namespace deepflow::tf
