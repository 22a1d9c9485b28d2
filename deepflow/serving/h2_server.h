// SPDX-License-Identifier: Apache-2.0
// The socket side of the gRPC server: a listener, one I/O thread per connection (each
// with a GrpcSession), and a pool of workers for calls that must not wait for each other.
//
// A call runs on its connection's I/O thread, with no thread hand-off, when it is the only
// call in flight on the connection and the handler never blocks on other calls
// (`inline_calls`); otherwise (several calls at once on one connection, or a handler that
// may wait, such as the batcher's) it runs on a worker and its reply comes back to the
// I/O thread through the connection's eventfd. A connection that saw concurrent calls
// keeps using the workers until it has sent a run of calls one at a time again.
//
//   H2Server server({.address = "127.0.0.1:0"}, [](const GrpcCall& c) { return reply(c); });
//   server.start();
//   ... server.port() ...
//   server.shutdown();  // stop accepting, GOAWAY, finish the calls in flight
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "deepflow/serving/grpc_h2_session.h"

namespace deepflow::serving {

struct H2ServerOptions {
  std::string address = "0.0.0.0:8500";  ///< host:port, [v6]:port; port 0 picks a free one
  size_t max_message_bytes = 64 << 20;
  bool inline_calls = true;  ///< false: every call on a worker (handlers that block)
};

/// Answers one call; may run on any thread, several at once. Must not throw.
using GrpcHandler = std::function<GrpcReply(const GrpcCall&)>;

class H2Server {
 public:
  H2Server(H2ServerOptions options, GrpcHandler handler);
  ~H2Server();
  void start();  ///< throws ServingError(UNAVAILABLE) if the address cannot be bound
  int port() const;
  /// Stops accepting, sends GOAWAY on every connection, waits for the calls in flight
  /// and closes. Idempotent.
  void shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace deepflow::serving
