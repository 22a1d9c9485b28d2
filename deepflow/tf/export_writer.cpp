// SPDX-License-Identifier: Apache-2.0
// The TensorFlow exporter's function writer: one deepflow graph becomes the body of one
// FunctionDef, node by node through the table of export_ops_*.cpp, with inputs named the
// way FunctionDefs name them ("node:out_arg:i").
#include <algorithm>
#include <cctype>
#include <climits>

#include "deepflow/core/error.h"
#include "deepflow/graph/passes.h"
#include "deepflow/tf/dtype.h"
#include "deepflow/tf/export_internal.h"

namespace deepflow::tf::detail {

namespace pb = ::tensorflow;

std::string clean_node_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == '/';
    out += ok ? c : '_';
  }
  while (!out.empty() && out.back() == '/') out.pop_back();
  if (out.empty()) return "node";
  if (!std::isalnum(static_cast<unsigned char>(out[0])) && out[0] != '.') out = "n" + out;
  return out;
}

std::string clean_arg_name(const std::string& name, const std::string& fallback) {
  std::string out;
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    out += std::isalnum(u) ? char(std::tolower(u)) : '_';
  }
  if (out.empty() || !std::islower(static_cast<unsigned char>(out[0]))) return fallback;
  return out;
}

std::string strip_export_prefix(const std::string& what) {
  const std::string prefix = "[tf::export] ";
  return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}

// --- attributes ---

void set_type(pb::NodeDef* n, const std::string& a, DType t) {
  (*n->mutable_attr())[a].set_type(pb::DataType(tf_dtype(t)));
}
void set_int(pb::NodeDef* n, const std::string& a, int64_t v) { (*n->mutable_attr())[a].set_i(v); }
void set_bool(pb::NodeDef* n, const std::string& a, bool v) { (*n->mutable_attr())[a].set_b(v); }
void set_float(pb::NodeDef* n, const std::string& a, double v) { (*n->mutable_attr())[a].set_f(float(v)); }
void set_string(pb::NodeDef* n, const std::string& a, const std::string& v) { (*n->mutable_attr())[a].set_s(v); }
void set_ints(pb::NodeDef* n, const std::string& a, const std::vector<int64_t>& v) {
  auto* list = (*n->mutable_attr())[a].mutable_list();
  for (int64_t x : v) list->add_i(x);
}
void set_types(pb::NodeDef* n, const std::string& a, const std::vector<int>& v) {
  auto* list = (*n->mutable_attr())[a].mutable_list();
  for (int x : v) list->add_type(pb::DataType(x));
}

void set_shape_proto(pb::TensorShapeProto* out, const Shape& s) {
  for (int64_t d : s) out->add_dim()->set_size(d < 0 ? -1 : d);
}

void set_tensor_proto(pb::TensorProto* out, const Tensor& t) {
  out->set_dtype(pb::DataType(tf_dtype(t.dtype())));
  set_shape_proto(out->mutable_tensor_shape(), t.shape());
  if (t.dtype() == DType::String) {
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < t.size(); ++i) out->add_string_val(s[i]);
    return;
  }
  out->set_tensor_content(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
}

// --- FunctionWriter ---

const std::string& FunctionWriter::name(ValueRef v) const {
  auto it = names_.find({v.node, v.index});
  DF_CHECK(it != names_.end(), "[tf::export] value '", g_.value_name(v), "' was not written");
  return it->second;
}

std::string FunctionWriter::fresh(const std::string& base) {
  const std::string b = clean_node_name(base);
  if (used_.insert(b).second) return b;
  for (int k = 1;; ++k) {
    std::string c = b + "_" + std::to_string(k);
    if (used_.insert(c).second) return c;
  }
}

pb::NodeDef* FunctionWriter::add(const std::string& op, const std::string& base, const std::vector<std::string>& inputs) {
  pb::NodeDef* n = out_->add_node_def();
  n->set_name(fresh(base));
  n->set_op(op);
  for (const auto& i : inputs) n->add_input(i);
  return n;
}

std::string FunctionWriter::constant(const Tensor& t, const std::string& base) {
  pb::NodeDef* n = add("Const", base, {});
  set_type(n, "dtype", t.dtype());
  set_tensor_proto((*n->mutable_attr())["value"].mutable_tensor(), t);
  return n->name() + ":output:0";
}

std::string FunctionWriter::ints(const std::vector<int64_t>& v, const std::string& base, DType dtype) {
  Tensor t(Shape{int64_t(v.size())}, dtype);
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::Int64) {
      t.data<int64_t>()[i] = v[i];
    } else {
      // int32 shapes and slice bounds: clamp the int64 sentinels (INT64_MAX: "to the end").
      t.data<int32_t>()[i] = int32_t(std::clamp<int64_t>(v[i], INT32_MIN, INT32_MAX));
    }
  }
  return constant(t, base);
}

std::string FunctionWriter::scalar(double v, DType d, const std::string& base) {
  return constant(deepflow::scalar(v, d), base);
}

// --- NodeExport ---

namespace {
OpCall attr_call(const Node& n) { return OpCall{&n.def(), {}, &n.attrs, {}}; }
}  // namespace

std::optional<Tensor> NodeExport::in_constant(int i) const {
  const Node& n = w.graph().node(node.inputs.at(size_t(i)).node);
  if (n.op == OpId::Const) return std::get<Tensor>(*n.attrs.find("value"));
  return std::nullopt;
}
bool NodeExport::attr_bool(const char* n) const { return attr_call(node).attr_bool(n); }
int64_t NodeExport::attr_int(const char* n) const { return attr_call(node).attr_int(n); }
double NodeExport::attr_float(const char* n) const { return attr_call(node).attr_float(n); }
const std::string& NodeExport::attr_string(const char* n) const { return attr_call(node).attr_string(n); }
DType NodeExport::attr_dtype(const char* n) const { return attr_call(node).attr_dtype(n); }
const std::vector<int64_t>& NodeExport::attr_ints(const char* n) const { return attr_call(node).attr_ints(n); }

pb::NodeDef* NodeExport::add(const std::string& op, const std::vector<std::string>& inputs, std::optional<DType> t) {
  pb::NodeDef* n = w.add(op, node.name + "/" + op, inputs);
  if (t) set_type(n, "T", *t);
  return n;
}

std::string NodeExport::describe() const { return "[tf::export] node '" + node.name + "' (" + node.def().name + ")"; }

// --- the body ---

std::vector<std::string> write_body(const Graph& traced, const std::vector<std::string>& arg_names,
                                    pb::FunctionDef* fd, std::vector<Variable>* resources) {
  Graph g(traced);
  expand_conv_chains(g);  // TF has no conv chain: write its layers
  DF_CHECK(arg_names.size() == g.inputs.size(), "[tf::export] ", g.inputs.size(), " inputs but ", arg_names.size(),
           " argument names");
  // The nodes the outputs depend on.
  std::vector<bool> live(size_t(g.num_nodes()), false);
  std::vector<int> stack;
  for (ValueRef v : g.outputs) stack.push_back(v.node);
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    if (live[size_t(id)]) continue;
    live[size_t(id)] = true;
    for (ValueRef v : g.node(id).inputs) stack.push_back(v.node);
    for (int c : g.node(id).control_inputs) stack.push_back(c);
  }
  const auto& table = export_table();
  std::string unmapped;
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    const bool source = n.op == OpId::Placeholder || n.op == OpId::ReadVariable || n.op == OpId::NoOp;
    if (n.op == OpId::AssignVariable)
      fail("[tf::export] node '", n.name, "' (assign_variable): functions that assign variables are not exported");
    if (!live[size_t(id)] || source || table.count(n.op)) continue;
    unmapped += (unmapped.empty() ? "" : ", ") + ("'" + n.name + "' (" + n.def().name + ")");
  }
  DF_CHECK(unmapped.empty(), "[tf::export] no TensorFlow op for node(s) ", unmapped);

  FunctionWriter w(g, fd);
  for (const std::string& a : arg_names) w.fresh(a);  // argument names are taken
  for (size_t i = 0; i < g.inputs.size(); ++i) w.set_name({g.inputs[i], 0}, arg_names[i]);
  std::map<uint64_t, std::string> reads;  // variable id -> its ReadVariableOp value
  for (int id : g.topological_order()) {
    if (!live[size_t(id)]) continue;
    const Node& n = g.node(id);
    if (n.op == OpId::Placeholder) {
      DF_CHECK(w.graph().find(n.name) >= 0 && std::find(g.inputs.begin(), g.inputs.end(), id) != g.inputs.end(),
               "[tf::export] placeholder '", n.name, "' is not a function input");
      continue;
    }
    if (n.op == OpId::NoOp) continue;
    if (n.op == OpId::ReadVariable) {
      const Variable& var = std::get<Variable>(*n.attrs.find("variable"));
      auto it = reads.find(var.id());
      if (it == reads.end()) {
        const std::string arg = clean_arg_name(var.name(), "resource") + "_readvariableop_resource";
        std::string arg_name = w.fresh(arg);
        for (char& c : arg_name)
          if (c == '/' || c == '.' || c == '-') c = '_';
        resources->push_back(var);
        auto* a = fd->mutable_signature()->add_input_arg();
        a->set_name(arg_name);
        a->set_type(pb::DT_RESOURCE);
        auto* hd = a->add_handle_data();
        hd->set_dtype(pb::DataType(tf_dtype(var.dtype())));
        set_shape_proto(hd->mutable_shape(), var.shape());
        pb::NodeDef* r = w.add("ReadVariableOp", n.name + "/ReadVariableOp", {arg_name});
        set_type(r, "dtype", var.dtype());
        it = reads.emplace(var.id(), r->name() + ":value:0").first;
      }
      w.set_name({id, 0}, it->second);
      continue;
    }
    NodeExport e{n, w, {}, {}};
    for (ValueRef v : n.inputs) e.in.push_back(w.name(v));
    try {
      table.at(n.op)(e);
    } catch (const Error& err) {
      const std::string what = err.what();
      if (what.rfind("[tf::export]", 0) == 0) throw;
      fail(e.describe(), ": ", what);
    }
    for (size_t k = 0; k < e.out.size(); ++k) w.set_name({id, int(k)}, e.out[k]);
  }
  std::vector<std::string> outs;
  for (size_t j = 0; j < g.outputs.size(); ++j) {
    const ValueRef v = g.outputs[j];
    pb::NodeDef* id = w.add("Identity", j == 0 ? "Identity" : "Identity_" + std::to_string(j), {w.name(v)});
    set_type(id, "T", g.type(v).dtype);
    outs.push_back(id->name() + ":output:0");
  }
  return outs;
}

}  // namespace deepflow::tf::detail
