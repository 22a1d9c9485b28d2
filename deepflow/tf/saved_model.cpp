// SPDX-License-Identifier: Apache-2.0
#include "deepflow/tf/saved_model.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "deepflow/core/error.h"
#include "deepflow/ops/op.h"
#include "deepflow/tf/checkpoint.h"
#include "deepflow/tf/graph_eval.h"
#include "deepflow/tf/op_importer.h"
#include "tensorflow/function.pb.h"
#include "tensorflow/meta_graph.pb.h"
#include "tensorflow/node_def.pb.h"
#include "tensorflow/saved_model.pb.h"

namespace deepflow::tf {

namespace fs = std::filesystem;

struct TfSignature::Impl {
  std::string key, method;
  std::map<std::string, TensorType> inputs, outputs;
  Function function;
  Function traced;  // the same traces, without the passes
};

struct TfSavedModel::State {
  std::string dir;
  std::vector<std::string> tags;
  std::string tf_version;
  tensorflow::SavedModel proto;  // owns the nodes the evaluator points into
  const tensorflow::MetaGraphDef* meta = nullptr;
  detail::ImportShared shared;
  std::map<std::string, TfSignature> signatures;
  std::map<std::string, std::unique_ptr<CheckpointReader>> readers;
};

namespace {

constexpr const char* kInitOpKey = "__saved_model_init_op";

std::string tags_string(std::vector<std::string> tags) {
  std::sort(tags.begin(), tags.end());
  std::string s;
  for (const auto& t : tags) s += (s.empty() ? "" : ", ") + t;
  return "{ " + s + " }";
}

tensorflow::SavedModel read_proto(const std::string& dir) {
  const fs::path pb = fs::path(dir) / "saved_model.pb";
  std::ifstream in(pb, std::ios::binary);
  DF_CHECK(in, "[tf::import] ", pb.string(), ": cannot open (no SavedModel here; a .pbtxt or chunked .cpb "
           "saved_model is not supported)");
  std::stringstream bytes;
  bytes << in.rdbuf();
  tensorflow::SavedModel m;
  DF_CHECK(m.ParseFromString(bytes.str()), "[tf::import] ", pb.string(), ": not a TensorFlow SavedModel (",
           bytes.str().size(), " bytes do not parse)");
  return m;
}

TensorType type_of(const tensorflow::TensorInfo& info, const std::string& where) {
  TensorType t;
  t.dtype = require_dtype(info.dtype());
  DF_CHECK(!info.tensor_shape().unknown_rank(), "[tf::import] ", where, ": an input of unknown rank is not supported");
  std::vector<int64_t> dims;
  for (const auto& d : info.tensor_shape().dim()) dims.push_back(d.size() < 0 ? -1 : d.size());
  t.shape = Shape(dims);
  return t;
}

bool is_assign(const std::string& op) {
  return op == "AssignVariableOp" || op == "AssignAddVariableOp" || op == "AssignSubVariableOp" ||
         op.rfind("ResourceApply", 0) == 0 || op.rfind("ResourceScatter", 0) == 0;
}

// True when what the fetches reach (top-level nodes, then the functions they call, through
// every function-valued attr) assigns a variable: such a signature keeps its variable reads.
bool assigns_variables(const tensorflow::MetaGraphDef& mg, const detail::ImportShared& shared,
                       const std::vector<std::string>& fetches) {
  std::map<std::string, const tensorflow::NodeDef*> nodes;
  for (const auto& n : mg.graph_def().node()) nodes[n.name()] = &n;
  std::vector<std::string> node_stack, fn_stack;
  std::set<std::string> seen_nodes, seen_fns;
  for (const std::string& f : fetches) node_stack.push_back(f.substr(0, f.find(':')));
  auto calls = [&](const tensorflow::NodeDef& n) {
    if (shared.functions.count(n.op())) fn_stack.push_back(n.op());
    for (const auto& [k, a] : n.attr()) {
      if (a.has_func()) fn_stack.push_back(a.func().name());
      for (const auto& f : a.list().func()) fn_stack.push_back(f.name());
    }
  };
  while (!node_stack.empty()) {
    std::string name = node_stack.back();
    node_stack.pop_back();
    if (!seen_nodes.insert(name).second || !nodes.count(name)) continue;
    const tensorflow::NodeDef& n = *nodes.at(name);
    if (is_assign(n.op())) return true;
    calls(n);
    for (const std::string& in : n.input()) {
      const std::string ref = in[0] == '^' ? in.substr(1) : in;
      node_stack.push_back(ref.substr(0, ref.find(':')));
    }
  }
  while (!fn_stack.empty()) {
    std::string name = fn_stack.back();
    fn_stack.pop_back();
    auto it = shared.functions.find(name);
    if (!seen_fns.insert(name).second || it == shared.functions.end()) continue;
    for (const auto& n : it->second->node_def()) {
      if (is_assign(n.op())) return true;
      calls(n);
    }
  }
  return false;
}

// The signature as a traced function over its inputs in key order.
TfSignature make_signature(const std::shared_ptr<TfSavedModel::State>& st, const std::string& key,
                           const tensorflow::SignatureDef& sig) {
  auto impl = std::make_shared<TfSignature::Impl>();
  impl->key = key;
  impl->method = sig.method_name();
  std::vector<std::string> feeds, fetches;
  for (const auto& [k, info] : std::map<std::string, tensorflow::TensorInfo>(sig.inputs().begin(), sig.inputs().end())) {
    DF_CHECK(!info.name().empty(), "[tf::import] ", st->dir, ": signature '", key, "' input '", k,
             "' is sparse or composite (not supported)");
    impl->inputs[k] = type_of(info, st->dir + ": signature '" + key + "' input '" + k + "'");
    feeds.push_back(info.name());
  }
  for (const auto& [k, info] : std::map<std::string, tensorflow::TensorInfo>(sig.outputs().begin(), sig.outputs().end())) {
    DF_CHECK(!info.name().empty(), "[tf::import] ", st->dir, ": signature '", key, "' output '", k,
             "' is sparse or composite (not supported)");
    TensorType t;
    t.dtype = require_dtype(info.dtype());
    impl->outputs[k] = t;
    fetches.push_back(info.name());
  }
  // Weak: the state owns the signatures (a copy of one outliving its model fails clearly).
  std::weak_ptr<TfSavedModel::State> weak = st;
  // Inference signatures read constants (the passes then fold batch norms into convolutions
  // and fuse biases); the variables stay available, and a later assign is not seen by them.
  const bool freeze = !assigns_variables(*st->meta, st->shared, fetches);
  FunctionOptions o;
  o.name = key;
  // One trace per input shape (the signature's own dims are checked on each call): kernels on
  // graphs with dims unknown until run time re-plan every call (ResNet50 at batch 1: 430 ms
  // against 58 ms with the batch known), so the batch stays known.
  o.generalize_shapes = false;
  auto trace = [weak, feeds, fetches, freeze](const TensorList& inputs) {
    std::shared_ptr<TfSavedModel::State> state = weak.lock();
    DF_CHECK(state, "[tf::run] the SavedModel of this signature has been released");
    std::map<std::string, Value> bound;
    for (size_t i = 0; i < feeds.size(); ++i) bound[feeds[i]] = inputs[i];
    detail::ImportShared shared = state->shared;  // this trace's copy, with its own freeze flag
    shared.freeze_variables = freeze;
    Values out = detail::evaluate_graph(shared, state->meta->graph_def(), bound, fetches);
    TensorList result;
    for (size_t i = 0; i < out.size(); ++i) {
      DF_CHECK(out[i].tensor.defined(), "[tf::import] ", state->dir, ": output '", fetches[i],
               "' is not a tensor");
      result.push_back(out[i].tensor);
    }
    return result;
  };
  impl->function = Function(trace, o);
  o.optimize = false;
  impl->traced = Function(trace, o);
  return TfSignature(impl);
}

void restore_variables(TfSavedModel::State& st) {
  const fs::path prefix = fs::path(st.dir) / "variables" / "variables";
  if (!fs::exists(prefix.string() + ".index")) return;
  const auto& saver = st.meta->saver_def();
  DF_CHECK(!saver.filename_tensor_name().empty() && !saver.restore_op_name().empty(), "[tf::import] ", st.dir,
           ": the SavedModel has variables but no saver (saver_def) to restore them");
  st.shared.restore = [&st](const std::string& p, const std::string& key) {
    auto& reader = st.readers[p];
    if (!reader) reader = std::make_unique<CheckpointReader>(p);
    return reader->read(key);
  };
  BuildScopeGuard eager(nullptr);
  detail::evaluate_graph(st.shared, st.meta->graph_def(),
                         {{saver.filename_tensor_name(), Value(string_scalar(prefix.string()))}},
                         {"^" + saver.restore_op_name()});
  st.readers.clear();  // the variables hold their values now
}

// The loader's init step, as TF's: the __saved_model_init_op signature's node (it fills
// lookup tables, from asset files whose paths are fed to their placeholders).
void run_init_op(TfSavedModel::State& st) {
  auto it = st.meta->signature_def().find(kInitOpKey);
  if (it == st.meta->signature_def().end() || it->second.outputs().empty()) return;
  const std::string node = it->second.outputs().begin()->second.name();
  std::map<std::string, Value> feeds;
  for (const auto& a : st.meta->asset_file_def()) {
    feeds[a.tensor_info().name()] = Value(string_scalar((fs::path(st.dir) / "assets" / a.filename()).string()));
  }
  BuildScopeGuard eager(nullptr);
  detail::evaluate_graph(st.shared, st.meta->graph_def(), feeds, {"^" + node.substr(0, node.find(':'))});
}

}  // namespace

bool is_tf_saved_model(const std::string& dir) {
  try {
    tensorflow::SavedModel m = read_proto(dir);
    for (const auto& mg : m.meta_graphs()) {
      if (mg.graph_def().node_size() > 0 || mg.graph_def().library().function_size() > 0) return true;
    }
  } catch (const Error&) {
  }
  return false;
}

TfSavedModel load_tf_saved_model(const std::string& dir, const std::vector<std::string>& tags) {
  auto st = std::make_shared<TfSavedModel::State>();
  st->dir = dir;
  st->proto = read_proto(dir);
  st->shared.source = (fs::path(dir) / "saved_model.pb").string();
  const std::set<std::string> want(tags.begin(), tags.end());
  std::string available;
  for (const auto& mg : st->proto.meta_graphs()) {
    std::vector<std::string> t(mg.meta_info_def().tags().begin(), mg.meta_info_def().tags().end());
    if (std::set<std::string>(t.begin(), t.end()) == want) {
      st->meta = &mg;
      st->tags = t;
    }
    available += (available.empty() ? "" : ", ") + tags_string(t);
  }
  DF_CHECK(st->meta, "[tf::import] ", dir, ": could not find a MetaGraph matching the tags ", tags_string(tags),
           "; available: ", available);
  st->tf_version = st->meta->meta_info_def().tensorflow_version();
  st->shared.add_library(st->meta->graph_def().library());
  restore_variables(*st);
  run_init_op(*st);
  for (const auto& [key, sig] : st->meta->signature_def()) {
    if (key == kInitOpKey) continue;
    st->signatures.emplace(key, make_signature(st, key, sig));
  }
  return TfSavedModel(st);
}

// --- accessors ---

const std::string& TfSignature::key() const { return impl_->key; }
const std::string& TfSignature::method_name() const { return impl_->method; }
const std::map<std::string, TensorType>& TfSignature::inputs() const { return impl_->inputs; }
const std::map<std::string, TensorType>& TfSignature::outputs() const { return impl_->outputs; }
const Function& TfSignature::function() const { return impl_->function; }
const Function& TfSignature::traced_function() const { return impl_->traced; }

std::map<std::string, Tensor> TfSignature::operator()(const std::map<std::string, Tensor>& inputs) const {
  std::string expected;
  for (const auto& [k, t] : impl_->inputs) expected += (expected.empty() ? "" : ", ") + k;
  TensorList in;
  for (const auto& [k, t] : impl_->inputs) {
    auto it = inputs.find(k);
    DF_CHECK(it != inputs.end(), "[tf::run] signature '", impl_->key, "': missing input '", k, "'; expected ",
             expected);
    const Tensor& x = it->second;
    DF_CHECK(x.dtype() == t.dtype && x.shape().compatible_with(t.shape), "[tf::run] signature '", impl_->key,
             "': input '", k, "' is ", dtype_name(x.dtype()), x.shape(), ", the signature takes ", dtype_name(t.dtype),
             t.shape);
    in.push_back(x);
  }
  for (const auto& [k, t] : inputs) {
    DF_CHECK(impl_->inputs.count(k), "[tf::run] signature '", impl_->key, "': unknown input '", k, "'; expected ",
             expected);
  }
  TensorList out = impl_->function(in);
  std::map<std::string, Tensor> result;
  size_t i = 0;
  for (const auto& [k, t] : impl_->outputs) result[k] = out.at(i++);
  return result;
}

const std::string& TfSavedModel::dir() const { return state_->dir; }
const std::vector<std::string>& TfSavedModel::tags() const { return state_->tags; }
const std::string& TfSavedModel::tensorflow_version() const { return state_->tf_version; }
const tensorflow::MetaGraphDef& TfSavedModel::meta_graph() const { return *state_->meta; }

std::vector<std::string> TfSavedModel::signature_keys() const {
  std::vector<std::string> keys;
  for (const auto& [k, s] : state_->signatures) keys.push_back(k);
  return keys;
}
bool TfSavedModel::has_signature(const std::string& key) const { return state_->signatures.count(key) > 0; }

const TfSignature& TfSavedModel::signature(const std::string& key) const {
  auto it = state_->signatures.find(key);
  if (it == state_->signatures.end()) {
    std::string keys;
    for (const auto& k : signature_keys()) keys += (keys.empty() ? "" : ", ") + k;
    fail("[tf::import] ", state_->dir, ": no signature '", key, "'; available: ", keys);
  }
  return it->second;
}

std::map<std::string, Variable> TfSavedModel::variables() const {
  std::map<std::string, Variable> out;
  for (const auto& [k, v] : state_->shared.variables) out.emplace(v->name(), *v);
  return out;
}

}  // namespace deepflow::tf
