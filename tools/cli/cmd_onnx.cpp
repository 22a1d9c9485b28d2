// SPDX-License-Identifier: Apache-2.0
// `deepflow onnx`: inspect, run and convert ONNX models (docs/onnx.md).
//
//   deepflow onnx info model.onnx
//   deepflow onnx run model.onnx --inputs x=x.npy,mask=m.npy --outdir /tmp/out
//   deepflow onnx convert model.onnx --to saved_model /models/m/1
//   deepflow onnx convert model.onnx --to saved_model /models/m/1 --format tf   # TensorFlow's format
//   deepflow onnx convert /models/m/1 --to onnx model.onnx
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli.h"
#include "deepflow/io/npy.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/onnx/export.h"
#include "deepflow/onnx/model_info.h"
#include "deepflow/onnx/onnx.h"

namespace deepflow::cli {

namespace {

namespace fs = std::filesystem;

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string type_string(const onnx::ValueSummary& v) {
  return v.elem_type + "[" + join(v.dims, ", ") + "]";
}

void info(const std::string& file) {
  const onnx::ModelSummary s = onnx::summarize_model(file);
  std::cout << "file: " << file << "\n";
  std::cout << "ir_version: " << s.ir_version << "\n";
  std::cout << "opsets:";
  for (const auto& [domain, version] : s.opsets) std::cout << " " << (domain.empty() ? "ai.onnx" : domain) << "=" << version;
  std::cout << "\nproducer: " << s.producer_name << (s.producer_version.empty() ? "" : " " + s.producer_version)
            << "\ngraph: " << s.graph_name << "\n";
  std::cout << "inputs:\n";
  for (const auto& v : s.inputs) std::cout << "  " << v.name << ": " << type_string(v) << "\n";
  std::cout << "outputs:\n";
  for (const auto& v : s.outputs) std::cout << "  " << v.name << ": " << type_string(v) << "\n";
  std::cout << "initializers: " << s.num_initializers << " (" << s.num_parameters << " elements)\n";
  int64_t nodes = 0;
  for (const auto& [op, n] : s.op_histogram) nodes += n;
  std::cout << "ops: " << nodes << " nodes, " << s.op_histogram.size() << " op types\n";
  for (const auto& [op, n] : s.op_histogram) std::cout << "  " << op << ": " << n << "\n";
  std::cout << "unsupported ops: " << (s.unsupported.empty() ? "none" : join(s.unsupported, ", ")) << "\n";
}

struct RunOptions {
  std::string file, inputs, outdir;
};

void run(const RunOptions& o) {
  onnx::OnnxModel model = onnx::import_model(o.file);
  std::map<std::string, Tensor> feeds;
  if (!o.inputs.empty()) {
    size_t start = 0;
    while (start <= o.inputs.size()) {
      size_t end = o.inputs.find(',', start);
      if (end == std::string::npos) end = o.inputs.size();
      const std::string item = o.inputs.substr(start, end - start);
      start = end + 1;
      if (item.empty()) continue;
      const size_t eq = item.find('=');
      DF_CHECK(eq != std::string::npos && eq > 0, "[onnx run] --inputs \"", item,
               "\" must be <input name>=<file.npy>");
      const std::string name = item.substr(0, eq);
      DF_CHECK(!feeds.count(name), "[onnx run] input '", name, "' is given twice");
      feeds[name] = io::read_npy(item.substr(eq + 1));
    }
  }
  const std::map<std::string, Tensor> outputs = model.run(feeds);
  for (const onnx::ValueInfo& out : model.outputs()) {
    const Tensor& t = outputs.at(out.name);
    std::cout << "Result for output key " << out.name << ":\n" << t << "\n";
    if (o.outdir.empty()) continue;
    std::error_code ec;
    fs::create_directories(o.outdir, ec);
    DF_CHECK(fs::is_directory(o.outdir), "[onnx run] cannot create --outdir ", o.outdir);
    const std::string path = (fs::path(o.outdir) / (out.name + ".npy")).string();
    io::write_npy(path, t);
    std::cout << "Output " << out.name << " is saved to " << path << "\n";
  }
}

struct ConvertOptions {
  std::string source, to, dest;
  int64_t opset = 17;
  bool overwrite = false;
  std::string format = "deepflow";  // of the SavedModel: deepflow's own, or "tf" (TensorFlow's)
};

// ONNX -> SavedModel: initializers become variables, keys are the ONNX names.
void to_saved_model(const ConvertOptions& o) {
  onnx::OnnxModel model = onnx::import_model(o.source, {.variables = true});
  io::SignatureSpec spec{.fn = model.concrete_function()};
  for (const auto& v : model.inputs()) spec.input_names.push_back(v.name);
  for (const auto& v : model.outputs()) spec.output_names.push_back(v.name);
  io::save_saved_model(o.dest, {spec}, {.overwrite = o.overwrite, .format = o.format == "tf" ? "TensorFlow" : ""});
  std::cout << "Converted " << o.source << " to " << (o.format == "tf" ? "TensorFlow " : "") << "SavedModel " << o.dest
            << " (signature "
            << io::kDefaultServingSignatureKey << ": " << spec.input_names.size() << " inputs, "
            << spec.output_names.size() << " outputs)\n";
}

// SavedModel -> ONNX: the serving_default signature's graph as saved; keys become names.
void to_onnx(const ConvertOptions& o) {
  io::SavedModel model = io::load_saved_model(o.source);
  DF_CHECK(model.has_signature(io::kDefaultServingSignatureKey), "[onnx convert] ", o.source,
           " has no signature \"", io::kDefaultServingSignatureKey, "\"");
  const io::LoadedSignature& sig = model.signature(io::kDefaultServingSignatureKey);
  const Graph& g = sig.saved_graph();
  const io::SignatureInfo& si = sig.info();
  auto key_of = [&](const std::map<std::string, io::TensorInfo>& infos, const std::string& value) {
    for (const auto& [key, ti] : infos)
      if (ti.name == value) return key;
    fail("[onnx convert] ", o.source, ": no signature key names the graph value ", value);
  };
  onnx::ExportOptions eo{.opset = o.opset, .graph_name = fs::path(o.source).filename().string()};
  for (int id : g.inputs) eo.input_names.push_back(key_of(si.inputs, g.node(id).name + ":0"));
  for (ValueRef v : g.outputs) eo.output_names.push_back(key_of(si.outputs, g.node(v.node).name + ":" + std::to_string(v.index)));
  DF_CHECK(o.overwrite || !fs::exists(o.dest), "[onnx convert] ", o.dest, " exists (add --overwrite)");
  onnx::export_graph(g, o.dest, eo);
  std::cout << "Converted SavedModel " << o.source << " to " << o.dest << " (opset " << o.opset << ")\n";
}

void convert(const ConvertOptions& o) {
  if (o.to == "saved_model") return to_saved_model(o);
  if (o.to == "onnx") return to_onnx(o);
  fail("[onnx convert] --to must be saved_model or onnx, got \"", o.to, "\"");
}

void setup_onnx(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("onnx", "Inspect, run and convert ONNX models");
  cmd->require_subcommand(1);

  auto file = std::make_shared<std::string>();
  CLI::App* i = cmd->add_subcommand("info", "IR version, opsets, producer, inputs and outputs, op counts");
  i->add_option("file", *file, "The .onnx file")->required();
  i->callback([file] { info(*file); });

  auto ro = std::make_shared<RunOptions>();
  CLI::App* r = cmd->add_subcommand("run", "Run a model on inputs from .npy files");
  r->add_option("file", ro->file, "The .onnx file")->required();
  r->add_option("--inputs", ro->inputs, "'<name>=<file.npy>,...': one per graph input");
  r->add_option("--outdir", ro->outdir, "Also save each output as <outdir>/<name>.npy");
  r->callback([ro] { run(*ro); });

  auto co = std::make_shared<ConvertOptions>();
  CLI::App* c = cmd->add_subcommand("convert", "ONNX file -> SavedModel directory, or SavedModel -> ONNX file");
  c->add_option("source", co->source, "The .onnx file, or the SavedModel directory")->required();
  c->add_option("dest", co->dest, "The SavedModel directory, or the .onnx file to write")->required();
  c->add_option("--to", co->to, "saved_model or onnx")->required()->check(CLI::IsMember({"saved_model", "onnx"}));
  c->add_option("--opset", co->opset, "The ONNX opset to export (13 to 17)")->capture_default_str();
  c->add_flag("--overwrite", co->overwrite, "Replace an existing destination");
  c->add_option("--format", co->format,
                "With --to saved_model: deepflow (our own format, the default) or tf (TensorFlow's: "
                "tf.saved_model.load and TF Serving run it)")
      ->capture_default_str()
      ->check(CLI::IsMember({"deepflow", "tf"}));
  c->callback([co] { convert(*co); });
}

}  // namespace

DF_CLI_COMMAND(setup_onnx)

}  // namespace deepflow::cli
