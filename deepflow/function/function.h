// SPDX-License-Identifier: Apache-2.0
// Traced functions (the tf.function role).
//
// deepflow::function(callable) wraps a C++ callable that computes with the
// public ops. The first call for each input signature (dtype and shape of every
// input) traces the callable: it runs once on symbolic placeholders inside a
// GraphScope, so every op it calls appends a node instead of computing. The
// graph is cached as a ConcreteFunction keyed by that signature; later calls
// with the same signature only run the graph (an Executor prepared once).
//
//   Variable w(random_normal({4, 2}), "w");
//   Function f = function([&](const Tensor& x) { return relu(matmul(x, w.value())); });
//   Tensor y = f(x)[0];                 // traces, then runs the graph
//   Tensor z = f(x2)[0];                // same signature: runs the cached graph
//   std::cout << f.trace_count();       // 1
//
// Semantics, as in TensorFlow:
// - **Plain C++ inside the callable runs only while tracing.** A counter
//   incremented, a std::cout line or a std::rand() call in the callable happens
//   once per trace, not once per call (the analogue of Python side effects in a
//   tf.function). Only ops become part of the graph; anything that must happen
//   on every call has to be an op (an assign, a random op, ...).
// - Concrete tensors used inside (captured C++ locals, constants) are copied
//   into the graph as constants at trace time: a later change to such a tensor
//   is not seen. Variables are captured by reference: their reads and writes are
//   read_variable / assign_variable nodes, so an assign made outside between two
//   calls is seen by the next call.
// - Stateful ops (variable reads and writes, random ops) keep program order
//   through automatic control dependencies; stateful nodes that no output needs
//   (an assign) still run on every call.
// - Retracing: a call whose signature matches no cached concrete function
//   traces again; trace_count() counts traces, and a warning is printed once
//   after 5 retraces. An explicit FunctionOptions::input_signature (with -1 for
//   unknown dims) makes one trace serve every matching input.
// - Automatic shape generalization (beyond TensorFlow): when a call differs from
//   a cached concrete function only in some dims, the function traces once more
//   with those dims unknown (-1) and serves every later call matching it, so a
//   changing batch size costs at most one retrace. Off with
//   FunctionOptions::generalize_shapes = false.
// - GradientTape works both ways: a tape alive around a call records the ops
//   the graph runs (the executor dispatches them eagerly), and a tape created
//   inside the callable records symbolic ops, so tape.gradient() adds the
//   gradient nodes to the graph (a traced training step).
// - Called while another graph is being built (inside another traced function
//   or a GraphScope), a Function inlines: the callable is simply called there.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "deepflow/graph/executor.h"
#include "deepflow/graph/graph.h"
#include "deepflow/graph/passes.h"

namespace deepflow {

/// The input signature of a concrete function: dtype and shape per input, -1 for an unknown dim.
using Signature = std::vector<TensorType>;

/// "(float32[?,4], int32[])".
std::string signature_to_string(const Signature& sig);
/// The signature of concrete inputs.
Signature signature_of(const TensorList& inputs);
/// True when every input has the signature's dtype and a compatible shape (unknown dims match any size).
bool signature_matches(const Signature& sig, const TensorList& inputs);

struct FunctionOptions {
  /// Used in messages and as the graph's name.
  std::string name = "function";
  /// When set (one TensorType per input, -1 for unknown dims), inputs are checked against it
  /// and one trace serves every matching call.
  std::optional<Signature> input_signature;
  /// Generalize a dim to unknown once it has been seen with two sizes (see the file comment).
  bool generalize_shapes = true;
  /// Run the graph passes (deepflow/graph/passes.h) on each traced graph before it is
  /// executed; graph() stays the graph as traced, optimized_graph() is what runs.
  bool optimize = true;
  PassOptions passes;
  /// Passed to the executor of every concrete function. Sequential by default: a traced
  /// step is a chain of kernels that each use every core through OpenMP, and the parallel
  /// path caps each node's threads (MLP training step, 2 cores: 134 us sequential vs 250 us
  /// parallel, bench/bench_function.cpp). Turn `parallel` on for wide graphs of small ops.
  ExecutorOptions executor = sequential_executor();

  static ExecutorOptions sequential_executor() {
    ExecutorOptions o;
    o.parallel = false;
    return o;
  }
};

/// One traced graph of a Function for one input signature: fetch it, print it, call it.
class ConcreteFunction {
 public:
  ConcreteFunction() = default;

  bool defined() const { return impl_ != nullptr; }
  const std::string& name() const;
  /// The traced graph: graph().inputs are the placeholders, graph().outputs the results.
  const Graph& graph() const;
  std::shared_ptr<const Graph> graph_ptr() const;
  /// The graph that runs: graph() after the passes (the same graph when optimize is off).
  const Graph& optimized_graph() const;
  /// The input signature it was traced for (-1 for unknown dims).
  const Signature& inputs() const;
  /// The dtype and (partly known) shape of each output.
  TypeList outputs() const;
  /// Runs the graph on concrete inputs, which must match inputs().
  TensorList operator()(const TensorList& inputs) const;
  /// The graph's text form (Graph::to_string()).
  std::string to_string() const;
  /// The text form as well, for now. SavedModel serialization (variables, signatures,
  /// the GraphDef protobuf) comes with the persistence issue.
  std::string serialize() const;

  struct Impl;

 private:
  friend class Function;
  explicit ConcreteFunction(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

/// A traced function: a callable plus its cache of concrete functions by signature.
/// Copies share the cache (like a Python tf.function object).
class Function {
 public:
  using Callable = std::function<TensorList(const TensorList&)>;

  Function() = default;
  Function(Callable callable, FunctionOptions options = {});

  /// Calls the function: traces first if no concrete function serves this signature.
  TensorList operator()(const TensorList& inputs) const;
  TensorList operator()() const { return (*this)(TensorList{}); }
  TensorList operator()(const Tensor& a) const { return (*this)(TensorList{a}); }
  TensorList operator()(const Tensor& a, const Tensor& b) const { return (*this)(TensorList{a, b}); }
  TensorList operator()(const Tensor& a, const Tensor& b, const Tensor& c) const {
    return (*this)(TensorList{a, b, c});
  }

  /// The concrete function for this signature (-1 for unknown dims), tracing it if new.
  ConcreteFunction get_concrete_function(const Signature& signature) const;
  /// With the input_signature of the options.
  ConcreteFunction get_concrete_function() const;
  /// Every concrete function traced so far, in trace order.
  std::vector<ConcreteFunction> concrete_functions() const;
  /// How many times the callable has been traced.
  int trace_count() const;
  const std::string& name() const;
  const FunctionOptions& options() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

namespace detail {
// Adapts a callable taking 0-3 Tensors or a TensorList and returning a Tensor, a
// TensorList or nothing to Function::Callable.
inline TensorList to_outputs(Tensor t) { return TensorList{std::move(t)}; }
inline TensorList to_outputs(TensorList t) { return t; }
template <class F> Function::Callable wrap_callable(F f) {
  return [f = std::move(f)](const TensorList& in) -> TensorList {
    auto call = [&](auto&&... args) -> TensorList {
      using R = std::invoke_result_t<F&, decltype(args)...>;
      if constexpr (std::is_void_v<R>) {
        f(args...);
        return {};
      } else {
        return to_outputs(f(args...));
      }
    };
    auto need = [&](size_t n) {
      if (in.size() != n) fail("[function] the callable takes ", n, " tensors, got ", in.size());
    };
    if constexpr (std::is_invocable_v<F&, const TensorList&>) {
      return call(in);
    } else if constexpr (std::is_invocable_v<F&>) {
      need(0);
      return call();
    } else if constexpr (std::is_invocable_v<F&, const Tensor&>) {
      need(1);
      return call(in[0]);
    } else if constexpr (std::is_invocable_v<F&, const Tensor&, const Tensor&>) {
      need(2);
      return call(in[0], in[1]);
    } else {
      static_assert(std::is_invocable_v<F&, const Tensor&, const Tensor&, const Tensor&>,
                    "deepflow::function takes a callable of (const TensorList&) or of 0 to 3 Tensors");
      need(3);
      return call(in[0], in[1], in[2]);
    }
  };
}
}  // namespace detail

/// Wraps a callable into a traced Function (tf.function). The callable takes a TensorList
/// or 0 to 3 Tensors and returns a Tensor, a TensorList or nothing.
template <class F> Function function(F&& callable, FunctionOptions options = {}) {
  return Function(detail::wrap_callable(std::forward<F>(callable)), std::move(options));
}

}  // namespace deepflow
