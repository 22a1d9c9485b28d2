// SPDX-License-Identifier: Apache-2.0
// tf.train.Checkpoint's object graph (TrackableObjectGraph, stored in a checkpoint as
// _CHECKPOINTABLE_OBJECT_GRAPH): list the tensors it names by object path, and build one
// for variables given by path, the way tf.train.Checkpoint(model=..., optimizer=...)
// tracks them.
//
//   for (const tf::ObjectTensor& t : tf::object_graph_tensors(graph))
//     std::cout << t.path << " -> " << t.checkpoint_key << "\n";   // "model/dense/kernel -> ..."
//
//   tf::ObjectGraphBuilder b;
//   std::string key = b.add_variable({"model", "dense", "kernel"});
//   // key == "model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE"
//   writer.add(key, kernel);  writer.add_object_graph(b.graph());
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace tensorflow {
class TrackableObjectGraph;
}  // namespace tensorflow

namespace deepflow::tf {

/// A tensor named by the object graph.
struct ObjectTensor {
  std::string path;  ///< the object's path: escaped local names from the root, joined by "/"
  std::string name;  ///< the attribute ("VARIABLE_VALUE")
  std::string checkpoint_key;
  int node_id = 0;
};

/// Every attribute of every node reachable from node 0, breadth first (a node's path is
/// the first one found; cycles and out-of-range ids are skipped). Slot variables get the
/// path "<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot name>".
std::vector<ObjectTensor> object_graph_tensors(const tensorflow::TrackableObjectGraph& graph);

/// TensorFlow's escaping of a local name inside a checkpoint key: "." -> "..", "/" -> ".S".
std::string escape_local_name(const std::string& name);

/// Builds a TrackableObjectGraph: node 0 is the root; intermediate objects are created as
/// paths need them.
class ObjectGraphBuilder {
 public:
  ObjectGraphBuilder();
  ~ObjectGraphBuilder();
  /// A variable at `path` (local names from the root, unescaped): returns its checkpoint
  /// key "<escaped path>/.ATTRIBUTES/VARIABLE_VALUE". Throws if the path already holds one.
  std::string add_variable(const std::vector<std::string>& path);
  /// An attribute ("VARIABLE_VALUE", "ITERATOR_STATE") of the object at `path` (made as
  /// needed), saved under `checkpoint_key`; `full_name` is the variable's own name.
  /// Throws if the object already holds that attribute.
  void add_attribute(const std::vector<std::string>& path, const std::string& attribute,
                     const std::string& checkpoint_key, const std::string& full_name);
  /// A second name for an existing object: `parent_path` (made as needed) gets the child
  /// `local_name` that is the object at `target_path`. Two trackers reach one object this
  /// way (Keras 3's "_functional/_operations/1" and tf-keras's "layer_with_weights-0").
  void add_alias(const std::vector<std::string>& parent_path, const std::string& local_name,
                 const std::vector<std::string>& target_path);
  /// True when an object exists at `path`.
  bool has(const std::vector<std::string>& path) const;
  /// An optimizer slot (Keras 2 / TF optimizers: "m", "v") of the variable at
  /// `variable_path`, owned by the optimizer at `optimizer_path` (both added before).
  /// Returns "<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot>/.ATTRIBUTES/VARIABLE_VALUE".
  std::string add_slot(const std::vector<std::string>& variable_path, const std::vector<std::string>& optimizer_path,
                       const std::string& slot_name);
  const tensorflow::TrackableObjectGraph& graph() const { return *graph_; }

 private:
  int node(const std::vector<std::string>& path, bool create);
  int find(const std::vector<std::string>& path) const;
  std::unique_ptr<tensorflow::TrackableObjectGraph> graph_;
};

}  // namespace deepflow::tf
