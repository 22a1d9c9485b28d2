// SPDX-License-Identifier: Apache-2.0
// The graph text form: a readable, exact, round-trippable listing of a graph.
//
// One line per node, function bodies first (docs/graph_text.md has the grammar):
//
//   func @cond.then_branch(%x) -> (%neg) {
//     %x = placeholder() {dtype=f32, shape=[2]} : f32[2]
//     %neg = neg(%x) : f32[2]
//   }
//   %a = placeholder() {dtype=f32, shape=[-1, 16]} : f32[?,16]
//   %w = read_variable() {variable=var<"w", f32[16,8]>} : f32[16,8]
//   %mm = matmul(%a, %w) {transpose_a=false, transpose_b=false} : f32[?,8] @"/cpu:1"
//   %top = top_k(%mm) {k=2, sorted=true} : f32[?,2], i32[?,2]
//   %idx = cast(%top:1) ^%mm {dtype=i64} : i64[?,2]
//
//   std::string text = print_graph(*g);         // or g->to_string()
//   auto g2 = parse_graph(text, {.variables = graph_variables(*g)});
//   assert(print_graph(*g2) == text && graph_equal(*g, *g2));
//
// Printing is exact: floats use the shortest digits that read back to the same bits,
// tensors are written in full. Parsing reports every problem as a deepflow::Error
// "[parse_graph] line N: ...", then runs Graph::validate() on every graph it built.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>

#include "deepflow/graph/graph.h"

namespace deepflow {

struct ParseOptions {
  /// Variables for `var<"name", dtype[shape]>` attributes, by name. A name not found here
  /// gets a new Variable of zeros with that name, dtype and shape (one per name per parse),
  /// which is what loading a graph without its checkpoint means.
  std::unordered_map<std::string, Variable> variables;
  /// A new zero Variable larger than this is an error (pass the variable in `variables`);
  /// keeps a hostile or corrupt file from allocating without bound.
  size_t max_new_variable_bytes = size_t(1) << 30;
  /// Run Graph::validate() on the parsed graph and every function body.
  bool validate = true;
};

/// The text form of a graph: the function bodies its nodes refer to (depth first), then
/// its nodes, then `inputs(...)` / `outputs(...)` when the graph has them.
std::string print_graph(const Graph& g);

/// Parses the text form. Inputs may refer to later lines (so cycles can be written;
/// validate() rejects them). Throws deepflow::Error naming the line on malformed text,
/// an unknown op, an undefined value, an attribute the op's schema does not allow, etc.
std::shared_ptr<Graph> parse_graph(const std::string& text, const ParseOptions& options = {});

/// Every variable the graph (and its functions) refers to, under the name print_graph
/// writes for it (distinct variables sharing a name get "_1", "_2" suffixes). Passing this
/// as ParseOptions::variables makes a parsed graph refer to the same variables.
std::unordered_map<std::string, Variable> graph_variables(const Graph& g);

/// Structural equality, what round trips preserve: node names, ops, attributes
/// (attr_equal; function attributes compared as graphs), inputs, control inputs, output
/// types, devices, and the graph's inputs and outputs. When they differ and `why` is
/// given, it says where.
bool graph_equal(const Graph& a, const Graph& b, std::string* why = nullptr);

namespace detail {
/// Shared by the text and GraphDef readers: resolves `var<...>` references through
/// ParseOptions::variables, creating (once per name) zero variables for names not given.
class VariableResolver {
 public:
  explicit VariableResolver(const ParseOptions& options) : options_(options) {}
  /// Throws a plain message (callers add where): a dtype or shape that disagrees with the
  /// given variable, an unknown dim, a new variable over the size limit.
  Variable resolve(const std::string& name, DType dtype, const Shape& shape);

 private:
  const ParseOptions& options_;
  std::unordered_map<std::string, Variable> created_;
};

/// The functions (graphs of function-valued attributes) a graph refers to, directly or
/// through other functions, each before any function that uses it, with the unique names
/// print_graph gives them ("<node name>.<attr name>", "_1" suffixes on clashes).
std::vector<std::pair<const Graph*, std::string>> collect_functions(const Graph& g);
/// The attribute order print_graph uses: the op's schema order, then any others by name.
std::vector<const std::pair<std::string, AttrValue>*> ordered_attrs(const Node& n);
/// Turns int values into floats where the op's schema wants a float (an empty list is
/// read as ints), then checks the attributes against the schema.
void coerce_and_check_attrs(const OpDef& def, Attrs& attrs);
}  // namespace detail

}  // namespace deepflow
