// SPDX-License-Identifier: Apache-2.0
// ONNX export: walks a deepflow graph, maps each node through the table of export_ops.cpp,
// tidies the result (back-to-back transposes, dead nodes) and checks it with libonnx.
#include "deepflow/onnx/export.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <unistd.h>

#include "deepflow/core/error.h"
#include "deepflow/graph/passes.h"
#include "deepflow/keras/model.h"
#include "deepflow/onnx/export_internal.h"
#include "deepflow/onnx/op_importer.h"
#include "deepflow/ops/ops.h"

namespace deepflow::onnx {
namespace detail {

// --- ExportContext ---

const std::string& ExportContext::name(ValueRef v) const {
  auto it = names_.find({v.node, v.index});
  DF_CHECK(it != names_.end(), "[onnx::export] value '", g_.value_name(v), "' was not exported");
  return it->second;
}
void ExportContext::set_name(ValueRef v, std::string name) { names_[{v.node, v.index}] = std::move(name); }
bool ExportContext::has_name(ValueRef v) const { return names_.count({v.node, v.index}) > 0; }

std::optional<Tensor> ExportContext::constant(ValueRef v) const {
  const Node& n = g_.node(v.node);
  if (n.op == OpId::Const) return std::get<Tensor>(*n.attrs.find("value"));
  if (n.op == OpId::ReadVariable) return std::get<Variable>(*n.attrs.find("variable")).value();
  return std::nullopt;
}

bool ExportContext::claim(const std::string& name) { return used_.emplace(name, 0).second; }

std::string ExportContext::fresh(const std::string& base) {
  const std::string b = base.empty() ? "v" : base;
  if (claim(b)) return b;
  for (int& k = used_[b];;) {
    std::string candidate = b + "_" + std::to_string(++k);
    if (claim(candidate)) return candidate;
  }
}

::onnx::NodeProto* ExportContext::add(const std::string& op_type, const std::vector<std::string>& inputs,
                                      const std::vector<std::string>& outputs) {
  ::onnx::NodeProto* n = out_->add_node();
  n->set_op_type(op_type);
  n->set_name(node_count_ == 0 ? prefix_ : prefix_ + "/" + op_type + "_" + std::to_string(node_count_));
  ++node_count_;
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

std::string ExportContext::add1(const std::string& op_type, const std::vector<std::string>& inputs,
                                const std::string& base, ::onnx::NodeProto** node) {
  std::string out = fresh(base);
  ::onnx::NodeProto* n = add(op_type, inputs, {out});
  if (node) *node = n;
  return out;
}

std::string ExportContext::initializer(const Tensor& t, const std::string& base) {
  std::string name = fresh(base);
  *out_->add_initializer() = tensor_to_proto(t, name);
  return name;
}

std::string ExportContext::ints(const std::vector<int64_t>& v, const std::string& base) {
  std::string key;
  for (int64_t x : v) key += std::to_string(x) + ",";
  auto it = int_consts_.find(key);
  if (it != int_consts_.end()) return it->second;
  std::string name = initializer(deepflow::constant<int64_t>(v, Shape{int64_t(v.size())}), base);
  int_consts_[key] = name;
  return name;
}

std::string ExportContext::scalar(double v, DType d, const std::string& base) {
  return initializer(deepflow::scalar(v, d), base);
}

// --- attributes and tensors ---

void set_attr(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}
void set_attr(::onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void set_attr(::onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}
void set_attr(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void set_attr(::onnx::NodeProto* n, const std::string& name, const ::onnx::TensorProto& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::TENSOR);
  *a->mutable_t() = v;
}

::onnx::TensorProto tensor_to_proto(const Tensor& t, const std::string& name) {
  ::onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.shape()) p.add_dims(d);
  if (t.dtype() == DType::String) {
    for (const std::string& s : t.to_vector<std::string>()) p.add_string_data(s);
    return p;
  }
  // Tensor storage is contiguous and row-major, little-endian like ONNX's raw_data.
  if (t.size() > 0) p.set_raw_data(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
  return p;
}

// --- NodeExport ---

namespace {
OpCall attr_call(const Node& n) { return OpCall{&n.def(), {}, &n.attrs, {}}; }
}  // namespace
bool NodeExport::attr_bool(const char* n) const { return attr_call(node).attr_bool(n); }
int64_t NodeExport::attr_int(const char* n) const { return attr_call(node).attr_int(n); }
double NodeExport::attr_float(const char* n) const { return attr_call(node).attr_float(n); }
const std::string& NodeExport::attr_string(const char* n) const { return attr_call(node).attr_string(n); }
DType NodeExport::attr_dtype(const char* n) const { return attr_call(node).attr_dtype(n); }
const std::vector<int64_t>& NodeExport::attr_ints(const char* n) const { return attr_call(node).attr_ints(n); }
std::string NodeExport::out_name(int i) {
  std::string& o = out.at(size_t(i));
  if (o.empty()) o = cx.fresh(node.name + "_unused_" + std::to_string(i));
  return o;
}
std::string NodeExport::describe() const {
  return "[onnx::export] node '" + node.name + "' (" + node.def().name + ")";
}

}  // namespace detail

namespace {

using detail::ExportContext;
using detail::NodeExport;

// "d<i>_<k>": built by append (GCC 12 warns falsely on chains of operator+).
std::string dim_name(const char* prefix, size_t i, int k) {
  std::string s(prefix);
  s.append(std::to_string(i)).append("_").append(std::to_string(k));
  return s;
}

bool is_source(OpId op) { return op == OpId::Const || op == OpId::ReadVariable || op == OpId::Placeholder; }

void set_value_info(::onnx::ValueInfoProto* v, const std::string& name, const TensorType& t,
                    const std::function<std::string(int)>& dim_param) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(t.dtype));
  auto* shape = tt->mutable_shape();
  for (int k = 0; k < t.shape.rank(); ++k) {
    auto* d = shape->add_dim();
    if (t.shape[k] >= 0) d->set_dim_value(t.shape[k]);
    else d->set_dim_param(dim_param(k));
  }
}

std::vector<int64_t> perm_of(const ::onnx::NodeProto& n) {
  for (const auto& a : n.attribute())
    if (a.name() == "perm") return {a.ints().begin(), a.ints().end()};
  return {};
}

// Conv and pooling are NCHW in ONNX and NHWC here, so each is wrapped in transposes; a
// transpose fed by another one becomes one transpose of the first's input (or vanishes).
void fold_transposes(::onnx::GraphProto* g) {
  std::map<std::string, int> producer;
  for (int i = 0; i < g->node_size(); ++i)
    for (const auto& o : g->node(i).output()) producer[o] = i;
  std::set<std::string> graph_outputs;
  for (const auto& o : g->output()) graph_outputs.insert(o.name());
  std::map<std::string, std::string> rename;
  for (int i = 0; i < g->node_size(); ++i) {
    ::onnx::NodeProto* n = g->mutable_node(i);
    for (auto& in : *n->mutable_input())
      if (auto it = rename.find(in); it != rename.end()) in = it->second;
    if (n->op_type() != "Transpose") continue;
    auto it = producer.find(n->input(0));
    if (it == producer.end() || g->node(it->second).op_type() != "Transpose") continue;
    const ::onnx::NodeProto& first = g->node(it->second);
    const std::vector<int64_t> p1 = perm_of(first), p2 = perm_of(*n);
    if (p1.empty() || p1.size() != p2.size()) continue;
    std::vector<int64_t> q(p2.size());
    bool identity = true;
    for (size_t k = 0; k < q.size(); ++k) {
      q[k] = p1[size_t(p2[k])];
      identity = identity && q[k] == int64_t(k);
    }
    const std::string source = first.input(0);
    if (identity && !graph_outputs.count(n->output(0))) {
      rename[n->output(0)] = source;
      n->clear_input();  // dead now; removed below
      n->set_op_type("");
      continue;
    }
    n->set_input(0, source);
    n->clear_attribute();
    if (identity) {
      n->set_op_type("Identity");
    } else {
      detail::set_attr(n, "perm", q);
    }
  }
  // Drop nodes nobody reads (the emptied ones, and transposes bypassed above), then
  // initializers nobody reads.
  for (bool changed = true; changed;) {
    changed = false;
    std::set<std::string> used(graph_outputs);
    for (const auto& n : g->node())
      for (const auto& in : n.input()) used.insert(in);
    google::protobuf::RepeatedPtrField<::onnx::NodeProto> kept;
    for (auto& n : *g->mutable_node()) {
      bool live = !n.op_type().empty() && std::any_of(n.output().begin(), n.output().end(),
                                                      [&](const std::string& o) { return used.count(o) > 0; });
      if (live) *kept.Add() = std::move(n);
      else changed = true;
    }
    g->mutable_node()->Swap(&kept);
  }
  std::set<std::string> used(graph_outputs);
  for (const auto& n : g->node())
    for (const auto& in : n.input()) used.insert(in);
  google::protobuf::RepeatedPtrField<::onnx::TensorProto> inits;
  for (auto& t : *g->mutable_initializer())
    if (used.count(t.name())) *inits.Add() = std::move(t);
  g->mutable_initializer()->Swap(&inits);
}

void check(::onnx::ModelProto& m) {
  try {
    ::onnx::checker::check_model(m);
    // onnx.checker.check_model(full_check=True): strict shape inference with type checks.
    ::onnx::shape_inference::InferShapes(m, ::onnx::OpSchemaRegistry::Instance(),
                                         ::onnx::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception& e) {
    fail("[onnx::export] the exported model fails onnx::checker: ", e.what());
  }
}

std::string build_model(const Graph& g, const ExportOptions& o) {
  if (std::any_of(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.op == OpId::FusedConvChain; })) {
    Graph convs(g);  // ONNX has no conv chain: write its layers
    expand_conv_chains(convs);
    return build_model(convs, o);
  }
  DF_CHECK(o.opset >= 13 && o.opset <= 17, "[onnx::export] opset ", o.opset, " is not supported (13 to 17)");
  const size_t n_in = g.inputs.size(), n_out = g.outputs.size();
  DF_CHECK(o.input_names.empty() || o.input_names.size() == n_in, "[onnx::export] the graph takes ", n_in,
           " inputs but ", o.input_names.size(), " input names were given");
  DF_CHECK(o.output_names.empty() || o.output_names.size() == n_out, "[onnx::export] the graph returns ", n_out,
           " outputs but ", o.output_names.size(), " output names were given");
  DF_CHECK(n_out > 0, "[onnx::export] the graph has no outputs");

  // The nodes the outputs depend on (side effects such as assign_variable are not exported).
  std::vector<bool> live(size_t(g.num_nodes()), false);
  std::vector<int> stack;
  for (ValueRef v : g.outputs) stack.push_back(v.node);
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (live[size_t(id)]) continue;
    live[size_t(id)] = true;
    for (ValueRef v : g.node(id).inputs) stack.push_back(v.node);
  }
  std::set<std::pair<int, int>> used;
  for (int id = 0; id < g.num_nodes(); ++id)
    if (live[size_t(id)])
      for (ValueRef v : g.node(id).inputs) used.insert({v.node, v.index});
  for (ValueRef v : g.outputs) used.insert({v.node, v.index});

  const auto& table = detail::export_table();
  std::vector<std::string> unmapped;
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (!live[size_t(id)] || is_source(n.op) || table.count(n.op)) continue;
    unmapped.push_back("'" + n.name + "' (" + n.def().name + ")");
  }
  if (!unmapped.empty()) {
    std::string list;
    for (const auto& u : unmapped) list += (list.empty() ? "" : ", ") + u;
    fail("[onnx::export] ", unmapped.size(), " node(s) have no ONNX mapping: ", list);
  }

  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("deepflow");
  model.set_producer_version("0.1");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(o.opset);
  ::onnx::GraphProto* gp = model.mutable_graph();
  gp->set_name(o.graph_name);
  ExportContext cx(g, gp, o.opset);

  std::set<int> inputs;
  for (size_t i = 0; i < n_in; ++i) {
    const int id = g.inputs[i];
    const Node& ph = g.node(id);
    DF_CHECK(ph.op == OpId::Placeholder, "[onnx::export] graph input ", i, " ('", ph.name, "') is a ",
             ph.def().name, " node, not a placeholder");
    const std::string name = o.input_names.empty() ? "input_" + std::to_string(i) : o.input_names[i];
    DF_CHECK(!name.empty() && cx.claim(name), "[onnx::export] input name '", name, "' is empty or used twice");
    cx.set_name({id, 0}, name);
    inputs.insert(id);
    set_value_info(gp->add_input(), name, ph.outputs.at(0), [i](int k) {
      return k == 0 ? std::string("batch") : dim_name("d", i, k);
    });
  }
  // An output made by a node takes the output's name directly; any other (an input, a
  // constant, a value returned twice) goes through an Identity.
  std::vector<std::string> out_names(n_out);
  std::map<std::pair<int, int>, std::string> direct;
  for (size_t j = 0; j < n_out; ++j) {
    out_names[j] = o.output_names.empty() ? "output_" + std::to_string(j) : o.output_names[j];
    DF_CHECK(!out_names[j].empty() && cx.claim(out_names[j]), "[onnx::export] output name '", out_names[j],
             "' is empty or used twice");
    const ValueRef v = g.outputs[j];
    if (!is_source(g.node(v.node).op)) direct.emplace(std::make_pair(v.node, v.index), out_names[j]);
  }

  std::map<uint64_t, std::string> variables;
  for (int id : g.topological_order()) {
    if (!live[size_t(id)]) continue;
    const Node& n = g.node(id);
    cx.set_node_prefix(n.name);
    if (n.op == OpId::Placeholder) {
      DF_CHECK(inputs.count(id), "[onnx::export] placeholder '", n.name, "' is not a graph input");
      continue;
    }
    if (n.op == OpId::Const) {
      cx.set_name({id, 0}, cx.initializer(std::get<Tensor>(*n.attrs.find("value")), n.name));
      continue;
    }
    if (n.op == OpId::ReadVariable) {
      const Variable& var = std::get<Variable>(*n.attrs.find("variable"));
      auto it = variables.find(var.id());
      if (it == variables.end()) it = variables.emplace(var.id(), cx.initializer(var.value(), var.name())).first;
      cx.set_name({id, 0}, it->second);
      continue;
    }
    NodeExport e{n, cx, {}, {}};
    for (ValueRef v : n.inputs) e.in.push_back(cx.name(v));
    for (int k = 0; k < int(n.outputs.size()); ++k) {
      auto d = direct.find({id, k});
      if (d != direct.end()) e.out.push_back(d->second);
      else if (used.count({id, k})) e.out.push_back(cx.fresh(g.value_name({id, k})));
      else e.out.emplace_back();
    }
    try {
      table.at(n.op)(e);
    } catch (const Error& err) {
      const std::string what = err.what();
      if (what.rfind("[onnx::export]", 0) == 0) throw;
      fail(e.describe(), ": ", what);
    }
    for (int k = 0; k < int(n.outputs.size()); ++k)
      if (!e.out[size_t(k)].empty()) cx.set_name({id, k}, e.out[size_t(k)]);
  }
  for (size_t j = 0; j < n_out; ++j) {
    const ValueRef v = g.outputs[j];
    const std::string& have = cx.name(v);
    if (have != out_names[j]) {
      cx.set_node_prefix(out_names[j]);
      cx.add("Identity", {have}, {out_names[j]});
    }
    set_value_info(gp->add_output(), out_names[j], g.type(v), [j](int k) {
      return k == 0 ? std::string("batch") : dim_name("out", j, k);
    });
  }
  fold_transposes(gp);
  check(model);
  std::string bytes;
  DF_CHECK(model.SerializeToString(&bytes), "[onnx::export] cannot serialize the ModelProto");
  return bytes;
}

void write_atomically(const std::string& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmp_name = ".";
  tmp_name.append(target.filename().string()).append(".tmp-").append(std::to_string(::getpid()));
  const std::string tmp = (dir / tmp_name).string();
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    DF_CHECK(f.good(), "[onnx::export] cannot write ", path, ": cannot create ", tmp);
    f.write(bytes.data(), std::streamsize(bytes.size()));
    f.flush();
    if (!f.good()) {
      std::error_code ec;
      fs::remove(tmp, ec);
      fail("[onnx::export] cannot write ", path, " (", tmp, ")");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    fail("[onnx::export] cannot rename ", tmp, " to ", path, ": ", ec.message());
  }
}

}  // namespace

std::string export_to_bytes(const ConcreteFunction& fn, const ExportOptions& options) {
  DF_CHECK(fn.defined(), "[onnx::export] the concrete function is undefined");
  return build_model(options.optimized ? fn.optimized_graph() : fn.graph(), options);
}

void export_model(const ConcreteFunction& fn, const std::string& path, const ExportOptions& options) {
  write_atomically(path, export_to_bytes(fn, options));
}

std::string export_graph_to_bytes(const Graph& graph, const ExportOptions& options) {
  return build_model(graph, options);
}

void export_graph(const Graph& graph, const std::string& path, const ExportOptions& options) {
  write_atomically(path, build_model(graph, options));
}

void export_keras_model(keras::Model& model, const std::string& path, const ExportOptions& options) {
  Signature sig;
  for (const Tensor& t : model.inputs()) {
    Shape s = t.shape();
    if (s.rank() > 0) s[0] = -1;
    sig.push_back({t.dtype(), s});
  }
  if (sig.empty()) {
    DF_CHECK(!model.input_shapes().empty(), "[onnx::export] Keras model '", model.name(),
             "' has never been called, so its input signature is unknown: call it once first");
    for (Shape s : model.input_shapes()) {
      if (s.rank() > 0) s[0] = -1;
      sig.push_back({DType::Float32, s});
    }
  }
  Function serve = function([&model](const TensorList& xs) { return model(xs, false); },
                            FunctionOptions{.name = model.name(), .input_signature = sig});
  export_model(serve.get_concrete_function(), path, options);
}

std::vector<std::string> exportable_ops() {
  std::vector<std::string> ops;
  for (const auto& [id, fn] : detail::export_table()) ops.push_back(op_def(id).name);
  for (OpId id : {OpId::Const, OpId::Placeholder, OpId::ReadVariable}) ops.push_back(op_def(id).name);
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace deepflow::onnx
