// SPDX-License-Identifier: Apache-2.0
// summarize_model: the ModelProto's header and op counts for `deepflow onnx info`.
#include "deepflow/onnx/model_info.h"

#include <onnx/onnx_pb.h>

#include <fstream>
#include <set>
#include <sstream>

#include "deepflow/core/error.h"
#include "deepflow/onnx/onnx.h"
#include "deepflow/onnx/op_importer.h"

namespace deepflow::onnx {
namespace {

ValueSummary summarize(const ::onnx::ValueInfoProto& v) {
  ValueSummary s{v.name(), "?", {}};
  if (!v.type().has_tensor_type()) return s;
  const auto& t = v.type().tensor_type();
  s.elem_type = onnx_type_name(t.elem_type());
  for (const auto& d : t.shape().dim())
    s.dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?");
  return s;
}

void count_ops(const ::onnx::GraphProto& g, std::map<std::string, int64_t>& hist) {
  for (const auto& n : g.node()) {
    ++hist[n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type() : n.domain() + "." + n.op_type()];
    for (const auto& a : n.attribute()) {
      if (a.has_g()) count_ops(a.g(), hist);
      for (const auto& sub : a.graphs()) count_ops(sub, hist);
    }
  }
}

}  // namespace

ModelSummary summarize_model(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  DF_CHECK(f.good(), "[onnx::info] cannot open ", path);
  std::stringstream buf;
  buf << f.rdbuf();
  ::onnx::ModelProto m;
  DF_CHECK(m.ParseFromString(buf.str()), "[onnx::info] ", path, " is not an ONNX ModelProto (truncated or malformed)");
  ModelSummary s;
  s.ir_version = m.ir_version();
  for (const auto& o : m.opset_import()) s.opsets[o.domain()] = o.version();
  s.producer_name = m.producer_name();
  s.producer_version = m.producer_version();
  s.graph_name = m.graph().name();
  std::set<std::string> init;
  for (const auto& t : m.graph().initializer()) {
    init.insert(t.name());
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    s.num_parameters += n;
  }
  s.num_initializers = int64_t(init.size());
  for (const auto& v : m.graph().input())
    if (!init.count(v.name())) s.inputs.push_back(summarize(v));
  for (const auto& v : m.graph().output()) s.outputs.push_back(summarize(v));
  count_ops(m.graph(), s.op_histogram);
  try {
    s.unsupported = unsupported_ops(path);
  } catch (const Error& e) {
    s.unsupported = {std::string("(cannot check: ") + e.what() + ")"};
  }
  return s;
}

}  // namespace deepflow::onnx
