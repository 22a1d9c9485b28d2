// SPDX-License-Identifier: Apache-2.0
// lite::Interpreter: runs a .tflite model with deepflow_lite's own kernels. Its API follows
// TensorFlow Lite's (tflite::Interpreter and the Python tf.lite.Interpreter), in snake_case:
//
//   auto model = lite::Model::from_file("model.tflite");
//   lite::Interpreter interpreter(model, /*num_threads=*/2);
//   interpreter.allocate_tensors();
//   std::copy(x.begin(), x.end(), interpreter.input_tensor(0).data<float>());
//   interpreter.invoke();
//   const float* y = interpreter.output_tensor(0).data<float>();
//
// Tensor indices are those of the file's main subgraph (as in get_input_details()). An
// interpreter is not thread-safe; several may share one Model.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "deepflow/lite/error.h"
#include "deepflow/lite/model.h"
#include "deepflow/lite/subgraph.h"
#include "deepflow/lite/tensor.h"
#include "deepflow/lite/thread_pool.h"

namespace deepflow::lite {

class OpResolver;
class SignatureRunner;

class Interpreter {
 public:
  /// Builds every subgraph's kernels with `resolver` (default: all builtins). Throws
  /// lite::Error naming the operator when an op or its version has no kernel.
  explicit Interpreter(std::shared_ptr<const Model> model, int num_threads = 1);
  Interpreter(std::shared_ptr<const Model> model, const OpResolver& resolver, int num_threads = 1);
  ~Interpreter();

  const Model& model() const { return *model_; }
  int num_threads() const { return pool_->size(); }

  /// Main-subgraph tensor indices of the inputs and outputs.
  const std::vector<int>& inputs() const { return main().inputs(); }
  const std::vector<int>& outputs() const { return main().outputs(); }
  size_t tensors_size() const { return subgraphs_[0]->tensors().size(); }
  /// Tensor i of the main subgraph (a reference: valid until the interpreter goes).
  Tensor& tensor(int index) { return subgraphs_[0]->tensor(index); }
  Tensor& input_tensor(int i);
  Tensor& output_tensor(int i);

  /// Sets input `tensor_index`'s shape for the next allocate_tensors(). strict: only its
  /// -1 dimensions in shape_signature may change (TFLite's resize_tensor_input(strict=True)).
  void resize_input_tensor(int tensor_index, const std::vector<int>& shape, bool strict = false);
  /// Prepares every operator and plans the memory. Required before invoke() and after a
  /// resize; input data written before it is not kept.
  void allocate_tensors();
  /// Runs the main subgraph.
  void invoke();

  int num_subgraphs() const { return static_cast<int>(subgraphs_.size()); }
  Subgraph& subgraph(int index);

  /// The file's signature keys, in file order.
  std::vector<std::string> signature_keys() const;
  /// The runner of a signature; "" takes the only one (an error when there are several).
  SignatureRunner& get_signature_runner(const std::string& key = "");

  ThreadPool& pool() { return *pool_; }

  /// The most bytes one allocation of tensor memory (a subgraph's arena, a dynamic or
  /// folded tensor) may take; past it allocate_tensors() / invoke() throw lite::Error.
  /// Unlimited by default; servers and fuzzers bound what a hostile file can ask for.
  void set_memory_limit(size_t bytes) { memory_limit_ = bytes; }
  size_t memory_limit() const { return memory_limit_; }

  /// The most iterations one WHILE may run before invoke() throws lite::Error (0: no
  /// limit, the default). A bound for servers and fuzzers facing files they do not trust.
  void set_while_iteration_limit(int64_t n) { while_iteration_limit_ = n; }
  int64_t while_iteration_limit() const { return while_iteration_limit_; }

  /// Every tensor keeps its own memory until the next allocate_tensors(), so intermediate
  /// values stay readable after invoke() (TFLite's experimental_preserve_all_tensors; costs
  /// memory). Takes effect at the next allocate_tensors().
  void set_preserve_all_tensors(bool on) { preserve_all_tensors_ = on; }
  bool preserve_all_tensors() const { return preserve_all_tensors_; }

  /// int8 convolutions, FULLY_CONNECTED and depthwise requantize in float, as LiteRT's
  /// default (XNNPACK) kernels do: real multiplier times the int32 sum, rounded to nearest
  /// even. Faster; outputs within a quantization step of LiteRT's reference kernels per op
  /// instead of equal to them (the default). Takes effect at the next allocate_tensors().
  void set_fast_int8(bool on) { fast_int8_ = on; }
  bool fast_int8() const { return fast_int8_; }

  /// With profiling on, each invoke() adds every operator's time to Subgraph::node_times()
  /// (`deepflow lite benchmark --profile`).
  void set_profiling(bool on) { profiling_ = on; }
  bool profiling() const { return profiling_; }

 private:
  const Subgraph& main() const { return *subgraphs_[0]; }

  std::shared_ptr<const Model> model_;
  std::unique_ptr<ThreadPool> pool_;
  std::vector<std::unique_ptr<Subgraph>> subgraphs_;
  std::map<std::string, std::unique_ptr<SignatureRunner>> runners_;
  size_t memory_limit_ = SIZE_MAX;
  bool profiling_ = false;
  bool preserve_all_tensors_ = false;
  bool fast_int8_ = false;
  int64_t while_iteration_limit_ = 0;
};

/// Named inputs and outputs of one signature (TFLite's SignatureRunner).
class SignatureRunner {
 public:
  SignatureRunner(Subgraph& subgraph, std::string key, std::vector<std::pair<std::string, int>> inputs,
                  std::vector<std::pair<std::string, int>> outputs);

  const std::string& key() const { return key_; }
  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;
  Tensor& input(const std::string& name);
  Tensor& output(const std::string& name);
  void resize_input(const std::string& name, const std::vector<int>& shape);
  void allocate_tensors() { subgraph_->allocate_tensors(); }
  void invoke() { subgraph_->invoke(); }
  Subgraph& subgraph() { return *subgraph_; }

 private:
  int find(const std::vector<std::pair<std::string, int>>& list, const std::string& name, const char* what) const;

  Subgraph* subgraph_;
  std::string key_;
  std::vector<std::pair<std::string, int>> inputs_;
  std::vector<std::pair<std::string, int>> outputs_;
};

}  // namespace deepflow::lite
