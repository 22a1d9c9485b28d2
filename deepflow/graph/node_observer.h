// SPDX-License-Identifier: Apache-2.0
// A per-thread hook on graph building: every node a GraphScope adds on this thread is
// shown to the observer once it is in the graph. Front ends use it to remember where the
// user created each node (the Python front end records the user's file and line, so an
// error that names a node at run time can point at the line that built it).
//
//   NodeObserver prev = set_node_observer({&record, &table});
//   ... trace ...
//   set_node_observer(prev);
#pragma once

namespace deepflow {

struct Node;

struct NodeObserver {
  void (*fn)(const Node& node, void* context) = nullptr;
  void* context = nullptr;
};

/// Sets this thread's observer ({} for none) and returns the one it replaces.
NodeObserver set_node_observer(NodeObserver observer);

}  // namespace deepflow
