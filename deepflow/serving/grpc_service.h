// SPDX-License-Identifier: Apache-2.0
// TF Serving's gRPC services on proto/serving_apis.proto (package tensorflow.serving,
// TF Serving's message names and field numbers, so existing clients work unchanged):
// PredictionService (Predict, Classify, Regress, GetModelMetadata; MultiInference is
// UNIMPLEMENTED) and ModelService (GetModelStatus, HandleReloadConfigRequest), served by
// our own gRPC-over-HTTP/2 transport on libnghttp2 (h2_server.h), not grpc++'s server.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "deepflow/serving/metrics.h"
#include "deepflow/serving/model_manager.h"
#include "deepflow/serving/predict.h"

namespace deepflow::serving {

struct GrpcOptions {
  std::string address = "0.0.0.0:8500";  ///< port 0: any free port
  int max_message_bytes = 64 << 20;
};

class GrpcServer {
 public:
  /// `reload` applies a HandleReloadConfigRequest's config (may be empty: UNIMPLEMENTED).
  GrpcServer(ModelManager& manager, SignatureRunner runner, Metrics* metrics, GrpcOptions options,
             std::function<void(const ServerConfig&)> reload = {});
  ~GrpcServer();
  void start();  ///< throws if the address cannot be bound
  int port() const;
  /// Stops accepting, sends GOAWAY and waits for the calls in flight. Idempotent.
  void shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace deepflow::serving
