// SPDX-License-Identifier: Apache-2.0
// Control flow: cond and while_loop (tf.cond, tf.while_loop).
//
// Eagerly (no graph being built) they are plain C++: cond evaluates its bool
// scalar pred and calls one branch; while_loop runs a C++ loop. A GradientTape
// records the ops that actually ran, so eager gradients need nothing more.
//
// While a graph is built (a GraphScope, a traced function), each branch, the
// loop condition and the loop body are traced into their own Graph, and ONE node
// is added: `cond` (inputs: pred, then the captured values; attrs then_branch,
// else_branch) or `while` (inputs: the loop variables, then the captured values;
// attrs cond, body, maximum_iterations, keep_history). Symbolic values of the
// enclosing graph that a branch or body uses become extra inputs of the node
// ("captures"); concrete tensors used inside become constants of the sub-graph.
//
//   Tensor y = cond(x > 0.0, [&] { return x * x; }, [&] { return -x; });
//   TensorList r = while_loop([](const TensorList& v) { return less(v[0], scalar(10, DType::Int64)); },
//                             [](const TensorList& v) { return TensorList{v[0] + 1.0, v[1] * v[1]}; },
//                             {scalar(0, DType::Int64), x}, /*maximum_iterations=*/3);
//
// Both ops are differentiable in graphs:
// - the gradient of a cond is a cond on the same pred whose branches are the
//   gradient graphs of the branches;
// - the gradient of a while runs the body's gradient backwards over the values the
//   loop variables had at every iteration. To have them, a while node built from
//   loop variables of fully known shapes (and with some floating value) keeps its
//   history: attr keep_history = true adds one output per loop variable holding the
//   stacked per-iteration values ([n_iter, ...shape]) and one int64 output n_iter.
//   This costs memory proportional to the number of iterations; a while built with
//   loop variables of unknown dims keeps no history and has no gradient.
// Shape invariants: a loop variable keeps its dtype, and its shape may change only
// in dims that are unknown (-1) before the loop. (TensorFlow's shape_invariants
// argument is not offered: feed a placeholder with -1 dims to relax a dim.)
//
// Variables: a trainable variable read inside a branch or body that the sub-graph
// never assigns is read in the enclosing graph instead and captured (its value cannot
// change while the node runs), so gradients reach it; reads of a variable the
// sub-graph assigns stay inside and give it no gradient through the node.
//
// Limits (documented, not checked): the gradient replays a branch or body to
// differentiate it, so a random op inside one draws again in the backward pass.
// Second-order gradients of a while built wholly in a graph need gather's gradient
// for a history of unknown length (the index family's vjp needs a static size);
// running the first-order graph under an eager tape works.
// cond and while are marked stateful (a branch may assign): passes never fold or
// merge them, and automatic control dependencies order them with other stateful ops.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "deepflow/graph/graph.h"

namespace deepflow {

/// tf.cond: true_fn() when the bool scalar pred is true, else false_fn(). Both branches
/// must return the same number of tensors with the same dtypes and compatible shapes
/// (checked when building a graph, where both are traced).
TensorList cond(const Tensor& pred, const std::function<TensorList()>& true_fn,
                const std::function<TensorList()>& false_fn);
/// Single-tensor convenience.
Tensor cond(const Tensor& pred, const std::function<Tensor()>& true_fn, const std::function<Tensor()>& false_fn);

/// tf.while_loop: while cond(vars) is true (and fewer than maximum_iterations iterations
/// ran), vars = body(vars). Returns the final vars. cond returns a bool scalar; body
/// returns one tensor per loop variable, of the same dtype and shape (see the file comment).
TensorList while_loop(const std::function<Tensor(const TensorList&)>& cond,
                      const std::function<TensorList(const TensorList&)>& body, const TensorList& loop_vars,
                      std::optional<int64_t> maximum_iterations = std::nullopt);

/// Traces fn on placeholders of the given types into a new function graph (inputs: the
/// placeholders; outputs: what fn returns). Symbolic tensors of an enclosing graph may not
/// be used inside (cond and while_loop capture them; this helper is for standalone graphs).
GraphRef trace_graph(const TypeList& arg_types, const std::function<TensorList(const TensorList&)>& fn);

/// Replays the nodes of function graph g on `inputs` through dispatch, as if its ops were
/// called here: eagerly they run (and tapes record them), in a graph scope they add nodes
/// (inlining g). Stateful nodes no output needs (assignments) run too unless
/// `side_effects` is false. Variable reads and writes go through the Variable, so tapes
/// see reads as the variable. Returns the values of g.outputs.
TensorList inline_graph(const Graph& g, const TensorList& inputs, bool side_effects = true);

}  // namespace deepflow
