// SPDX-License-Identifier: Apache-2.0
// Loading and unloading models at run time (model_admin.h): REST's
// POST /v1/models/<name>:load and :unload on an in-process server over loopback, and
// the reload behind gRPC's HandleReloadConfigRequest; a load that fails changes nothing
// and every other model (and the version already serving) keeps serving.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>

#include "deepflow/serving/model_admin.h"
#include "deepflow/serving/rest_api.h"
#include "deepflow/serving/server.h"
#include "serving/serving_test_util.h"
#include "serving_apis.grpc.pb.h"

namespace deepflow {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr char kOne[] = R"({"instances": [1.0]})";

void write_corrupt_version(const std::string& base, int64_t version) {
  fs::create_directories(base + "/" + std::to_string(version));
  std::ofstream(base + "/" + std::to_string(version) + "/saved_model.pb") << "\x0a\xff\xff not a SavedModel";
}

class ModelAdminTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::save_half_plus(half_, 1, 2.f);
    testing::save_dense(dense_, 1, 3, 2);
    write_corrupt_version(broken_, 1);
    serving::ServerOptions o;
    o.config = serving::single_model("half", half_);
    o.grpc_port = -1;
    o.rest_port = -1;
    o.host = "127.0.0.1";
    o.poll_seconds = 0;
    o.rest_threads = 4;
    server_ = std::make_unique<serving::ModelServer>(std::move(o));
    server_->start();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->rest_port());
  }
  httplib::Result post(const std::string& path, const std::string& body) {
    return client_->Post(path, body, "application/json");
  }
  void expect_half_serves(const std::string& want = R"({"predictions":[2.5]})") {
    auto r = post("/v1/models/half:predict", kOne);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, want);
  }

  testing::TempDir tmp_;
  std::string half_ = tmp_ / "half", dense_ = tmp_ / "dense", broken_ = tmp_ / "broken";
  std::unique_ptr<serving::ModelServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ModelAdminTest, RestLoadsAndUnloadsAModel) {
  auto r = post("/v1/models/dense:load", R"({"base_path": ")" + dense_ + R"("})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->body, R"({"model_version_status":[{"version":"1","state":"AVAILABLE","status":{"error_code":"OK",)"
                     R"("error_message":""}}]})");
  r = post("/v1/models/dense:predict", R"({"instances": [[0, 0, 0]]})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->body, R"({"predictions":[[0.0,0.0]]})");
  expect_half_serves();

  r = post("/v1/models/dense:unload", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->body, "{}");
  r = post("/v1/models/dense:predict", R"({"instances": [[0, 0, 0]]})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;
  r = post("/v1/models/dense:unload", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_THAT(r->body, HasSubstr("[rest :unload] model 'dense' is not in the server's config (models: half)"));
  expect_half_serves();
}

TEST_F(ModelAdminTest, FailedLoadChangesNothing) {
  auto r = post("/v1/models/broken:load", R"({"base_path": ")" + broken_ + R"("})");
  ASSERT_TRUE(r);
  EXPECT_GE(r->status, 400) << r->body;
  EXPECT_THAT(r->body, HasSubstr("[rest :load] model 'broken' (base_path " + broken_ + "): version 1 failed to load"));
  // Rolled back: not in the config, not served; its status still shows why (state END).
  EXPECT_EQ(server_->manager().config().models.size(), 1u);
  EXPECT_EQ(post("/v1/models/broken:predict", kOne)->status, 404);
  EXPECT_THAT(client_->Get("/v1/models/broken")->body, HasSubstr("not a valid SavedModel"));
  expect_half_serves();

  // Moving "half" to a base path whose only version is corrupt: version 1 keeps serving.
  std::string moved = tmp_ / "moved";
  write_corrupt_version(moved, 2);
  r = post("/v1/models/half:load", R"({"base_path": ")" + moved + R"("})");
  ASSERT_TRUE(r);
  EXPECT_GE(r->status, 400) << r->body;
  EXPECT_THAT(r->body, HasSubstr("version 2 failed to load"));
  EXPECT_THAT(r->body, HasSubstr("version 1 keeps serving"));
  expect_half_serves();
  EXPECT_EQ(server_->manager().config().models.at(0).base_path, half_);

  // A path without versions.
  r = post("/v1/models/empty:load", R"({"base_path": ")" + std::string(tmp_ / "nothing") + R"("})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;
  EXPECT_THAT(r->body, HasSubstr("no version to serve"));
  expect_half_serves();

  // The failed version 1 of "broken" is still in its status; a good version 2 elsewhere
  // loads, and the old failure (older than what serves) does not fail the call.
  std::string fixed = tmp_ / "fixed";
  testing::save_half_plus(fixed, 2, 5.f);
  r = post("/v1/models/broken:load", R"({"base_path": ")" + fixed + R"("})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = post("/v1/models/broken:predict", kOne);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, R"({"predictions":[5.5]})");
}

TEST_F(ModelAdminTest, BadLoadRequests) {
  auto expect_400 = [&](const std::string& path, const std::string& body, const std::string& part) {
    auto r = post(path, body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_THAT(r->body, HasSubstr(part));
  };
  expect_400("/v1/models/x:load", "not json", "[rest :load] the body must be a ModelConfig in JSON");
  expect_400("/v1/models/x:load", R"({"base_path": 3})", "[rest :load] the body must be a ModelConfig in JSON");
  expect_400("/v1/models/x:load", R"({"base_pth": "/a"})", "[rest :load] the body must be a ModelConfig in JSON");
  expect_400("/v1/models/x:load", R"({"name": "y", "base_path": "/a"})", "the body names model 'y' but the path names 'x'");
  expect_400("/v1/models/x:load", R"({"base_path": "relative/path"})", "relative");
  expect_400("/v1/models/half/versions/1:load", "{}", "takes the model's name only");
  expect_half_serves();
}

TEST_F(ModelAdminTest, LoadWithAVersionPolicyAndLabels) {
  testing::save_half_plus(half_, 2, 3.f);
  auto r = post("/v1/models/half:load", R"({"base_path": ")" + half_ +
                                            R"(", "model_version_policy": {"specific": {"versions": ["1"]}}})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  expect_half_serves();
  r = post("/v1/models/half:load", R"({"base_path": ")" + half_ + R"(", "model_version_policy": {"all": {}}, )"
                                       R"("version_labels": {"stable": "1"}})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  expect_half_serves(R"({"predictions":[3.5]})");
  r = post("/v1/models/half/labels/stable:predict", kOne);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, R"({"predictions":[2.5]})");
}

TEST_F(ModelAdminTest, ReloadReportsAFailedModelAndKeepsServing) {
  serving::ModelAdmin admin(server_->manager());
  serving::ServerConfig config = server_->manager().config();
  config.models.push_back({.name = "broken", .base_path = broken_});
  config.models.push_back({.name = "dense", .base_path = dense_});
  try {
    admin.reload(config);
    FAIL() << "no error";
  } catch (const serving::ServingError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[HandleReloadConfigRequest] model 'broken'"));
  }
  // TF Serving keeps the new config in force: dense loaded, broken shows its error.
  EXPECT_EQ(server_->manager().status({.name = "broken"}).at(0).state, serving::VersionState::End);
  auto r = post("/v1/models/dense:predict", R"({"instances": [[0, 0, 0]]})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  expect_half_serves();
}

TEST_F(ModelAdminTest, GrpcReloadAddsRemovesAndReportsAFailedLoad) {
  namespace pb = tensorflow::serving;
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->grpc_port()),
                                     grpc::InsecureChannelCredentials());
  auto models = pb::ModelService::NewStub(channel);
  auto reload = [&](const std::vector<std::pair<std::string, std::string>>& entries, pb::ReloadConfigResponse* out) {
    pb::ReloadConfigRequest request;
    for (const auto& [name, path] : entries) {
      auto* c = request.mutable_config()->mutable_model_config_list()->add_config();
      c->set_name(name);
      c->set_base_path(path);
      c->set_model_platform("tensorflow");
    }
    grpc::ClientContext ctx;
    return models->HandleReloadConfigRequest(&ctx, request, out);
  };
  pb::ReloadConfigResponse response;
  grpc::Status s = reload({{"half", half_}, {"dense", dense_}}, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(post("/v1/models/dense:predict", R"({"instances": [[0, 0, 0]]})")->status, 200);

  s = reload({{"half", half_}, {"dense", dense_}, {"broken", broken_}}, &response);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.error_message(), HasSubstr("[HandleReloadConfigRequest] model 'broken' (base_path " + broken_ +
                                           "): version 1 failed to load"));
  EXPECT_EQ(post("/v1/models/dense:predict", R"({"instances": [[0, 0, 0]]})")->status, 200);
  expect_half_serves();

  s = reload({{"half", half_}}, &response);  // removes dense and broken
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(post("/v1/models/dense:predict", R"({"instances": [[0, 0, 0]]})")->status, 404);
  expect_half_serves();
}

TEST(ModelAdminRest, WithoutAnAdminIsUnimplemented) {
  testing::TempDir tmp;
  std::string half = tmp / "half";
  testing::save_half_plus(half, 1, 2.f);
  serving::ModelManager manager(serving::single_model("half", half), {.poll_seconds = 0});
  manager.start();
  serving::RestHandler rest(manager, serving::run_signature_directly);
  serving::RestResponse r = rest.handle("POST", "/v1/models/half:unload", "");
  EXPECT_EQ(r.status, 501);
  EXPECT_THAT(r.body, HasSubstr("does not accept model management calls"));
}

}  // namespace
}  // namespace deepflow
