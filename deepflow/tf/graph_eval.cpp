// SPDX-License-Identifier: Apache-2.0
#include "deepflow/tf/graph_eval.h"

#include <charconv>
#include <optional>
#include <set>
#include <unordered_map>

#include "deepflow/core/error.h"
#include "deepflow/function/control_flow.h"
#include "deepflow/ops/op.h"
#include "deepflow/tf/graph_body.h"
#include "deepflow/tf/op_defs.h"
#include "tensorflow/function.pb.h"
#include "tensorflow/graph.pb.h"
#include "tensorflow/node_def.pb.h"
#include "tensorflow/op_def.pb.h"

namespace deepflow::tf::detail {
namespace {

using tensorflow::NodeDef;

constexpr int kMaxCallDepth = 64;
thread_local int t_call_depth = 0;

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

class BodyNodeContext : public NodeContext {
 public:
  BodyNodeContext(ImportShared& shared, const NodeDef& node, const tensorflow::OpDef* def, Values inputs,
                  std::string path)
      : shared_(shared), node_(node), def_(def), inputs_(std::move(inputs)), path_(std::move(path)) {}
  const NodeDef& node() const override { return node_; }
  std::string describe() const override { return "node '" + path_ + node_.name() + "' (" + node_.op() + ")"; }
  size_t num_inputs() const override { return inputs_.size(); }
  const Value& value(size_t i) const override {
    DF_CHECK(i < inputs_.size(), "[tf::import] ", describe(), ": needs input ", i, ", has ", inputs_.size());
    return inputs_[i];
  }
  const tensorflow::AttrValue* attr(const std::string& name) const override {
    return attr_or_default(def_, node_, name);
  }
  FunctionValue attr_func(const std::string& name, int index) const override {
    const tensorflow::AttrValue* a = attr(name);
    DF_CHECK(a, "[tf::import] ", describe(), ": no function attr '", name, "'");
    const std::string fn = index < 0 ? a->func().name() : a->list().func(index).name();
    ImportShared* shared = &shared_;
    std::string path = path_ + node_.name() + "/";
    return [shared, fn, path](const Values& args) { return call_function(*shared, fn, args, path); };
  }
  size_t num_outputs() const override { return def_ ? size_t(num_flat_outputs(*def_, node_)) : 1; }
  Tensor read_variable(size_t i) const override {
    if (!shared_.freeze_variables) return variable(i).value();
    BuildScopeGuard eager(nullptr);
    return variable(i).value();
  }

 private:
  ImportShared& shared_;
  const NodeDef& node_;
  const tensorflow::OpDef* def_;
  Values inputs_;
  std::string path_;
};

}  // namespace

TensorList tensors_of(const Values& vs, const NodeContext& c, const char* what) {
  TensorList out;
  for (const Value& v : vs) {
    DF_CHECK(v.tensor.defined(), "[tf::import] ", c.describe(), ": ", what, " must be tensors (not resources or ",
             "shape values known only at run time)");
    out.push_back(v.tensor);
  }
  return out;
}

Tensor as_predicate(const Tensor& t) {
  if (t.dtype() == DType::Bool) return t.rank() == 0 ? t : reshape(t, Shape{});
  return not_equal(t.rank() == 0 ? t : reshape(t, Shape{}), zeros_like(t.rank() == 0 ? t : reshape(t, Shape{})));
}

Body::Body(ImportShared& shared, std::vector<const NodeDef*> nodes, std::string path, bool function_body)
    : Body(shared,
           [&] {
             auto n = std::make_shared<Nodes>();
             n->list = std::move(nodes);
             for (size_t i = 0; i < n->list.size(); ++i) n->index[n->list[i]->name()] = int(i);
             return n;
           }(),
           std::move(path), function_body) {}

Body::Body(ImportShared& shared, std::shared_ptr<const Nodes> nodes, std::string path, bool function_body)
    : shared_(shared), nodes_(std::move(nodes)), path_(std::move(path)), function_body_(function_body) {
  results_.resize(nodes_->list.size());
}

const Value& Body::value(const std::string& ref) {
  auto [node, k] = parse(ref);
  if (node < 0) return bound_.at(ref_key(ref));
  run(node);
  const Values& out = *results_[size_t(node)];
  DF_CHECK(k >= 0 && size_t(k) < out.size(), "[tf::import] ", shared_.source, ": '", ref, "' names output ", k,
           " of node '", nodes_->list[size_t(node)]->name(), "', which has ", out.size());
  return out[size_t(k)];
}

void Body::run_node(const std::string& name) {
  auto it = nodes_->index.find(name);
  DF_CHECK(it != nodes_->index.end(), "[tf::import] ", shared_.source, ": no node named '", path_, name, "'");
  run(it->second);
}

std::string Body::ref_key(const std::string& ref) const {
  if (function_body_) return ref.substr(0, ref.find(':'));
  return ref.find(':') == std::string::npos ? ref + ":0" : ref;
}

namespace {

// The output index after a ':' of input string `ref`: digits only, below 2^31.
int output_index(const std::string& source, const std::string& ref, size_t from) {
  int i = -1;
  const char* end = ref.data() + ref.size();
  const auto [ptr, ec] = std::from_chars(ref.data() + from, end, i);
  DF_CHECK(ec == std::errc() && ptr == end && i >= 0, "[tf::import] ", source, ": input '", ref,
           "' has a malformed output index");
  return i;
}

}  // namespace

std::pair<int, int> Body::parse(const std::string& ref) {
  if (bound_.count(ref_key(ref))) return {-1, 0};
  const size_t c1 = ref.find(':');
  const std::string name = ref.substr(0, c1);
  auto it = nodes_->index.find(name);
  DF_CHECK(it != nodes_->index.end(), "[tf::import] ", shared_.source, ": input '", ref,
           "' names no node or argument in ", path_.empty() ? std::string("the graph") : path_);
  if (c1 == std::string::npos) return {it->second, 0};
  if (!function_body_) return {it->second, output_index(shared_.source, ref, c1 + 1)};
  // "node:out_arg:i": the producing op's output-arg name, then an index within it.
  const size_t c2 = ref.find(':', c1 + 1);
  const std::string arg = ref.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
  const int i = c2 == std::string::npos ? 0 : output_index(shared_.source, ref, c2 + 1);
  const NodeDef& n = *nodes_->list[size_t(it->second)];
  if (auto f = shared_.functions.find(n.op()); f != shared_.functions.end()) {
    const auto& outs = f->second->signature().output_arg();
    for (int k = 0; k < outs.size(); ++k) {
      if (outs[k].name() == arg) return {it->second, k + i};
    }
  } else if (const tensorflow::OpDef* def = find_op_def(n.op())) {
    const int flat = flat_output_index(*def, n, arg, i);
    if (flat >= 0) return {it->second, flat};
  }
  fail("[tf::import] ", shared_.source, ": input '", ref, "': node '", name, "' (", n.op(), ") has no output '", arg,
       "'");
}

void Body::run(int root) {
  std::vector<std::pair<int, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [i, ready] = stack.back();
    stack.pop_back();
    if (results_[size_t(i)]) continue;
    const NodeDef& n = *nodes_->list[size_t(i)];
    if (!ready && !takes_inputs_itself(n.op())) {
      DF_CHECK(!visiting_.count(i), "[tf::import] ", shared_.source, ": node '", path_, n.name(),
               "' depends on itself");
      visiting_.insert(i);
      stack.push_back({i, true});
      for (const std::string& in : n.input()) {
        const std::string ref = in[0] == '^' ? in.substr(1) : in;
        auto [dep, k] = parse(ref);
        if (dep >= 0 && !results_[size_t(dep)]) stack.push_back({dep, false});
      }
      continue;
    }
    visiting_.erase(i);
    results_[size_t(i)] = evaluate(n);
  }
}

namespace {

Values import_if(NodeContext& c) {
  Values args;
  for (size_t i = 1; i < c.num_inputs(); ++i) args.push_back(c.value(i));
  FunctionValue then_fn = c.attr_func("then_branch", -1), else_fn = c.attr_func("else_branch", -1);
  Tensor pred = as_predicate(c.input(0));
  if (!pred.is_symbolic()) return pred.item<bool>() ? then_fn(args) : else_fn(args);
  TensorList out = cond(
      pred, [&] { return tensors_of(then_fn(args), c, "If's outputs"); },
      [&] { return tensors_of(else_fn(args), c, "If's outputs"); });
  return Values(out.begin(), out.end());
}

Values import_while(NodeContext& c) {
  Values vars;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    // A shape value (a sequence length known only at run time) enters as a tensor.
    vars.push_back(c.value(i).partial ? Value(c.input(i)) : c.value(i));
  }
  FunctionValue cond_fn = c.attr_func("cond", -1), body_fn = c.attr_func("body", -1);
  // A list whose element dims are only known once an element is set (an RNN's outputs):
  // run the first iteration outside the loop when the condition is known to hold.
  // First, a dense loop variable of the element's rank whose known dims agree gives the
  // unknown ones (an RNN's output list has the shape of its state).
  for (Value& v : vars) {
    if (!v.pending_list) continue;
    const Value::PendingList& p = *v.pending_list;
    for (const Value& t : vars) {
      if (!t.tensor.defined() || t.tensor.rank() + 1 != int(p.dims.size())) continue;
      bool fits = p.dims[0] >= 0 || (!p.sources.empty() && p.sources[0].first.defined());
      std::vector<std::pair<Tensor, int>> src{p.sources.empty() ? std::pair<Tensor, int>{} : p.sources[0]};
      std::vector<int64_t> dims = p.dims;
      for (int k = 0; k < t.tensor.rank() && fits; ++k) {
        const int64_t want = p.dims[size_t(k + 1)], have = t.tensor.dim(k);
        fits = want < 0 || want == have;
        src.emplace_back(t.tensor, k);
        if (want < 0) dims[size_t(k + 1)] = have;
      }
      if (!fits) continue;
      v = Value(dynamic_zeros(c, dims, src, p.dtype));
      break;
    }
  }
  bool pending = false;
  for (const Value& v : vars) pending |= v.pending_list != nullptr;
  if (pending) {
    Values first = cond_fn(vars);
    DF_CHECK(!first.empty() && first[0].tensor.defined() && !first[0].tensor.is_symbolic() &&
                 as_predicate(first[0].tensor).item<bool>(),
             "[tf::import] ", c.describe(), ": a TensorList with dims known only at run time enters a loop that may ",
             "not run");
    vars = body_fn(vars);
    for (const Value& v : vars) {
      DF_CHECK(!v.pending_list, "[tf::import] ", c.describe(), ": the loop leaves a TensorList's element shape unknown");
    }
  }
  // Resources ride along unchanged (TF's body returns them as it got them).
  std::vector<size_t> dense;
  TensorList init;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (vars[i].variable || vars[i].table) continue;
    DF_CHECK(vars[i].tensor.defined(), "[tf::import] ", c.describe(), ": loop variable ", i,
             " must be a tensor or a resource");
    dense.push_back(i);
    init.push_back(vars[i].tensor);
  }
  auto full = [&](const TensorList& ts) {
    Values v = vars;
    for (size_t k = 0; k < dense.size(); ++k) v[dense[k]] = ts[k];
    return v;
  };
  TensorList out = while_loop(
      [&](const TensorList& ts) { return as_predicate(tensors_of(cond_fn(full(ts)), c, "While's cond")[0]); },
      [&](const TensorList& ts) {
        Values r = body_fn(full(ts));
        TensorList next;
        for (size_t k : dense) next.push_back(tensors_of({r.at(k)}, c, "While's loop variables")[0]);
        return next;
      },
      init);
  return full(out);
}

}  // namespace

Values Body::evaluate(const NodeDef& n) {
  const std::string& op = n.op();
  if (op == "Merge" || op == "RefMerge") return tf1_merge(n);
  if (op == "Exit" || op == "RefExit") return tf1_exit(n);
  DF_CHECK(!takes_inputs_itself(op), "[tf::import] ", shared_.source, ": node '", path_, n.name(), "' (", op,
           ") is reached outside its TF1 loop");
  Values inputs;
  for (const std::string& in : n.input()) {
    if (in[0] != '^') inputs.push_back(value(in));
  }
  // TF1 control flow reached as plain nodes (a cond's Switch from a control input, a
  // loop's Enter before it): their data passes through.
  if (op == "Switch" || op == "RefSwitch") return {inputs.at(0), inputs.at(0)};
  if (op == "Enter" || op == "RefEnter" || op == "LoopCond") return {inputs.at(0)};
  if (op == "Placeholder") {
    fail("[tf::import] ", shared_.source, ": placeholder '", path_, n.name(), "' needs a value (feed it)");
  }
  if (op == "PlaceholderWithDefault") return {inputs.at(0)};
  if (op == "NoOp") return {};
  if (op == "VarHandleOp") {
    const tensorflow::OpDef* def = find_op_def(op);
    BodyNodeContext c(shared_, n, def, {}, path_);
    std::string container = c.attr_string("container");
    const std::string key = (container.empty() ? "localhost" : container) + "/" + c.attr_string("shared_name");
    auto& var = shared_.variables[key];
    if (!var) {
      std::optional<Shape> shape = c.attr_shape("shape");
      DF_CHECK(shape && shape->num_elements() >= 0, "[tf::import] ", c.describe(), ": a variable needs a known shape");
      BuildScopeGuard eager(nullptr);
      var = std::make_shared<Variable>(zeros(*shape, c.attr_type("dtype")), c.attr_string("shared_name"));
    }
    Value v;
    v.variable = var;
    return {v};
  }
  if (op == "HashTableV2") {
    BodyNodeContext c(shared_, n, find_op_def(op), {}, path_);
    const std::string container = c.attr_string("container"), shared_name = c.attr_string("shared_name");
    const std::string key = (container.empty() ? "localhost" : container) + "/" +
                            (shared_name.empty() || c.attr_bool("use_node_name_sharing") ? n.name() : shared_name);
    auto& table = shared_.tables[key];
    if (!table) {
      table = std::make_shared<LookupTable>();
      table->name = key;
      table->key_dtype = c.attr_type("key_dtype");
      table->value_dtype = c.attr_type("value_dtype");
    }
    Value v;
    v.table = table;
    return {v};
  }
  if (shared_.functions.count(op)) return call_function(shared_, op, inputs, path_ + n.name() + "/");
  const tensorflow::OpDef* def = find_op_def(op);
  BodyNodeContext ctx(shared_, n, def, inputs, path_);
  try {
    if (op == "PartitionedCall" || op == "StatefulPartitionedCall") return ctx.attr_func("f", -1)(inputs);
    if (op == "If" || op == "StatelessIf") return import_if(ctx);
    if (op == "While" || op == "StatelessWhile") return import_while(ctx);
    if (op == "RestoreV2") return import_restore_v2(ctx, shared_);
    const OpImporter* importer = find_op_importer(op);
    DF_CHECK(importer, "[tf::import] ", shared_.source, ": ", ctx.describe(), ": op ", op,
             " is not supported by deepflow's TensorFlow importer");
    // Stateless nodes on values all known at import time are computed now (shape math).
    bool known = !def || !def->is_stateful();
    for (const Value& v : inputs) known &= v.tensor.defined() && !v.tensor.is_symbolic() && !v.partial;
    if (known) {
      BuildScopeGuard eager(nullptr);
      return (*importer)(ctx);
    }
    return (*importer)(ctx);
  } catch (const Error& e) {
    if (starts_with(e.what(), "[tf::import]")) throw;
    fail("[tf::import] ", shared_.source, ": ", ctx.describe(), ": ", e.what());
  }
}

void ImportShared::add_library(const tensorflow::FunctionDefLibrary& library) {
  for (const auto& f : library.function()) functions[f.signature().name()] = &f;
}

Values call_function(ImportShared& shared, const std::string& name, const Values& args, const std::string& path) {
  auto it = shared.functions.find(name);
  DF_CHECK(it != shared.functions.end(), "[tf::import] ", shared.source, ": no function '", name, "' in the library");
  const tensorflow::FunctionDef& f = *it->second;
  const auto& sig = f.signature();
  DF_CHECK(size_t(sig.input_arg_size()) == args.size(), "[tf::import] ", shared.source, ": function '", name,
           "' takes ", sig.input_arg_size(), " arguments, got ", args.size());
  DF_CHECK(t_call_depth < kMaxCallDepth, "[tf::import] ", shared.source, ": function calls nest deeper than ",
           kMaxCallDepth, " at '", name, "'");
  ++t_call_depth;
  struct Depth {
    ~Depth() { --t_call_depth; }
  } depth;
  std::vector<const NodeDef*> nodes;
  for (const auto& n : f.node_def()) nodes.push_back(&n);
  Body body(shared, std::move(nodes), path, true);
  for (int i = 0; i < sig.input_arg_size(); ++i) body.bind(sig.input_arg(i).name(), args[size_t(i)]);
  // Effects first (the restore function's assignments), then the returned values.
  for (const auto& [k, node] : f.control_ret()) body.run_node(node);
  Values out;
  for (const auto& arg : sig.output_arg()) {
    auto r = f.ret().find(arg.name());
    DF_CHECK(r != f.ret().end(), "[tf::import] ", shared.source, ": function '", name, "' returns no '", arg.name(),
             "'");
    out.push_back(body.value(r->second));
  }
  return out;
}

Values evaluate_graph(ImportShared& shared, const tensorflow::GraphDef& graph,
                      const std::map<std::string, Value>& feeds, const std::vector<std::string>& fetches) {
  std::vector<const NodeDef*> nodes;
  for (const auto& n : graph.node()) nodes.push_back(&n);
  Body body(shared, std::move(nodes), "", false);
  for (const auto& [k, v] : feeds) body.bind(k.find(':') == std::string::npos ? k + ":0" : k, v);
  Values out;
  for (const std::string& f : fetches) {
    if (f[0] == '^') {
      body.run_node(f.substr(1));
      out.emplace_back();
    } else {
      out.push_back(body.value(f));
    }
  }
  return out;
}

}  // namespace deepflow::tf::detail
