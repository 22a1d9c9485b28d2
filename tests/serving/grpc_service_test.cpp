// SPDX-License-Identifier: Apache-2.0
// The gRPC front end, in process: a GrpcServer on a free loopback port over a
// ModelManager serving half_plus (versions 1 and 2, label "stable" -> 1), called through
// the generated grpc++ stubs, and from Python (tests/serving/grpc_client.py).
#include <arpa/inet.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "deepflow/serving/grpc_service.h"
#include "deepflow/serving/tensor_proto.h"
#include "serving/serving_test_util.h"
#include "serving_apis.grpc.pb.h"
#include "oracle.h"

namespace deepflow {
namespace {

namespace pb = tensorflow::serving;
using ::testing::HasSubstr;
using serving::ServerConfig;

tensorflow::TensorProto float_proto(const std::vector<float>& values, const std::vector<int64_t>& shape) {
  tensorflow::TensorProto p;
  p.set_dtype(tensorflow::DT_FLOAT);
  for (int64_t d : shape) p.mutable_tensor_shape()->add_dim()->set_size(d);
  for (float v : values) p.add_float_val(v);  // the typed field, as Python clients send it
  return p;
}

tensorflow::Example example_x(std::vector<float> x) {
  tensorflow::Example e;
  auto* list = (*e.mutable_features()->mutable_feature())["x"].mutable_float_list();
  for (float v : x) list->add_value(v);
  return e;
}

class GrpcService : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = tmp_ / "half";
    std::filesystem::create_directories(base_);
    testing::save_half_plus(base_, 1, 2.f);
    testing::save_half_plus(base_, 2, 3.f);
    serving::ModelConfig half{.name = "half", .base_path = base_};
    half.policy.kind = serving::VersionPolicy::Kind::All;
    half.version_labels["stable"] = 1;
    serving::ManagerOptions options;
    options.poll_seconds = 0;  // no poller: the tests change nothing on disk
    manager_ = std::make_unique<serving::ModelManager>(ServerConfig{{half}}, options);
    manager_->start();
    start_server({});
  }

  void start_server(serving::GrpcOptions options) {
    server_.reset();
    options.address = "127.0.0.1:0";
    server_ = std::make_unique<serving::GrpcServer>(*manager_, serving::run_signature_directly, &metrics_, options,
                                                    [this](const ServerConfig& c) { manager_->reload_config(c); });
    server_->start();
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                       grpc::InsecureChannelCredentials());
    predict_ = pb::PredictionService::NewStub(channel);
    model_ = pb::ModelService::NewStub(channel);
  }

  grpc::Status predict(const pb::PredictRequest& request, pb::PredictResponse* response) {
    grpc::ClientContext ctx;
    return predict_->Predict(&ctx, request, response);
  }

  static pb::PredictRequest half_request(std::vector<float> x) {
    pb::PredictRequest r;
    r.mutable_model_spec()->set_name("half");
    (*r.mutable_inputs())["x"] = float_proto(x, {int64_t(x.size())});
    return r;
  }

  static std::vector<float> y_of(const pb::PredictResponse& response) {
    return serving::tensor_from_proto(response.outputs().at("y")).to_vector<float>();
  }

  testing::TempDir tmp_;
  std::string base_;
  serving::Metrics metrics_;
  std::unique_ptr<serving::ModelManager> manager_;
  std::unique_ptr<serving::GrpcServer> server_;
  std::unique_ptr<pb::PredictionService::Stub> predict_;
  std::unique_ptr<pb::ModelService::Stub> model_;
};

TEST_F(GrpcService, PredictLatestVersion) {
  pb::PredictResponse response;
  grpc::Status s = predict(half_request({1.f, 2.f, 5.f}), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(y_of(response), (std::vector<float>{3.5f, 4.f, 5.5f}));  // version 2: offset 3
  EXPECT_EQ(response.outputs().size(), 1u);
  EXPECT_EQ(response.model_spec().name(), "half");
  EXPECT_EQ(response.model_spec().version().value(), 2);
  EXPECT_EQ(response.model_spec().signature_name(), "serving_default");
  EXPECT_THAT(metrics_.prometheus_text(), HasSubstr("entrypoint=\"GRPC\""));
}

TEST_F(GrpcService, PredictVersionAndLabel) {
  pb::PredictRequest r = half_request({2.f});
  r.mutable_model_spec()->mutable_version()->set_value(1);
  pb::PredictResponse response;
  ASSERT_TRUE(predict(r, &response).ok());
  EXPECT_EQ(y_of(response), (std::vector<float>{3.f}));
  EXPECT_EQ(response.model_spec().version().value(), 1);

  r.mutable_model_spec()->set_version_label("stable");
  response.Clear();
  ASSERT_TRUE(predict(r, &response).ok());
  EXPECT_EQ(y_of(response), (std::vector<float>{3.f}));
  EXPECT_EQ(response.model_spec().version().value(), 1);

  r.mutable_model_spec()->mutable_version()->set_value(7);
  grpc::Status s = predict(r, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("Specific(half, 7)"));

  r.mutable_model_spec()->set_version_label("canary");  // TF Serving: INVALID_ARGUMENT, not NOT_FOUND
  s = predict(r, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "Unrecognized servable version label: canary");
}

TEST_F(GrpcService, PredictErrors) {
  pb::PredictResponse response;
  pb::PredictRequest r = half_request({1.f});
  r.mutable_model_spec()->set_name("nope");
  grpc::Status s = predict(r, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("Servable not found for request: Latest(nope)"));

  r = half_request({1.f});
  tensorflow::TensorProto& x = (*r.mutable_inputs())["x"];
  x.clear_float_val();
  x.set_dtype(tensorflow::DT_INT32);
  x.add_int_val(1);
  s = predict(r, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("x"));

  r = half_request({1.f});
  r.mutable_model_spec()->set_signature_name("nope");
  s = predict(r, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("Serving signature name: \"nope\" not found in signature def"));

  r = half_request({1.f});
  (*r.mutable_inputs())["x"].add_float_val(2.f);  // 2 values for shape [1]
  s = predict(r, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("input 'x'"));

  r.clear_model_spec();
  s = predict(r, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "Missing ModelSpec");

  grpc::ClientContext ctx;
  pb::MultiInferenceResponse multi;
  s = predict_->MultiInference(&ctx, pb::MultiInferenceRequest(), &multi);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);

  // The server is unaffected.
  response.Clear();
  ASSERT_TRUE(predict(half_request({0.f}), &response).ok());
  EXPECT_EQ(y_of(response), (std::vector<float>{3.f}));
}

TEST_F(GrpcService, ConcurrentBadRequestsDoNotDisturbGoodOnes) {
  std::atomic<int> good{0}, rejected{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        pb::PredictRequest r = half_request({float(t), float(i)});
        bool bad = (i + t) % 2;
        if (bad) (*r.mutable_inputs())["x"].set_dtype(tensorflow::DT_STRING);
        pb::PredictResponse response;
        grpc::Status s = predict(r, &response);
        if (bad) {
          (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ? rejected : wrong)++;
        } else {
          bool ok = s.ok() && y_of(response) == std::vector<float>{0.5f * t + 3, 0.5f * i + 3};
          (ok ? good : wrong)++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good, 50);
  EXPECT_EQ(rejected, 50);
  EXPECT_EQ(wrong, 0);
}

TEST_F(GrpcService, MaxMessageSize) {
  start_server({.max_message_bytes = 1024});
  pb::PredictResponse response;
  grpc::Status s = predict(half_request(std::vector<float>(1000, 1.f)), &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("larger than max"));
  ASSERT_TRUE(predict(half_request({2.f}), &response).ok());  // the connection still serves
  EXPECT_EQ(y_of(response), (std::vector<float>{4.f}));
  // A small request whose response is over the limit (GetModelMetadata's signatures).
  start_server({.max_message_bytes = 200});
  pb::GetModelMetadataRequest m;
  m.mutable_model_spec()->set_name("half");
  m.add_metadata_field("signature_def");
  pb::GetModelMetadataResponse metadata;
  grpc::ClientContext ctx;
  s = predict_->GetModelMetadata(&ctx, m, &metadata);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("response larger than max"));
  ASSERT_TRUE(predict(half_request({3.f}), &response).ok());
  EXPECT_EQ(y_of(response), (std::vector<float>{4.5f}));
}

TEST_F(GrpcService, ClassifyAndRegress) {
  pb::ClassificationRequest c;
  c.mutable_model_spec()->set_name("half");
  c.mutable_model_spec()->set_signature_name("classify_x_to_y");
  *c.mutable_input()->mutable_example_list()->add_examples() = example_x({2.f});
  *c.mutable_input()->mutable_example_list()->add_examples() = example_x({4.f});
  pb::ClassificationResponse cr;
  grpc::ClientContext ctx;
  grpc::Status s = predict_->Classify(&ctx, c, &cr);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(cr.result().classifications_size(), 2);
  ASSERT_EQ(cr.result().classifications(1).classes_size(), 2);
  EXPECT_EQ(cr.result().classifications(0).classes(0).score(), 4.f);  // 0.5 * 2 + 3
  EXPECT_EQ(cr.result().classifications(0).classes(1).score(), -4.f);
  EXPECT_EQ(cr.result().classifications(1).classes(0).score(), 5.f);
  EXPECT_EQ(cr.model_spec().signature_name(), "classify_x_to_y");
  EXPECT_EQ(cr.model_spec().version().value(), 2);

  c.mutable_input()->Clear();
  grpc::ClientContext ctx2;
  s = predict_->Classify(&ctx2, c, &cr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "Input is empty.");

  pb::RegressionRequest r;
  r.mutable_model_spec()->set_name("half");
  r.mutable_model_spec()->set_signature_name("regress_x_to_y");
  r.mutable_model_spec()->set_version_label("stable");
  *r.mutable_input()->mutable_example_list()->add_examples() = example_x({2.f});
  *r.mutable_input()->mutable_example_list()->add_examples() = example_x({6.f});
  pb::RegressionResponse rr;
  grpc::ClientContext ctx3;
  s = predict_->Regress(&ctx3, r, &rr);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(rr.result().regressions_size(), 2);
  EXPECT_EQ(rr.result().regressions(0).value(), 3.f);  // version 1: 0.5 * 2 + 2
  EXPECT_EQ(rr.result().regressions(1).value(), 5.f);
  EXPECT_EQ(rr.model_spec().version().value(), 1);
}

TEST_F(GrpcService, GetModelMetadata) {
  pb::GetModelMetadataRequest r;
  r.mutable_model_spec()->set_name("half");
  r.add_metadata_field("signature_def");
  pb::GetModelMetadataResponse response;
  grpc::ClientContext ctx;
  grpc::Status s = predict_->GetModelMetadata(&ctx, r, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.model_spec().name(), "half");
  EXPECT_EQ(response.model_spec().version().value(), 2);
  const google::protobuf::Any& any = response.metadata().at("signature_def");
  EXPECT_EQ(any.type_url(), "type.googleapis.com/tensorflow.serving.SignatureDefMap");
  pb::SignatureDefMap map;
  ASSERT_TRUE(any.UnpackTo(&map));
  std::vector<std::string> keys;
  for (const auto& [k, v] : map.signature_def()) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"classify_x_to_y", "regress_x_to_y", "serving_default"}));
  const tensorflow::SignatureDef& def = map.signature_def().at("serving_default");
  EXPECT_EQ(def.method_name(), "tensorflow/serving/predict");
  const tensorflow::TensorInfo& x = def.inputs().at("x");
  EXPECT_EQ(x.dtype(), tensorflow::DT_FLOAT);
  ASSERT_EQ(x.tensor_shape().dim_size(), 1);
  EXPECT_EQ(x.tensor_shape().dim(0).size(), -1);
  EXPECT_FALSE(x.name().empty());
  EXPECT_EQ(def.outputs().at("y").dtype(), tensorflow::DT_FLOAT);
  EXPECT_EQ(map.signature_def().at("classify_x_to_y").outputs().at("scores").tensor_shape().dim_size(), 2);

  r.clear_metadata_field();
  grpc::ClientContext ctx2;
  s = predict_->GetModelMetadata(&ctx2, r, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "GetModelMetadataRequest must specify at least one metadata_field");
  r.add_metadata_field("signature_def");
  r.add_metadata_field("graph");
  grpc::ClientContext ctx3;
  s = predict_->GetModelMetadata(&ctx3, r, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "Metadata field graph is not supported");
}

TEST_F(GrpcService, GetModelStatus) {
  pb::GetModelStatusRequest r;
  r.mutable_model_spec()->set_name("half");
  pb::GetModelStatusResponse response;
  grpc::ClientContext ctx;
  grpc::Status s = model_->GetModelStatus(&ctx, r, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(response.model_version_status_size(), 2);
  EXPECT_EQ(response.model_version_status(0).version(), 2);  // newest first
  EXPECT_EQ(response.model_version_status(1).version(), 1);
  for (const auto& v : response.model_version_status()) {
    EXPECT_EQ(v.state(), pb::ModelVersionStatus::AVAILABLE);
    EXPECT_EQ(v.status().error_code(), 0);
    EXPECT_EQ(v.status().error_message(), "");
  }

  r.mutable_model_spec()->set_name("nope");
  grpc::ClientContext ctx2;
  s = model_->GetModelStatus(&ctx2, r, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("nope"));
}

TEST_F(GrpcService, ReloadConfigAddsAModel) {
  std::string dense_base = tmp_ / "dense";
  std::filesystem::create_directories(dense_base);
  testing::save_dense(dense_base, 1, 4, 3);
  pb::ReloadConfigRequest r;
  auto* list = r.mutable_config()->mutable_model_config_list();
  auto* half = list->add_config();
  half->set_name("half");
  half->set_base_path(base_);
  half->set_model_platform("tensorflow");
  half->mutable_model_version_policy()->mutable_all();
  (*half->mutable_version_labels())["stable"] = 1;
  auto* dense = list->add_config();
  dense->set_name("dense");
  dense->set_base_path(dense_base);
  dense->set_model_platform("tensorflow");

  pb::ReloadConfigResponse response;
  grpc::ClientContext ctx;
  grpc::Status s = model_->HandleReloadConfigRequest(&ctx, r, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.status().error_code(), 0);

  pb::PredictRequest p;
  p.mutable_model_spec()->set_name("dense");
  (*p.mutable_inputs())["x"] = float_proto(std::vector<float>(8, 1.f), {2, 4});
  pb::PredictResponse out;
  s = predict(p, &out);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(serving::tensor_from_proto(out.outputs().at("y")).shape(), Shape({2, 3}));
  EXPECT_EQ(out.model_spec().version().value(), 1);
  ASSERT_TRUE(predict(half_request({2.f}), &out).ok());  // still serving

  // A bad config changes nothing.
  dense->set_base_path("relative/path");
  grpc::ClientContext ctx2;
  s = model_->HandleReloadConfigRequest(&ctx2, r, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("relative/path"));
  r.mutable_config()->mutable_custom_model_config();
  grpc::ClientContext ctx3;
  s = model_->HandleReloadConfigRequest(&ctx3, r, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("Only ModelConfigList is currently supported"));
  EXPECT_TRUE(predict(p, &out).ok());
}

// The transport (deepflow/serving/h2_server.cpp, grpc_h2_session.cpp): what grpc++'s server
// did for us before.

// A unary call by method name with raw request bytes (grpc++'s generic stub).
grpc::Status generic_call(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                          const std::string& request_bytes) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1), response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

TEST_F(GrpcService, UnknownMethodAndUnparsableRequest) {
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials());
  grpc::Status s = generic_call(channel, "/tensorflow.serving.PredictionService/NoSuchMethod", "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(s.error_message(), HasSubstr("/tensorflow.serving.PredictionService/NoSuchMethod"));
  s = generic_call(channel, "/tensorflow.serving.PredictionService/Predict", "\xff\xff\xff");  // truncated varint
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_THAT(s.error_message(), HasSubstr("tensorflow.serving.PredictRequest"));
  // The same path with a real request still works.
  s = generic_call(channel, "/tensorflow.serving.PredictionService/Predict", half_request({2.f}).SerializeAsString());
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(GrpcService, CompressedRequestIsUnimplemented) {
  grpc::ClientContext ctx;
  ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  pb::PredictResponse response;
  grpc::Status s = predict_->Predict(&ctx, half_request(std::vector<float>(256, 1.f)), &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(s.error_message(), HasSubstr("grpc-encoding 'gzip' is not supported"));
  ASSERT_TRUE(predict(half_request({2.f}), &response).ok());
  EXPECT_EQ(y_of(response), (std::vector<float>{4.f}));
}

// 32 calls in flight at once on one channel (one HTTP/2 connection): all answered, each
// with its own result.
TEST_F(GrpcService, ManyConcurrentCallsOnOneChannel) {
  constexpr int kCalls = 32;
  grpc::CompletionQueue cq;
  std::vector<grpc::ClientContext> contexts(kCalls);
  std::vector<pb::PredictResponse> responses(kCalls);
  std::vector<grpc::Status> statuses(kCalls);
  std::vector<std::unique_ptr<grpc::ClientAsyncResponseReader<pb::PredictResponse>>> calls;
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(predict_->AsyncPredict(&contexts[i], half_request({float(i), 1.f}), &cq));
    calls.back()->Finish(&responses[i], &statuses[i], reinterpret_cast<void*>(intptr_t(i)));
  }
  for (int n = 0; n < kCalls; ++n) {
    void* tag = nullptr;
    bool ok = false;
    ASSERT_TRUE(cq.Next(&tag, &ok));
    EXPECT_TRUE(ok);
  }
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(statuses[i].ok()) << i << ": " << statuses[i].error_message();
    EXPECT_EQ(y_of(responses[i]), (std::vector<float>{0.5f * float(i) + 3.f, 3.5f})) << i;
  }
  cq.Shutdown();
}

// With a runner that may block (the batcher's), calls on one connection run at once: here
// each call waits until all 4 are inside the runner, which never happens if they serialize.
TEST_F(GrpcService, BlockingRunnerCallsOnOneChannelRunAtOnce) {
  constexpr int kCalls = 4;
  std::mutex mutex;
  std::condition_variable cv;
  int inside = 0;
  auto gathering = [&](const serving::ServableHandle& s, const std::string& key,
                       const std::map<std::string, Tensor>& in) {
    std::unique_lock lock(mutex);
    ++inside;
    cv.notify_all();
    if (!cv.wait_for(lock, std::chrono::seconds(5), [&] { return inside >= kCalls; }))
      throw serving::ServingError(serving::Code::DeadlineExceeded, "calls were serialized");
    return serving::run_signature_directly(s, key, in);
  };
  serving::GrpcServer server(*manager_, gathering, nullptr, serving::GrpcOptions{.address = "127.0.0.1:0"});
  server.start();
  auto stub = pb::PredictionService::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(server.port()), grpc::InsecureChannelCredentials()));
  std::vector<std::thread> threads;
  std::vector<grpc::Status> statuses(kCalls);
  std::vector<pb::PredictResponse> responses(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([&, i] {
      grpc::ClientContext ctx;
      statuses[i] = stub->Predict(&ctx, half_request({float(i)}), &responses[i]);
    });
    if (i == 0) {  // the first call alone on the connection, already inside the runner
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return inside >= 1; });
    }
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(statuses[i].ok()) << statuses[i].error_message();
    EXPECT_EQ(y_of(responses[i]), (std::vector<float>{0.5f * float(i) + 3.f}));
  }
}

// A message near the default limit goes through both ways (the HTTP/2 windows are large).
TEST_F(GrpcService, LargeMessageRoundTrip) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  auto stub = pb::PredictionService::NewStub(grpc::CreateCustomChannel(
      "127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials(), args));
  std::vector<float> x(2 << 20);  // 8 MiB
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 1000);
  pb::PredictRequest r;
  r.mutable_model_spec()->set_name("half");
  (*r.mutable_inputs())["x"] = float_proto(x, {int64_t(x.size())});
  grpc::ClientContext ctx;
  pb::PredictResponse response;
  grpc::Status s = stub->Predict(&ctx, r, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  std::vector<float> y = y_of(response);
  ASSERT_EQ(y.size(), x.size());
  EXPECT_EQ(y[12345], 0.5f * float(12345 % 1000) + 3.f);
}

// Raw TCP clients that break the protocol or leave mid-call: the server neither crashes
// nor stalls, and keeps answering real clients.
TEST_F(GrpcService, RawSocketGarbageAndAbandonedCalls) {
  auto send_and_close = [&](const std::string& bytes, bool read_reply) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t(server_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), ssize_t(bytes.size()));
    if (read_reply) {
      char buf[4096];
      timeval tv{.tv_sec = 5, .tv_usec = 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      while (::recv(fd, buf, sizeof buf, 0) > 0) {
      }  // the server closes after its GOAWAY
    }
    ::close(fd);
  };
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  const std::string settings("\0\0\0\x04\0\0\0\0\0", 9);  // empty SETTINGS
  send_and_close("GET / HTTP/1.1\r\nHost: x\r\n\r\n", true);  // not HTTP/2
  send_and_close(std::string(1000, '\xff'), true);
  send_and_close(preface + settings + std::string("\0\0\x10\x01\x04\0\0\0\x01", 9), false);  // truncated HEADERS
  send_and_close(preface + settings + std::string("\x00\x00\x05\x07\x00\x00\x00\x00\x00garbage", 14), true);
  // A Predict call abandoned mid-request: HEADERS (HPACK: POST, http, :authority, :path,
  // content-type, te) and part of its message, then the connection drops.
  const std::string path = "/tensorflow.serving.PredictionService/Predict";
  std::string block = "\x83\x86\x41\x09localhost\x44" + std::string(1, char(path.size())) + path + "\x5f\x10" +
                      "application/grpc" + std::string("\x40\x02te\x08trailers", 13);
  std::string headers = std::string("\0\0", 2) + char(block.size()) + std::string("\x01\x04\0\0\0\x01", 6) + block;
  std::string data = std::string("\0\0\x0f\0\0\0\0\0\x01", 9) + std::string("\0\0\0\0\x64", 5) + "0123456789";
  {
    std::vector<std::thread> abandon;
    for (int i = 0; i < 4; ++i)
      abandon.emplace_back([&, i] { send_and_close(preface + settings + headers + (i % 2 ? data : ""), false); });
    for (auto& t : abandon) t.join();
  }
  pb::PredictResponse response;
  ASSERT_TRUE(predict(half_request({4.f}), &response).ok());
  EXPECT_EQ(y_of(response), (std::vector<float>{5.f}));
}

// shutdown() with a call in flight: the call completes with its result, then shutdown returns.
TEST_F(GrpcService, ShutdownFinishesTheCallInFlight) {
  std::promise<void> entered;
  auto slow = [&](const serving::ServableHandle& s, const std::string& key, const std::map<std::string, Tensor>& in) {
    entered.set_value();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return serving::run_signature_directly(s, key, in);
  };
  serving::GrpcServer server(*manager_, slow, nullptr, serving::GrpcOptions{.address = "127.0.0.1:0"});
  server.start();
  auto stub = pb::PredictionService::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(server.port()), grpc::InsecureChannelCredentials()));
  pb::PredictResponse response;
  grpc::Status status;
  std::thread call([&] {
    grpc::ClientContext ctx;
    status = stub->Predict(&ctx, half_request({6.f}), &response);
  });
  entered.get_future().wait();
  auto t0 = std::chrono::steady_clock::now();
  server.shutdown();
  auto waited = std::chrono::steady_clock::now() - t0;
  call.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(y_of(response), (std::vector<float>{6.f}));
  EXPECT_GE(waited, std::chrono::milliseconds(200));  // it waited for the call
  // No new calls once shut down.
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  EXPECT_FALSE(stub->Predict(&ctx, half_request({1.f}), &response).ok());
}

// The Python client (grpcio from Debian, modules generated from proto/ at run time).
TEST_F(GrpcService, PythonClient) {
  const char* python = "/usr/bin/python3";
  if (!std::filesystem::exists(python) || std::system("/usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null")) {
    DEEPFLOW_ORACLE_MISSING("/usr/bin/python3 cannot import grpc and google.protobuf (Debian python3-grpcio, python3-protobuf)");
  }
  if (!std::filesystem::exists("/usr/bin/grpc_python_plugin") || std::system("protoc --version >/dev/null 2>&1")) {
    DEEPFLOW_ORACLE_MISSING("protoc or /usr/bin/grpc_python_plugin missing (Debian protobuf-compiler-grpc)");
  }
  std::string script = std::string(DEEPFLOW_PROTO_DIR) + "/../tests/serving/grpc_client.py";
  std::string log = tmp_ / "client.log";
  std::string cmd = std::string(python) + " " + script + " --proto_dir " + DEEPFLOW_PROTO_DIR + " 127.0.0.1:" +
                    std::to_string(server_->port()) + " > " + log + " 2>&1";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << cmd << "\n" << testing::read_bytes(log);
}

}  // namespace
}  // namespace deepflow
