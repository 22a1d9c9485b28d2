// SPDX-License-Identifier: Apache-2.0
// Reading and running a SavedModel. Nothing in saved_model.pb is trusted: dtypes, dims,
// names and references are checked before use, and every error names the file.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <set>

#include "deepflow/graph/graph_def.h"
#include "deepflow/graph/passes.h"
#include "deepflow/io/bundle.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/io/saved_model_formats.h"
#include "graph.pb.h"
#include "saved_model.pb.h"

namespace deepflow::io {
namespace {

namespace fs = std::filesystem;
namespace pb = deepflow::proto;

// Protobuf refuses messages over 2 GiB anyway; checking first avoids reading such a file.
constexpr uint64_t kMaxSavedModelBytes = uint64_t(2) << 30;

std::string pb_path(const std::string& dir) { return (fs::path(dir) / "saved_model.pb").string(); }

pb::SavedModel read_proto(const std::string& dir, const char* who) {
  const std::string path = pb_path(dir);
  struct stat st {};
  DF_CHECK(::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode), "[", who, "] ", dir,
           ": no such directory (not a SavedModel)");
  DF_CHECK(::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode), "[", who, "] ", path,
           ": missing (not a SavedModel directory)");
  DF_CHECK(uint64_t(st.st_size) <= kMaxSavedModelBytes, "[", who, "] ", path, ": ", st.st_size,
           " bytes is over the 2 GiB limit");
  std::ifstream in(path, std::ios::binary);
  DF_CHECK(in, "[", who, "] ", path, ": cannot open");
  std::string bytes(size_t(st.st_size), '\0');
  in.read(bytes.data(), std::streamsize(bytes.size()));
  DF_CHECK(in.gcount() == std::streamsize(bytes.size()), "[", who, "] ", path, ": short read");
  pb::SavedModel sm;
  DF_CHECK(sm.ParseFromString(bytes), "[", who, "] ", path, ": not a valid SavedModel (truncated or corrupt, ",
           bytes.size(), " bytes)");
  DF_CHECK(sm.saved_model_schema_version() >= 1, "[", who, "] ", path,
           ": missing schema version (truncated or not a deepflow SavedModel)");
  DF_CHECK(sm.saved_model_schema_version() <= kSavedModelSchemaVersion, "[", who, "] ", path, ": schema version ",
           sm.saved_model_schema_version(), " is newer than this reader's ", kSavedModelSchemaVersion);
  DF_CHECK(sm.meta_graphs_size() > 0, "[", who, "] ", path, ": no MetaGraph in the file");
  return sm;
}

DType dtype_of(int v, const std::string& where) {
  DF_CHECK(v >= 1 && v <= kNumDTypes, where, "invalid dtype ", v);
  return DType(v - 1);
}

Shape shape_of(const google::protobuf::RepeatedField<int64_t>& dims, bool allow_unknown, const std::string& where) {
  DF_CHECK(dims.size() <= kMaxRank, where, "rank ", dims.size(), " is above ", kMaxRank);
  Shape s;
  for (int64_t d : dims) {
    DF_CHECK(d >= (allow_unknown ? -1 : 0), where, "invalid dimension ", d);
    s.push_back(d);
  }
  return s;
}

TensorInfo tensor_info(const pb::TensorInfo& ti, const std::string& where) {
  DF_CHECK(!ti.tensor_shape().unknown_rank(), where, "unknown rank is not supported");
  google::protobuf::RepeatedField<int64_t> dims;
  for (const auto& d : ti.tensor_shape().dim()) dims.Add(d.size());
  return {ti.name(), {dtype_of(ti.dtype(), where), shape_of(dims, true, where)}};
}

MetaGraphInfo meta_graph_info(const pb::MetaGraphDef& mg, const std::string& path) {
  MetaGraphInfo info;
  info.tags.assign(mg.meta_info_def().tags().begin(), mg.meta_info_def().tags().end());
  for (const auto& [key, sd] : mg.signature_def()) {
    const std::string at = path + ": signature '" + key + "': ";
    SignatureInfo s;
    s.key = key;
    s.method_name = sd.method_name();
    s.function = sd.function();
    for (const auto& [k, ti] : sd.inputs()) s.inputs[k] = tensor_info(ti, at + "input '" + k + "': ");
    for (const auto& [k, ti] : sd.outputs()) s.outputs[k] = tensor_info(ti, at + "output '" + k + "': ");
    info.signatures[key] = std::move(s);
  }
  for (const pb::SavedVariable& v : mg.variables()) {
    const std::string at = path + ": variable '" + v.name() + "': ";
    info.variables.push_back(
        {v.name(), dtype_of(v.dtype(), at), shape_of(v.shape(), false, at), v.trainable(), v.checkpoint_key()});
  }
  for (const pb::AssetFileDef& a : mg.asset_file_def()) {
    const std::string& f = a.filename();
    DF_CHECK(!f.empty() && f != "." && f != ".." && f.find('/') == std::string::npos, path, ": asset name '", f,
             "' is not a plain file name");
    info.assets.push_back(f);
  }
  info.object_metadata = mg.object_metadata();
  return info;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::string describe(const std::map<std::string, TensorType>& m) {
  std::string out;
  for (const auto& [k, t] : m) out += (out.empty() ? "" : ", ") + k + ": " + dtype_name(t.dtype) + t.shape.to_string();
  return out.empty() ? "(none)" : out;
}

// Every variable a function (and the functions it uses) reads or writes must be saved.
void check_variable_refs(const pb::FunctionDef& f, const std::map<std::string, Variable>& vars,
                         const std::string& where) {
  for (const pb::NodeDef& n : f.node())
    for (const auto& [key, value] : n.attr())
      if (value.has_variable())
        DF_CHECK(vars.count(value.variable().name()), where, "node '", n.name(), "' uses variable '",
                 value.variable().name(), "', which is not among the saved variables");
}

// Variable::wrap adopts the tensor: a memory-mapped value stays in the page cache
// instead of being copied out of it.
Variable make_variable(const Tensor& value, const std::string& name, bool trainable) {
  return Variable::wrap(value, name, trainable);
}

}  // namespace

namespace {
// A graph ready to run: after the passes, with its executor.
struct Prepared {
  std::shared_ptr<Graph> run;
  std::optional<Executor> executor;
};
}  // namespace

struct LoadedSignature::Impl {
  SignatureInfo info;
  std::shared_ptr<Graph> saved;
  Prepared generic;  // the graph as saved (unknown dims resolved by each call), after the passes
  std::map<std::string, TensorType> inputs, outputs;  // the placeholders' and values' types
  std::string where;                                  // "[SavedModel] <dir>: signature 'k'"
  // GraphSignature::specialize and the graphs it made, by input shapes ("[1,224,224,3] ...").
  std::function<std::shared_ptr<const Graph>(const std::vector<TensorType>&)> specialize;
  LoadOptions options;
  mutable std::mutex mu;        // guards specialized
  mutable std::mutex build_mu;  // one specialization is built at a time
  mutable std::map<std::string, std::shared_ptr<const Prepared>> specialized;

  const Prepared* specialized_for(const TensorList& feeds) const;
};

struct SavedModel::State {
  std::string dir;
  MetaGraphInfo info;
  std::map<std::string, Variable> variables;
  std::map<std::string, LoadedSignature> signatures;
};

const std::string& LoadedSignature::key() const { return impl_->info.key; }
const std::string& LoadedSignature::method_name() const { return impl_->info.method_name; }
std::map<std::string, TensorType> LoadedSignature::inputs() const { return impl_->inputs; }
std::map<std::string, TensorType> LoadedSignature::outputs() const { return impl_->outputs; }
const SignatureInfo& LoadedSignature::info() const { return impl_->info; }
const Graph& LoadedSignature::graph() const { return *impl_->generic.run; }
const Graph& LoadedSignature::saved_graph() const { return *impl_->saved; }
size_t LoadedSignature::specialized_shapes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->specialized.size();
}

std::map<std::string, Tensor> LoadedSignature::operator()(const std::map<std::string, Tensor>& inputs) const {
  const Impl& s = *impl_;
  for (const auto& [k, t] : inputs)
    DF_CHECK(s.inputs.count(k), s.where, ": unknown input '", k, "'; expected inputs: ", describe(s.inputs));
  TensorList feeds;
  for (const auto& [k, type] : s.inputs) {
    auto it = inputs.find(k);
    DF_CHECK(it != inputs.end(), s.where, ": missing input '", k, "'; expected inputs: ", describe(s.inputs));
    const Tensor& t = it->second;
    DF_CHECK(t.defined() && !t.is_symbolic(), s.where, ": input '", k, "' has no value");
    DF_CHECK(t.dtype() == type.dtype && t.shape().compatible_with(type.shape), s.where, ": input '", k, "' is ",
             dtype_name(t.dtype()), t.shape().to_string(), "; expected inputs: ", describe(s.inputs));
    feeds.push_back(t);
  }
  const Prepared* p = s.specialized_for(feeds);
  TensorList outs = (p ? *p : s.generic).executor->run(feeds);
  std::map<std::string, Tensor> result;
  size_t i = 0;
  for (const auto& [k, type] : s.outputs) result[k] = outs.at(i++);
  return result;
}

const std::string& SavedModel::dir() const { return state_->dir; }
const std::vector<std::string>& SavedModel::tags() const { return state_->info.tags; }
std::vector<std::string> SavedModel::signature_keys() const {
  std::vector<std::string> keys;
  for (const auto& [k, s] : state_->signatures) keys.push_back(k);
  return keys;
}
bool SavedModel::has_signature(const std::string& key) const { return state_->signatures.count(key) > 0; }
const LoadedSignature& SavedModel::signature(const std::string& key) const {
  auto it = state_->signatures.find(key);
  if (it == state_->signatures.end()) {
    std::string avail;
    for (const auto& [k, s] : state_->signatures) avail += (avail.empty() ? "" : ", ") + k;
    fail("[SavedModel] ", state_->dir, ": no signature '", key, "'; available: ", avail.empty() ? "(none)" : avail);
  }
  return it->second;
}
const std::map<std::string, Variable>& SavedModel::variables() const { return state_->variables; }
const std::string& SavedModel::object_metadata() const { return state_->info.object_metadata; }
std::map<std::string, std::string> SavedModel::assets() const {
  std::map<std::string, std::string> out;
  for (const std::string& a : state_->info.assets) out[a] = (fs::path(state_->dir) / "assets" / a).string();
  return out;
}
const MetaGraphInfo& SavedModel::info() const { return state_->info; }

std::string tag_set_string(std::vector<std::string> tags) {
  std::sort(tags.begin(), tags.end());
  std::string out;
  for (const std::string& t : tags) out += (out.empty() ? "" : ", ") + t;
  return out;
}

std::vector<MetaGraphInfo> read_saved_model_info(const std::string& dir) {
  if (const SavedModelFormat* f = find_saved_model_format(dir)) return f->info(dir);
  const pb::SavedModel sm = read_proto(dir, "read_saved_model_info");
  std::vector<MetaGraphInfo> out;
  for (const pb::MetaGraphDef& mg : sm.meta_graphs()) out.push_back(meta_graph_info(mg, pb_path(dir)));
  return out;
}

bool is_saved_model_dir(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(pb_path(dir), ec);
}

namespace {

// The graph that runs (after the passes) and its executor.
Prepared prepare(const std::shared_ptr<Graph>& g, const LoadOptions& options) {
  Prepared p;
  p.run = options.optimize ? optimize(*g) : g;
  // As for a traced Function: stateful nodes no output needs (assigns) run on every call.
  std::vector<int> targets;
  for (int id = 0; id < p.run->num_nodes(); ++id) {
    const Node& n = p.run->node(id);
    if (n.def().stateful && n.op != OpId::Placeholder && n.op != OpId::ReadVariable) targets.push_back(id);
  }
  std::vector<ValueRef> feeds;
  for (int id : p.run->inputs) feeds.push_back({id, 0});
  p.executor.emplace(p.run, std::move(feeds), p.run->outputs, std::move(targets), options.executor);
  return p;
}


}  // namespace

const Prepared* LoadedSignature::Impl::specialized_for(const TensorList& feeds) const {
  if (!specialize) return nullptr;
  std::string key;
  bool fills_in = false;
  size_t i = 0;
  for (const auto& [k, type] : inputs) {
    const Shape& shape = feeds[i++].shape();
    fills_in = fills_in || !(type.shape == shape);
    key += shape.to_string() + " ";
  }
  if (!fills_in) return nullptr;  // the graph already has these shapes
  auto find = [&]() -> const Prepared* {
    std::lock_guard<std::mutex> lock(mu);
    auto it = specialized.find(key);
    return it == specialized.end() ? nullptr : it->second.get();
  };
  if (const Prepared* p = find()) return p;
  std::lock_guard<std::mutex> build(build_mu);
  if (const Prepared* p = find()) return p;  // built while this call waited
  {
    std::lock_guard<std::mutex> lock(mu);
    if (specialized.size() >= kMaxSpecializations) return nullptr;
  }
  std::vector<TensorType> types;
  for (const Tensor& t : feeds) types.push_back({t.dtype(), t.shape()});
  std::shared_ptr<const Graph> g = specialize(types);
  auto p = std::make_shared<const Prepared>(prepare(std::make_shared<Graph>(*g), options));
  std::lock_guard<std::mutex> lock(mu);
  return specialized.emplace(key, std::move(p)).first->second.get();
}

SavedModel make_saved_model(const std::string& dir, MetaGraphInfo info, std::map<std::string, Variable> variables,
                            const std::vector<GraphSignature>& signatures, const LoadOptions& options) {
  auto state = std::make_shared<SavedModel::State>();
  state->dir = dir;
  state->info = std::move(info);
  state->variables = std::move(variables);
  for (const GraphSignature& s : signatures) {
    auto impl = std::make_shared<LoadedSignature::Impl>();
    impl->info = s.info;
    impl->where = "[SavedModel] " + dir + ": signature '" + s.info.key + "'";
    impl->saved = std::make_shared<Graph>(*s.graph);
    DF_CHECK(s.graph->inputs.size() == s.info.inputs.size() && s.graph->outputs.size() == s.info.outputs.size(),
             impl->where, ": the graph has ", s.graph->inputs.size(), " inputs and ", s.graph->outputs.size(),
             " outputs for ", s.info.inputs.size(), " and ", s.info.outputs.size(), " keys");
    size_t i = 0;
    for (const auto& [k, ti] : s.info.inputs) impl->inputs[k] = s.graph->type({s.graph->inputs[i++], 0});
    i = 0;
    for (const auto& [k, ti] : s.info.outputs) impl->outputs[k] = s.graph->type(s.graph->outputs[i++]);
    impl->generic = prepare(std::make_shared<Graph>(*s.graph), options);
    if (options.specialize_shapes) impl->specialize = s.specialize;
    impl->options = options;
    state->signatures.emplace(s.info.key, LoadedSignature(std::move(impl)));
  }
  return SavedModel(std::move(state));
}

SavedModel load_saved_model(const std::string& dir, const std::vector<std::string>& tags, const LoadOptions& options) {
  if (const SavedModelFormat* f = find_saved_model_format(dir)) return f->load(dir, tags, options);
  const pb::SavedModel sm = read_proto(dir, "load_saved_model");
  const std::string path = pb_path(dir);
  const std::string at = "[load_saved_model] " + path + ": ";

  const pb::MetaGraphDef* mg = nullptr;
  std::string available;
  for (const pb::MetaGraphDef& m : sm.meta_graphs()) {
    std::vector<std::string> t(m.meta_info_def().tags().begin(), m.meta_info_def().tags().end());
    if (!mg && sorted(t) == sorted(tags)) mg = &m;
    available += (available.empty() ? "'" : ", '") + tag_set_string(t) + "'";
  }
  DF_CHECK(mg, at, "no MetaGraph with tag set '", tag_set_string(tags), "'; available tag sets: ", available);

  auto state = std::make_shared<SavedModel::State>();
  state->dir = dir;
  state->info = meta_graph_info(*mg, path);

  // Variables first: the graphs resolve their VariableRefs to these by name.
  if (!state->info.variables.empty()) {
    const std::string prefix = (fs::path(dir) / "variables" / "variables").string();
    try {
      BundleReader reader(prefix, {.mmap = options.mmap});
      for (const VariableInfo& v : state->info.variables) {
        const std::string vat = "[load_saved_model] " + prefix + ": variable '" + v.name + "': ";
        DF_CHECK(!state->variables.count(v.name), at, "variable '", v.name, "' is listed twice");
        DF_CHECK(reader.contains(v.checkpoint_key), vat, "key '", v.checkpoint_key, "' is missing from the bundle");
        const BundleEntry& e = reader.entry(v.checkpoint_key);
        DF_CHECK(e.dtype == v.dtype && e.shape == v.shape, vat, "the bundle holds ", dtype_name(e.dtype),
                 e.shape.to_string(), ", saved_model.pb says ", dtype_name(v.dtype), v.shape.to_string());
        state->variables[v.name] = make_variable(reader.read(v.checkpoint_key), v.name, v.trainable);
      }
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.rfind("[load_saved_model]", 0) == 0) throw;
      fail("[load_saved_model] ", dir, ": ", what);
    }
  }

  std::unordered_map<std::string, const pb::FunctionDef*> functions;
  for (const pb::FunctionDef& f : mg->graph_def().library()) functions[f.name()] = &f;
  ParseOptions parse;
  parse.variables.insert(state->variables.begin(), state->variables.end());
  parse.max_new_variable_bytes = 0;  // every variable must come from the bundle

  for (const auto& [key, sinfo] : state->info.signatures) {
    const std::string sat = at + "signature '" + key + "': ";
    auto fit = functions.find(sinfo.function);
    DF_CHECK(fit != functions.end(), sat, "function '", sinfo.function, "' is not in the library");
    const pb::FunctionDef& f = *fit->second;
    pb::GraphDef gd;
    gd.set_version(mg->graph_def().version());
    *gd.mutable_node() = f.node();
    *gd.mutable_inputs() = f.inputs();
    *gd.mutable_outputs() = f.outputs();
    check_variable_refs(f, state->variables, sat);
    const std::string nested = f.name() + "/";
    for (const pb::FunctionDef& other : mg->graph_def().library())
      if (other.name().compare(0, nested.size(), nested) == 0) {
        check_variable_refs(other, state->variables, sat + "function '" + other.name() + "': ");
        *gd.add_library() = other;
      }

    auto impl = std::make_shared<LoadedSignature::Impl>();
    impl->info = sinfo;
    impl->where = "[SavedModel] " + dir + ": signature '" + key + "'";
    try {
      impl->saved = graph_from_proto(gd, parse);
    } catch (const Error& e) {
      fail(sat, e.what());
    }
    // The feeds and fetches, in key order, become the graph's interface.
    auto g = std::make_shared<Graph>(*impl->saved);
    g->inputs.clear();
    g->outputs.clear();
    std::set<int> fed;
    for (const auto& [k, ti] : sinfo.inputs) {
      ValueRef v;
      try {
        v = g->value(ti.name);
      } catch (const Error& e) {
        fail(sat, "input '", k, "': ", e.what());
      }
      DF_CHECK(v.index == 0 && g->node(v.node).op == OpId::Placeholder, sat, "input '", k, "' names '", ti.name,
               "', which is not a placeholder");
      DF_CHECK(fed.insert(v.node).second, sat, "two inputs name '", ti.name, "'");
      g->inputs.push_back(v.node);
      impl->inputs[k] = g->type(v);
      DF_CHECK(ti.type.dtype == impl->inputs[k].dtype && ti.type.shape.compatible_with(impl->inputs[k].shape), sat,
               "input '", k, "' is described as ", dtype_name(ti.type.dtype), ti.type.shape.to_string(),
               " but its placeholder is ", dtype_name(impl->inputs[k].dtype), impl->inputs[k].shape.to_string());
    }
    for (int id : impl->saved->inputs)
      DF_CHECK(fed.count(id), sat, "function input '", impl->saved->node(id).name, "' is not a signature input");
    for (const auto& [k, ti] : sinfo.outputs) {
      try {
        g->outputs.push_back(g->value(ti.name));
      } catch (const Error& e) {
        fail(sat, "output '", k, "': ", e.what());
      }
      impl->outputs[k] = g->type(g->outputs.back());
      DF_CHECK(ti.type.dtype == impl->outputs[k].dtype, sat, "output '", k, "' is described as ",
               dtype_name(ti.type.dtype), " but its value is ", dtype_name(impl->outputs[k].dtype));
    }
    impl->generic = prepare(g, options);
    state->signatures.emplace(key, LoadedSignature(std::move(impl)));
  }
  return SavedModel(std::move(state));
}

}  // namespace deepflow::io
