// SPDX-License-Identifier: Apache-2.0
// What a kernel sees: the Kernel interface (prepare, then eval), its OpContext, and the
// OpResolver that maps a builtin code (and version) or a custom op's name to a kernel.
// Internal to deepflow_lite and its custom-op users: it includes the generated schema.
//
// A kernel is made once per operator when the interpreter is built. prepare() checks its
// inputs and sets its outputs' shapes; it runs from allocate_tensors() and again after an
// input is resized. eval() computes; for an output whose shape depends on input values,
// prepare() calls mark_dynamic(i) and eval() sets the shape with resize_output(i, ...).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "deepflow/lite/error.h"
#include "deepflow/lite/tensor.h"
#include "deepflow/lite/thread_pool.h"
#include "schema/tflite_generated.h"

namespace deepflow::lite {

class Subgraph;
class OpContext;

/// One operator's computation.
class Kernel {
 public:
  virtual ~Kernel() = default;
  /// Checks input shapes and types, sets every output's shape (resize_output) or marks it
  /// dynamic, and precomputes what eval needs. Throws lite::Error on bad input.
  virtual void prepare(OpContext& ctx) = 0;
  /// Computes the outputs from the inputs.
  virtual void eval(OpContext& ctx) = 0;
  /// False for kernels with effects beyond their outputs (IF, WHILE, variables): the others
  /// run once at allocate_tensors() when all their inputs are constant (constant folding:
  /// a float16 weight's DEQUANTIZE, the shape arithmetic converters emit).
  virtual bool foldable() const { return true; }
  /// True when the outputs depend on the inputs' shapes only (SHAPE): folded whenever the
  /// input shapes are known at allocate_tensors().
  virtual bool shape_only() const { return false; }
};

/// Makes the kernel of one operator (its options are readable through ctx).
using KernelFactory = std::function<std::unique_ptr<Kernel>(const OpContext& ctx)>;

/// The operator a kernel runs for, and its tensors.
class OpContext {
 public:
  OpContext(Subgraph& subgraph, int node, const fb::Operator* op, std::string op_name, int version)
      : subgraph_(&subgraph), node_(node), op_(op), op_name_(std::move(op_name)), version_(version) {}

  /// "CONV_2D", or the custom code of a custom op.
  const std::string& op_name() const { return op_name_; }
  int version() const { return version_; }
  int node_index() const { return node_; }

  int num_inputs() const;
  int num_outputs() const;
  /// False for an optional input the file leaves out (index -1) or past the end.
  bool has_input(int i) const;
  Tensor& input(int i) const;
  Tensor& output(int i) const;
  /// The tensor index of input i in the subgraph (-1 when left out).
  int input_index(int i) const;

  /// The builtin options table, or nullptr when the file has none (real files often leave
  /// it out; TFLite's defaults then apply).
  template <class T>
  const T* options() const {
    if (op_->builtin_options_type() != fb::BuiltinOptionsTraits<T>::enum_value) return nullptr;
    return static_cast<const T*>(op_->builtin_options());
  }
  /// custom_options bytes (a FlexBuffer map in real files); empty when absent.
  const uint8_t* custom_options() const;
  size_t custom_options_size() const;

  /// Sets output i's shape; during eval this (re)allocates a dynamic output.
  void resize_output(int i, const std::vector<int>& shape) const;
  /// Output i's shape is set in eval (it depends on input values).
  void mark_dynamic(int i) const;

  ThreadPool& pool() const;
  Subgraph& subgraph() const { return *subgraph_; }

  /// Throws lite::Error "[lite.OP node N] ..." with the remaining arguments.
  template <class... Args>
  [[noreturn]] void fail(Args&&... args) const {
    lite::fail("[lite.", op_name_, " node ", node_, "] ", std::forward<Args>(args)...);
  }

 private:
  Subgraph* subgraph_;
  int node_;
  const fb::Operator* op_;
  std::string op_name_;
  int version_;
};

/// Checks in a kernel: throws "[lite.OP node N] ..." when cond is false.
#define DF_LITE_OP_CHECK(ctx, cond, ...)    \
  do {                                      \
    if (!(cond)) (ctx).fail(__VA_ARGS__);   \
  } while (0)

/// Which kernels an interpreter may use: builtins by code and version range, custom ops by
/// name (TFLite's MutableOpResolver).
class OpResolver {
 public:
  /// Every builtin kernel deepflow_lite has.
  static OpResolver builtins();

  void add_builtin(fb::BuiltinOperator code, KernelFactory factory, int min_version = 1, int max_version = 1);
  void add_custom(const std::string& name, KernelFactory factory);

  /// nullptr when there is none for this code and version.
  const KernelFactory* find_builtin(fb::BuiltinOperator code, int version) const;
  const KernelFactory* find_custom(const std::string& name) const;
  /// Lowest and highest version registered for code ({0, 0} when none): for messages.
  std::pair<int, int> version_range(fb::BuiltinOperator code) const;

 private:
  struct Entry {
    int min_version;
    int max_version;
    KernelFactory factory;
  };
  std::map<int, std::vector<Entry>> builtins_;
  std::map<std::string, KernelFactory> custom_;
};

/// A factory for a kernel type constructible from its OpContext.
template <class K>
KernelFactory make_factory() {
  return [](const OpContext& ctx) { return std::unique_ptr<Kernel>(new K(ctx)); };
}

// Registration of each kernel family (kernels/*.cpp); OpResolver::builtins() calls them all.
void register_conv_kernels(OpResolver& r);          // CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV
void register_fully_connected_kernels(OpResolver& r);  // FULLY_CONNECTED, BATCH_MATMUL
void register_pooling_kernels(OpResolver& r);       // AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D
void register_elementwise_kernels(OpResolver& r);   // ADD, SUB, MUL, DIV, unary math, activations
void register_shape_kernels(OpResolver& r);         // RESHAPE, SQUEEZE, CONCATENATION, SPLIT, ...
void register_slicing_kernels(OpResolver& r);       // PAD, TRANSPOSE, STRIDED_SLICE, GATHER, RESIZE_*, ...
void register_reduce_kernels(OpResolver& r);        // MEAN, SUM, REDUCE_MAX, SOFTMAX, ...
void register_quant_kernels(OpResolver& r);         // DEQUANTIZE, QUANTIZE
void register_control_kernels(OpResolver& r);       // IF, WHILE
/// int8 CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, MUL, MAX/AVERAGE_POOL_2D, SOFTMAX,
/// LOGISTIC, TANH, MEAN (spatial): wraps the
/// float registrations above (an int8 input picks the int8 kernel), so it is called last.
void register_int8_kernels(OpResolver& r);
/// Dynamic-range (hybrid: float32 input, int8 weights) FULLY_CONNECTED, BATCH_MATMUL,
/// CONV_2D and DEPTHWISE_CONV_2D (kernels/hybrid.cpp): wraps the registrations above (a
/// float input with int8 weights picks the hybrid kernel), so it is called after them.
void register_hybrid_kernels(OpResolver& r);

}  // namespace deepflow::lite
