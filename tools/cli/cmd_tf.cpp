// SPDX-License-Identifier: Apache-2.0
// `deepflow tf`: TensorFlow's files that are not SavedModels, imported into deepflow's.
//
//   deepflow tf import frozen.pb --to saved_model /models/m/1 [--inputs x --outputs Identity:0]
//   deepflow tf import web_model/model.json --to saved_model /models/m/1   (a TF.js graph model)
//   deepflow tf import model.keras --to saved_model /models/m/1   # a Keras file (.keras, .h5)
//
// (SavedModels written by TensorFlow need no conversion: `deepflow saved_model` and
// `deepflow serve` take them as they are.)
#include <cctype>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli.h"
#include "deepflow/core/error.h"
#include "deepflow/io/keras_file.h"
#include "deepflow/io/keras_saving.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/tf/graph_def.h"
#include "deepflow/tf/tfjs_model.h"

namespace deepflow::cli {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A signature key for a graph value: "Identity:0" -> "Identity", "split:1" -> "split_1".
std::string key_of(const std::string& value) {
  const size_t colon = value.find(':');
  std::string key = value.substr(0, colon);
  if (colon != std::string::npos && value.substr(colon + 1) != "0") key += "_" + value.substr(colon + 1);
  for (char& ch : key) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '.' && ch != '-') ch = '_';
  }
  return key;
}

struct ImportOptions {
  std::string file, to, dest, inputs, outputs;
  bool overwrite = false;
};

void import_file(const ImportOptions& o) {
  DF_CHECK(o.to == "saved_model", "[tf import] --to must be saved_model, got \"", o.to, "\"");
  DF_CHECK(o.overwrite || !fs::exists(o.dest), "[tf import] ", o.dest, " exists (add --overwrite)");
  // keras::save_model would write a Keras file to such a path, not the SavedModel asked for.
  DF_CHECK(!keras::is_keras_file_path(o.dest), "[tf import] ", o.dest,
           ": --to saved_model writes a directory; name it without .keras / .h5");
  if (keras::is_keras_file_path(o.file)) {
    // A Keras model file: rebuilt as a Keras model, saved with its forward pass as serving_default.
    DF_CHECK(o.inputs.empty() && o.outputs.empty(), "[tf import] ", o.file,
             ": --inputs / --outputs apply to GraphDefs; a Keras model's signature is its Input and output layers");
    keras::ModelPtr m = keras::load_model(o.file);
    // "/models/clf/1": the version directory's parent may not exist yet.
    if (const fs::path parent = fs::path(o.dest).parent_path(); !parent.empty()) fs::create_directories(parent);
    keras::save_model(*m, o.dest, {.overwrite = o.overwrite});
    std::cout << "Imported Keras model '" << m->name() << "' (" << m->count_params() << " parameters) from " << o.file
              << " to SavedModel " << o.dest << " (signature " << io::kDefaultServingSignatureKey << ")\n";
    return;
  }
  const bool tfjs = fs::path(o.file).extension() == ".json";
  tf::GraphDefModel m = tfjs ? tf::import_tfjs_model(o.file, split_list(o.inputs), split_list(o.outputs))
                             : tf::import_graph_def(o.file, split_list(o.inputs), split_list(o.outputs));
  io::SignatureSpec spec{.fn = m.function.get_concrete_function(m.input_signature)};
  // A TF.js model's signature keys name the inputs and outputs as TensorFlow's did.
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    spec.input_names.push_back(m.input_keys.empty() ? key_of(m.inputs[i]) : m.input_keys[i]);
  }
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    spec.output_names.push_back(m.output_keys.empty() ? key_of(m.outputs[i]) : m.output_keys[i]);
  }
  // A serving layout's version directory (/models/m/1) is usually new with its parent.
  if (const fs::path parent = fs::path(o.dest).parent_path(); !parent.empty()) fs::create_directories(parent);
  io::save_saved_model(o.dest, {spec}, {.overwrite = o.overwrite});
  std::cout << "Imported " << o.file << " to SavedModel " << o.dest << " (signature "
            << io::kDefaultServingSignatureKey << ": " << spec.input_names.size() << " inputs, "
            << spec.output_names.size() << " outputs)\n";
}

void setup_tf(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("tf", "Import TensorFlow's frozen GraphDefs, TF.js graph models and Keras files");
  cmd->require_subcommand(1);
  auto o = std::make_shared<ImportOptions>();
  CLI::App* i = cmd->add_subcommand(
      "import", "A frozen GraphDef (.pb), a TF.js model.json or a Keras file (.keras, .h5) -> a SavedModel directory");
  i->add_option("file", o->file,
                "The frozen GraphDef (.pb), a TF.js graph model's model.json, or a Keras model file (.keras, legacy .h5)")
      ->required();
  i->add_option("dest", o->dest, "The SavedModel directory to write")->required();
  i->add_option("--to", o->to, "saved_model")->required()->check(CLI::IsMember({"saved_model"}));
  i->add_option("--inputs", o->inputs,
                "Placeholder names, comma-separated (default: model.json's signature, else every Placeholder)");
  i->add_option("--outputs", o->outputs,
                "Values to fetch, 'node:k', comma-separated (default: model.json's signature, else the graph's sinks)");
  i->add_flag("--overwrite", o->overwrite, "Replace an existing destination");
  i->callback([o] { import_file(*o); });
}

}  // namespace

DF_CLI_COMMAND(setup_tf)

}  // namespace deepflow::cli
