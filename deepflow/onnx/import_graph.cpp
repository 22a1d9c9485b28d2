// SPDX-License-Identifier: Apache-2.0
// The graph evaluator: walks a (sub)graph's nodes in order through the op importers,
// folding every node whose inputs are all known (computed eagerly even while tracing).
#include <onnx/defs/schema.h>

#include <set>
#include <unordered_set>

#include "deepflow/core/error.h"
#include "deepflow/onnx/import_internal.h"
#include "deepflow/ops/op.h"

namespace deepflow::onnx::detail {
namespace {

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// Random ops draw anew on every run: folding them at import time would freeze one draw.
bool never_fold(const ::onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  return op.rfind("Random", 0) == 0 || op == "Bernoulli" || op == "Multinomial";
}

void collect_free_names(const ::onnx::GraphProto& g, std::set<std::string>& out) {
  std::unordered_set<std::string> defined;
  for (const auto& i : g.input()) defined.insert(i.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) {
      if (!in.empty() && !defined.count(in)) out.insert(in);
    }
    for (const auto& a : n.attribute()) {
      std::set<std::string> inner;
      if (a.has_g()) collect_free_names(a.g(), inner);
      for (const auto& sg : a.graphs()) collect_free_names(sg, inner);
      for (const auto& name : inner) {
        if (!defined.count(name)) out.insert(name);
      }
    }
    for (const auto& o : n.output()) defined.insert(o);
  }
  for (const auto& o : g.output()) {
    if (!defined.count(o.name())) out.insert(o.name());
  }
}

// Prefixes an importer's error with the file and the node, once (an error from a nested
// subgraph already carries its own node and passes through the enclosing ones unchanged).
[[noreturn]] void rethrow_with_node(const std::string& what, const std::string& source, const std::string& node) {
  const std::string tag = "[onnx::import] ";
  if (what.rfind(tag + source + ": ", 0) == 0) throw Error(what);
  if (what.rfind(tag + node, 0) == 0) throw Error(tag + source + ": " + what.substr(tag.size()));
  throw Error(tag + source + ": " + node + ": " + what);
}

// Checks the node against ONNX's own schema for the opset (required inputs present, input
// count in range, required attributes set), so importers never see a malformed node.
void check_against_schema(const ::onnx::NodeProto& node, const GraphNodeContext& ctx, const ImportShared& shared) {
  const ::onnx::OpSchema* schema = ::onnx::OpSchemaRegistry::Schema(node.op_type(), int(shared.opset), "");
  if (schema == nullptr) return;
  const std::string where = "[onnx::import] " + shared.source + ": " + ctx.describe();
  const int n = node.input_size();
  DF_CHECK(n >= schema->min_input() && n <= schema->max_input(), where, ": ", n, " inputs, the op takes ",
           schema->min_input(), " to ", schema->max_input());
  const auto& formals = schema->inputs();
  for (int i = 0; i < n && size_t(i) < formals.size(); ++i) {
    DF_CHECK(!(formals[size_t(i)].GetOption() == ::onnx::OpSchema::Single && node.input(i).empty()), where,
             ": required input ", i, " (", formals[size_t(i)].GetName(), ") is missing");
  }
  DF_CHECK(node.output_size() >= schema->min_output() && node.output_size() <= schema->max_output(), where, ": ",
           node.output_size(), " outputs, the op has ", schema->min_output(), " to ", schema->max_output());
  for (const auto& [name, a] : schema->attributes()) {
    DF_CHECK(!a.required || ctx.attr(name) != nullptr, where, ": missing required attribute '", name, "'");
  }
}

}  // namespace

const std::vector<std::string>& ImportShared::free_names(const ::onnx::GraphProto& g) const {
  auto it = free_names_.find(&g);
  if (it != free_names_.end()) return it->second;
  std::set<std::string> names;
  collect_free_names(g, names);
  return free_names_.emplace(&g, std::vector<std::string>(names.begin(), names.end())).first->second;
}

const Tensor* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_) {
    auto it = s->values_.find(name);
    if (it != s->values_.end()) return &it->second;
  }
  return nullptr;
}

const PartialValue* Scope::find_partial(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_) {
    if (!s->values_.count(name)) continue;
    auto it = s->partial_.find(name);
    return it != s->partial_.end() ? &it->second : nullptr;
  }
  return nullptr;
}

GraphNodeContext::GraphNodeContext(const ::onnx::NodeProto& node, size_t index, const Scope& scope,
                                   const ImportShared& shared, std::string path)
    : node_(node), index_(index), scope_(scope), shared_(shared), path_(std::move(path)) {}

std::string GraphNodeContext::describe() const {
  std::string name = node_.name().empty() ? node_.op_type() + "#" + std::to_string(index_) : node_.name();
  return path_ + name + " (" + node_.op_type() + ")";
}

const PartialValue* GraphNodeContext::partial_input(size_t i) const {
  if (i >= num_inputs() || node_.input(int(i)).empty()) return nullptr;
  return scope_.find_partial(node_.input(int(i)));
}

// A partial value has no tensor to trace with (deepflow has no run-time Shape), so an
// importer that needs one fails here, naming the value.
Tensor GraphNodeContext::input(size_t i) const {
  if (i >= num_inputs()) return {};
  const std::string& name = node_.input(int(i));
  if (name.empty()) return {};
  if (const PartialValue* p = scope_.find_partial(name)) {
    fail("[onnx::import] ", describe(), ": input ", i, " (", name, ") is a shape value only partly known at import time (",
         p->to_string(), "); ", node_.op_type(), " cannot take it, as deepflow has no run-time Shape");
  }
  const Tensor* t = scope_.find(name);
  return t ? *t : Tensor();
}

std::optional<std::vector<int64_t>> GraphNodeContext::partial_shape_input(size_t i) const {
  const PartialValue* p = partial_input(i);
  if (p == nullptr) return NodeContext::partial_shape_input(i);
  std::vector<int64_t> out;
  for (const auto& e : p->elems) out.push_back(e.value ? *e.value : -1);
  return out;
}

const PartialValue* partial_input(const NodeContext& ctx, size_t i) {
  const auto* g = dynamic_cast<const GraphNodeContext*>(&ctx);
  return g ? g->partial_input(i) : nullptr;
}

std::pair<uint64_t, int> dim_root(const NodeContext& ctx, uint64_t t, int d) {
  std::pair<uint64_t, int> k{t, d};
  const auto* g = dynamic_cast<const GraphNodeContext*>(&ctx);
  if (g == nullptr) return k;
  for (auto it = g->shared().dim_alias.find(k); it != g->shared().dim_alias.end(); it = g->shared().dim_alias.find(k))
    k = it->second;
  return k;
}

void alias_dim(const NodeContext& ctx, uint64_t t, int d, uint64_t src, int sd) {
  const auto* g = dynamic_cast<const GraphNodeContext*>(&ctx);
  const auto root = dim_root(ctx, src, sd);
  if (g != nullptr && root != std::pair<uint64_t, int>{t, d}) g->shared().dim_alias[{t, d}] = root;
}

std::optional<Tensor> GraphNodeContext::known_input(size_t i) const {
  if (partial_input(i) != nullptr) return std::nullopt;
  Tensor t = input(i);
  if (is_known(t)) return t;
  return std::nullopt;
}

const ::onnx::AttributeProto* GraphNodeContext::attr(const std::string& name) const {
  for (const auto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

const ::onnx::GraphProto& GraphNodeContext::graph_proto(const std::string& name) const {
  const auto* a = attr(name);
  DF_CHECK(a != nullptr, "[onnx::import] ", describe(), ": missing graph attribute '", name, "'");
  DF_CHECK(a->has_g() && (a->type() == ::onnx::AttributeProto::GRAPH || a->type() == ::onnx::AttributeProto::UNDEFINED),
           "[onnx::import] ", describe(), ": attribute '", name, "' must be a GRAPH");
  return a->g();
}

size_t GraphNodeContext::graph_num_inputs(const std::string& name) const {
  return size_t(graph_proto(name).input_size());
}

size_t GraphNodeContext::graph_num_outputs(const std::string& name) const {
  return size_t(graph_proto(name).output_size());
}

std::function<TensorList(const TensorList&)> GraphNodeContext::attr_graph(const std::string& name) const {
  const ::onnx::GraphProto* g = &graph_proto(name);
  // The callable is used while the importer runs (cond / while_loop trace it then), so the
  // scope and the shared state it points at are alive.
  const Scope* scope = &scope_;
  const ImportShared* shared = &shared_;
  std::string path = path_ + (node_.name().empty() ? node_.op_type() + "#" + std::to_string(index_) : node_.name()) +
                     "/" + name + "/";
  return [g, scope, shared, path](const TensorList& inputs) {
    return evaluate_graph(*g, scope, inputs, *shared, path);
  };
}

bool GraphNodeContext::subgraphs_known() const {
  for (const auto& a : node_.attribute()) {
    std::vector<const ::onnx::GraphProto*> graphs;
    if (a.has_g()) graphs.push_back(&a.g());
    for (const auto& g : a.graphs()) graphs.push_back(&g);
    for (const auto* g : graphs) {
      for (const auto& n : shared_.free_names(*g)) {
        const Tensor* t = scope_.find(n);
        if (t == nullptr || !is_known(*t)) return false;
      }
    }
  }
  return true;
}

TensorList evaluate_graph(const ::onnx::GraphProto& g, const Scope* parent, const TensorList& inputs,
                          const ImportShared& shared, const std::string& path,
                          const std::map<std::string, Tensor>* initializers) {
  const std::string where = "[onnx::import] " + shared.source + ": " + (path.empty() ? "graph" : path);
  Scope scope(parent);
  if (initializers != nullptr) {
    for (const auto& [name, t] : *initializers) scope.set(name, t);
  } else {
    for (const auto& t : g.initializer()) {
      scope.set(t.name(), tensor_from_proto(t, shared.source + ": " + path + "initializer '" + t.name() + "'"));
    }
  }
  // The main graph's inputs are the non-initializer ones (the caller passes those); a
  // subgraph's are all of them.
  std::vector<const ::onnx::ValueInfoProto*> declared;
  for (const auto& in : g.input()) {
    if (initializers != nullptr && initializers->count(in.name())) continue;
    declared.push_back(&in);
  }
  DF_CHECK(inputs.size() == declared.size(), where, " takes ", declared.size(), " inputs, got ", inputs.size());
  for (size_t i = 0; i < declared.size(); ++i) scope.set(declared[i]->name(), inputs[i]);

  // Names produced by each node, to tell "not topologically sorted" from "undefined".
  std::unordered_map<std::string, size_t> producer;
  for (int k = 0; k < g.node_size(); ++k) {
    for (const auto& o : g.node(k).output()) {
      if (!o.empty()) producer.emplace(o, size_t(k));
    }
  }

  for (int k = 0; k < g.node_size(); ++k) {
    const ::onnx::NodeProto& node = g.node(k);
    GraphNodeContext ctx(node, size_t(k), scope, shared, path);
    bool all_known = true, any_partial = false;
    for (int i = 0; i < node.input_size(); ++i) {
      const std::string& in = node.input(i);
      if (in.empty()) continue;
      const Tensor* t = scope.find(in);
      if (t == nullptr) {
        auto p = producer.find(in);
        if (p != producer.end() && p->second >= size_t(k)) {
          const auto& later = g.node(int(p->second));
          fail("[onnx::import] ", shared.source, ": ", ctx.describe(), ": the graph is not topologically sorted: input '",
               in, "' is produced by a later node ", later.name().empty() ? later.op_type() : later.name(), " (",
               later.op_type(), ")");
        }
        fail("[onnx::import] ", shared.source, ": ", ctx.describe(), ": input '", in,
             "' is not a graph input, an initializer or the output of an earlier node");
      }
      if (!is_known(*t)) all_known = false;
      if (scope.find_partial(in) != nullptr) any_partial = true;
    }
    if (!is_default_domain(node.domain())) {
      fail("[onnx::import] ", shared.source, ": ", ctx.describe(), ": unsupported op domain '", node.domain(), "'");
    }
    check_against_schema(node, ctx, shared);
    const OpImporter* importer = find_op_importer(node.op_type(), shared.opset);
    DF_CHECK(importer != nullptr, "[onnx::import] ", shared.source, ": ", ctx.describe(), ": unsupported op ",
             node.op_type(), " at opset ", shared.opset);

    // Shape values partly known (a dynamic batch) fold element by element.
    if (is_default_domain(node.domain()) && (any_partial || (node.op_type() == "Shape" && !all_known))) {
      std::optional<std::vector<PartialOutput>> folded;
      try {
        folded = fold_partial(ctx);
      } catch (const Error& e) {
        rethrow_with_node(e.what(), shared.source, ctx.describe());
      }
      if (folded) {
        for (size_t o = 0; o < folded->size() && o < size_t(node.output_size()); ++o) {
          const std::string& name = node.output(int(o));
          if (name.empty()) continue;
          auto& out = (*folded)[o];
          if (out.partial) scope.set_partial(name, std::move(*out.partial));
          else scope.set(name, out.tensor);
        }
        continue;
      }
    }

    TensorList outs;
    try {
      if (all_known && !never_fold(node) && ctx.subgraphs_known()) {
        BuildScopeGuard eager(nullptr);
        outs = (*importer)(ctx);
      } else {
        outs = (*importer)(ctx);
      }
    } catch (const Error& e) {
      rethrow_with_node(e.what(), shared.source, ctx.describe());
    }

    size_t named = 0;
    for (int o = 0; o < node.output_size(); ++o) {
      if (!node.output(o).empty()) named = size_t(o) + 1;
    }
    DF_CHECK(outs.size() >= named, "[onnx::import] ", shared.source, ": ", ctx.describe(), ": the importer returned ",
             outs.size(), " outputs, the node names ", named);
    for (size_t o = 0; o < named; ++o) {
      const std::string& name = node.output(int(o));
      if (name.empty()) continue;
      DF_CHECK(outs[o].defined(), "[onnx::import] ", shared.source, ": ", ctx.describe(), ": output ", o, " (", name,
               ") is not produced");
      scope.set(name, outs[o]);
    }
  }

  TensorList results;
  for (const auto& o : g.output()) {
    const Tensor* t = scope.find(o.name());
    DF_CHECK(t != nullptr, where, ": output '", o.name(), "' is not produced by any node, initializer or input");
    if (const PartialValue* p = scope.find_partial(o.name())) {
      fail(where, ": output '", o.name(), "' is a shape value only partly known at import time (", p->to_string(),
           "), and deepflow has no run-time Shape to compute it");
    }
    results.push_back(*t);
  }
  return results;
}

}  // namespace deepflow::onnx::detail
