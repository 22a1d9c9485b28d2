// SPDX-License-Identifier: Apache-2.0
// TensorFlow-style string tests of shape rules (`infer`), on symbolic inputs with
// unknown dims, in the spirit of TF's INFER_OK / INFER_ERROR:
//
//   INFER_OK("matmul", "f32[2,?];f32[?,3]", {}, "f32[2,3]");
//
// Inputs are "dtype[dims]" separated by ';', '?' for an unknown dim; the expected
// outputs are written the same way.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "deepflow/deepflow.h"

namespace deepflow {
namespace {

Tensor symbolic(const std::string& spec) {
  auto lb = spec.find('[');
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = dtype_from_name(spec.substr(0, lb));
  std::string dims = spec.substr(lb + 1, spec.size() - lb - 2);
  std::stringstream ss(dims);
  std::string d;
  while (std::getline(ss, d, ','))
    if (!d.empty()) impl->shape.push_back(d == "?" ? -1 : std::stoll(d));
  impl->id = TensorImpl::next_id();
  return Tensor(impl);
}

TensorList symbolic_list(const std::string& specs) {
  TensorList out;
  std::stringstream ss(specs);
  std::string s;
  while (std::getline(ss, s, ';')) out.push_back(symbolic(s));
  return out;
}

std::string types_string(const TypeList& types) {
  std::string s;
  for (const TensorType& t : types) s += (s.empty() ? "" : ";") + std::string(dtype_short_name(t.dtype)) + t.shape.to_string();
  return s;
}

#define INFER_OK(op, inputs, attrs, expected) \
  EXPECT_EQ(types_string(infer_types(op_id_from_name(op), symbolic_list(inputs), attrs)), expected)
#define INFER_ERROR(op, inputs, attrs, message)                                          \
  EXPECT_THAT([&] { infer_types(op_id_from_name(op), symbolic_list(inputs), attrs); }, \
              ::testing::ThrowsMessage<Error>(::testing::HasSubstr(message)))

using V = std::vector<int64_t>;

TEST(ShapeRules, Binary) {
  INFER_OK("add", "f32[2,3];f32[3]", {}, "f32[2,3]");
  INFER_OK("add", "f32[?,3];f32[3]", {}, "f32[?,3]");
  INFER_OK("mul", "f32[?,1];f32[1,4]", {}, "f32[?,4]");
  INFER_OK("greater", "i32[5];i32[]", {}, "bool[5]");
  INFER_OK("where", "bool[?,3];f32[3];f32[]", {}, "f32[?,3]");
  INFER_ERROR("add", "f32[2,3];f32[4]", {}, "[add] shapes [2,3] and [4] are not broadcastable");
  INFER_ERROR("sub", "f32[2];i32[2]", {}, "[sub] dtypes differ: float32[2] and int32[2]");
  INFER_ERROR("where", "f32[2];f32[2];f32[2]", {}, "[where] expects bool for cond");
}

TEST(ShapeRules, Unary) {
  INFER_OK("exp", "f32[?,7]", {}, "f32[?,7]");
  INFER_OK("cast", "f32[?,2]", (Attrs{{"dtype", DType::Int64}}), "i64[?,2]");
  INFER_ERROR("log", "i32[2]", {}, "[log]");
}

TEST(ShapeRules, MatMul) {
  INFER_OK("matmul", "f32[2,?];f32[?,3]", {}, "f32[2,3]");
  INFER_OK("matmul", "f32[5,2,4];f32[4,3]", {}, "f32[5,2,3]");
  INFER_OK("matmul", "f32[?,1,2,4];f32[3,4,6]", {}, "f32[?,3,2,6]");
  INFER_OK("matmul", "f32[4,2];f32[3,4]", (Attrs{{"transpose_a", true}, {"transpose_b", true}}), "f32[2,3]");
  INFER_ERROR("matmul", "f32[2,3];f32[4,5]", {}, "[matmul] inner dimensions differ: a is [2,3], b is [4,5]");
  INFER_ERROR("matmul", "f32[3];f32[3,4]", {}, "[matmul]");
}

TEST(ShapeRules, Reductions) {
  INFER_OK("reduce_sum", "f32[?,3,4]", (Attrs{{"axes", V{1}}}), "f32[?,4]");
  INFER_OK("reduce_sum", "f32[?,3,4]", (Attrs{{"axes", V{-1}}, {"keepdims", true}}), "f32[?,3,1]");
  INFER_OK("reduce_max", "f32[2,3]", {}, "f32[]");
  INFER_OK("argmax", "f32[?,10]", (Attrs{{"axis", int64_t(1)}}), "i64[?]");
  INFER_ERROR("reduce_sum", "f32[2,3]", (Attrs{{"axes", V{3}}}), "[reduce_sum] axis 3 out of range for rank 2");
}

TEST(ShapeRules, ShapeOps) {
  INFER_OK("reshape", "f32[2,6]", (Attrs{{"shape", V{3, -1}}}), "f32[3,4]");
  INFER_OK("reshape", "f32[?,6]", (Attrs{{"shape", V{-1, 3}}}), "f32[?,3]");
  INFER_OK("transpose", "f32[2,?,4]", (Attrs{{"perm", V{2, 0, 1}}}), "f32[4,2,?]");
  INFER_OK("concat", "f32[2,3];f32[?,3]", (Attrs{{"axis", int64_t(0)}}), "f32[?,3]");
  INFER_OK("concat", "f32[2,3];f32[2,5]", (Attrs{{"axis", int64_t(-1)}}), "f32[2,8]");
  INFER_OK("tile", "f32[2,3]", (Attrs{{"multiples", V{2, 1}}}), "f32[4,3]");
  INFER_ERROR("reshape", "f32[2,3]", (Attrs{{"shape", V{4, 2}}}), "[reshape] cannot reshape [2,3]");
  INFER_ERROR("concat", "f32[2,3];i32[2,3]", (Attrs{{"axis", int64_t(0)}}), "[concat]");
}

TEST(ShapeRules, Conv) {
  INFER_OK("conv2d", "f32[?,28,28,1];f32[3,3,1,32]", (Attrs{{"padding", std::string("SAME")}}), "f32[?,28,28,32]");
  INFER_OK("conv2d", "f32[1,28,28,1];f32[3,3,1,32]", (Attrs{{"padding", std::string("VALID")}, {"strides", V{2, 2}}}),
           "f32[1,13,13,32]");
  INFER_OK("max_pool", "f32[?,28,28,32]", (Attrs{{"ksize", V{2, 2}}, {"strides", V{2, 2}}}), "f32[?,14,14,32]");
  INFER_ERROR("conv2d", "f32[1,5,5,3];f32[3,3,4,8]", {}, "[conv2d] input channels 3 do not match filter in-channels 4");
}

}  // namespace
}  // namespace deepflow
