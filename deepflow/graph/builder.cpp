// SPDX-License-Identifier: Apache-2.0
#include "deepflow/graph/builder.h"

#include "deepflow/graph/node_observer.h"

#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {
thread_local GraphScope* t_graph_scope = nullptr;
thread_local NodeObserver t_node_observer;

GraphScope& require_scope(const char* what) {
  DF_CHECK(t_graph_scope, "[", what, "] needs an active GraphScope");
  return *t_graph_scope;
}
}  // namespace

NodeObserver set_node_observer(NodeObserver observer) {
  NodeObserver prev = t_node_observer;
  t_node_observer = observer;
  return prev;
}

GraphScope::GraphScope(std::shared_ptr<Graph> graph, GraphScopeOptions options)
    : graph_(std::move(graph)), options_(std::move(options)), prev_scope_(current_build_scope()),
      prev_graph_scope_(t_graph_scope) {
  DF_CHECK(graph_, "[GraphScope] needs a graph");
  t_graph_scope = this;
  detail::set_build_scope(this);
}

GraphScope::~GraphScope() {
  t_graph_scope = prev_graph_scope_;
  detail::set_build_scope(prev_scope_);
}

GraphScope* GraphScope::current() { return t_graph_scope; }

ValueRef GraphScope::input_value(const Tensor& t) {
  if (graph_->owns(t)) return graph_->value_of(t);
  if (auto it = captured_.find(t.impl()); it != captured_.end()) return it->second.second;
  ValueRef v;
  if (t.is_symbolic()) {
    DF_CHECK(options_.capture_symbolic, "[graph] a symbolic tensor of another graph (", dtype_name(t.dtype()),
             t.shape(), ") is used in this graph");
    v = options_.capture_symbolic(*graph_, t);
  } else {
    // A concrete tensor becomes a constant node (once per tensor).
    Node n;
    n.name = graph_->unique_name(prefix_ + "const");
    n.op = OpId::Const;
    n.attrs.set("value", t);
    n.outputs = {{t.dtype(), t.shape()}};
    n.device = device_;
    v = {graph_->add_node(std::move(n)), 0};
  }
  captured_.emplace(t.impl(), std::make_pair(t, v));
  return v;
}

TensorList GraphScope::add_node(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
                                const TypeList& types) {
  Node n;
  n.op = def.id;
  n.attrs = attrs;
  for (const Tensor& t : inputs) n.inputs.push_back(input_value(t));
  n.name = graph_->unique_name(prefix_ + (next_name_.empty() ? def.name : next_name_));
  next_name_.clear();
  n.outputs = types;
  n.device = device_;
  n.control_inputs = control_deps_;
  // Placeholders are inputs, not effects: they neither wait on nor order other stateful nodes
  // (a fed placeholder must not be forced to run).
  const bool ordered = def.stateful && def.id != OpId::Placeholder;
  if (options_.auto_control_dependencies && ordered && last_stateful_ >= 0) {
    bool data_dep = false;
    for (const ValueRef& v : n.inputs) data_dep |= v.node == last_stateful_;
    if (!data_dep) n.control_inputs.push_back(last_stateful_);
  }
  const int id = graph_->add_node(std::move(n));
  if (ordered) last_stateful_ = id;
  if (t_node_observer.fn) t_node_observer.fn(graph_->node(id), t_node_observer.context);
  TensorList out;
  out.reserve(types.size());
  for (int i = 0; i < int(types.size()); ++i) out.push_back(graph_->symbolic({id, i}));
  return out;
}

NameScope::NameScope(const std::string& name) {
  GraphScope& s = require_scope("NameScope");
  prev_ = s.prefix_;
  s.prefix_ += name + "/";
}
NameScope::~NameScope() {
  if (t_graph_scope) t_graph_scope->prefix_ = prev_;
}

DeviceScope::DeviceScope(const std::string& device) {
  GraphScope& s = require_scope("DeviceScope");
  prev_ = s.device_;
  s.device_ = device;
}
DeviceScope::~DeviceScope() {
  if (t_graph_scope) t_graph_scope->device_ = prev_;
}

ControlDependencies::ControlDependencies(const std::vector<Tensor>& deps) {
  GraphScope& s = require_scope("ControlDependencies");
  prev_size_ = s.control_deps_.size();
  for (const Tensor& t : deps) s.control_deps_.push_back(s.input_value(t).node);
}
ControlDependencies::~ControlDependencies() {
  if (t_graph_scope) t_graph_scope->control_deps_.resize(prev_size_);
}

Tensor placeholder(DType dtype, const Shape& shape, const std::string& name) {
  require_scope("placeholder").set_next_node_name(name);
  return placeholder(dtype, shape);
}

}  // namespace deepflow
