// SPDX-License-Identifier: Apache-2.0
// GraphDef (de)serialization: proto/graph.proto <-> Graph.
//
// Lives in the separate `deepflow_proto` library (link it to use this header): the core
// library has no protobuf dependency.
//
//   std::string bytes = serialize_graph(*g);
//   auto g2 = parse_graph_def(bytes, {.variables = graph_variables(*g)});
//
// Round trips keep everything the text form keeps (graph_equal holds). Malformed input
// (truncated bytes, an unknown op, a wrong attribute kind, a dangling input, a cycle,
// tensor content that does not match its dims, ...) throws deepflow::Error
// "[parse_graph_def] ...", never crashes.
#pragma once

#include <memory>
#include <string>

#include "deepflow/graph/graph.h"
#include "deepflow/graph/text.h"

namespace deepflow {

namespace proto {
class GraphDef;  // generated from proto/graph.proto (graph.pb.h)
}  // namespace proto

/// The format version serialize_graph writes; readers reject newer ones.
inline constexpr int kGraphDefVersion = 1;

/// The graph as a GraphDef message; function attributes go to its library, named as
/// print_graph names them.
void graph_to_proto(const Graph& g, proto::GraphDef* out);
/// The graph a GraphDef describes (validated unless options.validate is false).
std::shared_ptr<Graph> graph_from_proto(const proto::GraphDef& def, const ParseOptions& options = {});

/// Deterministic binary serialization of graph_to_proto.
std::string serialize_graph(const Graph& g);
/// Parses serialized GraphDef bytes; throws deepflow::Error on any malformed input.
std::shared_ptr<Graph> parse_graph_def(const std::string& bytes, const ParseOptions& options = {});

}  // namespace deepflow
