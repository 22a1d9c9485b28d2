// SPDX-License-Identifier: Apache-2.0
// Graphs shared by the text-form and GraphDef tests: one with many ops and every
// attribute kind, one with (nested, shared) function attributes; count_op and build for the pass tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "deepflow/deepflow.h"
#include "deepflow/graph/builder.h"

namespace deepflow::testing_util {

/// How many nodes of g run `op`.
inline int count_op(const Graph& g, OpId op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

/// The only node of g that runs `op`, or nullptr when there is none or more than one.
inline const Node* only_node(const Graph& g, OpId op) {
  const Node* found = nullptr;
  for (const Node& n : g.nodes())
    if (n.op == op) {
      if (found) return nullptr;
      found = &n;
    }
  return found;
}

/// A tensor of shape s, uniform in [lo, hi), the same for the same seed.
inline Tensor rnd(const Shape& s, double lo = -1, double hi = 1, uint64_t seed = 1, DType dt = DType::Float32) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(size_t(s.num_elements()));
  for (double& x : v) x = u(rng);
  return constant(v, s, dt);
}

/// Fails (naming the first 5 elements) where |want - got| > tol * (1 + |want|).
inline void expect_close(const Tensor& want, const Tensor& got, double tol, const std::string& what) {
  ASSERT_EQ(want.shape(), got.shape()) << what;
  int reported = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    const double a = want.flat(i), b = got.flat(i);
    if (std::fabs(a - b) > tol * (1 + std::fabs(a)) && reported++ < 5)
      ADD_FAILURE() << what << ": element " << i << " want " << a << " got " << b;
  }
}

/// A graph of `shapes.size()` placeholders (x0, x1, ... of dtype dt) -> the outputs of f,
/// with g.inputs and g.outputs set.
inline std::shared_ptr<Graph> build(const std::vector<Shape>& shapes,
                                    const std::function<TensorList(const TensorList&)>& f,
                                    DType dt = DType::Float32) {
  auto g = std::make_shared<Graph>();
  GraphScope scope(g);
  TensorList xs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    xs.push_back(placeholder(dt, shapes[i], "x" + std::to_string(i)));
    g->inputs.push_back(g->value_of(xs.back()).node);
  }
  for (const Tensor& y : f(xs)) g->outputs.push_back(g->value_of(y));
  return g;
}

inline OpId text_test_op_id = OpId::kNumPrimitives;

// text_test_op: any inputs -> f32[], i32[2]; an attribute of every kind, all optional.
inline void register_test_ops() {
  static const bool once = [] {
    auto optional = [](const char* name, AttrKind kind) {
      AttrSpec s = AttrSpec::required_of(name, kind);
      s.required = false;
      return s;
    };
    text_test_op_id = register_custom_op(OpDef{
        .name = "text_test_op",
        .num_inputs = -1,
        .attrs = {AttrSpec("b", false), AttrSpec("i", 0), AttrSpec("f", 0.0), AttrSpec("s", ""),
                  AttrSpec("dt", DType::Float32), AttrSpec("is", std::vector<int64_t>{}),
                  AttrSpec("fs", std::vector<double>{}), optional("t", AttrKind::Tensor),
                  optional("v", AttrKind::Variable), optional("body", AttrKind::Func)},
        .infer = [](const OpCall&, TypeList& out) {
          out.push_back({DType::Float32, {}});
          out.push_back({DType::Int32, {2}});
        },
        .non_differentiable = true});
    return true;
  }();
  (void)once;
}

inline TensorList test_op(std::span<const Tensor> inputs, const Attrs& attrs, const std::string& name = "") {
  register_test_ops();
  if (!name.empty()) GraphScope::current()->set_next_node_name(name);
  return dispatch(text_test_op_id, inputs, attrs);
}

// A model-like graph: variables, many ops, multi-output ops, control dependencies,
// devices, name scopes, constants of every dtype and a node with every attribute kind.
inline std::shared_ptr<Graph> many_ops_graph() {
  static Variable w(constant({1.f, -2.f, 3.f, 0.5f, 0.25f, -1.f, 2.f, 4.f}, {4, 2}), "dense/w");
  static Variable b(constant({0.1f, 0.2f}), "dense/b");
  static Variable step(scalar(0, DType::Int64), "step", false);
  auto g = std::make_shared<Graph>();
  GraphScope scope(g, {.auto_control_dependencies = true});
  Tensor x = placeholder(DType::Float32, {-1, 4}, "x");
  Tensor img = placeholder(DType::Float32, {2, 5, 5, 3}, "img");
  Tensor logits;
  {
    NameScope ns("dense");
    logits = relu(matmul(x, w.value()) + b.value());
  }
  auto [values, indices] = top_k(logits, 1, true);
  Tensor idx64 = cast(indices, DType::Int64);
  Tensor summed = reduce_sum(logits, {1}, true);
  Tensor cat = concat({logits, summed}, 1);
  Tensor padded = pad(cat, {{0, 0}, {1, 2}}, "CONSTANT", 0.5);
  Tensor sliced = strided_slice(padded, {0, 1}, {0, -1}, {1, 2}, 1, 1);
  Tensor arg = argmax(sliced, 1, DType::Int32);
  Tensor conv;
  {
    DeviceScope dev("/cpu:1");
    conv = conv2d(img, constant(std::vector<float>(3 * 3 * 3 * 4, 0.5f), {3, 3, 3, 4}), {2, 2}, "SAME");
  }
  auto bn = fused_batch_norm(conv, ones({4}), zeros({4}), zeros({4}), ones({4}), 1e-5, false);
  Tensor pooled = max_pool2d(bn.y, {2, 2}, {1, 1}, "VALID");
  Tensor g16 = cast(gather(pooled, constant(std::vector<int32_t>{1, 0}), 0), DType::Float16);
  Tensor noise = random_normal({2, 2}, 0.0, 1.0, DType::Float64, 42);
  {
    ControlDependencies deps({arg, g16});
    Tensor total = reduce_max(cast(idx64, DType::Float32)) + reduce_mean(values);
    step.assign_add(scalar(1, DType::Int64));
    (void)total;
  }
  Attrs every{{"b", true},
              {"i", int64_t(-7)},
              {"f", 0.1},
              {"s", std::string("a \"quoted\"\n\tstring\\ \x01 µ")},
              {"dt", DType::BFloat16},
              {"is", std::vector<int64_t>{1, -2, 3}},
              {"fs", std::vector<double>{0.5, -1e-300, 3.0}},
              {"t", constant(std::vector<double>{1, 0, 1, 1}, {2, 2}, DType::Bool)},
              {"v", w}};
  Tensor inputs[] = {noise, values};
  test_op(inputs, every, "every_attr");
  return g;
}

// Functions through a custom op: a body shared by two calls, and a nested function.
inline std::shared_ptr<Graph> graph_with_functions() {
  auto inner = std::make_shared<Graph>();
  {
    GraphScope s(inner);
    Tensor p = placeholder(DType::Float32, {2}, "p");
    Tensor n = neg(p);
    inner->inputs = {inner->value_of(p).node};
    inner->outputs = {inner->value_of(n)};
  }
  auto body = std::make_shared<Graph>();
  {
    GraphScope s(body);
    Tensor a = placeholder(DType::Float32, {2}, "a");
    Tensor b = placeholder(DType::Float32, {2}, "b");
    Tensor ins[] = {a};
    test_op(ins, {{"body", GraphRef(inner)}}, "outer/call");
    GraphScope::current()->set_next_node_name("sum");
    Tensor sum = a + b;
    body->inputs = {body->value_of(a).node, body->value_of(b).node};
    body->outputs = {body->value_of(sum), body->value_of(b)};
  }
  auto g = std::make_shared<Graph>();
  {
    GraphScope s(g);
    Tensor x = placeholder(DType::Float32, {2}, "x");
    Tensor ins[] = {x, x};
    TensorList call = test_op(ins, {{"body", GraphRef(body)}, {"i", int64_t(3)}}, "call");
    test_op({ins, 1}, {{"body", GraphRef(body)}}, "call_again");
    g->inputs = {g->value_of(x).node};
    g->outputs = {g->value_of(call[0]), g->value_of(call[1])};
  }
  return g;
}

}  // namespace deepflow::testing_util
