// SPDX-License-Identifier: Apache-2.0
// Graph optimization passes: rewrites that never change what a graph computes.
//
//   auto g = std::make_shared<Graph>();  ...build...; g->outputs = {g->value_of(y)};
//   std::vector<ValueRef> keep = {g->value_of(logits)};   // other values the caller needs
//   std::shared_ptr<Graph> opt = optimize(*g, {}, &keep);
//   Executor ex(opt, {opt->value(... )}, {opt->outputs[0], keep[0]});
//
// Mapping values through a rewrite. Passes renumber, merge, fold and fuse nodes, so a
// ValueRef or node id of the input graph means nothing in the result, except through:
//   - graph.inputs and graph.outputs, which every pass remaps (the function interface);
//   - `keep`: every value listed there is kept alive (never removed or fused away, so it
//     can be fetched or fed), and on return each entry is rewritten in place to the value
//     that now holds the same result (possibly another node's: CSE merges equal values,
//     simplification maps x + 0 to x).
// So a caller puts its fetches and feeds (other than placeholders, which are never touched)
// in `keep` (or graph.outputs) and reads them back from there. Names: a node replaced in
// place (folded to a constant, turned into a fused op at the end of a chain) keeps its name,
// but merged and simplified-away nodes vanish, so look values up through `keep`, not by name.
//
// Guarantees. Stateful nodes (placeholders, variable reads and assigns, random ops, no_op,
// and any node with a function or variable attribute) are never removed, merged, folded or
// reordered, and keep their control inputs; a node that has control inputs is never removed
// by simplification (the classic "identity under control_dependencies" idiom keeps working).
// Results are unchanged except for float reassociation inside a fusion (within 1e-6
// relative; conv + batch-norm folding computes the new filter in float64, then rounds).
// Passes do not look inside function-valued attributes (cond / while bodies).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "deepflow/graph/graph.h"
#include "deepflow/ops/fused.h"

namespace deepflow {

/// Which passes optimize() runs; each can be switched off alone.
struct PassOptions {
  bool dce = true;
  bool cse = true;
  bool constant_folding = true;
  bool algebraic = true;
  bool fuse_matmul = true;
  bool fold_batch_norm = true;
  bool fuse_elementwise = true;
  bool sink_transposes = true;
  bool fuse_conv = true;
  bool fuse_conv_chain = true;
  /// Constant folding leaves nodes whose outputs exceed this many elements (together) alone.
  int64_t max_folded_elements = 1 << 20;
};

/// Runs the enabled passes on a copy of g (to a fixed point where it helps) and returns it,
/// with g.inputs and g.outputs remapped and `keep` rewritten in place (see above).
std::shared_ptr<Graph> optimize(const Graph& g, const PassOptions& options = {},
                                std::vector<ValueRef>* keep = nullptr);

// Each pass rewrites g in place, remaps g.inputs, g.outputs and keep, and returns the number
// of rewrites it made. Passes other than dead-code elimination remove only the nodes they
// replaced; inputs left unused behind them are dead code.

/// Removes every node that no graph output, kept value or stateful node needs (through data
/// or control edges). A graph with no outputs and no keep loses all its pure nodes.
int eliminate_dead_code(Graph& g, std::vector<ValueRef>* keep = nullptr);
/// Merges pure nodes with the same op, inputs, control inputs, device and equal attributes
/// (attr_equal; identical constants merge too) into the first of them.
int eliminate_common_subexpressions(Graph& g, std::vector<ValueRef>* keep = nullptr);
/// Replaces each pure node whose inputs are all constants by constants holding its results
/// (computed once, eagerly), unless they exceed max_elements together. The node keeps its
/// name and control inputs.
int fold_constants(Graph& g, std::vector<ValueRef>* keep = nullptr, int64_t max_elements = 1 << 20);
/// x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1 -> x when the result has x's dtype and shape (no
/// broadcasting); neg(neg(x)) -> x; transpose of transpose -> one transpose (or x when the
/// perms cancel); reshape of reshape -> one reshape; reshape to x's own (known) shape -> x;
/// cast to x's dtype -> x; identity(x) -> x unless it is a graph output or kept.
/// x * 0 is NOT folded for floats: it is NaN for x = inf or NaN, and -0 for x < 0.
/// x + 0 may turn -0 into +0 (equal as numbers), as TensorFlow's simplifier does.
int simplify_algebra(Graph& g, std::vector<ValueRef>* keep = nullptr);
/// matmul -> add of a bias [n] (on the last dim) -> relu / tanh / sigmoid, where the
/// intermediates have no other users, becomes one fused_matmul (float32 and float64).
int fuse_matmul(Graph& g, std::vector<ValueRef>* keep = nullptr);
/// For inference: conv2d with a constant filter followed by fused_batch_norm(is_training =
/// false) with constant parameters (or by a multiply with a constant per-channel scale, what
/// batch_normalization becomes after constant folding) folds the scale into a new constant
/// filter; the batch norm becomes an add of a constant bias.
int fold_batch_norm(Graph& g, std::vector<ValueRef>* keep = nullptr);
/// A tree of float32 elementwise ops (the unary and binary primitives of
/// deepflow/ops/fused_program.h) over values of one fully known shape, scalars and
/// last-dim rows, whose intermediates have one user each, becomes one fused_elementwise node
/// evaluated in one blocked loop. Scalar constants become immediates of the program.
int fuse_elementwise(Graph& g, std::vector<ValueRef>* keep = nullptr);
/// Layout: moves transposes towards the graph outputs past ops that commute with them
/// (unary elementwise ops, casts, binary ops whose other input is a constant, which is
/// transposed to match, or is transposed by the same perm; concat, reductions and pads, whose
/// axes are renumbered) so that inverse pairs meet and cancel, as the NCHW <-> NHWC pairs that
/// ONNX import puts around each conv and pool do. A transpose is moved only where that
/// removes a transpose or does not add one (a value with several users is moved only when
/// every user is). Results are bit-identical.
int sink_transposes(Graph& g, std::vector<ValueRef>* keep = nullptr);
/// conv2d (float32, constant filter) -> add of a bias [c_out] (on the last dim) -> relu /
/// relu6 / clip by constant scalars / elu / sigmoid / tanh / leaky_relu, where the
/// intermediates have no other users, becomes one fused_conv2d; a pad of the spatial dims
/// with zeros in front of a VALID conv2d (also ONNX's pad of NCHW then transpose) becomes
/// its explicit padding. A constant-filter conv with nothing to fuse becomes a fused_conv2d
/// too, so its filter is reordered for oneDNN once and cached. elu means alpha 1 (TF's).
/// Residual blocks: then an add of such a fused_conv2d without activation (whose result has
/// no other user) and another value of the same dtype and shape (not broadcast), optionally
/// followed by one of those activations, becomes the fused_conv2d with that value as its
/// summand (of two fused convs, the first in topological order takes the other).
int fuse_conv(Graph& g, std::vector<ValueRef>* keep = nullptr);
/// Float32 fused_conv2d nodes with constant filters that feed only each other (as input or
/// summand), with one value from outside and one result used outside, become one
/// fused_conv_chain (at least two layers; the last in topological order gives the result).
/// A transpose NCHW -> NHWC in front (used only by the chain) is absorbed as data_format NCHW,
/// and one NHWC -> NCHW behind it (its result's only user) as output_format NCHW.
int fuse_conv_chain(Graph& g, std::vector<ValueRef>* keep = nullptr);
/// The inverse: each fused_conv_chain becomes its fused_conv2d nodes again (ONNX export
/// writes those). Returns the number of chains expanded.
int expand_conv_chains(Graph& g);

// The fused primitives these passes make (fused_matmul, fused_conv2d, fused_conv_chain,
// fused_elementwise) are declared in deepflow/ops/fused.h.

}  // namespace deepflow
