// SPDX-License-Identifier: Apache-2.0
// TF Serving's REST API as RestHandler::handle(method, path, body), without sockets:
// routing (TF Serving's regexes, case-insensitive, percent-decoded names and labels),
// predict in row and columnar form, classify/regress, status, metadata, and the
// {"error": ...} bodies with their HTTP codes. Model: half_plus, version 1 (y = x/2 + 2)
// and version 2 (y = x/2 + 3), label "stable" -> 1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "deepflow/serving/rest_api.h"
#include "serving/serving_test_util.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using serving::RestResponse;

class RestApi : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string base = tmp_ / "half";
    std::filesystem::create_directories(base);
    testing::save_half_plus(base, 1, 2.f);
    testing::save_half_plus(base, 2, 3.f);
    serving::ModelConfig half{.name = "half", .base_path = base};
    half.policy.kind = serving::VersionPolicy::Kind::All;
    half.version_labels["stable"] = 1;
    manager_ = std::make_unique<serving::ModelManager>(serving::ServerConfig{{half}},
                                                       serving::ManagerOptions{.poll_seconds = 0});
    manager_->start();
    rest_ = std::make_unique<serving::RestHandler>(*manager_, serving::run_signature_directly, &metrics_);
  }

  RestResponse post(const std::string& path, const std::string& body) { return rest_->handle("POST", path, body); }
  RestResponse get(const std::string& path) { return rest_->handle("GET", path, ""); }

  void expect_error(const RestResponse& r, int status, const std::string& message_part) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.body.rfind("{\"error\":\"", 0), 0u) << r.body;
    EXPECT_THAT(r.body, HasSubstr(message_part));
  }

  testing::TempDir tmp_;
  serving::Metrics metrics_;
  std::unique_ptr<serving::ModelManager> manager_;
  std::unique_ptr<serving::RestHandler> rest_;
};

TEST_F(RestApi, PredictRowFormatUsesTheLatestVersion) {
  RestResponse r = post("/v1/models/half:predict", R"({"instances": [1.0, 2.0, 5.0]})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"predictions":[3.5,4.0,5.5]})");
}

TEST_F(RestApi, PredictColumnarFormatWithVersionAndLabel) {
  RestResponse r = post("/v1/models/half/versions/1:predict", R"({"inputs": [1.0, 2.0]})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"outputs":[2.5,3.0]})");
  EXPECT_EQ(post("/v1/models/half/labels/stable:predict", R"({"instances": [0]})").body, R"({"predictions":[2.0]})");
  EXPECT_EQ(post("/v1/models/half/versions/2:predict", R"({"signature_name": "serving_default", "instances": [0]})")
                .body,
            R"({"predictions":[3.0]})");
}

TEST_F(RestApi, RoutingIsCaseInsensitiveAndPercentDecodes) {
  EXPECT_EQ(post("/V1/Models/half/VERSIONS/1:predict", R"({"instances": [0]})").body, R"({"predictions":[2.0]})");
  EXPECT_EQ(post("/v1/models/h%61lf/labels/st%61ble:predict", R"({"instances": [0]})").body,
            R"({"predictions":[2.0]})");
  // TF Serving compares the captured verb exactly, so only the path literals ignore case.
  expect_error(post("/v1/models/half:PREDICT", "{}"), 400, "Malformed request: POST /v1/models/half:PREDICT");
}

TEST_F(RestApi, ClassifyAndRegressWithSignatureName) {
  RestResponse c = post("/v1/models/half/versions/1:classify",
                        R"({"signature_name": "classify_x_to_y", "examples": [{"x": 1.0}, {"x": 2.0}]})");
  EXPECT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.body, R"({"results":[[["",2.5],["",-2.5]],[["",3.0],["",-3.0]]]})");
  RestResponse r = post("/v1/models/half:regress",
                        R"({"signature_name": "regress_x_to_y", "examples": [{"x": 1.0}, {"x": 4.0}]})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, R"({"results":[3.5,5.0]})");
}

TEST_F(RestApi, StatusOfAllVersionsOneVersionAndALabel) {
  RestResponse all = get("/v1/models/half");
  EXPECT_EQ(all.status, 200);
  EXPECT_EQ(all.body,
            R"({"model_version_status":[{"version":"2","state":"AVAILABLE","status":{"error_code":"OK","error_message":""}},)"
            R"({"version":"1","state":"AVAILABLE","status":{"error_code":"OK","error_message":""}}]})");
  EXPECT_EQ(get("/v1/models/half/versions/1").body,
            R"({"model_version_status":[{"version":"1","state":"AVAILABLE","status":{"error_code":"OK","error_message":""}}]})");
  EXPECT_EQ(get("/v1/models/half/labels/stable").body, get("/v1/models/half/versions/1").body);
}

TEST_F(RestApi, Metadata) {
  RestResponse r = get("/v1/models/half/versions/1/metadata");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.body, HasSubstr(R"("model_spec":{"name":"half","signature_name":"","version":"1"})"));
  EXPECT_THAT(r.body, HasSubstr(R"("metadata":{"signature_def":{"signature_def":{)"));
  EXPECT_THAT(r.body, HasSubstr(R"("classify_x_to_y":)"));
  EXPECT_THAT(get("/v1/models/half/metadata").body, HasSubstr(R"("version":"2")"));
}

TEST_F(RestApi, RoutingErrors) {
  RestResponse r = get("/v1/models");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, R"({"error":"Missing model name in request."})");
  // RE2 backtracks: "versions" is not taken as the name, so the name is missing.
  expect_error(get("/v1/models/versions/3"), 400, "Missing model name in request.");
  expect_error(rest_->handle("PUT", "/v1/models/half", ""), 400, "Malformed request: PUT /v1/models/half");
  expect_error(post("/v1/models/half", "{}"), 400, "Malformed request: POST /v1/models/half");
  expect_error(get("/v1/models/half:predict"), 400, "Malformed request: GET /v1/models/half:predict");
  expect_error(post("/v1/models/half/versions/x:predict", "{}"), 400, "Malformed request");
  // A version and a label: the regexes have no form for both.
  expect_error(post("/v1/models/half/versions/1/labels/stable:predict", "{}"), 400, "Malformed request");
  expect_error(get("/v1/models/half/versions/1/labels/stable"), 400, "Malformed request");
  expect_error(get("/v2/models/half"), 404, "/v2/models/half");
  expect_error(get("/v1/models/half/versions/99999999999999999999"), 400, "Failed to convert version");
}

TEST_F(RestApi, UnknownModelOrVersionIsNotFound) {
  expect_error(post("/v1/models/nope:predict", R"({"instances": [1.0]})"), 404, "nope");
  expect_error(post("/v1/models/half/versions/9:predict", R"({"instances": [1.0]})"), 404, "9");
  // TF Serving's ServerCore answers an unknown label with INVALID_ARGUMENT, not NOT_FOUND.
  expect_error(post("/v1/models/half/labels/canary:predict", R"({"instances": [1.0]})"), 400,
               "Unrecognized servable version label: canary");
  expect_error(get("/v1/models/nope"), 404, "nope");
  expect_error(get("/v1/models/half/versions/9/metadata"), 404, "9");
}

TEST_F(RestApi, BadBodiesAreBadRequests) {
  expect_error(post("/v1/models/half:predict", R"({"instances": [1.0, )"), 400, "");
  expect_error(post("/v1/models/half:predict", R"({"signature": 1})"), 400, "Missing 'inputs' or 'instances' key");
  expect_error(post("/v1/models/half:predict", R"({"instances": ["a"]})"), 400, "");
  expect_error(post("/v1/models/half:predict", R"({"instances": [[1.0], [2.0, 3.0]]})"), 400, "");
  expect_error(post("/v1/models/half:predict", R"({"instances": [[1.0], [2.0]]})"), 400, "x");
  expect_error(post("/v1/models/half:predict", R"({"signature_name": "nope", "instances": [1.0]})"), 400,
               "Serving signature name: \\\"nope\\\" not found in signature def");
  expect_error(post("/v1/models/half:regress", R"({"signature_name": "regress_x_to_y", "examples": [{"y": 1.0}]})"),
               400, "x");
  expect_error(post("/v1/models/half:predict", std::string(1000, '[')), 400, "");
  // The server keeps serving after all of these.
  EXPECT_EQ(post("/v1/models/half:predict", R"({"instances": [1.0]})").body, R"({"predictions":[3.5]})");
}

TEST_F(RestApi, RecordsMetricsPerRequest) {
  post("/v1/models/half:predict", R"({"instances": [1.0]})");
  post("/v1/models/half/versions/9:predict", R"({"instances": [1.0]})");
  get("/v1/models/half");
  std::string text = metrics_.prometheus_text();
  EXPECT_THAT(text, HasSubstr("request_count{model_name=\"half\",version=\"2\",API=\"predict\",entrypoint=\"REST\","
                              "status=\"OK\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("request_count{model_name=\"half\",version=\"0\",API=\"predict\",entrypoint=\"REST\","
                              "status=\"NOT_FOUND\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("request_count{model_name=\"half\",version=\"0\",API=\"status\",entrypoint=\"REST\","
                              "status=\"OK\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("runtime_latency_count{model_name=\"half\",API=\"predict\",runtime=\"deepflow\"} 1\n"));
}

}  // namespace
}  // namespace deepflow
