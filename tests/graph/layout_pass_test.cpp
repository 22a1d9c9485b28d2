// SPDX-License-Identifier: Apache-2.0
// sink_transposes: transposes move below the ops that commute with them and cancel in pairs,
// results stay bit for bit, and kept values map through the rewrite.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/executor.h"
#include "deepflow/graph/passes.h"
#include "graph_test_util.h"

namespace deepflow {
namespace {

using testing_util::build;
using testing_util::count_op;

const Axes kToNchw{0, 3, 1, 2}, kToNhwc{0, 2, 3, 1};

Tensor rnd(const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> v(size_t(s.num_elements()));
  for (double& x : v) x = u(rng);
  return constant(v, s, DType::Float32);
}

void expect_bitwise(const Tensor& want, const Tensor& got, const std::string& what) {
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  ASSERT_EQ(want.shape(), got.shape()) << what;
  EXPECT_EQ(std::memcmp(want.raw_data(), got.raw_data(), want.nbytes()), 0) << what << ": results differ";
}

// Runs g before and after the pass on the same inputs: equal bit for bit, valid graph.
int sink_and_compare(std::shared_ptr<Graph> g, const TensorList& inputs) {
  const TensorList want = call_graph(*g, inputs);
  Graph h = *g;
  const int changes = sink_transposes(h);
  EXPECT_NO_THROW(h.validate());
  const TensorList got = call_graph(h, inputs);
  EXPECT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) expect_bitwise(want[i], got[i], "output " + std::to_string(i));
  *g = std::move(h);
  return changes;
}

TEST(SinkTransposes, NoOpWithoutTransposes) {
  auto g = build({{2, 3}}, [](const TensorList& x) { return TensorList{relu(x[0] * 2.0) + reduce_sum(x[0], {1}, true)}; });
  const std::string before = g->to_string();
  EXPECT_EQ(sink_transposes(*g), 0);
  EXPECT_EQ(g->to_string(), before);
}

TEST(SinkTransposes, InversePairAroundElementwiseOpsCancels) {
  // What ONNX import makes of conv -> batch norm -> relu6 -> conv, minus the convs.
  Tensor scale = rnd({5, 1, 1}, 3), shift = rnd({1, 5, 1, 1}, 4), row = rnd({3, 1}, 5);
  auto g = build({{2, 3, 4, 5}}, [&](const TensorList& x) {
    Tensor y = transpose(x[0], kToNchw);
    y = clip_by_value(y * scale + shift, 0.0, 6.0) - row;  // row: rank 2, broadcast to rank 4
    y = neg(cast(cast(y, DType::Float64), DType::Float32));
    return TensorList{transpose(y, kToNhwc)};
  });
  EXPECT_EQ(count_op(*g, OpId::Transpose), 2);
  EXPECT_GT(sink_and_compare(g, {rnd({2, 3, 4, 5}, 1)}), 0);
  EXPECT_EQ(count_op(*g, OpId::Transpose), 0);
}

TEST(SinkTransposes, KeptValuesMapThroughTheRewrite) {
  Tensor mid;
  auto g = build({{2, 3, 4, 5}}, [&](const TensorList& x) {
    mid = relu(transpose(x[0], kToNchw));
    return TensorList{transpose(mid + 1.0, kToNhwc)};
  });
  std::vector<ValueRef> keep{g->value_of(mid)};
  Tensor x = rnd({2, 3, 4, 5}, 2);
  const TensorList want = execute(*g, {{{g->inputs[0], 0}, x}}, {keep[0], g->outputs[0]});
  EXPECT_GT(sink_transposes(*g, &keep), 0);
  ASSERT_NO_THROW(g->validate());
  const TensorList got = execute(*g, {{{g->inputs[0], 0}, x}}, {keep[0], g->outputs[0]});
  expect_bitwise(want[0], got[0], "kept relu");
  expect_bitwise(want[1], got[1], "output");
  // The kept value is now a transpose of the moved relu, and stays one: a kept transpose
  // does not move (it would have to stay for the caller as well).
  EXPECT_EQ(g->node(keep[0].node).op, OpId::Transpose);
  EXPECT_EQ(g->node(g->node(keep[0].node).inputs[0].node).op, OpId::Relu);
}

TEST(SinkTransposes, KeptOrOutputTransposeStays) {
  Tensor t;
  auto g = build({{2, 3, 4, 5}}, [&](const TensorList& x) {
    t = transpose(x[0], kToNchw);
    return TensorList{relu(t)};
  });
  std::vector<ValueRef> keep{g->value_of(t)};
  EXPECT_EQ(sink_transposes(*g, &keep), 0);
  EXPECT_EQ(g->node(keep[0].node).op, OpId::Transpose);
}

TEST(SinkTransposes, DoesNotAddTransposesOrMovePastLayoutDependentOps) {
  // Two users would need two transposes below for one above.
  auto two = build({{2, 3, 4, 5}}, [](const TensorList& x) {
    Tensor t = transpose(x[0], kToNchw);
    return TensorList{relu(t), abs(t)};
  });
  EXPECT_EQ(sink_and_compare(two, {rnd({2, 3, 4, 5}, 6)}), 0);
  // exp's CPU kernel rounds some elements by their position; reduce_sum's order follows
  // the layout; a non-constant operand would need its own transpose.
  auto blocked = build({{2, 3, 4, 5}, {2, 5, 3, 4}}, [](const TensorList& x) {
    Tensor t = transpose(x[0], kToNchw);
    return TensorList{exp(t), reduce_sum(transpose(x[0], {0, 3, 2, 1}), {2, 3}), t * x[1]};
  });
  EXPECT_EQ(sink_and_compare(blocked, {rnd({2, 3, 4, 5}, 7), rnd({2, 5, 3, 4}, 8)}), 0);
}

TEST(SinkTransposes, BinaryOpsTakeTransposesBySamePerm) {
  // A residual join: both branches come back to NCHW, the sum goes on to NHWC.
  auto g = build({{2, 3, 4, 5}, {2, 3, 4, 5}}, [](const TensorList& x) {
    Tensor a = transpose(x[0], kToNchw), b = transpose(x[1], kToNchw);
    return TensorList{transpose(relu(a + b), kToNhwc)};
  });
  sink_and_compare(g, {rnd({2, 3, 4, 5}, 9), rnd({2, 3, 4, 5}, 10)});
  EXPECT_EQ(count_op(*g, OpId::Transpose), 0);
}

TEST(SinkTransposes, AValueWithATransposeUserAndAnotherUserMoves) {
  // After a pool: one user goes back to NHWC (the next conv), the other is the skip add.
  auto g = build({{2, 3, 4, 5}, {2, 3, 4, 5}}, [](const TensorList& x) {
    Tensor p = transpose(x[0], kToNchw);
    Tensor next_conv_in = transpose(p, kToNhwc) * 2.0;
    Tensor joined = relu(p + transpose(x[1] + next_conv_in, kToNchw));
    return TensorList{transpose(joined, kToNhwc)};
  });
  EXPECT_EQ(count_op(*g, OpId::Transpose), 4);
  sink_and_compare(g, {rnd({2, 3, 4, 5}, 11), rnd({2, 3, 4, 5}, 12)});
  EXPECT_EQ(count_op(*g, OpId::Transpose), 0);
}

TEST(SinkTransposes, ConcatPadSliceAndMaxRenumberAxes) {
  auto g = build({{2, 3, 4, 5}, {2, 3, 4, 2}}, [](const TensorList& x) {
    Tensor c = concat({transpose(x[0], kToNchw), transpose(x[1], kToNchw)}, 1);  // [2, 7, 3, 4]
    Tensor p = pad(c, {{0, 0}, {0, 0}, {1, 2}, {0, 1}}, "CONSTANT", -1.5);  // [2, 7, 6, 5]
    Tensor s = slice(p, {0, 1, 1, 0}, {2, 5, -1, 4});                      // [2, 5, 5, 4]
    return TensorList{transpose(s, kToNhwc), reduce_max(s, {1, -1}), reduce_min(s, {2}, true)};
  });
  sink_and_compare(g, {rnd({2, 3, 4, 5}, 13), rnd({2, 3, 4, 2}, 14)});
  // Only reduce_min's result (keepdims) needs the layout back: the transpose output cancels
  // and reduce_max's kept dims are in the same order either way.
  EXPECT_EQ(count_op(*g, OpId::Transpose), 1);
  EXPECT_EQ(count_op(*g, OpId::Concat), 1);
}

TEST(SinkTransposes, UnitDimTransposeBecomesAReshape) {
  // [n, c, 1, 1] <-> [n, 1, 1, c] after a global pool: the same bytes.
  auto g = build({{-1, 6, 1, 1}}, [](const TensorList& x) { return TensorList{transpose(x[0], kToNhwc) * 3.0}; });
  sink_and_compare(g, {rnd({2, 6, 1, 1}, 15)});
  EXPECT_EQ(count_op(*g, OpId::Transpose), 0);
  EXPECT_EQ(count_op(*g, OpId::Reshape), 1);
}

TEST(SinkTransposes, TransposeOfASingleUseConstantFoldsWhateverItsSize) {
  // Conv weights imported from ONNX: constant folding's size cap would leave this one.
  Tensor w = rnd({4, 3, 2, 2}, 21), shared = rnd({2, 3}, 22);
  auto g = build({{2, 3}}, [&](const TensorList& x) {
    return TensorList{reshape(transpose(w, {2, 3, 1, 0}), {12, 4}), transpose(shared, {1, 0}), x[0] + shared};
  });
  sink_and_compare(g, {rnd({2, 3}, 23)});
  // The weights' transpose is a constant now; the shared constant's stays (no second copy).
  EXPECT_EQ(count_op(*g, OpId::Transpose), 1);
}

TEST(SinkTransposes, ControlInputsOfAMovedOpAreKept) {
  auto g = build({{2, 3, 4, 5}}, [](const TensorList& x) { return TensorList{transpose(relu(transpose(x[0], kToNchw)), kToNhwc)}; });
  const int relu_id = g->find("relu");
  const int first = g->inputs[0];
  g->mutable_node(relu_id).control_inputs = {first};
  sink_and_compare(g, {rnd({2, 3, 4, 5}, 16)});
  EXPECT_EQ(count_op(*g, OpId::Transpose), 0);
  const int moved = g->outputs[0].node;
  EXPECT_EQ(g->node(moved).op, OpId::Relu);
  EXPECT_EQ(g->node(moved).control_inputs.size(), 1u);
}

TEST(SinkTransposes, OptimizeLeavesOnlyTheInputsTransposeInAnImportedConvNet) {
  // The ONNX-import shape: NCHW in and out, NHWC convs and pools, transposes between.
  Tensor w1 = rnd({3, 3, 3, 4}, 17), w2 = rnd({3, 3, 4, 4}, 18), bias = rnd({4}, 19);
  auto g = build({{2, 3, 8, 8}}, [&](const TensorList& x) {
    Tensor h = transpose(conv2d(transpose(x[0], kToNhwc), w1, {1, 1}, "SAME") + bias, kToNchw);
    h = clip_by_value(h, 0.0, 6.0);
    h = pad(h, {{0, 0}, {0, 0}, {0, 1}, {0, 1}}, "CONSTANT", -1e30);
    h = transpose(max_pool2d(transpose(h, kToNhwc), {2, 2}, {2, 2}, "VALID"), kToNchw);
    Tensor skip = h;
    h = transpose(conv2d(transpose(h, kToNhwc), w2, {1, 1}, "SAME"), kToNchw);
    return TensorList{relu(h + skip)};
  });
  EXPECT_EQ(count_op(*g, OpId::Transpose), 6);
  Tensor x = rnd({2, 3, 8, 8}, 20);
  const TensorList want = call_graph(*g, {x});
  auto opt = optimize(*g, {.fold_batch_norm = false, .fuse_elementwise = false, .fuse_conv = false});
  ASSERT_NO_THROW(opt->validate());
  expect_bitwise(want[0], call_graph(*opt, {x})[0], "optimized");
  // The input's, and the one that brings the result back to NCHW.
  EXPECT_EQ(count_op(*opt, OpId::Transpose), 2);
  // With the pass off, simplify_algebra only merges the transpose of a transpose away.
  auto off = optimize(*g, {.fold_batch_norm = false, .fuse_elementwise = false, .sink_transposes = false,
                           .fuse_conv = false});
  EXPECT_EQ(count_op(*off, OpId::Transpose), 5);
}

}  // namespace
}  // namespace deepflow
