// SPDX-License-Identifier: Apache-2.0
// ONNX op mappings (deepflow/onnx/ops_*.cpp): one-node models built in code, checked
// against hand-computed values where the semantics are easy to get wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "deepflow/core/error.h"
#include "deepflow/onnx/onnx.h"
#include "deepflow/ops/ops.h"

using namespace deepflow;
namespace op = ::onnx;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

namespace {

constexpr int kFloat = op::TensorProto::FLOAT;
constexpr int kInt64 = op::TensorProto::INT64;
constexpr int kInt32 = op::TensorProto::INT32;

// One node over float inputs; `consts` become initializers (so constant_input folds them).
struct OneNode {
  op::ModelProto m;
  op::NodeProto* node;
  std::map<std::string, Tensor> feeds;

  OneNode(const std::string& type, int64_t opset, size_t num_outputs = 1) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m.mutable_graph()->set_name("g");
    node = m.mutable_graph()->add_node();
    node->set_op_type(type);
    node->set_name("n");
    for (size_t i = 0; i < num_outputs; ++i) {
      const std::string name = "y" + std::to_string(i);
      node->add_output(name);
      auto* v = m.mutable_graph()->add_output();
      v->set_name(name);
      v->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
    }
  }
  void set_output_type(size_t i, int elem) {
    m.mutable_graph()->mutable_output(int(i))->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  }
  // A fed graph input.
  OneNode& input(const std::string& name, const Tensor& value) {
    node->add_input(name);
    auto* v = m.mutable_graph()->add_input();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(value.dtype() == DType::Float32 ? kFloat : value.dtype() == DType::Int64 ? kInt64 : kInt32);
    for (int64_t d : value.shape()) tt->mutable_shape()->add_dim()->set_dim_value(d);
    feeds[name] = value;
    return *this;
  }
  OneNode& missing_input() {
    node->add_input("");
    return *this;
  }
  // An int64 initializer.
  OneNode& ints(const std::string& name, const std::vector<int64_t>& values) {
    node->add_input(name);
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(kInt64);
    t->add_dims(int64_t(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  OneNode& attr(const std::string& name, int64_t v) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(op::AttributeProto::INT);
    a->set_i(v);
    return *this;
  }
  OneNode& attr(const std::string& name, const std::vector<int64_t>& v) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(op::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
    return *this;
  }
  OneNode& attr(const std::string& name, const std::string& v) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(op::AttributeProto::STRING);
    a->set_s(v);
    return *this;
  }
  std::vector<Tensor> run() {
    std::string bytes;
    m.SerializeToString(&bytes);
    auto model = deepflow::onnx::import_model_from_bytes(bytes);
    auto out = model.run(feeds);
    std::vector<Tensor> r;
    for (size_t i = 0; i < size_t(m.graph().output_size()); ++i) r.push_back(out.at("y" + std::to_string(i)));
    return r;
  }
};

Tensor iota(const Shape& s, DType dt = DType::Float32) {
  return reshape(arange(0, double(s.num_elements()), 1, dt), s);
}

TEST(OnnxOps, SliceNegativeStep) {
  OneNode n("Slice", 13);
  n.input("x", iota({6})).ints("starts", {-1}).ints("ends", {-100}).ints("axes", {0}).ints("steps", {-2});
  Tensor y = n.run()[0];
  EXPECT_THAT(y.to_vector<float>(), ElementsAreArray({5.f, 3.f, 1.f}));
}

TEST(OnnxOps, SliceClampsAndDefaults) {
  OneNode n("Slice", 13);
  n.input("x", iota({2, 4})).ints("starts", {1, 10}).ints("ends", {1000, -1000}).ints("axes", {1, 0});
  // axis 0: start 10 clamps to 2, so empty.
  EXPECT_EQ(n.run()[0].shape(), Shape({0, 3}));
}

TEST(OnnxOps, SliceAttributesBeforeOpset10) {
  OneNode n("Slice", 9);
  n.input("x", iota({2, 4})).attr("starts", std::vector<int64_t>{0, 1}).attr("ends", std::vector<int64_t>{1, 3});
  EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({1.f, 2.f}));
}

TEST(OnnxOps, PadModes) {
  Tensor x = constant({1.f, 2.f, 3.f});
  {
    OneNode n("Pad", 13);
    n.input("x", x).ints("pads", {2, 1}).attr("mode", "reflect");
    EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({3.f, 2.f, 1.f, 2.f, 3.f, 2.f}));
  }
  {
    OneNode n("Pad", 13);
    n.input("x", x).ints("pads", {2, 1}).attr("mode", "edge");
    EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({1.f, 1.f, 1.f, 2.f, 3.f, 3.f}));
  }
  {
    OneNode n("Pad", 13);  // negative pads crop
    n.input("x", x).ints("pads", {-1, 1});
    EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({2.f, 3.f, 0.f}));
  }
  {
    OneNode n("Pad", 10);
    n.input("x", x).attr("pads", std::vector<int64_t>{1, 0}).attr("mode", "constant");
    auto* a = n.node->add_attribute();
    a->set_name("value");
    a->set_type(op::AttributeProto::FLOAT);
    a->set_f(7.f);
    EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({7.f, 1.f, 2.f, 3.f}));
  }
}

// A 1x1x4x4 ramp, 2x2 ones kernel, stride 1: SAME_UPPER pads after, SAME_LOWER before.
TEST(OnnxOps, ConvAutoPadUpperVsLower) {
  Tensor x = iota({1, 1, 3, 3});
  Tensor w = ones({1, 1, 2, 2});
  OneNode up("Conv", 13);
  up.input("x", x).input("w", w).attr("auto_pad", "SAME_UPPER");
  // Image 0 1 2 / 3 4 5 / 6 7 8, zeros after: windows start at each cell.
  EXPECT_THAT(up.run()[0].to_vector<float>(), ElementsAreArray({8.f, 12.f, 7.f, 20.f, 24.f, 13.f, 13.f, 15.f, 8.f}));
  OneNode lo("Conv", 13);
  lo.input("x", x).input("w", w).attr("auto_pad", "SAME_LOWER");
  EXPECT_THAT(lo.run()[0].to_vector<float>(), ElementsAreArray({0.f, 1.f, 3.f, 3.f, 8.f, 12.f, 9.f, 20.f, 24.f}));
}

TEST(OnnxOps, ConvExplicitPadsStridesGroupsBias) {
  // Two groups of one channel each; explicit asymmetric pads.
  Tensor x = iota({1, 2, 2, 2});
  Tensor w = ones({2, 1, 1, 1});
  Tensor b = constant({10.f, 20.f});
  OneNode n("Conv", 11);
  n.input("x", x).input("w", w).input("b", b).attr("group", 2).attr("pads", std::vector<int64_t>{0, 0, 1, 0});
  Tensor y = n.run()[0];
  ASSERT_EQ(y.shape(), Shape({1, 2, 3, 2}));
  EXPECT_THAT(y.to_vector<float>(),
              ElementsAreArray({10.f, 11.f, 12.f, 13.f, 10.f, 10.f, 24.f, 25.f, 26.f, 27.f, 20.f, 20.f}));
}

TEST(OnnxOps, MaxPoolCeilModeAndPads) {
  Tensor x = iota({1, 1, 1, 5});
  OneNode n("MaxPool", 12);
  n.input("x", x).attr("kernel_shape", std::vector<int64_t>{1, 2}).attr("strides", std::vector<int64_t>{1, 2})
      .attr("ceil_mode", 1);
  EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({1.f, 3.f, 4.f}));
}

// Pads that are not TensorFlow's SAME (resnet's 1 on each side) become max_pool's EXPLICIT
// padding, with no pad node; padded cells never win, even over negative values.
TEST(OnnxOps, MaxPoolPadsAreExplicitPaddingWithoutAPadNode) {
  Tensor x = iota({1, 1, 4, 4}) - 100.0;
  OneNode n("MaxPool", 12);
  n.input("x", x).attr("kernel_shape", std::vector<int64_t>{3, 3}).attr("strides", std::vector<int64_t>{2, 2})
      .attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({-95.f, -93.f, -87.f, -85.f}));
  std::string bytes;
  n.m.SerializeToString(&bytes);
  const auto model = deepflow::onnx::import_model_from_bytes(bytes);  // owns the graph below
  const Graph& g = model.concrete_function().graph();
  int pads = 0, pools = 0;
  for (const Node& node : g.nodes()) {
    pads += node.op == OpId::Pad;
    pools += node.op == OpId::MaxPool;
  }
  EXPECT_EQ(pads, 0);
  EXPECT_EQ(pools, 1);
}

TEST(OnnxOps, AveragePoolCountIncludePad) {
  Tensor x = ones({1, 1, 1, 3});
  for (int include : {0, 1}) {
    OneNode n("AveragePool", 11);
    n.input("x", x).attr("kernel_shape", std::vector<int64_t>{1, 2}).attr("pads", std::vector<int64_t>{0, 1, 0, 0})
        .attr("count_include_pad", include);
    std::vector<float> want = include ? std::vector<float>{0.5f, 1.f, 1.f} : std::vector<float>{1.f, 1.f, 1.f};
    EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray(want)) << "count_include_pad=" << include;
  }
}

// Opset 11 flattens to 2-D at axis; opset 13 normalizes along the one axis.
TEST(OnnxOps, SoftmaxOpset11VsOpset13) {
  Tensor x = constant({0.f, 0.f, 0.f, 0.f}, {2, 2});
  OneNode a("Softmax", 11);
  a.input("x", x).attr("axis", 0);
  EXPECT_THAT(a.run()[0].to_vector<float>(), ElementsAreArray({0.25f, 0.25f, 0.25f, 0.25f}));
  OneNode b("Softmax", 13);
  b.input("x", x).attr("axis", 0);
  EXPECT_THAT(b.run()[0].to_vector<float>(), ElementsAreArray({0.5f, 0.5f, 0.5f, 0.5f}));
}

TEST(OnnxOps, IntegerDivAndMod) {
  Tensor a = constant(std::vector<int32_t>{-7, 7, -7, 7});
  Tensor b = constant(std::vector<int32_t>{2, -2, -2, 2});
  {
    OneNode n("Div", 13);
    n.input("a", a).input("b", b);
    n.set_output_type(0, kInt32);
    EXPECT_THAT(n.run()[0].to_vector<int32_t>(), ElementsAreArray({-3, -3, 3, 3}));
  }
  {
    OneNode n("Mod", 13);  // Python's %: the divisor's sign
    n.input("a", a).input("b", b);
    n.set_output_type(0, kInt32);
    EXPECT_THAT(n.run()[0].to_vector<int32_t>(), ElementsAreArray({1, -1, -1, 1}));
  }
  {
    OneNode n("Mod", 13);  // C fmod: the dividend's sign
    n.input("a", a).input("b", b).attr("fmod", 1);
    n.set_output_type(0, kInt32);
    EXPECT_THAT(n.run()[0].to_vector<int32_t>(), ElementsAreArray({-1, 1, -1, 1}));
  }
}

TEST(OnnxOps, ReshapeZeroCopiesUnlessAllowzero) {
  OneNode n("Reshape", 14);
  n.input("x", iota({2, 3})).ints("shape", {0, -1});
  EXPECT_EQ(n.run()[0].shape(), Shape({2, 3}));
}

TEST(OnnxOps, UnsqueezeAxesReferToOutput) {
  OneNode a("Unsqueeze", 13);
  a.input("x", iota({2, 3})).ints("axes", {-1, 0});
  EXPECT_EQ(a.run()[0].shape(), Shape({1, 2, 3, 1}));
  OneNode b("Unsqueeze", 11);
  b.input("x", iota({2, 3})).attr("axes", std::vector<int64_t>{1});
  EXPECT_EQ(b.run()[0].shape(), Shape({2, 1, 3}));
}

TEST(OnnxOps, GatherNegativeIndicesAndGatherElements) {
  OneNode a("Gather", 13);
  a.input("x", iota({4})).input("i", constant(std::vector<int64_t>{-1, 0}));
  EXPECT_THAT(a.run()[0].to_vector<float>(), ElementsAreArray({3.f, 0.f}));
  OneNode b("GatherElements", 13);
  b.input("x", iota({2, 2})).input("i", constant(std::vector<int64_t>{1, 0, 0, 0}, {2, 2})).attr("axis", 1);
  EXPECT_THAT(b.run()[0].to_vector<float>(), ElementsAreArray({1.f, 0.f, 2.f, 2.f}));
}

TEST(OnnxOps, ClipOpset6AttrsVsOpset11Inputs) {
  Tensor x = constant({-2.f, 0.5f, 2.f});
  OneNode a("Clip", 10);
  auto* lo = a.node->add_attribute();
  lo->set_name("min");
  lo->set_type(op::AttributeProto::FLOAT);
  lo->set_f(-1.f);
  a.input("x", x);
  EXPECT_THAT(a.run()[0].to_vector<float>(), ElementsAreArray({-1.f, 0.5f, 2.f}));
  OneNode b("Clip", 13);
  b.input("x", x).missing_input().input("hi", scalar(1.0));
  EXPECT_THAT(b.run()[0].to_vector<float>(), ElementsAreArray({-2.f, 0.5f, 1.f}));
}

TEST(OnnxOps, ReduceSumAxesInputAndNoop) {
  OneNode a("ReduceSum", 13);
  a.input("x", iota({2, 2})).ints("axes", {1}).attr("keepdims", 0);
  EXPECT_THAT(a.run()[0].to_vector<float>(), ElementsAreArray({1.f, 5.f}));
  OneNode b("ReduceSum", 13);
  b.input("x", iota({2, 2})).attr("noop_with_empty_axes", 1);
  EXPECT_EQ(b.run()[0].shape(), Shape({2, 2}));
  OneNode c("ReduceMean", 11);
  c.input("x", iota({2, 2}));
  Tensor y = c.run()[0];
  EXPECT_EQ(y.shape(), Shape({1, 1}));
  EXPECT_FLOAT_EQ(y.item<float>(), 1.5f);
}

TEST(OnnxOps, TopKSmallestAlongAxis0) {
  OneNode n("TopK", 11, 2);
  n.input("x", constant({3.f, 1.f, 2.f, 0.f}, {2, 2})).ints("k", {1}).attr("axis", 0).attr("largest", 0);
  n.set_output_type(1, kInt64);
  auto r = n.run();
  EXPECT_THAT(r[0].to_vector<float>(), ElementsAreArray({2.f, 0.f}));
  EXPECT_THAT(r[1].to_vector<int64_t>(), ElementsAreArray({1, 1}));
}

TEST(OnnxOps, ErrorsNameTheNode) {
  OneNode n("Conv", 13);
  n.input("x", iota({1, 1, 2, 2, 2})).input("w", ones({1, 1, 1, 1, 1}));
  try {
    n.run();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("[onnx::import]"));
    EXPECT_THAT(e.what(), HasSubstr("Conv"));
    EXPECT_THAT(e.what(), HasSubstr("2-D"));
  }
}

// --- resize, recurrent, quantization and misc ops (ops_resize/rnn/quantize/misc.cpp) ---

// A float attribute (cubic_coeff_a, extrapolation_value, ...).
void float_attr(OneNode& n, const std::string& name, float v) {
  auto* a = n.node->add_attribute();
  a->set_name(name);
  a->set_type(op::AttributeProto::FLOAT);
  a->set_f(v);
}

// An initializer of any dtype (raw_data), e.g. a uint8 zero point.
void raw_initializer(OneNode& n, const std::string& name, int elem, const Shape& shape, const std::string& bytes) {
  n.node->add_input(name);
  auto* t = n.m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(elem);
  for (int64_t d : shape) t->add_dims(d);
  t->set_raw_data(bytes);
}
void float_initializer(OneNode& n, const std::string& name, const std::vector<float>& v, const Shape& shape) {
  raw_initializer(n, name, kFloat, shape,
                  std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
}

TEST(OnnxOps, ResizeNearestModesAndAlignCorners) {
  // 1-D [0, 10] upsampled x2 with asymmetric coordinates: x_orig = 0, 0.5, 1, 1.5.
  Tensor x = constant({0.f, 10.f}, {1, 1, 1, 2});
  {
    OneNode n("Resize", 13);
    n.input("x", x).missing_input();
    float_initializer(n, "scales", {1, 1, 1, 2}, {4});
    n.attr("coordinate_transformation_mode", "asymmetric").attr("nearest_mode", "round_prefer_ceil");
    // 0.5 rounds up to index 1, 1.5 to 2 which clamps to 1.
    EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({0.f, 10.f, 10.f, 10.f}));
  }
  {
    OneNode n("Resize", 13);
    n.input("x", x).missing_input();
    float_initializer(n, "scales", {1, 1, 1, 2}, {4});
    n.attr("coordinate_transformation_mode", "asymmetric");  // round_prefer_floor: 0.5 -> 0
    EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({0.f, 0.f, 10.f, 10.f}));
  }
  {
    OneNode n("Resize", 13);
    n.input("x", x).missing_input().missing_input().ints("sizes", {1, 1, 1, 3});
    n.attr("mode", "linear").attr("coordinate_transformation_mode", "align_corners");
    EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({0.f, 5.f, 10.f}));
  }
  {
    // half_pixel linear: x_orig = (i + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25 (edges clamp).
    OneNode n("Resize", 13);
    n.input("x", x).missing_input();
    float_initializer(n, "scales", {1, 1, 1, 2}, {4});
    n.attr("mode", "linear");
    EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({0.f, 2.5f, 7.5f, 10.f}));
  }
}

TEST(OnnxOps, RnnReverseDirectionFillsOutputsBackwards) {
  Tensor x = constant({1.f, 2.f}, {2, 1, 1});  // [seq, batch, input]
  Tensor w = constant({1.f}, {1, 1, 1}), r = constant({0.5f}, {1, 1, 1});
  OneNode n("RNN", 14, 2);
  n.input("x", x).input("w", w).input("r", r).attr("hidden_size", 1).attr("direction", "reverse");
  auto out = n.run();
  const float h_first = std::tanh(2.f), h_last = std::tanh(1.f + 0.5f * h_first);
  // Time step 0 holds the state after the whole reversed pass.
  EXPECT_NEAR(out[0].to_vector<float>()[0], h_last, 1e-6);
  EXPECT_NEAR(out[0].to_vector<float>()[1], h_first, 1e-6);
  EXPECT_NEAR(out[1].to_vector<float>()[0], h_last, 1e-6);
}

TEST(OnnxOps, GruLinearBeforeReset) {
  // z = r = sigmoid(0) = 0.5; the candidate sees Rbh inside (lbr=1) or outside the reset.
  Tensor x = constant({1.f}, {1, 1, 1});
  Tensor w = constant({0.f, 0.f, 1.f}, {1, 3, 1}), r = constant({0.f, 0.f, 1.f}, {1, 3, 1});
  Tensor b = constant({0.f, 0.f, 0.f, 0.f, 0.f, 1.f}, {1, 6});
  for (int lbr : {0, 1}) {
    OneNode n("GRU", 14, 2);
    n.input("x", x).input("w", w).input("r", r).input("b", b).attr("hidden_size", 1).attr("linear_before_reset", lbr);
    const float expected = 0.5f * std::tanh(lbr ? 1.f + 0.5f * 1.f : 1.f + 1.f);
    EXPECT_NEAR(n.run()[1].to_vector<float>()[0], expected, 1e-6) << "linear_before_reset=" << lbr;
  }
}

TEST(OnnxOps, QuantizeLinearRoundsHalfToEvenAndSaturates) {
  OneNode n("QuantizeLinear", 13);
  n.set_output_type(0, op::TensorProto::UINT8);
  n.input("x", constant({0.5f, 1.5f, 2.5f, -3.f, 300.f}));
  float_initializer(n, "scale", {1.f}, {});
  raw_initializer(n, "zp", op::TensorProto::UINT8, {}, std::string(1, '\0'));
  EXPECT_THAT(n.run()[0].to_vector<int64_t>(), ElementsAreArray({0, 2, 2, 0, 255}));
}

TEST(OnnxOps, DequantizeLinearPerAxis) {
  OneNode n("DequantizeLinear", 13);
  raw_initializer(n, "x", op::TensorProto::INT8, {2, 2}, std::string("\x01\x02\xff\x04", 4));
  float_initializer(n, "scale", {2.f, 0.5f}, {2});
  raw_initializer(n, "zp", op::TensorProto::INT8, {2}, std::string("\x01\x00", 2));
  n.attr("axis", 0);
  // Row 0: (1-1)*2, (2-1)*2; row 1: (-1-0)*0.5, 4*0.5.
  EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({0.f, 2.f, -0.5f, 2.f}));
}

TEST(OnnxOps, EinsumTraceAndImplicitOutput) {
  {
    OneNode n("Einsum", 12);
    n.input("x", iota({3, 3})).attr("equation", "ii->");
    EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({12.f}));
  }
  {
    // Implicit output "ik": j is summed (it appears twice).
    OneNode n("Einsum", 12);
    n.input("a", iota({2, 3})).input("b", ones({3, 2})).attr("equation", "ij,jk");
    EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({3.f, 3.f, 12.f, 12.f}));
  }
}

TEST(OnnxOps, UniqueUnsortedKeepsFirstOccurrenceOrder) {
  OneNode n("Unique", 11, 4);
  n.set_output_type(1, kInt64);
  n.set_output_type(2, kInt64);
  n.set_output_type(3, kInt64);
  float_initializer(n, "x", {2.f, 1.f, 1.f, 3.f, 4.f, 3.f}, {6});
  n.attr("sorted", 0);
  auto out = n.run();
  EXPECT_THAT(out[0].to_vector<float>(), ElementsAreArray({2.f, 1.f, 3.f, 4.f}));
  EXPECT_THAT(out[1].to_vector<int64_t>(), ElementsAreArray({0, 1, 3, 4}));
  EXPECT_THAT(out[2].to_vector<int64_t>(), ElementsAreArray({0, 1, 1, 2, 3, 2}));
  EXPECT_THAT(out[3].to_vector<int64_t>(), ElementsAreArray({1, 2, 2, 1}));
}

TEST(OnnxOps, MaxPoolIndicesKeepFirstOfTies) {
  Tensor x = constant({5.f, 5.f, 1.f, 7.f, 2.f, 7.f}, {1, 1, 2, 3});
  OneNode n("MaxPool", 12, 2);
  n.set_output_type(1, kInt64);
  n.input("x", x).attr("kernel_shape", std::vector<int64_t>{1, 2});
  auto out = n.run();
  EXPECT_THAT(out[0].to_vector<float>(), ElementsAreArray({5.f, 5.f, 7.f, 7.f}));
  EXPECT_THAT(out[1].to_vector<int64_t>(), ElementsAreArray({0, 1, 3, 5}));
}

TEST(OnnxOps, ScatterNdMultiplyCombinesRepeatedIndices) {
  OneNode n("ScatterND", 16);
  n.input("x", constant({1.f, 2.f, 3.f})).ints("idx", {0, 0, 2});
  n.m.mutable_graph()->mutable_initializer(0)->clear_dims();
  n.m.mutable_graph()->mutable_initializer(0)->add_dims(3);
  n.m.mutable_graph()->mutable_initializer(0)->add_dims(1);
  n.input("u", constant({2.f, 3.f, 4.f})).attr("reduction", "mul");
  EXPECT_THAT(n.run()[0].to_vector<float>(), ElementsAreArray({6.f, 2.f, 12.f}));
}

TEST(OnnxOps, DftOfRealSignal) {
  // [1, 0, 0, 0] transforms to all ones; [0, 1, 0, 0] to e^{-i pi k / 2}.
  OneNode n("DFT", 17);
  n.input("x", constant({1.f, 0.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f}, {2, 4, 1}));
  Tensor y = n.run()[0];
  ASSERT_EQ(y.shape(), Shape({2, 4, 2}));
  const std::vector<float> expected{1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, -1, -1, 0, 0, 1};
  const std::vector<float> got = y.to_vector<float>();
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-6) << i;
}

TEST(OnnxOps, NonMaxSuppressionWithKnownBoxes) {
  // ONNX's suppress_by_IOU case with the boxes as initializers (folded at import).
  OneNode n("NonMaxSuppression", 11);
  n.set_output_type(0, kInt64);
  float_initializer(n, "boxes", {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101},
                    {1, 6, 4});
  float_initializer(n, "scores", {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}, {1, 1, 6});
  n.ints("max", {3});
  float_initializer(n, "iou", {0.5f}, {1});
  float_initializer(n, "score", {0.f}, {1});
  EXPECT_THAT(n.run()[0].to_vector<int64_t>(), ElementsAreArray({0, 0, 3, 0, 0, 0, 0, 0, 5}));
}

}  // namespace
