// SPDX-License-Identifier: Apache-2.0
#include "deepflow/tf/graph_def.h"

#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "deepflow/core/error.h"
#include "deepflow/tf/graph_eval.h"
#include "deepflow/tf/op_importer.h"
#include "tensorflow/graph.pb.h"

namespace deepflow::tf {
namespace {

struct State {
  tensorflow::GraphDef graph;
  detail::ImportShared shared;
};

std::string node_of(const std::string& ref) {
  std::string s = ref[0] == '^' ? ref.substr(1) : ref;
  return s.substr(0, s.find(':'));
}

}  // namespace

namespace detail {

GraphDefModel import_graph_message(tensorflow::GraphDef graph, const std::string& source,
                                   std::vector<std::string> inputs, std::vector<std::string> outputs) {
  auto st = std::make_shared<State>();
  st->graph = std::move(graph);
  st->shared.source = source;
  st->shared.add_library(st->graph.library());
  std::map<std::string, const tensorflow::NodeDef*> by_name;
  std::set<std::string> consumed;
  for (const auto& n : st->graph.node()) {
    by_name[n.name()] = &n;
    for (const auto& in : n.input()) consumed.insert(node_of(in));
  }
  if (inputs.empty()) {
    for (const auto& n : st->graph.node()) {
      if (n.op() == "Placeholder") inputs.push_back(n.name());
    }
  }
  if (outputs.empty()) {
    for (const auto& n : st->graph.node()) {
      if (!consumed.count(n.name()) && n.op() != "NoOp" && n.op() != "Placeholder") outputs.push_back(n.name() + ":0");
    }
  }
  DF_CHECK(!outputs.empty(), "[tf::import] ", source, ": the graph has no outputs");
  GraphDefModel m;
  for (std::string& in : inputs) {
    in = node_of(in);
    auto it = by_name.find(in);
    DF_CHECK(it != by_name.end(), "[tf::import] ", source, ": no input node named '", in, "'");
    const tensorflow::NodeDef& n = *it->second;
    DF_CHECK(n.op() == "Placeholder" || n.op() == "PlaceholderWithDefault", "[tf::import] ", source, ": input '", in,
             "' is a ", n.op(), ", not a Placeholder");
    auto dt = n.attr().find("dtype");
    DF_CHECK(dt != n.attr().end(), "[tf::import] ", source, ": placeholder '", in, "' has no dtype");
    TensorType t;
    t.dtype = require_dtype(dt->second.type());
    auto sh = n.attr().find("shape");
    DF_CHECK(sh != n.attr().end() && !sh->second.shape().unknown_rank(), "[tf::import] ", source, ": placeholder '",
             in, "' has no known rank (deepflow traces need the rank)");
    std::vector<int64_t> dims;
    for (const auto& d : sh->second.shape().dim()) dims.push_back(d.size() < 0 ? -1 : d.size());
    t.shape = Shape(dims);
    m.input_signature.push_back(t);
  }
  for (std::string& out : outputs) {
    if (out.find(':') == std::string::npos) out += ":0";
    DF_CHECK(by_name.count(node_of(out)), "[tf::import] ", source, ": no output node named '", node_of(out), "'");
  }
  m.inputs = inputs;
  m.outputs = outputs;
  FunctionOptions o;
  o.name = "graph_def";
  o.input_signature = m.input_signature;
  m.function = Function(
      [st, inputs, outputs](const TensorList& args) {
        std::map<std::string, Value> feeds;
        for (size_t i = 0; i < inputs.size(); ++i) feeds[inputs[i] + ":0"] = args[i];
        Values out = detail::evaluate_graph(st->shared, st->graph, feeds, outputs);
        TensorList result;
        for (size_t i = 0; i < out.size(); ++i) {
          DF_CHECK(out[i].tensor.defined(), "[tf::import] ", st->shared.source, ": output '", outputs[i],
                   "' is not a tensor");
          result.push_back(out[i].tensor);
        }
        return result;
      },
      o);
  return m;
}

}  // namespace detail

GraphDefModel import_graph_def_from_bytes(std::string_view bytes, const std::string& source,
                                          std::vector<std::string> inputs, std::vector<std::string> outputs) {
  tensorflow::GraphDef graph;
  DF_CHECK(graph.ParseFromArray(bytes.data(), int(bytes.size())), "[tf::import] ", source,
           ": not a TensorFlow GraphDef (", bytes.size(), " bytes do not parse)");
  return detail::import_graph_message(std::move(graph), source, std::move(inputs), std::move(outputs));
}

GraphDefModel import_graph_def(const std::string& path, std::vector<std::string> inputs,
                               std::vector<std::string> outputs) {
  std::ifstream in(path, std::ios::binary);
  DF_CHECK(in, "[tf::import] ", path, ": cannot open");
  std::stringstream bytes;
  bytes << in.rdbuf();
  return import_graph_def_from_bytes(bytes.str(), path, std::move(inputs), std::move(outputs));
}

}  // namespace deepflow::tf
