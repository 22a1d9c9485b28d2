// SPDX-License-Identifier: Apache-2.0
// SavedModel: traced functions, their signatures and the variables they use, in
// TensorFlow's directory layout, loadable and runnable without the model's code.
//
//   Variable w(random_normal({3, 1}), "dense/kernel");
//   Function f = function([&](const Tensor& x) { return matmul(x, w.value()); },
//                         {.input_signature = Signature{{DType::Float32, {-1, 3}}}});
//   io::save_saved_model("/models/m/1", {{.fn = f.get_concrete_function(), .input_names = {"x"}}});
//
//   // later, in any process (only deepflow_io linked, not the code above):
//   io::SavedModel m = io::load_saved_model("/models/m/1");
//   auto out = m.signature("serving_default")({{"x", batch}});
//   Tensor y = out.at("output_0");
//
// On disk (docs/saved_model.md):
//
//   <dir>/saved_model.pb                       proto/saved_model.proto
//   <dir>/variables/variables.index            tensor bundle (deepflow/io/bundle.h),
//   <dir>/variables/variables.data-00000-of-00001   one tensor per variable
//   <dir>/assets/                              files copied from SaveOptions::assets
//   <dir>/assets.extra/                        created empty; deepflow ignores it
//
// Each signature's function is stored as the graph it was traced to (ConcreteFunction::
// graph(), not the optimized one: the loader runs the passes again). Variables are
// referred to by name; at load time each becomes a Variable whose value comes from the
// bundle, memory-mapped by default (the tensor bytes are 64-byte aligned in the data
// file). The Variable adopts the mapped tensor when the core offers Variable::wrap, so
// loading a large model reads only the index and maps the data; otherwise it copies it.
//
// Saving is atomic at the directory level: everything is written into a sibling
// "<dir>.tmp-XXXXXX", fsynced, then renamed to <dir>. <dir> must not exist or be an empty
// directory, unless SaveOptions::overwrite (then the old directory is swapped out
// atomically and removed). A crash leaves <dir> as it was plus, at worst, a stale
// "<dir>.tmp-*" directory.
//
// Every error is a deepflow::Error naming the file: a missing directory or file, a tag
// set that is not there (the available ones are listed), a corrupt or newer-version
// saved_model.pb, a variable missing from the bundle or disagreeing with its dtype or
// shape, a corrupt bundle.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "deepflow/function/function.h"
#include "deepflow/ops/variable.h"

namespace deepflow::io {

/// The saved_model.pb schema version this library writes and reads.
inline constexpr int64_t kSavedModelSchemaVersion = 1;
inline constexpr char kDefaultServingSignatureKey[] = "serving_default";
inline constexpr char kPredictMethodName[] = "tensorflow/serving/predict";
inline constexpr char kServeTag[] = "serve";

// --- saving ---

/// One signature to save: a traced function and the keys of its inputs and outputs.
struct SignatureSpec {
  std::string key = kDefaultServingSignatureKey;
  ConcreteFunction fn;
  /// One key per function input; empty: the traced placeholder names ("input",
  /// "input_0", "input_1", ...).
  std::vector<std::string> input_names;
  /// One key per function output; empty: "output_0", "output_1", ... (TF2's names).
  std::vector<std::string> output_names;
  std::string method_name = kPredictMethodName;
};

struct SaveOptions {
  /// The tag set of the saved MetaGraph.
  std::vector<std::string> tags = {kServeTag};
  /// (name, source file): each file is copied to assets/<name> (name: a plain file name).
  std::vector<std::pair<std::string, std::string>> assets;
  /// Free-form bytes stored with the model (Keras writes its model config here).
  std::string object_metadata;
  /// Saved with the variables the functions use (optimizer slots, counters, ...), loaded
  /// by name like them. Variables are saved under their names; when distinct variables
  /// share one, later ones get "_1", "_2", ... (the functions' variables come first, in
  /// signature order, then these).
  std::vector<Variable> extra_variables;
  /// When set, replaces object_metadata with what it returns, given the name each of
  /// extra_variables is saved under (metadata that refers to variables by name).
  std::function<std::string(const std::vector<std::string>& extra_names)> object_metadata_from_names;
  /// Replace an existing non-empty directory (atomically) instead of failing.
  bool overwrite = false;
  /// "" (the default): deepflow's own format, which io::load_saved_model reads back with
  /// every feature above. Otherwise the name of a registered format that can write
  /// (saved_model_formats.h): "TensorFlow" (deepflow_tf's register_tf_saved_model_format)
  /// writes TensorFlow's own SavedModel, which tf.saved_model.load and TF Serving load
  /// (tf/export.h; it keeps no assets or object_metadata).
  std::string format;
};

/// Writes a SavedModel to `dir` (see the file comment). Signature keys are unique;
/// every function must be defined. Errors name the directory and what is wrong. Returns
/// the name each of options.extra_variables was saved under (a loader finds it by that
/// name in SavedModel::variables()).
std::vector<std::string> save_saved_model(const std::string& dir, const std::vector<SignatureSpec>& signatures,
                      const SaveOptions& options = {});

// --- reading the description only (saved_model_cli show) ---

/// A signature input or output: the graph value it names ("input:0") and its type (-1
/// for unknown dims).
struct TensorInfo {
  std::string name;
  TensorType type;
};

struct SignatureInfo {
  std::string key;
  std::map<std::string, TensorInfo> inputs;   ///< sorted by key
  std::map<std::string, TensorInfo> outputs;  ///< sorted by key
  std::string method_name;
  std::string function;  ///< the library function that implements it
};

struct VariableInfo {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  bool trainable = true;
  std::string checkpoint_key;  ///< its key in variables/variables.index
};

struct MetaGraphInfo {
  std::vector<std::string> tags;                    ///< as saved
  std::map<std::string, SignatureInfo> signatures;  ///< by key
  std::vector<VariableInfo> variables;
  std::vector<std::string> assets;  ///< file names under assets/
  std::string object_metadata;
};

/// Parses <dir>/saved_model.pb without loading graphs or variables (what `deepflow
/// saved_model show` prints). Throws on a missing, corrupt or newer-version file.
std::vector<MetaGraphInfo> read_saved_model_info(const std::string& dir);

/// "serve, gpu": a tag set as saved_model_cli prints it (sorted, joined by ", ").
std::string tag_set_string(std::vector<std::string> tags);

// --- loading and running ---

struct LoadOptions {
  /// Map the variables' data file and let the variables point into it (no copy) when
  /// possible; off: read every variable into fresh memory.
  bool mmap = true;
  /// Run the graph passes on each signature's function before it runs.
  bool optimize = true;
  /// Passed to each signature's executor (sequential by default, as for Function).
  ExecutorOptions executor = FunctionOptions::sequential_executor();
  /// For formats that can retrace (TensorFlow's): run a graph specialized to each call's
  /// input shapes (io/saved_model_formats.h, GraphSignature::specialize); off: every call
  /// runs the one graph with unknown dims.
  bool specialize_shapes = true;
};

/// One signature of a loaded model: call it with a map from input key to tensor.
class LoadedSignature {
 public:
  const std::string& key() const;
  const std::string& method_name() const;
  /// Input and output keys with their dtypes and shapes (-1: any size).
  std::map<std::string, TensorType> inputs() const;
  std::map<std::string, TensorType> outputs() const;
  /// The full description (graph value names included).
  const SignatureInfo& info() const;
  /// Runs the function. Every input key must be given once, with the signature's dtype
  /// and a compatible shape; an unknown, missing or mismatched input is an Error that
  /// lists the expected inputs. Returns every output by key.
  std::map<std::string, Tensor> operator()(const std::map<std::string, Tensor>& inputs) const;
  /// The graph that runs (after the passes) and the graph as saved.
  const Graph& graph() const;
  const Graph& saved_graph() const;
  /// How many input shapes run a graph specialized to them (GraphSignature::specialize:
  /// TensorFlow's SavedModels retrace per shape); 0 for deepflow's own format.
  size_t specialized_shapes() const;

  struct Impl;
  explicit LoadedSignature(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<Impl> impl_;
};

/// A loaded SavedModel. Copies share the same signatures and variables.
class SavedModel {
 public:
  const std::string& dir() const;
  /// The tag set of the loaded MetaGraph, as saved.
  const std::vector<std::string>& tags() const;
  /// Sorted.
  std::vector<std::string> signature_keys() const;
  bool has_signature(const std::string& key) const;
  /// Throws "[SavedModel] <dir>: no signature 'k'; available: a, b" when absent.
  const LoadedSignature& signature(const std::string& key) const;
  /// Every saved variable by name; the signatures read (and assign) these.
  const std::map<std::string, Variable>& variables() const;
  /// What was saved as SaveOptions::object_metadata.
  const std::string& object_metadata() const;
  /// Asset file name -> its path under <dir>/assets.
  std::map<std::string, std::string> assets() const;
  /// The MetaGraph's description.
  const MetaGraphInfo& info() const;

  struct State;
  explicit SavedModel(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

/// Loads the MetaGraph of `dir` whose tag set equals `tags` (order does not matter): its
/// variables from the bundle, then every signature's graph, ready to run.
SavedModel load_saved_model(const std::string& dir, const std::vector<std::string>& tags = {kServeTag},
                            const LoadOptions& options = {});

/// True when `dir` holds a saved_model.pb (does not validate it).
bool is_saved_model_dir(const std::string& dir);

}  // namespace deepflow::io
