// SPDX-License-Identifier: Apache-2.0
// Graph passes: each pass on hand-built graphs, then equivalence (passes on vs off) on
// every op-table row and on random graphs, with each pass switched off alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"
#include "deepflow/graph/executor.h"
#include "deepflow/graph/passes.h"
#include "graph_test_util.h"
#include "ops/op_cases.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using testing_util::build;
using testing_util::count_op;

TensorList run(const Graph& g, const TensorList& inputs) { return call_graph(g, inputs); }

void expect_close(const Tensor& want, const Tensor& got, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  ASSERT_EQ(want.shape(), got.shape()) << what;
  int reported = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    const double a = want.flat(i), b = got.flat(i);
    const bool same = (std::isnan(a) && std::isnan(b)) || a == b || std::fabs(a - b) <= atol + rtol * std::fabs(a);
    if (!same && reported++ < 5) ADD_FAILURE() << what << ": element " << i << " want " << a << " got " << b;
  }
}

void expect_all_close(const TensorList& want, const TensorList& got, double rtol, double atol,
                      const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) expect_close(want[i], got[i], rtol, atol, what + " output " + std::to_string(i));
}

Tensor rnd(const Shape& s, double lo = -1, double hi = 1, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(size_t(s.num_elements()));
  for (double& x : v) x = u(rng);
  return constant(v, s, DType::Float32);
}

// --- dead code ---

TEST(Passes, DeadCodeKeepsOutputsStatefulAndKept) {
  auto g = build({{3}}, [](const TensorList& x) {
    Tensor unused = exp(x[0]);        // dead
    Tensor kept = sin(x[0]);          // kept through `keep`
    random_uniform({2});              // stateful: stays
    (void)unused;
    (void)kept;
    return TensorList{x[0] * 2.0};
  });
  std::vector<ValueRef> keep{{g->find("sin"), 0}};
  const int before = g->num_nodes();
  const int removed = eliminate_dead_code(*g, &keep);
  EXPECT_EQ(removed, 1);
  EXPECT_EQ(g->num_nodes(), before - 1);
  EXPECT_EQ(g->find("exp"), -1);
  EXPECT_EQ(g->node(keep[0].node).name, "sin");
  EXPECT_EQ(count_op(*g, OpId::RandomUniform), 1);
  EXPECT_NO_THROW(g->validate());
  EXPECT_EQ(run(*g, {constant({1.f, 2.f, 3.f})})[0].to_vector<float>(), (std::vector<float>{2, 4, 6}));
}

// --- common subexpressions ---

TEST(Passes, CseMergesEqualNodesAndConstantsButNotRandomOps) {
  auto g = build({{2, 3}}, [](const TensorList& x) {
    Tensor a = exp(x[0]) + constant({1.f, 2.f, 3.f});
    Tensor b = exp(x[0]) + constant({1.f, 2.f, 3.f});  // same op, same inputs, equal constant
    Tensor r1 = random_uniform({2, 3}, 0, 1, DType::Float32, 5), r2 = random_uniform({2, 3}, 0, 1, DType::Float32, 5);
    return TensorList{a * b, r1 - r2};
  });
  EXPECT_EQ(count_op(*g, OpId::Exp), 2);
  const int merged = eliminate_common_subexpressions(*g);
  EXPECT_EQ(merged, 3);  // the constant, the exp, the add
  EXPECT_EQ(count_op(*g, OpId::Exp), 1);
  EXPECT_EQ(count_op(*g, OpId::Add), 1);
  EXPECT_EQ(count_op(*g, OpId::RandomUniform), 2);
  EXPECT_NO_THROW(g->validate());
}

// --- constant folding ---

TEST(Passes, ConstantFoldingReplacesPureConstantSubgraphs) {
  auto g = build({{3}}, [](const TensorList& x) {
    Tensor c = exp(constant({0.f, 1.f, 2.f})) * 2.0;  // all constant
    return TensorList{x[0] + c};
  });
  const std::string mul_name = g->node(g->node(g->outputs[0].node).inputs[1].node).name;
  EXPECT_EQ(fold_constants(*g), 2);  // exp, then mul
  eliminate_dead_code(*g);
  EXPECT_EQ(count_op(*g, OpId::Exp), 0);
  EXPECT_EQ(count_op(*g, OpId::Mul), 0);
  ASSERT_GE(g->find(mul_name), 0);  // the folded node keeps its name
  EXPECT_EQ(g->node(g->find(mul_name)).op, OpId::Const);
  EXPECT_EQ(g->num_nodes(), 3);  // x, the folded constant, the add
  TensorList y = run(*g, {zeros({3})});
  expect_close(constant({2.f, 2 * std::exp(1.f), 2 * std::exp(2.f)}), y[0], 1e-6, 0, "folded");
}

TEST(Passes, ConstantFoldingRespectsTheSizeCapAndStatefulOps) {
  auto g = build({{1}}, [](const TensorList& x) {
    Tensor big = tile(constant({1.f}), {1000});              // 1000 elements
    Tensor r = random_normal({3}, 0, 1, DType::Float32, 1) * 2.0;  // random: never folded
    return TensorList{reduce_sum(big) + x[0], r};
  });
  EXPECT_EQ(fold_constants(*g, nullptr, 100), 0);
  EXPECT_EQ(count_op(*g, OpId::Tile), 1);
  EXPECT_EQ(fold_constants(*g, nullptr, 1000), 2);  // tile, then reduce_sum
  EXPECT_EQ(count_op(*g, OpId::RandomNormal), 1);
  EXPECT_EQ(count_op(*g, OpId::Mul), 1);
}

// --- algebraic simplification ---

TEST(Passes, AlgebraicIdentitiesGoAway) {
  auto g = build({{2, 3}}, [](const TensorList& x) {
    Tensor y = (x[0] + 0.0) * 1.0 - 0.0;
    y = y / 1.0;
    y = neg(neg(y));
    y = transpose(transpose(y, {1, 0}), {1, 0});
    y = reshape(reshape(y, {3, 2}), {2, 3});
    y = cast(y, DType::Float32);
    return TensorList{exp(identity(y))};
  });
  const int n = simplify_algebra(*g);
  EXPECT_GE(n, 8);  // (cast to the same dtype builds no node: cast() returns x)
  eliminate_dead_code(*g);
  EXPECT_EQ(g->num_nodes(), 2) << g->to_string();  // x and exp
  Tensor x = rnd({2, 3});
  expect_close(exp(x), run(*g, {x})[0], 0, 0, "simplified");
}

TEST(Passes, AlgebraicKeepsBroadcastsZeroProductsAndOutputs) {
  auto g = build({{3}}, [](const TensorList& x) {
    Tensor b = x[0] + zeros({2, 3});        // broadcasts: not x
    Tensor z = x[0] * 0.0;                  // NaN * 0 is NaN: stays
    Tensor t = transpose(transpose(reshape(x[0], {3, 1}), {1, 0}), {1, 0});  // cancels
    return TensorList{b, z, identity(x[0]), t};
  });
  simplify_algebra(*g);
  eliminate_dead_code(*g);
  EXPECT_EQ(count_op(*g, OpId::Add), 1);
  EXPECT_EQ(count_op(*g, OpId::Mul), 1);
  EXPECT_EQ(count_op(*g, OpId::Identity), 1);  // a graph output: kept
  EXPECT_EQ(count_op(*g, OpId::Transpose), 0);
  Tensor x = constant({1.f, NAN, -2.f});
  TensorList out = run(*g, {x});
  EXPECT_TRUE(std::isnan(out[1].to_vector<float>()[1]));
  EXPECT_EQ(out[3].shape(), Shape({3, 1}));
}

TEST(Passes, TransposesComposeIntoOne) {
  auto g = build({{2, 3, 4}}, [](const TensorList& x) { return TensorList{transpose(transpose(x[0], {1, 2, 0}), {1, 2, 0})}; });
  simplify_algebra(*g);
  eliminate_dead_code(*g);
  EXPECT_EQ(count_op(*g, OpId::Transpose), 1);
  Tensor x = rnd({2, 3, 4});
  expect_close(transpose(x, {2, 0, 1}), run(*g, {x})[0], 0, 0, "composed");
}

TEST(Passes, StatefulNodesAndControlDependenciesSurvive) {
  Variable v(constant({1.f}), "v");
  auto g = std::make_shared<Graph>();
  Tensor out;
  {
    GraphScope scope(g, {.auto_control_dependencies = true});
    Tensor x = placeholder(DType::Float32, {1}, "x");
    g->inputs.push_back(g->value_of(x).node);
    Tensor read = v.value();
    v.assign(read * 2.0);  // nothing uses it: stays anyway
    ControlDependencies deps({read});
    out = identity(x) + 0.0;  // both have a control input: neither is simplified away
  }
  g->outputs = {g->value_of(out)};
  auto opt = optimize(*g);
  EXPECT_EQ(count_op(*opt, OpId::AssignVariable), 1);
  EXPECT_EQ(count_op(*opt, OpId::ReadVariable), 1);
  EXPECT_EQ(count_op(*opt, OpId::Identity), 1);
  EXPECT_EQ(count_op(*opt, OpId::Add), 1);
  const Node& o = opt->node(opt->outputs[0].node);
  ASSERT_EQ(o.control_inputs.size(), 1u);
  EXPECT_EQ(opt->node(o.control_inputs[0]).op, OpId::ReadVariable);
}

// --- fusion ---

TEST(Passes, MatMulBiasActivationFuse) {
  Tensor w = rnd({4, 5}, -1, 1, 2), b = rnd({5}, -1, 1, 3);
  auto g = build({{3, 4}}, [&](const TensorList& x) {
    NameScope dense("dense");
    return TensorList{relu(matmul(x[0], w) + b)};
  });
  Tensor x = rnd({3, 4}, -1, 1, 4);
  TensorList want = run(*g, {x});
  EXPECT_EQ(fuse_matmul(*g), 1);
  EXPECT_EQ(count_op(*g, OpId::FusedMatMul), 1);
  EXPECT_EQ(count_op(*g, OpId::MatMul) + count_op(*g, OpId::Add) + count_op(*g, OpId::Relu), 0);
  EXPECT_EQ(g->node(g->outputs[0].node).name, "dense/relu");
  expect_all_close(want, run(*g, {x}), 1e-6, 1e-6, "fused");
}

TEST(Passes, MatMulWithOtherUsersOfTheProductDoesNotFuse) {
  Tensor w = rnd({4, 5}), b = rnd({5});
  auto g = build({{3, 4}}, [&](const TensorList& x) {
    Tensor m = matmul(x[0], w);
    return TensorList{tanh(m + b), m};
  });
  EXPECT_EQ(fuse_matmul(*g), 0);
}

TEST(Passes, FusedMatMulIsDifferentiable) {
  Tensor a = rnd({3, 4}, -1, 1, 5), w = rnd({4, 2}, -1, 1, 6), b = rnd({2}, -1, 1, 7);
  for (const char* act : {"", "relu", "tanh", "sigmoid", "gelu"}) {
    GradientTape t1, t2;
    for (const Tensor* x : {&a, &w, &b}) {
      t1.watch(*x);
      t2.watch(*x);
    }
    Tensor z = matmul(a, w) + b;
    std::string s = act;
    Tensor y1 = s == "relu" ? relu(z) : s == "tanh" ? tanh(z) : s == "sigmoid" ? sigmoid(z) : s == "gelu" ? gelu(z) : z;
    Tensor y2 = fused_matmul(a, w, b, false, false, act);
    TensorList g1 = t1.gradient({reduce_sum(y1 * y1)}, {a, w, b});
    TensorList g2 = t2.gradient({reduce_sum(y2 * y2)}, {a, w, b});
    expect_all_close(g1, g2, 1e-5, 1e-5, std::string("activation ") + act);
  }
}

TEST(Passes, ConvBatchNormFoldsForInference) {
  Tensor w = rnd({3, 3, 2, 4}, -1, 1, 8), scale = rnd({4}, 0.5, 2, 9), offset = rnd({4}, -1, 1, 10),
         mean = rnd({4}, -1, 1, 11), var = rnd({4}, 0.5, 2, 12);
  auto g = build({{2, 6, 6, 2}}, [&](const TensorList& x) {
    Tensor y = fused_batch_norm(conv2d(x[0], w, {1, 1}, "SAME"), scale, offset, mean, var, 1e-3, false).y;
    Tensor z = batch_normalization(conv2d(relu(y), w, {1, 1}, "VALID"), mean, var, offset, scale, 1e-3);
    return TensorList{relu(z)};
  });
  Tensor x = rnd({2, 6, 6, 2}, -1, 1, 13);
  TensorList want = run(*g, {x});
  auto opt = optimize(*g, {.fuse_elementwise = false, .fuse_conv = false});
  EXPECT_EQ(count_op(*opt, OpId::FusedBatchNorm), 0) << opt->to_string();
  EXPECT_EQ(count_op(*opt, OpId::Conv2D), 2);
  EXPECT_EQ(count_op(*opt, OpId::Mul), 0) << opt->to_string();
  EXPECT_EQ(count_op(*opt, OpId::Add), 2);  // one bias add per conv
  expect_all_close(want, run(*opt, {x}), 1e-5, 1e-5, "folded");
  // Training batch norm is left alone.
  auto t = build({{2, 6, 6, 2}}, [&](const TensorList& x) {
    return TensorList{fused_batch_norm(conv2d(x[0], w), scale, offset, Tensor(), Tensor(), 1e-3, true).y};
  });
  EXPECT_EQ(fold_batch_norm(*t), 0);
}

TEST(Passes, ElementwiseChainsFuseIntoOneLoop) {
  auto g = build({{4, 8}, {4, 8}}, [](const TensorList& x) {
    Tensor y = tanh(x[0] * x[1] + 0.5) * 2.0 - x[0];
    return TensorList{sigmoid(y)};
  });
  Tensor a = rnd({4, 8}, -1, 1, 14), b = rnd({4, 8}, -1, 1, 15);
  TensorList want = run(*g, {a, b});
  EXPECT_EQ(fuse_elementwise(*g), 1);
  eliminate_dead_code(*g);
  ASSERT_EQ(count_op(*g, OpId::FusedElementwise), 1);
  EXPECT_EQ(g->num_nodes(), 3) << g->to_string();  // two placeholders and the fused node
  const Node& f = g->node(g->outputs[0].node);
  EXPECT_EQ(f.name, "sigmoid");
  EXPECT_EQ(std::get<std::string>(*f.attrs.find("program")), "$0 $1 mul #0.5 add tanh #2 mul $0 sub sigmoid");
  expect_all_close(want, run(*g, {a, b}), 1e-6, 1e-6, "fused chain");
}

TEST(Passes, KeepMapsCallerValuesThroughTheRewrite) {
  Tensor inner;
  auto g = build({{4}}, [&](const TensorList& x) {
    inner = exp(x[0]) * 1.0;  // simplified to exp(x)
    Tensor dup = exp(x[0]);   // merged into the same exp
    return TensorList{relu(inner + dup)};
  });
  std::vector<ValueRef> keep{g->value_of(inner)};
  auto opt = optimize(*g, {}, &keep);
  EXPECT_EQ(opt->node(keep[0].node).op, OpId::Exp);
  Tensor x = constant({0.f, 1.f, -1.f, 2.f});
  TensorList got = execute(*opt, {{{opt->inputs[0], 0}, x}}, {keep[0], opt->outputs[0]});
  expect_close(exp(x), got[0], 1e-6, 0, "kept");
  expect_close(relu(exp(x) * 2.0), got[1], 1e-6, 0, "output");
}

// --- equivalence on the op table ---

class PassesOnOpTable : public ::testing::TestWithParam<testing::OpCase> {};

// Each row built in a graph, from placeholders and from constants (which folding then
// evaluates), gives the same results with every pass on as with none.
TEST_P(PassesOnOpTable, SameResultsWithAndWithoutPasses) {
  const testing::OpCase& c = GetParam();
  if (!c.error.empty()) GTEST_SKIP() << "error row";
  if (!c.op.empty() && op_def(op_id_from_name(c.op)).stateful) GTEST_SKIP() << "random op";
  const DType dt = c.dtypes.empty() ? DType::Float32 : c.dtypes[0];
  const TensorList xs = make_inputs(c, dt);
  for (bool as_constants : {false, true}) {
    auto g = std::make_shared<Graph>();
    try {
      GraphScope scope(g);
      TensorList ins;
      for (size_t i = 0; i < xs.size(); ++i) {
        if (as_constants) {
          ins.push_back(xs[i]);
        } else {
          ins.push_back(placeholder(xs[i].dtype(), xs[i].shape(), "in" + std::to_string(i)));
          g->inputs.push_back(g->value_of(ins.back()).node);
        }
      }
      for (const Tensor& y : run_row(c, ins)) {
        if (!y.is_symbolic()) GTEST_SKIP() << "the row computes eagerly";
        g->outputs.push_back(g->value_of(y));
      }
    } catch (const Error& e) {
      GTEST_SKIP() << "not buildable in graph mode: " << e.what();
    }
    TensorList feed = as_constants ? TensorList{} : xs;
    TensorList want;
    try {
      want = call_graph(*g, feed);
    } catch (const Error& e) {
      GTEST_SKIP() << "does not run in graph mode: " << e.what();
    }
    auto opt = optimize(*g);
    EXPECT_NO_THROW(opt->validate()) << c.name;
    expect_all_close(want, call_graph(*opt, feed), 1e-5, 1e-6,
                     c.name + (as_constants ? " (constants)" : " (placeholders)"));
  }
}

std::string row_label(const ::testing::TestParamInfo<testing::OpCase>& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Rows, PassesOnOpTable, ::testing::ValuesIn(testing::all_op_cases()), row_label);

// --- equivalence on random graphs ---

// A seeded DAG of 20-50 float32 nodes over [4, 8] values: elementwise ops, matmuls with a
// bias, reductions broadcast back, constant-only subexpressions, identities (x + 0, x * 1)
// and repeated subexpressions, so that every pass finds work.
std::shared_ptr<Graph> random_graph(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return int(rng() % uint64_t(n)); };
  return build({{4, 8}, {4, 8}}, [&](const TensorList& x) {
    std::vector<Tensor> vals = {x[0], x[1], rnd({4, 8}, -1, 1, rng())};
    const int n = 20 + pick(31);
    for (int i = 0; i < n; ++i) {
      const Tensor& a = vals[size_t(pick(int(vals.size())))];
      const Tensor& b = vals[size_t(pick(int(vals.size())))];
      Tensor y;
      switch (pick(14)) {
        case 0: y = tanh(a); break;
        case 1: y = sigmoid(a) * 2.0; break;
        case 2: y = relu(a) - b; break;
        case 3: y = a * b; break;
        case 4: y = a + b; break;
        case 5: y = maximum(a, sin(b)); break;
        case 6: y = relu(matmul(a, rnd({8, 8}, -0.3, 0.3, rng())) + rnd({8}, -1, 1, rng())); break;
        case 7: y = tanh(matmul(a, b, false, true)) ; y = matmul(y, b) * 0.25; break;
        case 8: y = a - reduce_mean(a, {1}, true); break;
        case 9: y = a + reduce_sum(b, {0}, true) * 0.1; break;
        case 10: y = (a + 0.0) * 1.0; break;
        case 11: y = tanh(a) + tanh(a); break;  // a repeated subexpression
        case 12: y = a + exp(rnd({4, 8}, -1, 1, 99)) * 0.5; break;  // a constant subexpression
        default: y = neg(neg(a)) * abs(b); break;
      }
      vals.push_back(y);
    }
    return TensorList{vals.back(), vals[vals.size() - 2], vals[size_t(3 + pick(int(vals.size()) - 3))]};
  });
}

TEST(PassesOnRandomGraphs, SameResultsWithEveryPassAndEachPassOff) {
  std::vector<std::pair<std::string, PassOptions>> configs = {{"all", {}}};
  auto off = [&](const char* name, bool PassOptions::*field) {
    PassOptions o;
    o.*field = false;
    configs.emplace_back(std::string("without ") + name, o);
  };
  off("dce", &PassOptions::dce);
  off("cse", &PassOptions::cse);
  off("constant_folding", &PassOptions::constant_folding);
  off("algebraic", &PassOptions::algebraic);
  off("fuse_matmul", &PassOptions::fuse_matmul);
  off("fold_batch_norm", &PassOptions::fold_batch_norm);
  off("fuse_elementwise", &PassOptions::fuse_elementwise);
  off("sink_transposes", &PassOptions::sink_transposes);
  off("fuse_conv", &PassOptions::fuse_conv);
  int shrunk = 0;
  for (uint64_t seed = 1; seed <= 25; ++seed) {
    auto g = random_graph(seed);
    Tensor a = rnd({4, 8}, -1, 1, seed * 7), b = rnd({4, 8}, -1, 1, seed * 11);
    TensorList want = run(*g, {a, b});
    for (const auto& [name, options] : configs) {
      auto opt = optimize(*g, options);
      ASSERT_NO_THROW(opt->validate()) << "seed " << seed << " " << name;
      if (name == "all") shrunk += opt->num_nodes() < g->num_nodes();
      expect_all_close(want, run(*opt, {a, b}), 1e-5, 1e-6, "seed " + std::to_string(seed) + " " + name);
    }
  }
  EXPECT_EQ(shrunk, 25);
}

}  // namespace
}  // namespace deepflow
