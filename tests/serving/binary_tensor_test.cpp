// SPDX-License-Identifier: Apache-2.0
// Raw binary tensor bodies on REST predict (binary_tensor.h, docs/serving.md): requests
// with Content-Type: application/octet-stream, responses with Accept:
// application/octet-stream, the same answers as JSON, clear 400s for malformed bodies,
// and every truncation of a good body rejected without a crash. Models: half_plus
// (y = x/2 + 2, x float32 [-1]) and a dense layer (x float32 [-1, 3] -> y [-1, 2]).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "deepflow/serving/binary_tensor.h"
#include "deepflow/serving/json_tensor.h"
#include "deepflow/serving/rest_api.h"
#include "deepflow/serving/server.h"
#include "serving/serving_test_util.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using serving::RestResponse;

constexpr serving::RestHeaders kBinaryIn{.content_type = "application/octet-stream"};
constexpr serving::RestHeaders kBinaryBoth{.content_type = "application/octet-stream",
                                           .accept = "application/octet-stream"};

std::string floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::string body(const std::string& header, const std::string& payload) { return header + "\n" + payload; }

class BinaryTensor : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string half = tmp_ / "half", dense = tmp_ / "dense";
    testing::save_half_plus(half, 1, 2.f);
    testing::save_dense(dense, 1, 3, 2);
    manager_ = std::make_unique<serving::ModelManager>(
        serving::ServerConfig{{{.name = "half", .base_path = half}, {.name = "dense", .base_path = dense}}},
        serving::ManagerOptions{.poll_seconds = 0});
    manager_->start();
    rest_ = std::make_unique<serving::RestHandler>(*manager_, serving::run_signature_directly);
  }
  RestResponse predict(const std::string& model, const std::string& b, const serving::RestHeaders& h) {
    return rest_->handle("POST", "/v1/models/" + model + ":predict", b, h);
  }
  void expect_400(const std::string& b, const std::string& message_part) {
    RestResponse r = predict("half", b, kBinaryIn);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    EXPECT_EQ(r.body.rfind("{\"error\":\"", 0), 0u) << r.body;
    EXPECT_THAT(r.body, HasSubstr(message_part)) << "body: " << b.substr(0, 200);
  }

  testing::TempDir tmp_;
  std::unique_ptr<serving::ModelManager> manager_;
  std::unique_ptr<serving::RestHandler> rest_;
};

TEST_F(BinaryTensor, BinaryRequestJsonResponseEqualsJsonRequest) {
  std::string b = body(R"({"inputs": {"x": {"dtype": "DT_FLOAT", "shape": [3], "offset": 0}}})", floats({1, 2, 5}));
  RestResponse r = predict("half", b, kBinaryIn);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, R"({"predictions":[2.5,3.0,4.5]})");
  RestResponse j = rest_->handle("POST", "/v1/models/half:predict", R"({"instances": [1.0, 2.0, 5.0]})");
  EXPECT_EQ(r.body, j.body);
}

TEST_F(BinaryTensor, BinaryResponseCarriesRawBytesWithAHeader) {
  // numpy names work too, offsets may leave gaps (here 4 bytes of padding).
  std::string b = body(R"({"signature_name": "serving_default", "inputs": {"x": {"dtype": "float32", "shape": [2, 3],)"
                       R"( "offset": 4}}})",
                       std::string(4, '\0') + floats({1, 0, 0, 0, 1, 0}));
  RestResponse r = predict("dense", b, kBinaryBoth);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/octet-stream");
  size_t nl = r.body.find('\n');
  ASSERT_NE(nl, std::string::npos);
  EXPECT_EQ(r.body.substr(0, nl), R"({"model_spec":{"name":"dense","signature_name":"serving_default","version":"1"},)"
                                  R"("outputs":{"y":{"dtype":"DT_FLOAT","offset":0,"shape":[2,2]}}})");
  ASSERT_EQ(r.body.size() - nl - 1, 16u);
  // The same numbers as the JSON answer.
  RestResponse j = rest_->handle("POST", "/v1/models/dense:predict", R"({"instances": [[1, 0, 0], [0, 1, 0]]})");
  Tensor got(Shape{2, 2}, DType::Float32);
  std::memcpy(got.raw_data(), r.body.data() + nl + 1, 16);
  EXPECT_EQ(serving::write_predict_response({{"y", got}}, true), j.body);
  RestResponse again = predict("dense", b, kBinaryIn);
  EXPECT_EQ(again.body, j.body);
  // A JSON request may ask for a binary answer as well.
  RestResponse mixed = rest_->handle("POST", "/v1/models/dense:predict", R"({"instances": [[1, 0, 0], [0, 1, 0]]})",
                                     {.accept = "application/json, application/octet-stream;q=0.9"});
  EXPECT_EQ(mixed.body, r.body);
}

TEST_F(BinaryTensor, MalformedBodiesAreClear400s) {
  const std::string x = R"("x": {"dtype": "DT_FLOAT", "shape": [2], "offset": 0})";
  expect_400("no newline at all", "no header line");
  expect_400(body("{not json", floats({1, 2})), "header line is not valid JSON");
  expect_400(body("[1, 2]", floats({1, 2})), "header must be a JSON object");
  expect_400(body("{}", floats({1, 2})), "needs \\\"inputs\\\"");
  expect_400(body(R"({"inputs": {"x": 3}})", floats({1, 2})), "input 'x' must be an object");
  expect_400(body(R"({"inputs": {"x": {"dtype": "DT_FLOAT", "shape": [2]}}})", floats({1, 2})),
             "input 'x' has no \\\"offset\\\"");
  expect_400(body(R"({"inputs": {"x": {"dtype": "DT_COMPLEX64", "shape": [2], "offset": 0}}})", floats({1, 2})),
             "input 'x': unknown dtype \\\"DT_COMPLEX64\\\"");
  expect_400(body(R"({"inputs": {"x": {"dtype": "DT_STRING", "shape": [2], "offset": 0}}})", floats({1, 2})),
             "DT_STRING cannot be sent as raw bytes");
  expect_400(body(R"({"inputs": {"x": {"dtype": "DT_FLOAT", "shape": [-2], "offset": 0}}})", floats({1, 2})),
             "input 'x': dim 0 is negative");
  expect_400(body(R"({"inputs": {"x": {"dtype": "DT_FLOAT", "shape": [2.5], "offset": 0}}})", floats({1, 2})),
             "dim 0 must be a non-negative integer");
  expect_400(body("{\"inputs\": {" + x + "}}", floats({1})),
             "input 'x' (DT_FLOAT [2]) needs 8 bytes at offset 0, but the payload after the header has 4 bytes");
  expect_400(body("{\"inputs\": {" + x + "}}", floats({1, 2, 3})), "the payload has 12 bytes but the inputs end at byte 8");
  expect_400(body(R"({"inputs": {"x": {"dtype": "DT_FLOAT", "shape": [4611686018427387904, 4], "offset": 0}}})",
                  floats({1, 2})),
             "needs more bytes than the payload has");
  expect_400(body(R"({"inputs": {"x": {"dtype": "DT_FLOAT", "shape": [2], "offset": 18446744073709551615}}})",
                  floats({1, 2})),
             "is too large");
  expect_400(body(R"({"inputs": {"x": {"dtype": "DT_FLOAT", "shape": [2], "offset": 0, "length": 8}}})", floats({1, 2})),
             "unknown field \\\"length\\\"");
  expect_400(body(R"({"instances": [1.0]})", ""), "unknown header field \\\"instances\\\"");
  // Validated against the signature like JSON requests.
  expect_400(body(R"({"inputs": {"x": {"dtype": "DT_INT32", "shape": [2], "offset": 0}}})", floats({1, 2})), "x");
  expect_400(body(R"({"inputs": {"z": {"dtype": "DT_FLOAT", "shape": [2], "offset": 0}}})", floats({1, 2})), "z");
}

TEST_F(BinaryTensor, StringOutputsAskForJson) {
  // A string-typed output cannot be written as raw bytes: the error says to ask for JSON.
  Tensor s(Shape{1}, DType::String);
  try {
    serving::write_binary_predict_response("m", 1, "serving_default", {{"names", s}});
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("[rest binary] output 'names' is DT_STRING"));
  }
}

TEST_F(BinaryTensor, EveryTruncationIsRejectedWithoutACrash) {
  std::string good = body(R"({"inputs": {"x": {"dtype": "DT_FLOAT", "shape": [2, 3], "offset": 0}}})",
                          floats({1, 2, 3, 4, 5, 6}));
  ASSERT_EQ(predict("dense", good, kBinaryBoth).status, 200);
  for (size_t n = 0; n < good.size(); ++n) {
    RestResponse r = predict("dense", good.substr(0, n), kBinaryBoth);
    EXPECT_EQ(r.status, 400) << "prefix of " << n << " bytes: " << r.body;
    EXPECT_THAT(r.body, HasSubstr("[rest binary]")) << n;
  }
  // Flipped bytes: any outcome but a crash or a 5xx.
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    RestResponse r = predict("dense", bad, kBinaryBoth);
    EXPECT_LT(r.status, 500) << "byte " << i << ": " << r.body;
  }
}

TEST(BinaryTensorServer, HeadersTravelOverHttp) {
  testing::TempDir tmp;
  std::string half = tmp / "half";
  testing::save_half_plus(half, 1, 2.f);
  serving::ServerOptions o;
  o.config = serving::single_model("half", half);
  o.grpc_port = 0;
  o.rest_port = -1;
  o.host = "127.0.0.1";
  o.poll_seconds = 0;
  o.rest_threads = 2;
  serving::ModelServer server(std::move(o));
  server.start();
  httplib::Client c("127.0.0.1", server.rest_port());
  std::string b = body(R"({"inputs": {"x": {"dtype": "DT_FLOAT", "shape": [2], "offset": 0}}})", floats({1, 3}));
  auto r = c.Post("/v1/models/half:predict", {{"Accept", "application/octet-stream"}}, b, "application/octet-stream");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/octet-stream");
  size_t nl = r->body.find('\n');
  ASSERT_NE(nl, std::string::npos);
  EXPECT_EQ(r->body.substr(nl + 1), floats({2.5f, 3.5f}));
  r = c.Post("/v1/models/half:predict", b, "application/octet-stream");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, R"({"predictions":[2.5,3.5]})");
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  r = c.Post("/v1/models/half:predict", {{"Accept", "application/octet-stream"}}, b.substr(0, b.size() - 1),
             "application/octet-stream");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_THAT(r->body, HasSubstr("[rest binary] input 'x' (DT_FLOAT [2]) needs 8 bytes"));
}

TEST(BinaryMediaType, HeaderValues) {
  EXPECT_TRUE(serving::names_binary_media_type("application/octet-stream"));
  EXPECT_TRUE(serving::names_binary_media_type("Application/Octet-Stream; charset=binary"));
  EXPECT_TRUE(serving::names_binary_media_type("application/json, application/octet-stream;q=0.5"));
  EXPECT_FALSE(serving::names_binary_media_type("application/json"));
  EXPECT_FALSE(serving::names_binary_media_type(""));
  EXPECT_FALSE(serving::names_binary_media_type("application/octet-streamx"));
}

}  // namespace
}  // namespace deepflow
