// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/warmup.h"

#include <omp.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "deepflow/data/example.h"
#include "deepflow/data/tfrecord.h"
#include "deepflow/serving/predict.h"
#include "deepflow/serving/tensor_proto.h"
#include "serving/serving_test_util.h"
#include "serving_apis.pb.h"

namespace deepflow::serving {
namespace {

using ::testing::HasSubstr;

Servable load(const std::string& dir, const std::string& name = "half") {
  return Servable{name, 1, dir, io::load_saved_model(dir)};
}

ServingError warm_up_error(const Servable& s) {
  try {
    warm_up(s);
  } catch (const ServingError& e) {
    return e;
  }
  ADD_FAILURE() << "warm_up did not fail";
  return ServingError(Code::Ok, "");
}

std::string warmup_path(const std::string& dir) { return dir + "/" + kWarmupFile; }

TEST(ServingWarmup, ReplaysAWrittenFile) {
  testing::TempDir tmp;
  std::string dir = testing::save_half_plus(tmp.path(), 1);
  write_warmup_file(dir, {{{"x", constant({1.f, 2.f})}}, {{"x", constant({3.f})}}});
  // The file is TF Serving's: TFRecord of PredictionLog with predict_log requests.
  data::RecordReader reader(warmup_path(dir));
  auto rec = reader.read();
  ASSERT_TRUE(rec);
  tensorflow::serving::PredictionLog log;
  ASSERT_TRUE(log.ParseFromArray(rec->data(), int(rec->size())));
  ASSERT_TRUE(log.has_predict_log());
  EXPECT_EQ(log.predict_log().request().model_spec().signature_name(), "serving_default");
  EXPECT_EQ(tensor_from_proto(log.predict_log().request().inputs().at("x")).to_vector<float>(),
            (std::vector<float>{1.f, 2.f}));

  Servable s = load(dir);
  WarmupStats stats = warm_up(s);
  EXPECT_TRUE(stats.from_file);
  EXPECT_EQ(stats.records, 2);
  EXPECT_EQ(stats.runs, 2);
  stats = warm_up(s, {.num_iterations = 3});
  EXPECT_EQ(stats.records, 2);
  EXPECT_EQ(stats.runs, 6);
}

TEST(ServingWarmup, ReplaysClassifyAndRegressLogs) {
  testing::TempDir tmp;
  std::string dir = testing::save_half_plus(tmp.path(), 1);
  std::filesystem::create_directories(dir + "/assets.extra");
  data::RecordWriter w(warmup_path(dir));
  tensorflow::Example ex;
  ASSERT_TRUE(ex.ParseFromString(data::ExampleBuilder().set("x", std::vector<float>{1.f}).serialize()));
  tensorflow::serving::PredictionLog c;
  auto* creq = c.mutable_classify_log()->mutable_request();
  creq->mutable_model_spec()->set_signature_name("classify_x_to_y");
  *creq->mutable_input()->mutable_example_list()->add_examples() = ex;
  w.write(c.SerializeAsString());
  tensorflow::serving::PredictionLog r;
  auto* rreq = r.mutable_regress_log()->mutable_request();
  rreq->mutable_model_spec()->set_signature_name("regress_x_to_y");
  auto* with_ctx = rreq->mutable_input()->mutable_example_list_with_context();
  with_ctx->add_examples();  // empty: x comes from the context
  *with_ctx->mutable_context() = ex;
  w.write(r.SerializeAsString());
  tensorflow::serving::PredictionLog multi;  // not replayed, but not an error
  multi.mutable_multi_inference_log();
  w.write(multi.SerializeAsString());
  w.close();
  WarmupStats stats = warm_up(load(dir));
  EXPECT_EQ(stats.records, 3);
  EXPECT_EQ(stats.runs, 2);
}

TEST(ServingWarmup, ABadFileFailsNamingTheRecord) {
  testing::TempDir tmp;
  std::string dir = testing::save_half_plus(tmp.path(), 1);
  // Record 1 feeds an input the signature does not have.
  write_warmup_file(dir, {{{"x", constant({1.f})}}, {{"nope", constant({1.f})}}});
  ServingError e = warm_up_error(load(dir));
  EXPECT_EQ(e.code(), Code::InvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("[warm_up] half version 1: warmup file " + warmup_path(dir) + ", record 1: "));
  EXPECT_THAT(e.what(), HasSubstr("input tensor alias not found in signature: nope"));

  // A record that is not a PredictionLog.
  {
    data::RecordWriter w(warmup_path(dir));
    w.write("\xff\xff\xff");
    w.close();
  }
  e = warm_up_error(load(dir));
  EXPECT_EQ(e.code(), Code::InvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("record 0: not a tensorflow.serving.PredictionLog (3 bytes)"));

  // A tensor whose values disagree with its shape.
  {
    tensorflow::serving::PredictionLog log;
    auto& x = (*log.mutable_predict_log()->mutable_request()->mutable_inputs())["x"];
    x.set_dtype(tensorflow::DT_FLOAT);
    x.mutable_tensor_shape()->add_dim()->set_size(3);
    x.add_float_val(1.f);
    x.add_float_val(2.f);
    data::RecordWriter w(warmup_path(dir));
    w.write(log.SerializeAsString());
    w.close();
  }
  e = warm_up_error(load(dir));
  EXPECT_EQ(e.code(), Code::InvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("record 0: input 'x': [tensor_from_proto] DT_FLOAT tensor of shape [3]"));

  // Broken framing after one good record.
  write_warmup_file(dir, {{{"x", constant({1.f})}}});
  {
    std::ofstream f(warmup_path(dir), std::ios::app | std::ios::binary);
    f << "garbage";
  }
  e = warm_up_error(load(dir));
  EXPECT_EQ(e.code(), Code::DataLoss);
  EXPECT_THAT(e.what(), HasSubstr("record 1: "));
  EXPECT_THAT(e.what(), HasSubstr("truncated record"));
}

TEST(ServingWarmup, AutomaticRunsEverySignature) {
  testing::TempDir tmp;
  Servable s = load(testing::save_half_plus(tmp.path(), 1));
  // Three signatures with a batch dim: once at size 1, then at each batch size.
  WarmupStats stats = warm_up(s, {.batch_sizes = {1, 4, 8}});
  EXPECT_FALSE(stats.from_file);
  EXPECT_EQ(stats.records, 0);
  EXPECT_EQ(stats.runs, 3 * 4);
  EXPECT_TRUE(stats.skipped.empty());
  EXPECT_EQ(warm_up(s, {.automatic = false}).runs, 0);
}

TEST(ServingWarmup, AutomaticSkipsSignaturesThatRejectZeros) {
  testing::TempDir tmp;
  // Unknown dims become 1, and one element cannot be reshaped into pairs: zeros are not
  // a valid input for this signature, which stays cold instead of failing the load.
  Function f = function(
      [](const Tensor& x) {
        return reshape(x, {-1, 2});
      },
      {.name = "pairs", .input_signature = Signature{{DType::Float32, Shape({-1, -1})}}});
  Function g = function([](const Tensor& x) { return neg(x); },
                        {.name = "neg", .input_signature = Signature{{DType::Float32, Shape({-1})}}});
  std::string dir = tmp.path() + "/1";
  io::save_saved_model(dir, {{.key = "pairs", .fn = f.get_concrete_function(), .input_names = {"x"}},
                             {.key = "serving_default", .fn = g.get_concrete_function(), .input_names = {"x"}}});
  WarmupStats stats = warm_up(load(dir));
  EXPECT_EQ(stats.runs, 2);  // serving_default at 1, then at batch size 1
  ASSERT_EQ(stats.skipped.size(), 1u);
  EXPECT_THAT(stats.skipped[0], HasSubstr("pairs: "));
}

// The thread plan: what warm_up records is consistent with its stats, a planned signature
// gives the same values on one thread, and the caller's OpenMP setting survives the call,
// also when the call fails.
TEST(ServingWarmup, ThreadPlanRunsSmallRequestsAlone) {
  testing::TempDir tmp;
  ServableHandle h = std::make_shared<Servable>(load(testing::save_dense(tmp.path(), 1, 16, 8), "dense"));
  EXPECT_TRUE(warm_up(*h, {.plan_threads = false}).single_threaded.empty());
  EXPECT_TRUE(h->threads->single_thread_signatures.empty());
  WarmupStats stats = warm_up(*h);
  for (const std::string& key : stats.single_threaded) EXPECT_EQ(h->threads->single_thread_signatures.count(key), 1u);
  EXPECT_EQ(stats.single_threaded.size(), h->threads->single_thread_signatures.size());
  if (omp_get_max_threads() == 1) {
    EXPECT_TRUE(stats.single_threaded.empty());
  }

  Tensor x = random_normal({1, 16});
  Tensor x3 = random_normal({3, 16});
  h->threads->single_thread_signatures.clear();
  auto team = run_signature_directly(h, "serving_default", {{"x", x}}).at("y");
  h->threads->single_thread_signatures.insert("serving_default");
  const int before = omp_get_max_threads();
  auto alone = run_signature_directly(h, "serving_default", {{"x", x}}).at("y");
  EXPECT_EQ(omp_get_max_threads(), before);
  EXPECT_EQ(alone.to_vector<float>(), team.to_vector<float>());
  EXPECT_EQ(run_signature_directly(h, "serving_default", {{"x", x3}}).at("y").shape(), Shape({3, 8}));
  EXPECT_THROW(run_signature_directly(h, "serving_default", {{"x", ones({1, 5})}}), std::exception);
  EXPECT_EQ(omp_get_max_threads(), before);

  EXPECT_EQ(request_rows({{"x", x3}, {"s", scalar(1.0)}}), 3);
  EXPECT_EQ(request_rows({{"s", scalar(1.0)}}), 1);
}

// First-request latency of a fresh version against the steady state, printed, not
// asserted (the goal: first <= 2x steady). Kernel caches are per process, so
// the second of these two tests in one process measures a partly warm start: for clean
// figures run each alone (--gtest_filter=ServingWarmup.FirstRequestLatencyWith*).
void first_request_latency(bool warm) {
  testing::TempDir tmp;
  std::string dir = testing::save_dense(tmp.path(), 1, 784, 512);
  using clock = std::chrono::steady_clock;
  auto us_since = [](clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(clock::now() - t0).count();
  };
  Tensor x = ones({1, 784});
  auto t0 = clock::now();
  ServableHandle h = std::make_shared<Servable>(load(dir, "dense"));
  double load_us = us_since(t0);
  t0 = clock::now();
  if (warm) warm_up(*h);
  double warmup_us = us_since(t0);
  auto time_one = [&] {
    auto t = clock::now();
    run_predict(h, "", {{"x", x}});
    return us_since(t);
  };
  double first = time_one();
  std::vector<double> steady;
  for (int i = 0; i < 51; ++i) steady.push_back(time_one());
  std::nth_element(steady.begin(), steady.begin() + 25, steady.end());
  double median = steady[25];
  std::printf(
      "[ServingWarmup] dense 784x512, batch 1, %s warm_up: load %.0f us, warm_up %.0f us, first request %.1f us "
      "= %.2fx the steady median %.1f us\n",
      warm ? "with" : "without", load_us, warmup_us, first, first / median, median);
  EXPECT_GT(median, 0);
}

TEST(ServingWarmup, FirstRequestLatencyWithWarmup) { first_request_latency(true); }
TEST(ServingWarmup, FirstRequestLatencyWithoutWarmup) { first_request_latency(false); }

}  // namespace
}  // namespace deepflow::serving
