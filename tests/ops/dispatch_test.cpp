// SPDX-License-Identifier: Apache-2.0
// dispatch(): attribute schema checks, kernel choice, the custom-op path and the
// graph-building hook.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "deepflow/deepflow.h"
#include "deepflow/ops/kernel.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// A user op with an attribute, registered at run time as a program would.
OpId scale_op() {
  static const OpId id = [] {
    OpId op = register_custom_op(OpDef{
        .name = "test_scale",
        .num_inputs = 1,
        .attrs = {{"factor", 2.0}},
        .infer = [](const OpCall& c, TypeList& out) { out.push_back({c.in(0).dtype(), c.in(0).shape()}); },
        .vjp = [](const OpCall& c, const TensorList& g) { return TensorList{g[0] * c.attr_float("factor")}; },
    });
    register_kernel(op, KernelDef{.run = [](const OpCall& c, TensorList& out) {
                      const float* x = c.in(0).data<float>();
                      float* y = out[0].data<float>();
                      for (int64_t i = 0; i < c.in(0).size(); ++i) y[i] = x[i] * float(c.attr_float("factor"));
                    }});
    return op;
  }();
  return id;
}

TEST(Dispatch, CustomOpRunsWithDefaultsAndAttrs) {
  Tensor x = constant({1.f, 2.f});
  EXPECT_EQ(dispatch1(scale_op(), {x}).to_vector<float>(), (std::vector<float>{2, 4}));
  EXPECT_EQ(dispatch1(scale_op(), {x}, {{"factor", 3.0}}).to_vector<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(op_id_from_name("test_scale"), scale_op());
}

TEST(Dispatch, CustomOpIsDifferentiable) {
  Tensor x = constant({1.f, 2.f});
  GradientTape tape;
  tape.watch(x);
  Tensor y = dispatch1(scale_op(), {x}, {{"factor", 5.0}});
  EXPECT_EQ(tape.gradient(y, x).to_vector<float>(), (std::vector<float>{5, 5}));
}

TEST(Dispatch, AttributeSchemaIsChecked) {
  Tensor x = constant({1.f});
  EXPECT_THAT([&] { dispatch1(scale_op(), {x}, {{"factr", 3.0}}); },
              ThrowsMessage<Error>(HasSubstr("[test_scale] unknown attribute 'factr'")));
  EXPECT_THAT([&] { dispatch1(scale_op(), {x}, {{"factor", int64_t(3)}}); },
              ThrowsMessage<Error>(HasSubstr("[test_scale] attribute 'factor' must be float, got int 3")));
  EXPECT_THAT([&] { dispatch(scale_op(), {x, x}); },
              ThrowsMessage<Error>(HasSubstr("[test_scale] expects 1 inputs, got 2")));
  EXPECT_THAT([&] { dispatch(scale_op(), {Tensor()}); },
              ThrowsMessage<Error>(HasSubstr("[test_scale] input 0 is an undefined tensor")));
}

TEST(Dispatch, NoKernelForDtypeIsAClearError) {
  Tensor x = constant({1.0}, {1}, DType::Float64);
  // The custom kernel reads float32 only; it declares no `supports`, so it runs and the
  // typed accessor reports the mismatch.
  EXPECT_THAT([&] { dispatch1(scale_op(), {x}); }, ThrowsMessage<Error>(HasSubstr("float64")));
}

TEST(Dispatch, HigherPriorityKernelWins) {
  const auto& ks = kernels_for(OpId::Add);
  ASSERT_GE(ks.size(), 2u);
  EXPECT_GT(ks.front().priority, ks.back().priority);
  EXPECT_EQ(ks.back().priority, kRefPriority);
  Tensor a = ones({4}), b = ones({4});
  Attrs none;
  std::vector<Tensor> in{a, b};
  OpCall call{&op_def(OpId::Add), in, &none, {}};
  EXPECT_STREQ(select_kernel(call).name, "cpu:omp");
}

// A minimal build scope: proves dispatch hands symbolic inputs to the active scope
// after infer has run (graph building plugs in here).
class CountingScope : public BuildScope {
 public:
  int nodes = 0;
  TensorList add_node(const OpDef& def, std::span<const Tensor>, const Attrs&, const TypeList& types) override {
    ++nodes;
    TensorList out;
    for (const TensorType& t : types) {
      auto impl = std::make_shared<TensorImpl>();
      impl->shape = t.shape;
      impl->dtype = t.dtype;
      impl->id = TensorImpl::next_id();
      out.emplace_back(impl);
    }
    return out;
  }
  bool captures(std::span<const Tensor>) const override { return false; }
};

Tensor placeholder(const Shape& s, DType dt) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = s;
  impl->dtype = dt;
  impl->id = TensorImpl::next_id();
  return Tensor(impl);
}

TEST(Dispatch, SymbolicInputsBuildNodesWithInferredTypes) {
  CountingScope scope;
  BuildScopeGuard guard(&scope);
  Tensor a = placeholder({-1, 3}, DType::Float32);
  Tensor b = placeholder({3}, DType::Float32);
  Tensor c = add(a, b);
  EXPECT_TRUE(c.is_symbolic());
  EXPECT_EQ(c.shape(), Shape({-1, 3}));
  EXPECT_EQ(scope.nodes, 1);
  EXPECT_THAT([&] { add(a, placeholder({4}, DType::Float32)); },
              ThrowsMessage<Error>(HasSubstr("[add] shapes [?,3] and [4] are not broadcastable")));
  EXPECT_EQ(scope.nodes, 1);
}

TEST(Dispatch, SymbolicInputOutsideScopeIsAnError) {
  Tensor a = placeholder({2}, DType::Float32);
  EXPECT_THAT([&] { add(a, a); }, ThrowsMessage<Error>(HasSubstr("[add] got a symbolic input outside a graph scope")));
}

}  // namespace
}  // namespace deepflow

namespace deepflow {
namespace {

// float16 matmul and conv must not fall to the naive reference kernels.
TEST(Dispatch, Float16MatmulAndConvComputeInFloat32) {
  Attrs none, same{{"padding", std::string("SAME")}};
  std::vector<Tensor> mm{zeros({4, 4}, DType::Float16), zeros({4, 4}, DType::Float16)};
  EXPECT_STREQ(select_kernel(OpCall{&op_def(OpId::MatMul), mm, &none, {}}).name, "cpu:f16-via-f32");
  std::vector<Tensor> cv{zeros({1, 8, 8, 4}, DType::Float16), zeros({3, 3, 4, 8}, DType::Float16)};
  EXPECT_STREQ(select_kernel(OpCall{&op_def(OpId::Conv2D), cv, &same, {}}).name, "cpu:f16-via-f32");
  std::vector<Tensor> bf{zeros({4, 4}, DType::BFloat16), zeros({4, 4}, DType::BFloat16)};
  EXPECT_STREQ(select_kernel(OpCall{&op_def(OpId::MatMul), bf, &none, {}}).name, "cpu:onednn");
}

}  // namespace
}  // namespace deepflow
