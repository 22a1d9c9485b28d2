// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/tensor_proto.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <vector>

#include "deepflow/serving/status.h"
#include "tensorflow/tensor.pb.h"

namespace deepflow::serving {
namespace {

using ::testing::HasSubstr;

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(char(x));
  return s;
}

// The tensor's elements as bytes (numbers) or joined with '|' (strings).
std::string contents(const Tensor& t) {
  if (t.dtype() == DType::String) {
    std::string out;
    for (int64_t i = 0; i < t.size(); ++i) out += t.data<std::string>()[i] + "|";
    return out;
  }
  return std::string(static_cast<const char*>(t.raw_data()), t.nbytes());
}

void expect_same(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.shape(), b.shape());
  EXPECT_EQ(contents(a), contents(b));
}

template <class T>
Tensor make(std::vector<T> v, const Shape& shape) {
  Tensor t(shape, dtype_v<T>);
  for (size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = v[i];
  return t;
}

// One tensor of every dtype deepflow has, with values that exercise sign and range.
std::vector<Tensor> every_dtype() {
  return {make<float>({1.5f, -2.f, 3.25f, 0.f, 1e30f, -0.f}, {2, 3}),
          make<double>({1.5, -1e300}, {2}),
          make<Half>({Half(1.5f), Half(-65504.f), Half(0.000061035156f)}, {3}),
          make<BFloat16>({BFloat16(1.f), BFloat16(-3.5f)}, {1, 2}),
          make<int8_t>({-128, 127, 0}, {3}),
          make<uint8_t>({0, 200, 255}, {3, 1}),
          make<int32_t>({-2147483647 - 1, 2147483647}, {2}),
          make<int64_t>({int64_t(-1) << 62, 7}, {2}),
          make<bool>({true, false, true}, {3}),
          make<std::string>({"a", "", std::string("\0\xff", 2)}, {3})};
}

TEST(TensorProto, RoundTripsEveryDtype) {
  for (const Tensor& t : every_dtype()) {
    SCOPED_TRACE(dtype_name(t.dtype()));
    tensorflow::TensorProto p;
    tensor_to_proto(t, &p);
    EXPECT_EQ(p.dtype(), tf_dtype_enum(t.dtype()));
    ASSERT_EQ(p.tensor_shape().dim_size(), t.rank());
    if (t.dtype() == DType::String) {
      EXPECT_EQ(p.string_val_size(), t.size());
      EXPECT_TRUE(p.tensor_content().empty());
    } else {
      EXPECT_EQ(p.tensor_content().size(), t.nbytes());
    }
    // Through the wire and back.
    tensorflow::TensorProto q;
    ASSERT_TRUE(q.ParseFromString(p.SerializeAsString()));
    expect_same(tensor_from_proto(q), t);
  }
}

// Builds the typed-field encoding of t by hand, as TF's make_tensor_proto does.
tensorflow::TensorProto typed_proto(const Tensor& t) {
  tensorflow::TensorProto p;
  p.set_dtype(tensorflow::DataType(tf_dtype_enum(t.dtype())));
  shape_to_proto(t.shape(), p.mutable_tensor_shape());
  for (int64_t i = 0; i < t.size(); ++i) {
    switch (t.dtype()) {
      case DType::Float32: p.add_float_val(t.data<float>()[i]); break;
      case DType::Float64: p.add_double_val(t.data<double>()[i]); break;
      case DType::Float16: p.add_half_val(t.data<Half>()[i].bits); break;
      case DType::BFloat16: p.add_half_val(t.data<BFloat16>()[i].bits); break;
      case DType::Int8: p.add_int_val(t.data<int8_t>()[i]); break;
      case DType::UInt8: p.add_int_val(t.data<uint8_t>()[i]); break;
      case DType::Int32: p.add_int_val(t.data<int32_t>()[i]); break;
      case DType::Int64: p.add_int64_val(t.data<int64_t>()[i]); break;
      case DType::Bool: p.add_bool_val(t.data<bool>()[i]); break;
      case DType::String: p.add_string_val(t.data<std::string>()[i]); break;
    }
  }
  return p;
}

// Predict borrows a request's tensor_content (no copy of a large input); bool is normalized
// and so always copied, as are the typed fields.
TEST(TensorProto, BorrowedContentPointsIntoTheProto) {
  tensorflow::TensorProto p;
  p.set_dtype(tensorflow::DT_FLOAT);
  p.mutable_tensor_shape()->add_dim()->set_size(64);
  std::vector<float> v(64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.5f;
  p.set_tensor_content(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  const Tensor copied = tensor_from_proto(p), borrowed = tensor_from_proto(p, true);
  expect_same(borrowed, copied);
  EXPECT_NE(copied.raw_data(), static_cast<const void*>(p.tensor_content().data()));
  EXPECT_EQ(borrowed.raw_data(), static_cast<const void*>(p.tensor_content().data()));

  tensorflow::TensorProto b;
  b.set_dtype(tensorflow::DT_BOOL);
  b.mutable_tensor_shape()->add_dim()->set_size(3);
  b.set_tensor_content(std::string("\x00\x07\x01", 3));
  const Tensor bools = tensor_from_proto(b, true);
  EXPECT_NE(bools.raw_data(), static_cast<const void*>(b.tensor_content().data()));
  EXPECT_EQ(contents(bools), std::string("\x00\x01\x01", 3));
}

TEST(TensorProto, ReadsTypedFieldsOfEveryDtype) {
  for (const Tensor& t : every_dtype()) {
    SCOPED_TRACE(dtype_name(t.dtype()));
    expect_same(tensor_from_proto(typed_proto(t)), t);
  }
}

TEST(TensorProto, OneValueFillsTheShapeAndNoneGivesZeros) {
  for (const Tensor& t : every_dtype()) {
    SCOPED_TRACE(dtype_name(t.dtype()));
    Tensor first = t.view(Shape{t.size()}).slice0(0, 1);
    tensorflow::TensorProto p = typed_proto(first);  // one value
    p.mutable_tensor_shape()->Clear();
    p.mutable_tensor_shape()->add_dim()->set_size(2);
    p.mutable_tensor_shape()->add_dim()->set_size(3);
    Tensor filled = tensor_from_proto(p);
    ASSERT_EQ(filled.shape(), Shape({2, 3}));
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(contents(filled.view(Shape{6}).slice0(i, i + 1)), contents(first));

    tensorflow::TensorProto empty;
    empty.set_dtype(p.dtype());
    *empty.mutable_tensor_shape() = p.tensor_shape();
    Tensor z = tensor_from_proto(empty);
    ASSERT_EQ(z.shape(), Shape({2, 3}));
    if (t.dtype() == DType::String)
      EXPECT_EQ(contents(z), "||||||");
    else
      EXPECT_EQ(contents(z), std::string(z.nbytes(), '\0'));
  }
}

TEST(TensorProto, ScalarHasNoDims) {
  tensorflow::TensorProto p;
  p.set_dtype(tensorflow::DT_INT64);
  p.add_int64_val(-9);
  Tensor t = tensor_from_proto(p);
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.item<int64_t>(), -9);
}

template <class F>
void expect_error(F&& f, Code code, std::vector<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const ServingError& e) {
    EXPECT_EQ(code_name(e.code()), std::string(code_name(code))) << e.what();
    for (const auto& part : parts) EXPECT_THAT(e.what(), HasSubstr(part));
  }
}

TEST(TensorProto, CountMustMatchTheShape) {
  tensorflow::TensorProto p;
  p.set_dtype(tensorflow::DT_FLOAT);
  p.mutable_tensor_shape()->add_dim()->set_size(3);
  p.add_float_val(1);
  p.add_float_val(2);
  expect_error([&] { tensor_from_proto(p); }, Code::InvalidArgument,
               {"[tensor_from_proto]", "DT_FLOAT tensor of shape [3]", "float_val has 2 values", "needs 3"});
  p.add_float_val(3);
  p.add_float_val(4);
  expect_error([&] { tensor_from_proto(p); }, Code::InvalidArgument, {"float_val has 4 values"});
}

TEST(TensorProto, ContentSizeMustMatchTheShape) {
  tensorflow::TensorProto p;
  p.set_dtype(tensorflow::DT_INT32);
  p.mutable_tensor_shape()->add_dim()->set_size(2);
  p.set_tensor_content(std::string(7, '\0'));
  expect_error([&] { tensor_from_proto(p); }, Code::InvalidArgument,
               {"DT_INT32 tensor of shape [2]", "tensor_content has 7 bytes", "2 x 4 = 8"});
}

TEST(TensorProto, ValuesInTheWrongFieldAreAnError) {
  tensorflow::TensorProto p;
  p.set_dtype(tensorflow::DT_INT32);
  p.mutable_tensor_shape()->add_dim()->set_size(1);
  p.add_float_val(1.f);
  expect_error([&] { tensor_from_proto(p); }, Code::InvalidArgument, {"go in int_val", "float_val (1)"});
}

TEST(TensorProto, BoolContentIsNormalized) {
  tensorflow::TensorProto p;
  p.set_dtype(tensorflow::DT_BOOL);
  p.mutable_tensor_shape()->add_dim()->set_size(3);
  p.set_tensor_content(bytes({0, 1, 7}));
  EXPECT_EQ(tensor_from_proto(p).to_vector<bool>(), (std::vector<bool>{false, true, true}));
}

TEST(TensorProto, UnsupportedDtypes) {
  for (int e : {tensorflow::DT_COMPLEX64, tensorflow::DT_COMPLEX128, tensorflow::DT_RESOURCE, tensorflow::DT_VARIANT,
                tensorflow::DT_QINT8, tensorflow::DT_QUINT8, tensorflow::DT_QINT32, tensorflow::DT_QINT16,
                tensorflow::DT_QUINT16, tensorflow::DT_INT16, tensorflow::DT_UINT16, tensorflow::DT_UINT32,
                tensorflow::DT_UINT64}) {
    tensorflow::TensorProto p;
    p.set_dtype(tensorflow::DataType(e));
    expect_error([&] { tensor_from_proto(p); }, Code::Unimplemented,
                 {tensorflow::DataType_Name(tensorflow::DataType(e)), "not supported"});
  }
  expect_error([] { dtype_from_tf_enum(0); }, Code::InvalidArgument, {"DT_INVALID"});
  expect_error([] { dtype_from_tf_enum(77); }, Code::InvalidArgument, {"unknown DataType number 77"});
  expect_error([] { dtype_from_tf_enum(101); }, Code::InvalidArgument, {"DT_FLOAT_REF"});
  tensorflow::TensorProto s;
  s.set_dtype(tensorflow::DT_STRING);
  s.set_tensor_content("abc");
  expect_error([&] { tensor_from_proto(s); }, Code::Unimplemented, {"use string_val"});
}

TEST(TensorProto, BadShapesAllocateNothing) {
  tensorflow::TensorProto p;
  p.set_dtype(tensorflow::DT_FLOAT);
  p.mutable_tensor_shape()->add_dim()->set_size(-1);
  expect_error([&] { tensor_from_proto(p); }, Code::InvalidArgument, {"dimension -1 is negative"});
  // 2^40 x 2^40 overflows int64 if multiplied blindly; one value would fill it.
  p.mutable_tensor_shape()->mutable_dim(0)->set_size(int64_t(1) << 40);
  p.mutable_tensor_shape()->add_dim()->set_size(int64_t(1) << 40);
  p.add_float_val(1.f);
  expect_error([&] { tensor_from_proto(p); }, Code::InvalidArgument, {"more than 2147483648 elements"});
  // Under the element cap but over the byte cap.
  p.mutable_tensor_shape()->mutable_dim(0)->set_size(int64_t(1) << 30);
  p.mutable_tensor_shape()->mutable_dim(1)->set_size(2);
  expect_error([&] { tensor_from_proto(p); }, Code::InvalidArgument, {"8589934592 bytes exceed the limit"});
  p.mutable_tensor_shape()->set_unknown_rank(true);
  expect_error([&] { tensor_from_proto(p); }, Code::InvalidArgument, {"unknown_rank"});
  tensorflow::TensorProto deep;
  deep.set_dtype(tensorflow::DT_FLOAT);
  for (int i = 0; i < 13; ++i) deep.mutable_tensor_shape()->add_dim()->set_size(1);
  expect_error([&] { tensor_from_proto(deep); }, Code::InvalidArgument, {"rank 13 exceeds"});
}

// TensorProtos as TensorFlow's Python make_tensor_proto / SerializeToString writes them,
// assembled byte by byte from the field numbers in specs.md section 1.8.
TEST(TensorProto, ParsesHandAssembledWireBytes) {
  auto parse = [](const std::string& wire) {
    tensorflow::TensorProto p;
    EXPECT_TRUE(p.ParseFromString(wire));
    return tensor_from_proto(p);
  };
  // DT_FLOAT [2], float_val packed [1.0, 2.0].
  Tensor f = parse(bytes(
      {0x08, 0x01, 0x12, 0x04, 0x12, 0x02, 0x08, 0x02, 0x2a, 0x08, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40}));
  EXPECT_EQ(f.shape(), Shape({2}));
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1.f, 2.f}));
  // The same, float_val unpacked (fixed32 fields 0x2d).
  Tensor u = parse(bytes(
      {0x08, 0x01, 0x12, 0x04, 0x12, 0x02, 0x08, 0x02, 0x2d, 0x00, 0x00, 0x80, 0x3f, 0x2d, 0x00, 0x00, 0x00, 0x40}));
  EXPECT_EQ(u.to_vector<float>(), (std::vector<float>{1.f, 2.f}));
  // DT_INT32 [2] in tensor_content: 1, -1.
  Tensor i = parse(bytes(
      {0x08, 0x03, 0x12, 0x04, 0x12, 0x02, 0x08, 0x02, 0x22, 0x08, 0x01, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff}));
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{1, -1}));
  // DT_STRING [2]: string_val "a", "bc".
  Tensor s = parse(bytes({0x08, 0x07, 0x12, 0x04, 0x12, 0x02, 0x08, 0x02, 0x42, 0x01, 0x61, 0x42, 0x02, 0x62, 0x63}));
  EXPECT_EQ(contents(s), "a|bc|");
  // DT_HALF [1]: half_val 0x3c00 (1.0) as a varint.
  Tensor h = parse(bytes({0x08, 0x13, 0x12, 0x04, 0x12, 0x02, 0x08, 0x01, 0x6a, 0x02, 0x80, 0x78}));
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(float(h.data<Half>()[0]), 1.f);
  // DT_INT64 scalar: int64_val -1 (ten-byte varint), no tensor_shape at all.
  Tensor l = parse(bytes({0x08, 0x09, 0x52, 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  EXPECT_EQ(l.rank(), 0);
  EXPECT_EQ(l.item<int64_t>(), -1);
}

TEST(TensorProto, WritesTensorFlowsBytes) {
  tensorflow::TensorProto p;
  tensor_to_proto(constant({1.f, 2.f}), &p);
  EXPECT_EQ(p.SerializeAsString(), bytes({0x08, 0x01, 0x12, 0x04, 0x12, 0x02, 0x08, 0x02, 0x22, 0x08, 0x00, 0x00, 0x80,
                                          0x3f, 0x00, 0x00, 0x00, 0x40}));
}

TEST(TensorProto, DtypeNamesAndShapes) {
  EXPECT_EQ(tf_dtype_enum(DType::Float32), 1);
  EXPECT_EQ(tf_dtype_enum(DType::Float16), 19);
  EXPECT_EQ(tf_dtype_enum(DType::BFloat16), 14);
  EXPECT_EQ(tf_dtype_enum(DType::UInt8), 4);
  EXPECT_STREQ(tf_dtype_name(DType::Int64), "DT_INT64");
  EXPECT_STREQ(tf_dtype_name(DType::String), "DT_STRING");
  for (int i = 0; i < kNumDTypes; ++i) {
    DType t = DType(i);
    EXPECT_EQ(dtype_from_tf_enum(tf_dtype_enum(t)), t);
    EXPECT_EQ(tensorflow::DataType_Name(tensorflow::DataType(tf_dtype_enum(t))), tf_dtype_name(t));
  }
  tensorflow::TensorShapeProto s;
  shape_to_proto(Shape({-1, 3}), &s);
  ASSERT_EQ(s.dim_size(), 2);
  EXPECT_EQ(s.dim(0).size(), -1);
  EXPECT_EQ(s.dim(1).size(), 3);
  EXPECT_FALSE(s.unknown_rank());
}

}  // namespace
}  // namespace deepflow::serving
