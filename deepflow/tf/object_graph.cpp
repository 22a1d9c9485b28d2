// SPDX-License-Identifier: Apache-2.0
#include "deepflow/tf/object_graph.h"

#include <deque>

#include "deepflow/core/error.h"
#include "tensorflow/trackable_object_graph.pb.h"

namespace deepflow::tf {

using TrackableObject = tensorflow::TrackableObjectGraph::TrackableObject;

std::string escape_local_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '.') out += "..";
    else if (c == '/') out += ".S";
    else out += c;
  }
  return out;
}

std::vector<ObjectTensor> object_graph_tensors(const tensorflow::TrackableObjectGraph& graph) {
  const int n = graph.nodes_size();
  std::vector<std::string> path(static_cast<size_t>(n));
  std::vector<bool> seen(static_cast<size_t>(n), false);
  std::vector<int> order;
  std::deque<int> queue;
  if (n > 0) {
    seen[0] = true;
    queue.push_back(0);
  }
  auto visit = [&](int id, std::string p) {
    if (id < 0 || id >= n || seen[size_t(id)]) return;
    seen[size_t(id)] = true;
    path[size_t(id)] = std::move(p);
    queue.push_back(id);
  };
  while (!queue.empty()) {
    const int id = queue.front();
    queue.pop_front();
    order.push_back(id);
    const std::string& base = path[size_t(id)];
    for (const auto& child : graph.nodes(id).children())
      visit(child.node_id(), base.empty() ? escape_local_name(child.local_name())
                                          : base + "/" + escape_local_name(child.local_name()));
  }
  // Slots hang off the optimizer: <variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot>,
  // once every variable has its path.
  const size_t reached = order.size();
  for (size_t i = 0; i < reached; ++i) {
    const int id = order[i];
    for (const auto& slot : graph.nodes(id).slot_variables()) {
      const int var = slot.original_variable_node_id();
      if (var < 0 || var >= n || !seen[size_t(var)]) continue;
      const int before = int(queue.size());
      visit(slot.slot_variable_node_id(), path[size_t(var)] + "/.OPTIMIZER_SLOT/" + path[size_t(id)] + "/" +
                                              escape_local_name(slot.slot_name()));
      if (int(queue.size()) > before) {
        order.push_back(queue.back());
        queue.pop_back();
      }
    }
  }
  std::vector<ObjectTensor> out;
  for (int id : order)
    for (const auto& a : graph.nodes(id).attributes()) out.push_back({path[size_t(id)], a.name(), a.checkpoint_key(), id});
  return out;
}

ObjectGraphBuilder::ObjectGraphBuilder() : graph_(std::make_unique<tensorflow::TrackableObjectGraph>()) {
  graph_->add_nodes();  // the root
}

ObjectGraphBuilder::~ObjectGraphBuilder() = default;

namespace {
std::string join(const std::vector<std::string>& path) {
  std::string out;
  for (const std::string& p : path) {
    if (!out.empty()) out += '/';
    out += escape_local_name(p);
  }
  return out;
}
}  // namespace

int ObjectGraphBuilder::find(const std::vector<std::string>& path) const {
  int id = 0;
  for (const std::string& name : path) {
    int next = -1;
    for (const auto& c : graph_->nodes(id).children())
      if (c.local_name() == name) next = c.node_id();
    if (next < 0) return -1;
    id = next;
  }
  return id;
}

bool ObjectGraphBuilder::has(const std::vector<std::string>& path) const { return find(path) >= 0; }

int ObjectGraphBuilder::node(const std::vector<std::string>& path, bool create) {
  int id = 0;
  for (const std::string& name : path) {
    int next = -1;
    for (const auto& c : graph_->nodes(id).children())
      if (c.local_name() == name) next = c.node_id();
    if (next < 0) {
      DF_CHECK(create, "[tf::ObjectGraphBuilder] no object at '", join(path), "'");
      next = graph_->nodes_size();
      graph_->add_nodes();
      auto* ref = graph_->mutable_nodes(id)->add_children();
      ref->set_node_id(next);
      ref->set_local_name(name);
    }
    id = next;
  }
  return id;
}

std::string ObjectGraphBuilder::add_variable(const std::vector<std::string>& path) {
  DF_CHECK(!path.empty(), "[tf::ObjectGraphBuilder] a variable needs a non-empty path");
  const std::string key = join(path) + "/.ATTRIBUTES/VARIABLE_VALUE";
  add_attribute(path, "VARIABLE_VALUE", key, path.back());
  return key;
}

void ObjectGraphBuilder::add_attribute(const std::vector<std::string>& path, const std::string& attribute,
                                       const std::string& checkpoint_key, const std::string& full_name) {
  DF_CHECK(!path.empty(), "[tf::ObjectGraphBuilder] an attribute needs a non-empty path");
  const int id = node(path, true);
  for (const auto& a : graph_->nodes(id).attributes())
    DF_CHECK(a.name() != attribute, "[tf::ObjectGraphBuilder] '", join(path), "' already holds a variable");
  auto* a = graph_->mutable_nodes(id)->add_attributes();
  a->set_name(attribute);
  a->set_full_name(full_name);
  a->set_checkpoint_key(checkpoint_key);
}

void ObjectGraphBuilder::add_alias(const std::vector<std::string>& parent_path, const std::string& local_name,
                                   const std::vector<std::string>& target_path) {
  const int target = node(target_path, false);
  const int parent = node(parent_path, true);
  for (const auto& c : graph_->nodes(parent).children())
    DF_CHECK(c.local_name() != local_name || c.node_id() == target, "[tf::ObjectGraphBuilder] '", join(parent_path),
             "' already has a child '", local_name, "'");
  for (const auto& c : graph_->nodes(parent).children())
    if (c.local_name() == local_name) return;
  auto* ref = graph_->mutable_nodes(parent)->add_children();
  ref->set_node_id(target);
  ref->set_local_name(local_name);
}

std::string ObjectGraphBuilder::add_slot(const std::vector<std::string>& variable_path,
                                         const std::vector<std::string>& optimizer_path, const std::string& slot_name) {
  const int var = node(variable_path, false);
  const int opt = node(optimizer_path, false);
  const int slot = graph_->nodes_size();
  const std::string key = join(variable_path) + "/.OPTIMIZER_SLOT/" + join(optimizer_path) + "/" +
                          escape_local_name(slot_name) + "/.ATTRIBUTES/VARIABLE_VALUE";
  auto* a = graph_->add_nodes()->add_attributes();
  a->set_name("VARIABLE_VALUE");
  a->set_checkpoint_key(key);
  auto* ref = graph_->mutable_nodes(opt)->add_slot_variables();
  ref->set_original_variable_node_id(var);
  ref->set_slot_name(slot_name);
  ref->set_slot_variable_node_id(slot);
  return key;
}

}  // namespace deepflow::tf
