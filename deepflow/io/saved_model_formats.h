// SPDX-License-Identifier: Apache-2.0
// SavedModels in other formats behind io::load_saved_model: a library that reads another
// format (deepflow_tf: SavedModels written by TensorFlow) registers it, and
// load_saved_model / read_saved_model_info hand it the directories it accepts, so
// `deepflow saved_model`, `deepflow serve` and every other user of io::SavedModel take
// those files unchanged.
//
//   io::register_saved_model_format({.name = "TensorFlow", .accepts = ..., .info = ..., .load = ...});
//   io::SavedModel m = io::load_saved_model(tf_written_dir);   // through the format's load
//
// A format's loader builds each signature as a deepflow graph and returns
// make_saved_model(...), which runs it exactly as a deepflow SavedModel's.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "deepflow/io/saved_model.h"

namespace deepflow::io {

struct SavedModelFormat {
  std::string name;  ///< "TensorFlow", for messages
  /// True for a directory in this format (cheap: called on every load).
  std::function<bool(const std::string& dir)> accepts;
  std::function<std::vector<MetaGraphInfo>(const std::string& dir)> info;
  std::function<SavedModel(const std::string& dir, const std::vector<std::string>& tags, const LoadOptions& options)>
      load;
  /// Writes a SavedModel in this format (optional): what save_saved_model calls when
  /// SaveOptions::format is this format's name. Returns the extra variables' saved names.
  std::function<std::vector<std::string>(const std::string& dir, const std::vector<SignatureSpec>& signatures,
                                         const SaveOptions& options)>
      save;
};

/// Adds a format (once per name; a second registration of the same name is ignored).
void register_saved_model_format(SavedModelFormat format);
/// The first registered format that accepts `dir`, or null (deepflow's own format).
const SavedModelFormat* find_saved_model_format(const std::string& dir);
/// The registered format named `name` ("TensorFlow"), or null.
const SavedModelFormat* find_saved_model_format_by_name(const std::string& name);

/// One signature of a graph another format's loader built: the graph's inputs are
/// placeholders for info.inputs and its outputs info.outputs, both in key order.
struct GraphSignature {
  SignatureInfo info;
  std::shared_ptr<const Graph> graph;
  /// Optional: the signature traced anew for concrete input types (in key order), for a
  /// format that can retrace (TensorFlow's: one trace per input shape, as tf.function does).
  /// When set, a call whose inputs fill in unknown dims of `graph` runs a graph specialized
  /// to those shapes: on graphs with a dynamic batch, kernels and passes cannot plan ahead
  /// (ResNet50 at batch 1 ran 7x slower). The first kMaxSpecializations distinct shapes get
  /// one each (built on first use, kept); later ones run `graph`. Each costs memory for its
  /// folded constants: about twice the weights (ResNet50: ~200 MB per batch size).
  std::function<std::shared_ptr<const Graph>(const std::vector<TensorType>& inputs)> specialize;
};

/// How many input shapes one signature keeps a specialized graph for.
constexpr size_t kMaxSpecializations = 8;

/// A SavedModel over graphs built elsewhere (the variables they use are given by name).
SavedModel make_saved_model(const std::string& dir, MetaGraphInfo info, std::map<std::string, Variable> variables,
                            const std::vector<GraphSignature>& signatures, const LoadOptions& options = {});

}  // namespace deepflow::io
