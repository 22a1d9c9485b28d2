// SPDX-License-Identifier: Apache-2.0
// The serving optimizer (serving_optimizer.h): freeze, run the passes, calibrate the conv
// chains on the float graph with their layers spelled out, write the ranges into the
// chains, and save the result as a SavedModel whose functions replay the converted graphs.
//
// Calibration reads the values between a chain's layers, which the chain op hides: a copy
// of the optimized graph gets its chains expanded back into fused_conv2d nodes
// (expand_conv_chains names them <chain>/layer_<i>), and those nodes' results are fetched.
// The expanded graph computes what the chain does, so the ranges are those of the values
// the int8 chain stores.
#include "deepflow/quantize/serving_optimizer.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "deepflow/core/error.h"
#include "deepflow/function/control_flow.h"
#include "deepflow/function/function.h"
#include "deepflow/graph/executor.h"
#include "deepflow/graph/passes.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/ops/conv_chain.h"
#include "deepflow/ops/ops.h"
#include "deepflow/ops/variable.h"
#include "deepflow/quantize/quantize_internal.h"

namespace deepflow::quantize {

namespace {

namespace fs = std::filesystem;

constexpr char kWho[] = "[ServingOptimizer]";

struct Converted {
  std::string key, method_name;
  std::vector<std::string> input_names, output_names;
  std::shared_ptr<Graph> graph;
};

// Variables no node of g assigns become constants holding their current values (no copy).
void freeze_variables(Graph& g) {
  std::set<uint64_t> assigned;
  for (const Node& n : g.nodes())
    if (n.op == OpId::AssignVariable) assigned.insert(std::get<Variable>(*n.attrs.find("variable")).id());
  for (int id = 0; id < g.num_nodes(); ++id) {
    Node& n = g.mutable_node(id);
    if (n.op != OpId::ReadVariable) continue;
    const Variable& v = std::get<Variable>(*n.attrs.find("variable"));
    if (assigned.count(v.id())) continue;
    n.op = OpId::Const;
    n.attrs = Attrs{{"value", v.value()}};
  }
}

std::vector<int> chains_of(const Graph& g) {
  std::vector<int> out;
  for (int id = 0; id < g.num_nodes(); ++id)
    if (g.node(id).op == OpId::FusedConvChain) out.push_back(id);
  return out;
}

size_t layer_count(const Node& chain) {
  return std::get<std::vector<int64_t>>(*chain.attrs.find("layers")).size() / conv_chain::kIntsPerLayer;
}

void check_input(const Graph& g, const std::string& key, const std::vector<std::string>& names, const TensorList& xs,
                 int64_t batch, int64_t max_batch, const char* what) {
  DF_CHECK(xs.size() == g.inputs.size(), kWho, " ", what, " ", batch, " for signature '", key, "' has ", xs.size(),
           " tensors; the signature takes ", g.inputs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const TensorType& want = g.node(g.inputs[i]).outputs[0];
    DF_CHECK(xs[i].dtype() == want.dtype && want.shape.compatible_with(xs[i].shape()), kWho, " ", what, " ", batch,
             " for signature '", key, "', input '", names[i], "': ", dtype_name(xs[i].dtype()), xs[i].shape(),
             " does not fit ", dtype_name(want.dtype), want.shape);
    DF_CHECK(max_batch <= 0 || xs[i].rank() == 0 || xs[i].dim(0) <= max_batch, kWho, " ", what, " ", batch,
             " for signature '", key, "', input '", names[i], "': batch ", xs[i].rank() ? xs[i].dim(0) : 0,
             " is over max_batch_size ", max_batch);
  }
}

// Calibrates every chain of `opt` with at least min_layers layers and writes its ranges.
void calibrate_chains(Graph& opt, const Converted& c, const ServingOptimizerOptions& o, const InputFn& input,
                      SignatureSummary& s) {
  std::vector<int> chains;
  for (int id : chains_of(opt))
    if (int(layer_count(opt.node(id))) >= o.minimum_segment_size) chains.push_back(id);
  if (chains.empty()) {  // nothing to calibrate; the input is still checked
    while (std::optional<TensorList> xs = input())
      check_input(opt, c.key, c.input_names, *xs, s.calibration_batches++, o.max_batch_size, "calibration input");
    return;
  }
  auto expanded = std::make_shared<Graph>(opt);
  expand_conv_chains(*expanded);
  // Per chain: the expanded graph's values of its input and of each layer's result.
  std::vector<ValueRef> fetch;
  std::vector<std::pair<size_t, size_t>> span;  // per chain: [first, end) in fetch
  for (int id : chains) {
    const Node& n = opt.node(id);
    const size_t first = fetch.size();
    fetch.push_back(expanded->value(opt.value_name(n.inputs[0])));
    for (size_t i = 0; i < layer_count(n); ++i) fetch.push_back({expanded->find(n.name + "/layer_" + std::to_string(i)), 0});
    for (size_t k = first; k < fetch.size(); ++k)
      DF_CHECK(fetch[k].node >= 0, kWho, " internal: chain '", n.name, "' lost a layer when expanded");
    span.push_back({first, fetch.size()});
  }
  std::vector<ValueRef> feeds;
  for (int id : expanded->inputs) feeds.push_back({id, 0});
  Executor ex(expanded, feeds, fetch);
  std::vector<detail::RangeObserver> obs(fetch.size(), detail::RangeObserver(kWho));
  const bool values = detail::RangeObserver::needs_values(o.calibration);
  std::mt19937_64 rng(0);
  int64_t batches = 0;
  while (std::optional<TensorList> xs = input()) {
    check_input(opt, c.key, c.input_names, *xs, batches, o.max_batch_size, "calibration input");
    const TensorList got = ex.run(*xs);
    for (size_t k = 0; k < got.size(); ++k) {
      const Tensor& t = got[k];
      obs[k].add(t.data<float>(), t.size(), values, rng);
    }
    ++batches;
  }
  DF_CHECK(batches > 0, kWho, " INT8 calibration of signature '", c.key, "': calibration_input yielded nothing");
  s.calibration_batches = batches;
  for (size_t ci = 0; ci < chains.size(); ++ci) {
    std::vector<double> ranges;
    for (size_t k = span[ci].first; k < span[ci].second; ++k) {
      const detail::Range r = obs[k].range(o.calibration, o.percentile);
      ranges.push_back(std::min(r.min, 0.0));  // zero stays representable, as TFLite's ranges
      ranges.push_back(std::max(r.max, 0.0));
    }
    opt.mutable_node(chains[ci]).attrs.set("int8_ranges", ranges);
    ++s.int8_chains;
    s.int8_layers += int(layer_count(opt.node(chains[ci])));
  }
}

void count(const Graph& g, SignatureSummary& s) {
  for (const Node& n : g.nodes()) {
    if (n.op == OpId::FusedConvChain) {
      ++s.conv_chains;
      if (!n.attrs.find("int8_ranges") || std::get<std::vector<double>>(*n.attrs.find("int8_ranges")).empty())
        s.float_convs += int(layer_count(n));
    }
    if (n.op == OpId::FusedConv2D || n.op == OpId::Conv2D) ++s.float_convs;
  }
}

}  // namespace

Precision parse_precision(const std::string& name) {
  std::string u = name;
  for (char& ch : u) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  if (u == "FP32") return Precision::kFp32;
  if (u == "FP16") return Precision::kFp16;
  if (u == "INT8") return Precision::kInt8;
  fail(kWho, " precision_mode must be \"FP32\", \"FP16\" or \"INT8\", got \"", name, "\"");
}

const char* precision_name(Precision p) {
  return p == Precision::kFp32 ? "FP32" : p == Precision::kFp16 ? "FP16" : "INT8";
}

std::string SignatureSummary::to_string() const {
  return key + ": " + std::to_string(conv_chains) + " conv chains, " + std::to_string(int8_chains) + " in int8 (" +
         std::to_string(int8_layers) + " convolutions), " + std::to_string(float_convs) +
         " convolutions in float32, calibrated on " + std::to_string(calibration_batches) + " batches";
}

struct ServingOptimizer::Impl {
  ServingOptimizerOptions options;
  std::vector<Converted> converted;
  std::vector<SignatureSummary> summary;
  std::optional<io::SavedModel> model;  // keeps the frozen variables' storage alive
};

ServingOptimizer::ServingOptimizer(ServingOptimizerOptions options) : impl_(std::make_unique<Impl>()) {
  DF_CHECK(!options.input_saved_model_dir.empty(), kWho, " input_saved_model_dir is empty");
  DF_CHECK(options.minimum_segment_size >= 1, kWho, " minimum_segment_size must be >= 1, got ",
           options.minimum_segment_size);
  impl_->options = std::move(options);
}
ServingOptimizer::~ServingOptimizer() = default;
ServingOptimizer::ServingOptimizer(ServingOptimizer&&) noexcept = default;

void ServingOptimizer::convert(const InputFn& calibration_input) {
  const ServingOptimizerOptions& o = impl_->options;
  DF_CHECK(o.precision_mode != Precision::kInt8 || calibration_input, kWho,
           " INT8 needs a calibration_input (batches of the signature's inputs) to calibrate its ranges");
  DF_CHECK(o.precision_mode != Precision::kFp16, kWho,
           " precision_mode FP16 is not implemented yet (FP32 and INT8 are); see docs/quantization.md");
  io::LoadOptions lo;
  lo.optimize = false;
  impl_->model = io::load_saved_model(o.input_saved_model_dir, o.input_saved_model_tags, lo);
  std::vector<std::string> keys = o.signature_keys.empty() ? impl_->model->signature_keys() : o.signature_keys;
  impl_->converted.clear();
  impl_->summary.clear();
  // Every signature calibrates on the same input: read it once, replay it per signature.
  InputFn input = calibration_input;
  std::vector<TensorList> seen;
  if (calibration_input && keys.size() > 1) {
    while (std::optional<TensorList> xs = calibration_input()) seen.push_back(std::move(*xs));
    input = {};
  }
  for (const std::string& key : keys) {
    if (!seen.empty() || (calibration_input && !input))
      input = [&seen, i = size_t(0)]() mutable -> std::optional<TensorList> {
        if (i == seen.size()) return std::nullopt;
        return seen[i++];
      };
    Converted c;
    c.key = key;
    const io::LoadedSignature& sig = impl_->model->signature(key);
    c.method_name = sig.method_name();
    Graph g = detail::signature_graph(sig, kWho, &c.input_names, &c.output_names);
    freeze_variables(g);
    c.graph = optimize(g);
    SignatureSummary s;
    s.key = key;
    if (o.precision_mode == Precision::kInt8) calibrate_chains(*c.graph, c, o, input, s);
    count(*c.graph, s);
    impl_->summary.push_back(s);
    impl_->converted.push_back(std::move(c));
  }
}

void ServingOptimizer::build(const InputFn& input_fn, const std::string& key) {
  DF_CHECK(!impl_->converted.empty(), kWho, " build() before convert()");
  const Converted* c = &impl_->converted[0];
  if (!key.empty()) {
    c = nullptr;
    for (const Converted& k : impl_->converted)
      if (k.key == key) c = &k;
    DF_CHECK(c, kWho, " build(): no converted signature '", key, "'");
  }
  std::vector<ValueRef> feeds;
  for (int id : c->graph->inputs) feeds.push_back({id, 0});
  Executor ex(c->graph, feeds, c->graph->outputs);
  int64_t n = 0;
  while (std::optional<TensorList> xs = input_fn()) {
    check_input(*c->graph, c->key, c->input_names, *xs, n++, impl_->options.max_batch_size, "build input");
    ex.run(*xs);
  }
}

void ServingOptimizer::save(const std::string& dir, bool overwrite) const {
  DF_CHECK(!impl_->converted.empty(), kWho, " save() before convert()");
  std::vector<io::SignatureSpec> specs;
  std::vector<Function> keep_alive;
  for (const Converted& c : impl_->converted) {
    Signature sig;
    for (int id : c.graph->inputs) sig.push_back(c.graph->node(id).outputs[0]);
    std::shared_ptr<const Graph> g = c.graph;
    // A function that replays the converted graph: its trace is that graph again.
    keep_alive.emplace_back([g](const TensorList& xs) { return inline_graph(*g, xs, false); },
                            FunctionOptions{.name = c.key, .input_signature = sig, .optimize = false});
    specs.push_back({.key = c.key, .fn = keep_alive.back().get_concrete_function(), .input_names = c.input_names,
                     .output_names = c.output_names, .method_name = c.method_name});
  }
  // As tf.saved_model.save, the parent directories are made (a serving layout's <base>/<version>).
  const fs::path parent = fs::absolute(dir).parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  DF_CHECK(fs::is_directory(parent), kWho, " cannot create the directory ", parent.string(), ": ", ec.message());
  io::SaveOptions so;
  so.overwrite = overwrite;
  io::save_saved_model(dir, specs, so);
}

const std::vector<SignatureSummary>& ServingOptimizer::summary() const { return impl_->summary; }

const Graph& ServingOptimizer::graph(const std::string& key) const {
  for (const Converted& c : impl_->converted)
    if (c.key == key) return *c.graph;
  fail(kWho, " no converted signature '", key, "'");
}

}  // namespace deepflow::quantize
