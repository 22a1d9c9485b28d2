// SPDX-License-Identifier: Apache-2.0
// Internal helpers the passes share: use lists, redirecting uses, and removing nodes.
#pragma once

#include <vector>

#include "deepflow/graph/graph.h"

namespace deepflow::passes {

/// Stateful for the passes: the op's own flag, send/recv, and any node carrying a function
/// or a variable (its behaviour is not visible from its inputs).
bool is_stateful(const Node& n);
/// Attribute sets equal under the op's schema (absent = default), with attr_equal.
bool attrs_equal(const OpDef& def, const Attrs& a, const Attrs& b);
/// The constant a value holds, or nullptr when its producer is not a const node.
const Tensor* const_value(const Graph& g, ValueRef v);
/// Attribute `name` of n as a T, or `fallback` when n does not set it.
template <class T>
T attr_or(const Node& n, const char* name, T fallback) {
  const AttrValue* v = n.attrs.find(name);
  return v ? std::get<T>(*v) : fallback;
}

/// Who uses each node: data users (one entry per use), control users, and how many times
/// its values appear in graph.outputs or keep.
struct Uses {
  std::vector<std::vector<int>> data, control;
  std::vector<int> external;
  Uses(const Graph& g, const std::vector<ValueRef>* keep);
  /// Exactly one data use, by nothing else: safe to fold into its user.
  bool single_use(int node) const {
    return data[size_t(node)].size() == 1 && external[size_t(node)] == 0 && control[size_t(node)].empty();
  }
};

/// Redirects every use of `from` (node inputs, graph.outputs, keep) to `to`.
void replace_uses(Graph& g, ValueRef from, ValueRef to, std::vector<ValueRef>* keep);
/// Makes nodes that ran after `from` (control inputs) run after `to` instead.
void replace_control(Graph& g, int from, int to);
/// Appends b's control inputs to a's, without duplicates.
void merge_control(std::vector<int>& a, const std::vector<int>& b);
/// Puts `fused` in place of node `root` (the end of a chain, so its users and name stay),
/// taking root's outputs, device and control inputs plus those of the other `parts` (-1
/// entries are skipped), which are marked in `dead` with their control users moved to root.
void fuse_in_place(Graph& g, int root, Node fused, const std::vector<int>& parts, std::vector<char>& dead);
/// Removes the marked nodes (which must have no remaining users), renumbers the rest in a
/// topological order and remaps graph.inputs, graph.outputs and keep.
void remove_nodes(Graph& g, const std::vector<char>& dead, std::vector<ValueRef>* keep);
/// Adds a const node holding t (named from `name`), with the given device; returns its value.
ValueRef add_const(Graph& g, const Tensor& t, const std::string& name, const std::string& device);

}  // namespace deepflow::passes
