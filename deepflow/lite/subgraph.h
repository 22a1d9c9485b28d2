// SPDX-License-Identifier: Apache-2.0
// lite::Subgraph: one subgraph of a model as an interpreter runs it: its tensors, its
// operators with their kernels, and the activation arena planned from tensor lifetimes.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "deepflow/lite/tensor.h"

namespace deepflow::lite {

class Interpreter;
class Kernel;
class Model;
class OpContext;
class OpResolver;
class ThreadPool;

class Subgraph {
 public:
  /// Builds the tensors and a kernel per operator. Throws lite::Error naming the operator
  /// for an op (or op version) the resolver lacks.
  Subgraph(Interpreter& interpreter, const Model& model, int index, const OpResolver& resolver);
  ~Subgraph();
  Subgraph(const Subgraph&) = delete;
  Subgraph& operator=(const Subgraph&) = delete;

  int index() const { return index_; }
  const std::string& name() const { return name_; }
  std::vector<Tensor>& tensors() { return tensors_; }
  Tensor& tensor(int i);
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<int>& outputs() const { return outputs_; }
  int num_nodes() const;
  Interpreter& interpreter() { return *interpreter_; }
  ThreadPool& pool();

  /// Sets an input tensor's shape; takes effect at the next allocate_tensors() (invoke()
  /// calls it when needed). strict: only dimensions that are -1 in shape_signature change.
  void resize_input(int tensor_index, const std::vector<int>& shape, bool strict = false);
  /// Prepares every operator in order (output shapes) and plans and allocates the arena.
  void allocate_tensors();
  /// Runs the operators; allocates first when a resize is pending.
  void invoke();
  bool needs_allocation() const { return needs_allocation_; }
  /// Bytes of the planned arena (for tests and `deepflow lite info`).
  size_t arena_bytes() const { return arena_size_; }
  /// Operator i's name ("CONV_2D", a custom op's code).
  const std::string& node_name(int i) const;
  /// Seconds each operator ran, summed over the invokes made with profiling on.
  const std::vector<double>& node_times() const { return node_times_; }

  // For OpContext.
  void resize_tensor(int tensor_index, const std::vector<int>& shape);
  void mark_dynamic(int tensor_index);

 private:
  struct Node;
  void plan_arena();
  bool try_fold(Node& node);
  void check_memory(const Node& node) const;
  void allocate_owned(Tensor& t);

  Interpreter* interpreter_;
  const Model* model_;
  int index_;
  std::string name_;
  std::vector<Tensor> tensors_;
  std::vector<int> inputs_;
  std::vector<int> outputs_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<char> dynamic_;      // per tensor: shaped in eval
  std::vector<char> persistent_;   // per tensor: own memory (variables, folded constants)
  std::vector<char> folded_;       // per tensor: computed at allocate_tensors() by constant folding
  std::unique_ptr<std::byte[]> arena_storage_;
  std::byte* arena_ = nullptr;
  size_t arena_size_ = 0;
  std::vector<double> node_times_;
  bool needs_allocation_ = true;
  bool in_eval_ = false;
};

}  // namespace deepflow::lite
