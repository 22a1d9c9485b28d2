// SPDX-License-Identifier: Apache-2.0
// The fuse_conv pass: conv2d (constant filter) + pad + bias + activation -> fused_conv2d, the
// residual add after it -> its summand, what it must leave alone, and the fused op's gradient
// against the unfused ops'.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <tuple>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/passes.h"
#include "graph_test_util.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using testing_util::build;
using testing_util::count_op;
using testing_util::expect_close;
using testing_util::rnd;

const Node* only_fused(const Graph& g) { return testing_util::only_node(g, OpId::FusedConv2D); }

bool has_summand(const Node& n) {
  const AttrValue* v = n.attrs.find("has_summand");
  return n.op == OpId::FusedConv2D && v && std::get<bool>(*v);
}

template <class T>
T attr(const Node& n, const char* name) {
  const AttrValue* v = n.attrs.find(name);
  EXPECT_NE(v, nullptr) << name;
  return v ? std::get<T>(*v) : T{};
}

TEST(FuseConv, ConvBiasReluBecomesOneNodeWithACachedFilter) {
  Tensor w = rnd({3, 3, 8, 16}, -0.5, 0.5, 2), b = rnd({16}, -1, 1, 3);
  auto g = build({{2, 9, 9, 8}}, [&](const TensorList& x) {
    NameScope block("block");
    return TensorList{relu(conv2d(x[0], w, {1, 1}, "SAME") + b)};
  });
  Tensor x = rnd({2, 9, 9, 8}, -1, 1, 4);
  const Tensor want = call_graph(*g, {x})[0];
  EXPECT_EQ(fuse_conv(*g), 1);
  const Node* f = only_fused(*g);
  ASSERT_NE(f, nullptr) << g->to_string();
  EXPECT_EQ(count_op(*g, OpId::Conv2D) + count_op(*g, OpId::Add) + count_op(*g, OpId::Relu), 0);
  EXPECT_EQ(f->name, "block/relu");  // replaced in place: the last node's name stays
  EXPECT_EQ(attr<std::string>(*f, "activation"), "relu");
  EXPECT_EQ(attr<std::string>(*f, "padding"), "SAME");
  EXPECT_TRUE(attr<bool>(*f, "has_bias"));
  EXPECT_TRUE(attr<bool>(*f, "constant_filter"));
  // The second run reads the reordered filter from the cache: same result.
  expect_close(want, call_graph(*g, {x})[0], 1e-5, "fused");
  expect_close(want, call_graph(*g, {x})[0], 1e-5, "fused again");
}

TEST(FuseConv, ZeroPadFoldsIntoExplicitPaddingAndClipBecomesThePostOp) {
  Tensor w = rnd({3, 3, 4, 6}, -0.5, 0.5, 5), b = rnd({6}, -1, 1, 6);
  auto g = build({{1, 7, 8, 4}}, [&](const TensorList& x) {
    Tensor p = pad(x[0], {{0, 0}, {1, 2}, {0, 1}, {0, 0}});
    Tensor y = conv2d(p, w, {2, 2}, "VALID") + b;
    // The ONNX importer's Clip(0, 6): max, then min, by scalar constants.
    return TensorList{minimum(maximum(y, scalar(0.f)), scalar(6.f))};
  });
  Tensor x = rnd({1, 7, 8, 4}, -4, 4, 7);
  const Tensor want = call_graph(*g, {x})[0];
  EXPECT_EQ(fuse_conv(*g), 1);
  eliminate_dead_code(*g);
  const Node* f = only_fused(*g);
  ASSERT_NE(f, nullptr) << g->to_string();
  EXPECT_EQ(count_op(*g, OpId::Pad) + count_op(*g, OpId::Maximum) + count_op(*g, OpId::Minimum), 0) << g->to_string();
  EXPECT_EQ(attr<std::string>(*f, "padding"), "EXPLICIT");
  EXPECT_EQ(attr<std::vector<int64_t>>(*f, "explicit_paddings"), (std::vector<int64_t>{1, 2, 0, 1}));
  EXPECT_EQ(attr<std::string>(*f, "activation"), "clip");
  EXPECT_EQ(attr<double>(*f, "clip_min"), 0.0);
  EXPECT_EQ(attr<double>(*f, "clip_max"), 6.0);
  EXPECT_EQ(f->inputs[0].node, g->inputs[0]);  // the placeholder itself: the pad is gone
  expect_close(want, call_graph(*g, {x})[0], 1e-5, "pad + conv + clip");
}

TEST(FuseConv, ChannelsFirstPadBeforeTheTransposeFoldsToo) {
  // What the ONNX importer writes for a padded Conv on an NCHW input.
  Tensor w = rnd({7, 7, 3, 8}, -0.5, 0.5, 20);
  auto g = build({{2, 3, 11, 10}}, [&](const TensorList& x) {
    Tensor p = pad(x[0], {{0, 0}, {0, 0}, {3, 2}, {1, 3}});
    return TensorList{conv2d(transpose(p, {0, 2, 3, 1}), w, {2, 2}, "VALID")};
  });
  Tensor x = rnd({2, 3, 11, 10}, -1, 1, 21);
  const Tensor want = call_graph(*g, {x})[0];
  EXPECT_EQ(fuse_conv(*g), 1);
  eliminate_dead_code(*g);
  EXPECT_EQ(count_op(*g, OpId::Pad), 0) << g->to_string();
  const Node* f = only_fused(*g);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(attr<std::vector<int64_t>>(*f, "explicit_paddings"), (std::vector<int64_t>{3, 2, 1, 3}));
  EXPECT_EQ(g->type(f->inputs[0]).shape, (Shape{2, 11, 10, 3}));
  expect_close(want, call_graph(*g, {x})[0], 1e-5, "nchw pad");
}

TEST(FuseConv, DepthwiseRelu6AndSigmoidThroughOptimize) {
  Tensor dw = rnd({3, 3, 4, 2}, -1, 1, 8), pw = rnd({1, 1, 8, 5}, -1, 1, 9), b = rnd({5}, -1, 1, 10);
  auto g = build({{2, 6, 6, 4}}, [&](const TensorList& x) {
    Tensor h = relu6(depthwise_conv2d(x[0], dw, {1, 1}, "SAME"));
    return TensorList{sigmoid(conv2d(h, pw) + b)};
  });
  Tensor x = rnd({2, 6, 6, 4}, -2, 2, 11);
  const Tensor want = call_graph(*g, {x})[0];
  auto opt = optimize(*g, {.fuse_conv_chain = false});  // conv_chain_test.cpp tests the chains
  EXPECT_EQ(count_op(*opt, OpId::FusedConv2D), 2) << opt->to_string();
  EXPECT_EQ(count_op(*opt, OpId::Conv2D) + count_op(*opt, OpId::FusedElementwise), 0) << opt->to_string();
  std::vector<std::string> acts;
  for (const Node& n : opt->nodes())
    if (n.op == OpId::FusedConv2D) acts.push_back(attr<std::string>(n, "activation"));
  std::sort(acts.begin(), acts.end());
  EXPECT_EQ(acts, (std::vector<std::string>{"relu6", "sigmoid"}));
  expect_close(want, call_graph(*opt, {x})[0], 1e-5, "optimized");
}

TEST(FuseConv, LeakyReluAndEluInTheirWhereForms) {
  Tensor w = rnd({3, 3, 2, 4}, -1, 1, 22), b = rnd({4}, -1, 1, 23);
  using F = std::function<Tensor(const Tensor&)>;
  const std::vector<std::tuple<std::string, F, std::string>> forms = {
      {"leaky_relu composite", [](const Tensor& z) { return leaky_relu(z, 0.3); }, "leaky_relu"},
      {"LeakyRelu import", [](const Tensor& z) { return where(less(z, scalar(0.f)), z * 0.3, z); }, "leaky_relu"},
      {"elu composite", [](const Tensor& z) { return elu(z); }, "elu"},
      {"Elu import", [](const Tensor& z) { return where(less(z, scalar(0.f)), (exp(z) - 1.0) * 1.0, z); }, "elu"},
      {"elu alpha 2", [](const Tensor& z) { return elu(z, 2.0); }, ""},
  };
  for (const auto& [what, act_binding, want_act] : forms) {
    const F& act = act_binding;  // a lambda cannot capture a structured binding in clang 14
    auto g = build({{1, 6, 6, 2}}, [&](const TensorList& x) { return TensorList{act(conv2d(x[0], w) + b)}; });
    Tensor x = rnd({1, 6, 6, 2}, -2, 2, 24);
    const Tensor want = call_graph(*g, {x})[0];
    EXPECT_EQ(fuse_conv(*g), 1) << what;
    eliminate_dead_code(*g);
    const Node* f = only_fused(*g);
    ASSERT_NE(f, nullptr) << what;
    EXPECT_EQ(attr<std::string>(*f, "activation"), want_act) << what;
    if (!want_act.empty()) {
      EXPECT_EQ(g->num_nodes(), 4) << what << "\n" << g->to_string();  // x, filter, bias, fused
      if (want_act == "leaky_relu") {
        EXPECT_NEAR(attr<double>(*f, "alpha"), 0.3, 1e-7) << what;  // the float32 constant
      }
    }
    expect_close(want, call_graph(*g, {x})[0], 1e-5, what);
  }
}

TEST(FuseConv, LeavesAloneWhatItCannotFuse) {
  Tensor w = rnd({3, 3, 2, 4}, -1, 1, 12), b = rnd({4});
  // A filter that is not a constant.
  auto fed = build({{1, 5, 5, 2}, {3, 3, 2, 4}},
                   [&](const TensorList& x) { return TensorList{relu(conv2d(x[0], x[1]))}; });
  EXPECT_EQ(fuse_conv(*fed), 0);
  // float64.
  const Tensor w64 = cast(w, DType::Float64);
  auto f64 = build({{1, 5, 5, 2}}, [&](const TensorList& x) { return TensorList{relu(conv2d(x[0], w64))}; },
                   DType::Float64);
  EXPECT_EQ(fuse_conv(*f64), 0);
  // A pad by a non-zero value, a pad of the batch dim, a pad in front of a SAME conv.
  for (int which = 0; which < 3; ++which) {
    auto g = build({{1, 5, 5, 2}}, [&](const TensorList& x) {
      Tensor p = which == 0   ? pad(x[0], {{0, 0}, {1, 1}, {1, 1}, {0, 0}}, "CONSTANT", 1.0)
                 : which == 1 ? pad(x[0], {{1, 0}, {1, 1}, {1, 1}, {0, 0}})
                              : pad(x[0], {{0, 0}, {1, 1}, {1, 1}, {0, 0}});
      return TensorList{conv2d(p, w, {1, 1}, which == 2 ? "SAME" : "VALID")};
    });
    EXPECT_EQ(fuse_conv(*g), 1) << which;  // the conv alone still gets the cached filter
    EXPECT_EQ(count_op(*g, OpId::Pad), 1) << which;
    EXPECT_NE(attr<std::string>(*only_fused(*g), "padding"), "EXPLICIT") << which;
  }
  // The conv's result has another user (here: a graph output): the bias add stays.
  auto shared = build({{1, 5, 5, 2}}, [&](const TensorList& x) {
    Tensor c = conv2d(x[0], w);
    return TensorList{relu(c + b), c};
  });
  EXPECT_EQ(fuse_conv(*shared), 1);
  EXPECT_EQ(count_op(*shared, OpId::Add) + count_op(*shared, OpId::Relu), 2);
  EXPECT_FALSE(attr<bool>(*only_fused(*shared), "has_bias"));
  // A clip whose bounds cross (ONNX: max wins) and a min without a max are not activations.
  auto crossed = build({{1, 5, 5, 2}}, [&](const TensorList& x) {
    return TensorList{minimum(maximum(conv2d(x[0], w), scalar(1.f)), scalar(-1.f)) +
                      minimum(conv2d(x[0], w), scalar(0.5f))};
  });
  EXPECT_EQ(fuse_conv(*crossed), 2);
  for (const Node& n : crossed->nodes())
    if (n.op == OpId::FusedConv2D) {
      EXPECT_EQ(attr<std::string>(n, "activation"), "");
    }
}

TEST(FuseConv, KeptValuesStayFetchable) {
  Tensor w = rnd({1, 1, 3, 3}, -1, 1, 13), b = rnd({3});
  Tensor inner;
  auto g = build({{1, 4, 4, 3}}, [&](const TensorList& x) {
    inner = conv2d(x[0], w) + b;
    return TensorList{tanh(inner)};
  });
  std::vector<ValueRef> keep{g->value_of(inner)};
  Tensor x = rnd({1, 4, 4, 3}, -1, 1, 14);
  const Tensor want = call_graph(*g, {x})[0];
  EXPECT_EQ(fuse_conv(*g, &keep), 1);
  const Node* f = only_fused(*g);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(attr<std::string>(*f, "activation"), "");  // the tanh stays: its input is kept
  EXPECT_EQ(g->node(keep[0].node).op, OpId::FusedConv2D);
  expect_close(want, call_graph(*g, {x})[0], 1e-6, "kept");
}

TEST(FuseConv, FusedConvGradientMatchesTheUnfusedOps) {
  Tensor x = rnd({2, 5, 5, 2}, -1, 1, 15, DType::Float64), w = rnd({3, 3, 2, 3}, -1, 1, 16, DType::Float64),
         b = rnd({3}, -0.5, 0.5, 17, DType::Float64);
  for (const char* act : {"", "relu", "relu6", "clip", "elu", "sigmoid", "tanh", "leaky_relu"}) {
    GradientTape t1, t2;
    for (const Tensor* v : {&x, &w, &b}) {
      t1.watch(*v);
      t2.watch(*v);
    }
    const std::string s = act;
    Tensor z = conv2d(pad(x, {{0, 0}, {1, 0}, {2, 1}, {0, 0}}), w, {2, 1}, "VALID") + b;
    Tensor y1 = s == "relu"         ? relu(z)
                : s == "relu6"      ? relu6(z)
                : s == "clip"       ? clip_by_value(z, -0.7, 0.9)
                : s == "elu"        ? elu(z)
                : s == "sigmoid"    ? sigmoid(z)
                : s == "tanh"       ? tanh(z)
                : s == "leaky_relu" ? leaky_relu(z, 0.3)
                                    : z;
    Tensor y2 = fused_conv2d(x, w, b,
                             {.strides = {2, 1}, .padding = "EXPLICIT", .explicit_paddings = {1, 0, 2, 1},
                              .activation = s, .alpha = 0.3, .clip_min = -0.7, .clip_max = 0.9});
    expect_close(y1, y2, 1e-12, std::string("forward ") + act);
    TensorList g1 = t1.gradient({reduce_sum(y1 * y1)}, {x, w, b});
    TensorList g2 = t2.gradient({reduce_sum(y2 * y2)}, {x, w, b});
    for (size_t i = 0; i < 3; ++i) expect_close(g1[i], g2[i], 1e-12, std::string("gradient ") + act);
  }
}

// Two resnet basic blocks (the second downsamples with a 1x1 conv on its shortcut) and a
// mobilenet_v2-style residual add without an activation, at an unknown batch.
TEST(FuseConv, ResidualAddsBecomeTheSummand) {
  Tensor w1 = rnd({3, 3, 8, 8}, -0.3, 0.3, 30), w2 = rnd({3, 3, 8, 8}, -0.3, 0.3, 31);
  Tensor w3 = rnd({3, 3, 8, 16}, -0.3, 0.3, 32), w4 = rnd({3, 3, 16, 16}, -0.3, 0.3, 33);
  Tensor wd = rnd({1, 1, 8, 16}, -0.3, 0.3, 34), wp = rnd({1, 1, 16, 16}, -0.3, 0.3, 35);
  Tensor b1 = rnd({8}, -1, 1, 36), b2 = rnd({8}, -1, 1, 37), b3 = rnd({16}, -1, 1, 38), b4 = rnd({16}, -1, 1, 39),
         bd = rnd({16}, -1, 1, 40), bp = rnd({16}, -1, 1, 41);
  auto g = build({{-1, 8, 8, 8}}, [&](const TensorList& x) {
    Tensor h = relu(conv2d(x[0], w1, {1, 1}, "SAME") + b1);
    Tensor y1 = relu(conv2d(h, w2, {1, 1}, "SAME") + b2 + x[0]);
    Tensor h2 = relu(conv2d(y1, w3, {2, 2}, "SAME") + b3);
    Tensor y2 = relu(conv2d(h2, w4, {1, 1}, "SAME") + b4 + (conv2d(y1, wd, {2, 2}, "SAME") + bd));
    return TensorList{y2 + (conv2d(y2, wp) + bp)};
  });
  Tensor x = rnd({2, 8, 8, 8}, -1, 1, 42);
  const Tensor want = call_graph(*g, {x})[0];
  auto opt = optimize(*g, {.fuse_conv_chain = false});
  EXPECT_EQ(count_op(*opt, OpId::FusedConv2D), 6) << opt->to_string();
  EXPECT_EQ(count_op(*opt, OpId::Add) + count_op(*opt, OpId::Relu) + count_op(*opt, OpId::FusedElementwise), 0)
      << opt->to_string();
  int summands = 0;
  for (const Node& n : opt->nodes())
    if (has_summand(n)) {
      ++summands;
      EXPECT_EQ(n.inputs.size(), 4u);
      EXPECT_EQ(opt->type(n.inputs[3]), n.outputs[0]);
    }
  EXPECT_EQ(summands, 3);
  expect_close(want, call_graph(*opt, {x})[0], 1e-5, "residual");
  expect_close(call_graph(*g, {rnd({1, 8, 8, 8}, -1, 1, 43)})[0], call_graph(*opt, {rnd({1, 8, 8, 8}, -1, 1, 43)})[0],
               1e-5, "residual at batch 1");
}

// efficientnet's block: the conv's input is scaled by a squeeze-excite gate (a reduction and
// a reshape to [-1, 1, 1, c]), whose batch is still the shortcut's.
TEST(FuseConv, ResidualAddAfterASqueezeExciteGate) {
  Tensor w = rnd({1, 1, 6, 6}, -0.5, 0.5, 70), b = rnd({6}, -1, 1, 71);
  auto g = build({{-1, 4, 4, 6}}, [&](const TensorList& x) {
    Tensor gate = sigmoid(reshape(reduce_sum(x[0], {1, 2}) * 0.0625, {-1, 1, 1, 6}));
    return TensorList{conv2d(x[0] * gate, w) + b + x[0]};
  });
  Tensor x = rnd({3, 4, 4, 6}, -1, 1, 72);
  const Tensor want = call_graph(*g, {x})[0];
  EXPECT_EQ(fuse_conv(*g), 2);
  EXPECT_EQ(count_op(*g, OpId::Add), 0) << g->to_string();
  const Node* f = only_fused(*g);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(has_summand(*f));
  expect_close(want, call_graph(*g, {x})[0], 1e-5, "squeeze-excite");
}

TEST(FuseConv, ResidualAddsItMustLeaveAlone) {
  Tensor w = rnd({1, 1, 4, 4}, -1, 1, 50), b = rnd({4}, -1, 1, 51);
  auto summands = [](const Graph& g) {
    int n = 0;
    for (const Node& node : g.nodes()) n += has_summand(node);
    return n;
  };
  // A summand computed from the conv's own result, a broadcast summand, a conv result that
  // is also a graph output, an activation before the add, and batches that may differ.
  const std::vector<std::pair<std::string, std::function<TensorList(const TensorList&)>>> cases = {
      {"own result", [&](const TensorList& x) { Tensor c = conv2d(x[0], w) + b; return TensorList{c + tanh(c)}; }},
      {"broadcast", [&](const TensorList& x) { return TensorList{(conv2d(x[0], w) + b) + x[1]}; }},
      {"shared", [&](const TensorList& x) { Tensor c = conv2d(x[0], w) + b; return TensorList{c + x[0], c}; }},
      {"activated", [&](const TensorList& x) { return TensorList{relu(conv2d(x[0], w) + b) + x[0]}; }},
      {"other batch", [&](const TensorList& x) { return TensorList{(conv2d(x[0], w) + b) + x[2]}; }},
  };
  for (const auto& [what, f] : cases) {
    auto g = build({{-1, 3, 3, 4}, {1, 3, 1, 4}, {-1, 3, 3, 4}}, f);
    fuse_conv(*g);
    EXPECT_EQ(summands(*g), 0) << what << "\n" << g->to_string();
    EXPECT_EQ(count_op(*g, OpId::Add), 1) << what;
  }
  // A kept add result stays fetchable: the add fuses (it is the root), the relu after it not.
  Tensor sum;
  auto g = build({{1, 3, 3, 4}}, [&](const TensorList& x) {
    sum = conv2d(x[0], w) + b + x[0];
    return TensorList{relu(sum)};
  });
  std::vector<ValueRef> keep{g->value_of(sum)};
  Tensor x = rnd({1, 3, 3, 4}, -1, 1, 52);
  const Tensor want = call_graph(*g, {x})[0];
  fuse_conv(*g, &keep);
  EXPECT_EQ(summands(*g), 1) << g->to_string();
  EXPECT_EQ(g->node(keep[0].node).op, OpId::FusedConv2D);
  EXPECT_EQ(attr<std::string>(g->node(keep[0].node), "activation"), "");
  EXPECT_EQ(count_op(*g, OpId::Relu), 1);
  expect_close(want, call_graph(*g, {x})[0], 1e-6, "kept sum");
}

TEST(FuseConv, SummandGradientMatchesTheUnfusedOps) {
  Tensor x = rnd({2, 5, 5, 2}, -1, 1, 60, DType::Float64), w = rnd({3, 3, 2, 3}, -1, 1, 61, DType::Float64),
         b = rnd({3}, -0.5, 0.5, 62, DType::Float64), r = rnd({2, 2, 6, 3}, -1, 1, 63, DType::Float64);
  for (const char* act : {"", "relu", "relu6", "elu", "tanh"}) {
    GradientTape t1, t2;
    for (const Tensor* v : {&x, &w, &b, &r}) {
      t1.watch(*v);
      t2.watch(*v);
    }
    const std::string s = act;
    Tensor z = conv2d(pad(x, {{0, 0}, {1, 0}, {2, 1}, {0, 0}}), w, {2, 1}, "VALID") + b + r;
    Tensor y1 = s == "relu" ? relu(z) : s == "relu6" ? relu6(z) : s == "elu" ? elu(z) : s == "tanh" ? tanh(z) : z;
    Tensor y2 = fused_conv2d(x, w, b, {.strides = {2, 1}, .padding = "EXPLICIT", .explicit_paddings = {1, 0, 2, 1},
                                       .activation = s}, r);
    expect_close(y1, y2, 1e-12, std::string("forward ") + act);
    TensorList g1 = t1.gradient({reduce_sum(y1 * y1)}, {x, w, b, r});
    TensorList g2 = t2.gradient({reduce_sum(y2 * y2)}, {x, w, b, r});
    for (size_t i = 0; i < 4; ++i) expect_close(g1[i], g2[i], 1e-12, std::string("gradient ") + act);
  }
}

TEST(FuseConv, BadOptionsAreClearErrors) {
  Tensor x = rnd({1, 4, 4, 2}), w = rnd({3, 3, 2, 4});
  auto message = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_THAT(message([&] { fused_conv2d(x, w, Tensor(), {.strides = {1, 1, 1}}); }),
              HasSubstr("[fused_conv2d] strides must be 1 or 2 ints {h, w}, got [1,1,1]"));
  EXPECT_THAT(message([&] { fused_conv2d(x, w, rnd({3})); }), HasSubstr("[fused_conv2d] bias must be [4]"));
  EXPECT_THAT(message([&] { fused_conv2d(x, w, Tensor(), {.padding = "SAME"}, rnd({1, 4, 4, 1})); }),
              HasSubstr("[fused_conv2d] summand must be float32[1,4,4,4] (the output's type), got float32[1,4,4,1]"));
  const Tensor f64_summand = rnd({1, 4, 4, 4}, -1, 1, 1, DType::Float64);
  EXPECT_THAT(message([&] { fused_conv2d(x, w, Tensor(), {.padding = "SAME"}, f64_summand); }),
              HasSubstr("got float64[1,4,4,4]"));
}

}  // namespace
}  // namespace deepflow
