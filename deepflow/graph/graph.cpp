// SPDX-License-Identifier: Apache-2.0
#include "deepflow/graph/graph.h"

#include <algorithm>

namespace deepflow {

int Graph::add_node(Node n) {
  const int id = int(nodes_.size());
  // Inputs may name later nodes (parsers add nodes in file order); validate() checks them.
  for (const ValueRef& v : n.inputs)
    DF_CHECK(v.node >= 0 && v.index >= 0, "[graph] node '", n.name, "' has a dangling input ", v.node, ":", v.index);
  if (n.name.empty()) n.name = primitive_name(n.op);
  if (by_name_.count(n.name)) n.name = unique_name(n.name);
  by_name_[n.name] = id;
  nodes_.push_back(std::move(n));
  return id;
}

int Graph::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

ValueRef Graph::value(const std::string& name) const {
  std::string base = name;
  int index = 0;
  if (auto colon = name.rfind(':'); colon != std::string::npos) {
    base = name.substr(0, colon);
    index = std::atoi(name.c_str() + colon + 1);
  }
  int id = find(base);
  DF_CHECK(id >= 0, "[graph] no node named '", base, "'");
  DF_CHECK(index >= 0 && index < int(nodes_[size_t(id)].outputs.size()), "[graph] node '", base, "' has ",
           nodes_[size_t(id)].outputs.size(), " outputs, not ", index + 1);
  return {id, index};
}

std::string Graph::value_name(ValueRef v) const {
  const std::string& n = nodes_.at(size_t(v.node)).name;
  return v.index == 0 ? n : n + ":" + std::to_string(v.index);
}

const TensorType& Graph::type(ValueRef v) const { return nodes_.at(size_t(v.node)).outputs.at(size_t(v.index)); }

std::string Graph::unique_name(const std::string& base) const {
  if (!by_name_.count(base)) return base;
  for (int i = 1;; ++i) {
    std::string n = base + "_" + std::to_string(i);
    if (!by_name_.count(n)) return n;
  }
}

Tensor Graph::symbolic(ValueRef v) {
  const TensorType& t = type(v);
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = t.dtype;
  impl->shape = t.shape;
  impl->id = TensorImpl::next_id();
  impl->symbol = shared_from_this();
  impl->symbol_node = v.node;
  impl->symbol_output = v.index;
  return Tensor(std::move(impl));
}

bool Graph::owns(const Tensor& t) const {
  return t.defined() && t.is_symbolic() && t.impl()->symbol.get() == static_cast<const void*>(this);
}

ValueRef Graph::value_of(const Tensor& t) const {
  DF_CHECK(owns(t), "[graph] the tensor ", t.defined() && t.is_symbolic() ? "belongs to another graph" : "is not symbolic");
  return {t.impl()->symbol_node, t.impl()->symbol_output};
}

std::vector<int> Graph::topological_order() const {
  // Kahn's algorithm over data and control edges; nodes usually arrive in order already.
  const size_t n = nodes_.size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> users(n);
  for (size_t i = 0; i < n; ++i) {
    for (const ValueRef& v : nodes_[i].inputs) {
      DF_CHECK(v.node >= 0 && size_t(v.node) < n, "[graph] node '", nodes_[i].name, "' has a dangling input");
      users[size_t(v.node)].push_back(int(i));
      ++pending[i];
    }
    for (int c : nodes_[i].control_inputs) {
      DF_CHECK(c >= 0 && size_t(c) < n, "[graph] node '", nodes_[i].name, "' has a dangling control input");
      users[size_t(c)].push_back(int(i));
      ++pending[i];
    }
  }
  std::vector<int> order, ready;
  for (size_t i = n; i-- > 0;)
    if (pending[i] == 0) ready.push_back(int(i));
  while (!ready.empty()) {
    int id = ready.back();
    ready.pop_back();
    order.push_back(id);
    for (auto it = users[size_t(id)].rbegin(); it != users[size_t(id)].rend(); ++it)
      if (--pending[size_t(*it)] == 0) ready.push_back(*it);
  }
  if (order.size() != n) {
    for (size_t i = 0; i < n; ++i)
      if (pending[i] > 0) fail("[graph] cycle through node '", nodes_[i].name, "'");
  }
  return order;
}

TypeList infer_node(const Graph& g, const Node& n) {
  TensorList ins;
  for (const ValueRef& v : n.inputs) {
    const TensorType& t = g.type(v);
    auto impl = std::make_shared<TensorImpl>();
    impl->dtype = t.dtype;
    impl->shape = t.shape;
    ins.emplace_back(std::move(impl));
  }
  try {
    return infer_types(n.op, ins, n.attrs);
  } catch (const Error& e) {
    fail("[graph] node '", n.name, "': ", e.what());
  }
}

void Graph::validate() const {
  for (const Node& n : nodes_) {
    DF_CHECK(find_op_def(n.op), "[graph] node '", n.name, "' has an unknown op");
  }
  for (const Node& n : nodes_)
    for (const ValueRef& v : n.inputs)
      DF_CHECK(v.node < num_nodes() && v.index < int(nodes_[size_t(v.node)].outputs.size()), "[graph] node '", n.name,
               "' has a dangling input ", v.node, ":", v.index);
  topological_order();  // control inputs and cycles
  for (const Node& n : nodes_) {
    TypeList types = infer_node(*this, n);
    DF_CHECK(types.size() == n.outputs.size(), "[graph] node '", n.name, "' (", n.def().name, ") records ",
             n.outputs.size(), " outputs, its op gives ", types.size());
    for (size_t i = 0; i < types.size(); ++i) {
      DF_CHECK(types[i].dtype == n.outputs[i].dtype, "[graph] node '", n.name, "' output ", i, " is recorded as ",
               dtype_name(n.outputs[i].dtype), ", its op gives ", dtype_name(types[i].dtype));
      DF_CHECK(types[i].shape.compatible_with(n.outputs[i].shape), "[graph] node '", n.name, "' output ", i,
               " is recorded as ", n.outputs[i].shape, ", its op gives ", types[i].shape);
    }
  }
  for (int i : inputs)
    DF_CHECK(i >= 0 && i < num_nodes() && nodes_[size_t(i)].op == OpId::Placeholder,
             "[graph] function input ", i, " is not a placeholder node");
  for (const ValueRef& v : outputs)
    DF_CHECK(v.node >= 0 && v.node < num_nodes() && v.index < int(nodes_[size_t(v.node)].outputs.size()),
             "[graph] function output ", v.node, ":", v.index, " does not exist");
}

}  // namespace deepflow
