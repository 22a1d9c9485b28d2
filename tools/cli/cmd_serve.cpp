// SPDX-License-Identifier: Apache-2.0
// `deepflow serve`: the model server, with TensorFlow Serving's tensorflow_model_server
// flags (docs/serving.md).
//
//   deepflow serve --rest_api_port=8501 --model_name=mnist --model_base_path=/tmp/models/mnist
//   deepflow serve --port=8500 --rest_api_port=8501 --model_config_file=models.config
//       --enable_batching --batching_parameters_file=batching.config         (one line)
//
// It prints the addresses it listens on, serves until SIGTERM or SIGINT, then shuts
// down gracefully (listeners stop, requests in flight finish, models unload) and exits 0.
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli.h"
#include "deepflow/serving/server.h"

namespace deepflow::cli {

namespace {

struct ServeOptions {
  int port = 8500;
  int rest_api_port = 8501;
  std::string model_name = "default";
  std::string model_base_path;
  std::string model_config_file;
  double file_system_poll_wait_seconds = 1;
  bool enable_batching = false;
  std::string batching_parameters_file;
  std::string monitoring_config_file;
  int rest_api_num_threads = 0;
  int64_t rest_api_timeout_in_ms = 30000;
  bool enable_model_warmup = true;
  int64_t num_request_iterations_for_warmup = 0;
  int num_load_threads = 0;
  std::string host = "0.0.0.0";
  size_t rest_api_max_body_bytes = 64 << 20;
};

serving::ServerOptions server_options(const ServeOptions& o) {
  serving::ServerOptions s;
  if (!o.model_config_file.empty()) {
    s.config = serving::parse_model_config_file(o.model_config_file);
    s.model_config_file = o.model_config_file;
  } else if (!o.model_base_path.empty()) {
    s.config = serving::single_model(o.model_name, std::filesystem::absolute(o.model_base_path).string());
  } else {
    throw Error("[serve] give --model_base_path (with --model_name) or --model_config_file: both are empty");
  }
  if (!o.batching_parameters_file.empty() && !o.enable_batching)
    throw Error("[serve] --batching_parameters_file given without --enable_batching (as in TF Serving, the file "
                "alone does not turn batching on)");
  if (o.enable_batching)
    s.batching = o.batching_parameters_file.empty() ? serving::BatchingOptions{}
                                                    : serving::parse_batching_parameters_file(o.batching_parameters_file);
  if (!o.monitoring_config_file.empty()) {
    s.monitoring = serving::parse_monitoring_config_file(o.monitoring_config_file);
    if (s.monitoring.enable && o.rest_api_port == 0)
      throw Error("[serve] --monitoring_config_file enables Prometheus, which is served on the REST port: give "
                  "--rest_api_port");
  }
  if (o.port != 0 && o.port == o.rest_api_port)
    throw Error("[serve] --port and --rest_api_port must differ (both " + std::to_string(o.port) + ")");
  s.grpc_port = o.port;
  s.rest_port = o.rest_api_port;
  s.host = o.host;
  s.rest_threads = o.rest_api_num_threads;
  s.rest_timeout_ms = o.rest_api_timeout_in_ms;
  s.max_body_bytes = o.rest_api_max_body_bytes;
  s.poll_seconds = o.file_system_poll_wait_seconds;
  s.enable_warmup = o.enable_model_warmup;
  s.warmup.num_iterations = std::max<int64_t>(1, o.num_request_iterations_for_warmup);
  s.num_load_threads = std::max(1, o.num_load_threads);
  return s;
}

void serve(const ServeOptions& o) {
  serving::ServerOptions options = server_options(o);
  serving::ModelServer server(std::move(options));
  // Before start(): the server's threads inherit the blocked signal mask.
  serving::install_signal_handlers(server);
  server.start();
  if (server.grpc_port() > 0)
    std::cout << "Running gRPC ModelServer at " << o.host << ":" << server.grpc_port() << " ..." << std::endl;
  if (server.rest_port() > 0)
    std::cout << "Exporting HTTP/REST API at:localhost:" << server.rest_port() << " ..." << std::endl;
  server.wait();
  std::cout << "deepflow serve: shut down" << std::endl;
}

}  // namespace

void setup_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve SavedModels over TF Serving's REST and gRPC APIs");
  cmd->add_option("--port", o->port, "gRPC port (0: no gRPC)")->capture_default_str();
  cmd->add_option("--rest_api_port", o->rest_api_port, "HTTP/REST port (0: no REST)")->capture_default_str();
  cmd->add_option("--model_name", o->model_name, "Name of the model (single-model mode)")->capture_default_str();
  cmd->add_option("--model_base_path", o->model_base_path,
                  "Directory holding the model's numbered version directories (single-model mode)");
  cmd->add_option("--model_config_file", o->model_config_file,
                  "Text-format ModelServerConfig (several models, version policies, labels); overrides "
                  "--model_name/--model_base_path");
  cmd->add_option("--file_system_poll_wait_seconds", o->file_system_poll_wait_seconds,
                  "Seconds between scans of the base paths for new or removed versions (<= 0: scan once)")
      ->capture_default_str();
  cmd->add_flag("--enable_batching", o->enable_batching, "Merge concurrent requests into batches");
  cmd->add_option("--batching_parameters_file", o->batching_parameters_file,
                  "Text-format BatchingParameters (needs --enable_batching)");
  cmd->add_option("--monitoring_config_file", o->monitoring_config_file,
                  "Text-format MonitoringConfig (prometheus_config { enable: true path: ... })");
  cmd->add_option("--rest_api_num_threads", o->rest_api_num_threads, "HTTP worker threads (0: 4 x cores)")
      ->capture_default_str();
  cmd->add_option("--rest_api_timeout_in_ms", o->rest_api_timeout_in_ms, "HTTP read/write timeout")
      ->capture_default_str();
  cmd->add_option("--rest_api_max_body_bytes", o->rest_api_max_body_bytes,
                  "Largest accepted request body (larger: HTTP 413)")
      ->capture_default_str();
  cmd->add_flag("--enable_model_warmup", o->enable_model_warmup,
                "Warm each version up before it serves (assets.extra/tf_serving_warmup_requests, or automatic)")
      ->capture_default_str();
  cmd->add_option("--num_request_iterations_for_warmup", o->num_request_iterations_for_warmup,
                  "Times each warmup record is replayed (0: once)")
      ->capture_default_str();
  cmd->add_option("--num_load_threads", o->num_load_threads, "Threads loading versions (0: one)")
      ->capture_default_str();
  cmd->add_option("--host", o->host, "Address to listen on")->capture_default_str();
  cmd->callback([o] { serve(*o); });
}

DF_CLI_COMMAND(setup_serve)

}  // namespace deepflow::cli
