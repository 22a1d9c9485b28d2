// SPDX-License-Identifier: Apache-2.0
// Prometheus exposition of the serving metrics (text format 0.0.4): counters, histogram
// buckets (TF Serving's 10 us * 1.8^k latency buckets), escaping, model events, and the
// monitoring config file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "deepflow/serving/metrics.h"
#include "io/io_test_util.h"

namespace deepflow {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using serving::Code;
using serving::Metrics;

TEST(ServingMetrics, EmptyHasNoFamilies) { EXPECT_EQ(Metrics().prometheus_text(), ""); }

TEST(ServingMetrics, RequestCounterAndLatencyHistogram) {
  Metrics m;
  m.record_request("half", 2, "predict", "REST", Code::Ok, 15);
  m.record_request("half", 2, "predict", "REST", Code::Ok, 5000);
  m.record_request("half", 0, "predict", "REST", Code::NotFound, 3);
  std::string text = m.prometheus_text();
  EXPECT_THAT(text, HasSubstr("# TYPE :tensorflow:serving:request_count counter\n"
                              ":tensorflow:serving:request_count{model_name=\"half\",version=\"0\",API=\"predict\","
                              "entrypoint=\"REST\",status=\"NOT_FOUND\"} 1\n"
                              ":tensorflow:serving:request_count{model_name=\"half\",version=\"2\",API=\"predict\","
                              "entrypoint=\"REST\",status=\"OK\"} 2\n"));
  const std::string b = ":tensorflow:serving:request_latency_bucket{model_name=\"half\",API=\"predict\",entrypoint=\"REST\",";
  EXPECT_THAT(text, HasSubstr("# TYPE :tensorflow:serving:request_latency histogram\n" + b + "le=\"10\"} 1\n" + b +
                              "le=\"18\"} 2\n" + b + "le=\"32.4\"} 2\n" + b + "le=\"58.32\"} 2\n"));
  // 5000 us lies in (3570.467, 6426.841].
  EXPECT_THAT(text, HasSubstr(b + "le=\"3570.467\"} 2\n" + b + "le=\"6426.841\"} 3\n"));
  EXPECT_THAT(text, HasSubstr(b + "le=\"+Inf\"} 3\n"
                                  ":tensorflow:serving:request_latency_sum{model_name=\"half\",API=\"predict\","
                                  "entrypoint=\"REST\"} 5018\n"
                                  ":tensorflow:serving:request_latency_count{model_name=\"half\",API=\"predict\","
                                  "entrypoint=\"REST\"} 3\n"));
  // 33 finite bounds and +Inf per series.
  size_t buckets = 0;
  for (size_t pos = 0; (pos = text.find("request_latency_bucket", pos)) != std::string::npos; ++pos) ++buckets;
  EXPECT_EQ(buckets, 34u);
}

TEST(ServingMetrics, LabelValuesAreEscaped) {
  Metrics m;
  m.record_request("a\"b\\c\nd", 1, "status", "GRPC", Code::Ok, 1);
  EXPECT_THAT(m.prometheus_text(), HasSubstr("model_name=\"a\\\"b\\\\c\\nd\""));
}

TEST(ServingMetrics, RuntimeAndBatchHistograms) {
  Metrics m;
  m.record_runtime("half", "predict", 100);
  m.record_batch("half", 3, 1);
  std::string text = m.prometheus_text();
  EXPECT_THAT(text, HasSubstr(":tensorflow:serving:runtime_latency_count{model_name=\"half\",API=\"predict\","
                              "runtime=\"deepflow\"} 1\n"));
  const std::string b = ":tensorflow:serving:batching_session:processed_batch_size_bucket{model_name=\"half\",";
  EXPECT_THAT(text, HasSubstr(b + "le=\"2\"} 0\n" + b + "le=\"4\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(":tensorflow:serving:batching_session:padding_size_sum{model_name=\"half\"} 1\n"));
}

TEST(ServingMetrics, ModelEventsAndStateGauge) {
  Metrics m;
  using K = serving::ManagerEvent::Kind;
  m.record_event({.kind = K::LoadStarted, .model = "half", .version = 1});
  EXPECT_THAT(m.prometheus_text(),
              HasSubstr("deepflow_serving_model_version_state{model_name=\"half\",version=\"1\",state=\"LOADING\"} 1\n"));
  m.record_event({.kind = K::Loaded, .model = "half", .version = 1, .seconds = 0.002});
  m.record_event({.kind = K::LoadFailed, .model = "half", .version = 2, .error = "corrupt"});
  std::string text = m.prometheus_text();
  EXPECT_THAT(text, HasSubstr(":tensorflow:serving:model_load_count{model_name=\"half\",status=\"ERROR\"} 1\n"
                              ":tensorflow:serving:model_load_count{model_name=\"half\",status=\"OK\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(":tensorflow:serving:model_load_latency_sum{model_name=\"half\"} 2000\n"));
  EXPECT_THAT(text, HasSubstr("{model_name=\"half\",version=\"1\",state=\"AVAILABLE\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("{model_name=\"half\",version=\"2\",state=\"END\"} 1\n"));
  m.record_event({.kind = K::Unloaded, .model = "half", .version = 1});
  text = m.prometheus_text();
  EXPECT_THAT(text, HasSubstr(":tensorflow:serving:model_unload_count{model_name=\"half\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("version=\"1\",state=")));
}

TEST(ServingMetrics, ConcurrentRecordingCountsEveryRequest) {
  Metrics m;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&m, t] {
      for (int i = 0; i < 2000; ++i) m.record_request(t % 2 ? "a" : "b", 1, "predict", "REST", Code::Ok, i);
    });
  for (auto& t : threads) t.join();
  std::string text = m.prometheus_text();
  EXPECT_THAT(text, HasSubstr("{model_name=\"a\",version=\"1\",API=\"predict\",entrypoint=\"REST\",status=\"OK\"} 4000\n"));
  EXPECT_THAT(text, HasSubstr("request_latency_count{model_name=\"b\",API=\"predict\",entrypoint=\"REST\"} 4000\n"));
}

TEST(ServingMetrics, MonitoringConfigFile) {
  testing::TempDir tmp;
  testing::write_bytes(tmp / "m.config", "prometheus_config { enable: true, path: \"/metrics\" }\n");
  serving::MonitoringOptions o = serving::parse_monitoring_config_file(tmp / "m.config");
  EXPECT_TRUE(o.enable);
  EXPECT_EQ(o.path, "/metrics");
  testing::write_bytes(tmp / "d.config", "prometheus_config { enable: true }\n");
  EXPECT_EQ(serving::parse_monitoring_config_file(tmp / "d.config").path, "/monitoring/prometheus/metrics");
  testing::write_bytes(tmp / "bad.config", "prometheus_config {\n  enabled: true }\n");
  try {
    serving::parse_monitoring_config_file(tmp / "bad.config");
    FAIL() << "expected an error";
  } catch (const serving::ServingError& e) {
    EXPECT_EQ(e.code(), Code::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("bad.config: line 2"));
    EXPECT_THAT(e.what(), HasSubstr("enabled"));
  }
  EXPECT_THROW(serving::parse_monitoring_config_file(tmp / "missing.config"), serving::ServingError);
}

}  // namespace
}  // namespace deepflow
