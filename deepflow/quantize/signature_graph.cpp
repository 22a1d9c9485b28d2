// SPDX-License-Identifier: Apache-2.0
// A SavedModel signature as a graph with its interface in key order (quantize_internal.h).
#include "deepflow/core/error.h"
#include "deepflow/quantize/quantize_internal.h"

namespace deepflow::quantize::detail {

Graph signature_graph(const io::LoadedSignature& sig, const char* who, std::vector<std::string>* input_names,
                      std::vector<std::string>* output_names) {
  Graph g = sig.saved_graph();
  input_names->clear();
  output_names->clear();
  const io::SignatureInfo& info = sig.info();
  auto resolves = [&g](const std::map<std::string, io::TensorInfo>& m) {
    for (const auto& [key, ti] : m)
      if (g.find(ti.name.substr(0, ti.name.find(':'))) < 0) return false;
    return true;
  };
  if (!(resolves(info.inputs) && resolves(info.outputs)) && g.inputs.size() == info.inputs.size() &&
      g.outputs.size() == info.outputs.size()) {
    // TensorFlow's format: the names are the GraphDef's, the imported function's interface
    // is in the signature's key order.
    for (const auto& [key, ti] : info.inputs) input_names->push_back(key);
    for (const auto& [key, ti] : info.outputs) output_names->push_back(key);
    return g;
  }
  g.inputs.clear();
  g.outputs.clear();
  for (const auto& [key, ti] : info.inputs) {
    const ValueRef v = g.value(ti.name);
    DF_CHECK(g.node(v.node).op == OpId::Placeholder, who, " signature input '", key, "' (", ti.name,
             ") is not a placeholder");
    g.inputs.push_back(v.node);
    input_names->push_back(key);
  }
  for (const auto& [key, ti] : info.outputs) {
    g.outputs.push_back(g.value(ti.name));
    output_names->push_back(key);
  }
  return g;
}

}  // namespace deepflow::quantize::detail
