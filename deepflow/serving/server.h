// SPDX-License-Identifier: Apache-2.0
// The model server (`deepflow serve`): the model manager, optional batching and
// metrics, the REST front end (cpp-httplib) and the gRPC front end, with TF Serving's
// flags and behaviour.
//
//   ServerOptions o;
//   o.config = single_model("mnist", "/models/mnist");
//   o.rest_port = 8501; o.grpc_port = 8500;
//   ModelServer server(o);
//   server.start();          // loads the models, then listens
//   server.wait();           // until shutdown() or SIGTERM/SIGINT (install_signal_handlers)
//
// Shutdown is graceful: the listeners stop accepting, requests in flight finish (the
// batcher drains), then the models unload.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "deepflow/serving/batching.h"
#include "deepflow/serving/metrics.h"
#include "deepflow/serving/model_manager.h"
#include "deepflow/serving/warmup.h"

namespace deepflow::serving {

struct ServerOptions {
  ServerConfig config;
  std::string model_config_file;           ///< re-read on HandleReloadConfigRequest only
  int grpc_port = 8500;                    ///< 0: no gRPC; -1: pick a free port (tests)
  int rest_port = 8501;                    ///< 0: no REST;  -1: pick a free port (tests)
  std::string host = "0.0.0.0";
  int rest_threads = 0;  ///< 0: 4 x cores, as TF Serving; with batching (num_batch_threads + 1) x max_batch_size in [4 x cores, 256]
  int64_t rest_timeout_ms = 30000;
  size_t max_body_bytes = 64 << 20;        ///< larger bodies: 413 with {"error": ...}
  double poll_seconds = 1;                 ///< --file_system_poll_wait_seconds
  std::optional<BatchingOptions> batching; ///< --enable_batching (+ parameters file)
  MonitoringOptions monitoring;
  bool enable_warmup = true;
  WarmupOptions warmup;
  int num_load_threads = 2;
};

class ModelServer {
 public:
  explicit ModelServer(ServerOptions options);
  ~ModelServer();  ///< shutdown() if still running
  ModelServer(const ModelServer&) = delete;
  ModelServer& operator=(const ModelServer&) = delete;

  /// Loads the models (first scan), then starts the listeners; throws if a port cannot
  /// be bound. Models that fail to load do not stop the server (they show in status).
  void start();
  /// Blocks until shutdown() is called (from any thread or a signal handler).
  void wait();
  /// Idempotent; see the file comment.
  void shutdown();
  /// The bound ports (useful with -1).
  int rest_port() const;
  int grpc_port() const;

  ModelManager& manager();
  Metrics& metrics();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// SIGTERM and SIGINT call server.shutdown() (from a watcher thread, not the handler).
void install_signal_handlers(ModelServer& server);

}  // namespace deepflow::serving
