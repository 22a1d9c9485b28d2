// SPDX-License-Identifier: Apache-2.0
// Symbolic gradients of a graph (tf.gradients).
//
// gradients(ys, xs) works on symbolic tensors of one graph: it walks the graph
// backwards from ys over the nodes that lie between xs and ys, calls each node's
// vjp on symbolic gradients (which appends the gradient nodes to the same graph)
// and sums the gradients reaching each value. The result is symbolic too: run it
// with an Executor or Session, fetch it from a traced function, or differentiate
// it again (second order).
//
//   auto g = std::make_shared<Graph>();
//   GraphScope scope(g);
//   Tensor x = placeholder(DType::Float64, {}, "x");
//   Tensor y = x * x * x;
//   Tensor dy = gradients(y, x);                  // 3 x^2, as nodes
//   Tensor d2y = gradients(dy, x);                // 6 x
//
// A source that is a variable read (Variable::value() inside a scope) stands for
// the variable: the gradients of every read of that variable in the graph add up.
// The nodes are added to the current GraphScope when it builds ys' graph, else
// to ys' graph through a temporary scope.
#pragma once

#include <vector>

#include "deepflow/autodiff/tape.h"
#include "deepflow/core/tensor.h"
#include "deepflow/ops/variable.h"

namespace deepflow {

/// d sum(ys * grad_ys) / d xs, one symbolic tensor per x: undefined (or zeros with
/// UnconnectedGradients::Zero) where an x does not reach any y. grad_ys defaults to ones.
std::vector<Tensor> gradients(const std::vector<Tensor>& ys, const std::vector<Tensor>& xs,
                              const std::vector<Tensor>& grad_ys = {},
                              UnconnectedGradients unconnected = UnconnectedGradients::None);
/// One target, one source: the gradient as a single tensor.
Tensor gradients(const Tensor& y, const Tensor& x, UnconnectedGradients unconnected = UnconnectedGradients::None);
/// Gradients with respect to variables (read inside ys' graph).
std::vector<Tensor> gradients(const Tensor& y, const std::vector<Variable>& xs,
                              UnconnectedGradients unconnected = UnconnectedGradients::None);

}  // namespace deepflow
