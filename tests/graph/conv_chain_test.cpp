// SPDX-License-Identifier: Apache-2.0
// The fuse_conv_chain pass: fused convs that feed only each other become one
// fused_conv_chain (with an NCHW input read through), what it must leave alone, and
// expand_conv_chains, its inverse.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/passes.h"
#include "graph_test_util.h"

namespace deepflow {
namespace {

using testing_util::build;
using testing_util::count_op;
using testing_util::expect_close;
using testing_util::rnd;

const Node* only_chain(const Graph& g) { return testing_util::only_node(g, OpId::FusedConvChain); }

// MobileNetV2's inverted residual block on an NCHW input, as the ONNX importer builds it
// (a transpose to NHWC first and one back to NCHW last), twice, then a conv with 24 outputs.
struct MobileNetBlocks {
  Tensor we = rnd({1, 1, 16, 32}, -0.3, 0.3, 1), be = rnd({32}, -1, 1, 2);
  Tensor wd = rnd({3, 3, 32, 1}, -0.3, 0.3, 3), bd = rnd({32}, -1, 1, 4);
  Tensor wp = rnd({1, 1, 32, 16}, -0.3, 0.3, 5), bp = rnd({16}, -1, 1, 6);
  Tensor wl = rnd({3, 3, 16, 24}, -0.3, 0.3, 7);

  Tensor block(const Tensor& x) const {
    Tensor h = relu6(conv2d(x, we) + be);
    h = relu6(depthwise_conv2d(h, wd, {1, 1}, "SAME") + bd);
    return x + (conv2d(h, wp) + bp);
  }
  TensorList operator()(const TensorList& x) const {
    Tensor h = transpose(x[0], {0, 2, 3, 1});
    return {transpose(relu(conv2d(block(block(h)), wl, {2, 2}, "SAME")), {0, 3, 1, 2})};
  }
};

TEST(ConvChain, InvertedResidualBlocksBecomeOneChainThatReadsNchw) {
  auto g = build({{-1, 16, 10, 10}}, MobileNetBlocks());
  auto opt = optimize(*g);
  const Node* chain = only_chain(*opt);
  ASSERT_NE(chain, nullptr) << opt->to_string();
  EXPECT_EQ(count_op(*opt, OpId::FusedConv2D) + count_op(*opt, OpId::Transpose) + count_op(*opt, OpId::Add), 0)
      << opt->to_string();
  EXPECT_EQ(std::get<std::string>(*chain->attrs.find("data_format")), "NCHW");
  EXPECT_EQ(std::get<std::string>(*chain->attrs.find("output_format")), "NCHW");
  EXPECT_EQ(std::get<std::vector<int64_t>>(*chain->attrs.find("layers")).size(), 7u * 13u);
  EXPECT_EQ(opt->type({int(chain - opt->nodes().data()), 0}).shape, (Shape{-1, 24, 5, 5}));
  for (int64_t batch : {1, 3}) {
    const Tensor x = rnd({batch, 16, 10, 10}, -1, 1, 10 + uint64_t(batch));
    expect_close(call_graph(*g, {x})[0], call_graph(*opt, {x})[0], 1e-4, "batch " + std::to_string(batch));
  }
  const Tensor x = rnd({2, 16, 10, 10}, -1, 1, 20);
  expect_close(call_graph(*g, {x})[0], call_graph(*optimize(*g, {.fuse_conv_chain = false}), {x})[0], 1e-4,
               "without chains");
}

TEST(ConvChain, ExpandGivesTheFusedConvsBack) {
  auto g = build({{2, 16, 10, 10}}, MobileNetBlocks());
  auto opt = optimize(*g);
  ASSERT_EQ(count_op(*opt, OpId::FusedConvChain), 1);
  Graph expanded(*opt);
  EXPECT_EQ(expand_conv_chains(expanded), 1);
  EXPECT_EQ(count_op(expanded, OpId::FusedConvChain), 0);
  EXPECT_EQ(count_op(expanded, OpId::FusedConv2D), 7);
  EXPECT_EQ(count_op(expanded, OpId::Transpose), 2);
  const Tensor x = rnd({2, 16, 10, 10}, -1, 1, 30);
  expect_close(call_graph(*g, {x})[0], call_graph(expanded, {x})[0], 1e-4, "expanded");
  EXPECT_EQ(expand_conv_chains(expanded), 0);
}

TEST(ConvChain, LeavesAloneWhatItCannotChain) {
  Tensor w1 = rnd({1, 1, 4, 4}, -0.5, 0.5, 40), w2 = rnd({3, 3, 4, 4}, -0.5, 0.5, 41);
  auto chains = [](const std::shared_ptr<Graph>& g) { return count_op(*optimize(*g), OpId::FusedConvChain); };
  // One conv: nothing to chain.
  EXPECT_EQ(chains(build({{1, 6, 6, 4}}, [&](const TensorList& x) { return TensorList{relu(conv2d(x[0], w1))}; })), 0);
  // The first conv's result is also an output: the two convs stay apart.
  EXPECT_EQ(chains(build({{1, 6, 6, 4}}, [&](const TensorList& x) {
              Tensor h = conv2d(x[0], w1);
              return TensorList{conv2d(h, w2, {1, 1}, "SAME"), h};
            })),
            0);
  // Two outside inputs (a residual from another placeholder).
  EXPECT_EQ(chains(build({{1, 6, 6, 4}, {1, 6, 6, 4}}, [&](const TensorList& x) {
              return TensorList{conv2d(conv2d(x[0], w1), w2, {1, 1}, "SAME") + x[1]};
            })),
            0);
  // A filter read from a variable may change between calls.
  Variable v(rnd({1, 1, 4, 4}, -0.5, 0.5, 42), "w");
  EXPECT_EQ(chains(build({{1, 6, 6, 4}}, [&](const TensorList& x) {
              return TensorList{conv2d(conv2d(x[0], v.value()), w2, {1, 1}, "SAME")};
            })),
            0);
  // Float64 convs stay fused_conv2d (no float64 conv chain kernel in oneDNN).
  EXPECT_EQ(chains(build({{1, 6, 6, 4}},
                         [&](const TensorList& x) {
                           return TensorList{conv2d(conv2d(x[0], cast(w1, DType::Float64)), cast(w2, DType::Float64))};
                         },
                         DType::Float64)),
            0);
}

TEST(ConvChain, TwoBranchesIntoOneResultStillChain) {
  // ResNet's downsampling block: both branches read the input, the add joins them.
  Tensor w1 = rnd({3, 3, 8, 16}, -0.3, 0.3, 50), w2 = rnd({3, 3, 16, 16}, -0.3, 0.3, 51);
  Tensor wd = rnd({1, 1, 8, 16}, -0.3, 0.3, 52);
  auto g = build({{2, 8, 8, 8}}, [&](const TensorList& x) {
    Tensor h = relu(conv2d(x[0], w1, {2, 2}, "SAME"));
    return TensorList{relu(conv2d(h, w2, {1, 1}, "SAME") + conv2d(x[0], wd, {2, 2}))};
  });
  auto opt = optimize(*g);
  const Node* chain = only_chain(*opt);
  ASSERT_NE(chain, nullptr) << opt->to_string();
  EXPECT_EQ(count_op(*opt, OpId::FusedConv2D), 0);
  EXPECT_EQ(std::get<std::string>(*chain->attrs.find("data_format")), "NHWC");
  EXPECT_EQ(std::get<std::string>(*chain->attrs.find("output_format")), "NHWC");
  const Tensor x = rnd({2, 8, 8, 8}, -1, 1, 53);
  expect_close(call_graph(*g, {x})[0], call_graph(*opt, {x})[0], 1e-4, "downsample");
}

}  // namespace
}  // namespace deepflow
