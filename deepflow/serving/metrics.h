// SPDX-License-Identifier: Apache-2.0
// Prometheus metrics at /monitoring/prometheus/metrics (text exposition format 0.0.4),
// with TF Serving's metric names where it has them (specs.md 1.14):
//
//   :tensorflow:serving:request_count{model_name,API,entrypoint,status}     counter
//   :tensorflow:serving:request_latency_bucket{model_name,API,entrypoint,le} histogram (us)
//   :tensorflow:serving:runtime_latency_bucket{model_name,API,runtime,le}  histogram (us)
//   :tensorflow:serving:batching_session:processed_batch_size_bucket{...}  histogram
//   :tensorflow:serving:model_load_count{model_name,status}  (deepflow's own, with
//   :tensorflow:serving:model_unload_count, :tensorflow:serving:model_load_latency)
// plus deepflow_serving_model_version_state{model_name,version,state} gauges.
//
// Recording is lock-light (one mutex per metric family, no allocation on the hot path
// once a label set exists); rendering takes a consistent snapshot.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "deepflow/serving/model_manager.h"
#include "deepflow/serving/status.h"

namespace deepflow::serving {

/// TF Serving's monitoring config (text format: prometheus_config { enable: true path:
/// "/monitoring/prometheus/metrics" }).
struct MonitoringOptions {
  bool enable = false;
  std::string path = "/monitoring/prometheus/metrics";
};
MonitoringOptions parse_monitoring_config_file(const std::string& path);

class Metrics {
 public:
  Metrics();
  ~Metrics();
  /// api: "predict", "classify", "regress", "metadata", "status"; entrypoint: "REST" or
  /// "GRPC". version 0 when none resolved.
  void record_request(const std::string& model, int64_t version, const std::string& api,
                      const std::string& entrypoint, Code code, double latency_us);
  void record_runtime(const std::string& model, const std::string& api, double latency_us);
  void record_batch(const std::string& model, int64_t rows, int64_t padded_rows);
  void record_event(const ManagerEvent& event);
  /// The whole exposition text.
  std::string prometheus_text() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace deepflow::serving
