// SPDX-License-Identifier: Apache-2.0
// The server side of gRPC over HTTP/2 (grpc's doc/PROTOCOL-HTTP2.md) for unary calls, on
// one connection, without sockets: libnghttp2 does the HTTP/2 part (framing, HPACK, flow
// control, SETTINGS, PING, GOAWAY); this class reads each request stream into one call
// (path, deadline, message), checks gRPC's framing and answers each call with its
// headers, message and trailers (grpc-status, grpc-message). h2_server.cpp moves bytes
// between it and a socket; the fuzz target feeds it bytes directly.
//
//   GrpcSession session(64 << 20);
//   session.receive(bytes, n);                    // from the peer
//   for (GrpcCall& call : session.take_calls())   // requests that arrived in full
//     session.respond(call.stream_id, handle(call));
//   session.fill_output(&out);                    // to the peer
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "deepflow/serving/status.h"

namespace deepflow::serving {

/// One unary call whose request arrived in full.
struct GrpcCall {
  int32_t stream_id = 0;
  std::string path;  ///< ":path", e.g. "/tensorflow.serving.PredictionService/Predict"
  std::string body;  ///< the length-prefixed message as received (5-byte prefix + bytes)
  /// From grpc-timeout; time_point::max() when the client set none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// The request message's serialized bytes.
  std::string_view message() const { return std::string_view(body).substr(5); }
};

/// A call's answer: a status, and when it is OK the framed response (grpc_frame()).
struct GrpcReply {
  Code code = Code::Ok;
  std::string message;  ///< grpc-message (sent percent-encoded)
  std::string body;     ///< 5-byte prefix + serialized response; empty for an error
};

/// Makes a GrpcReply body: a 5-byte prefix (not compressed, big-endian length) and
/// `size` bytes of room after it for the caller to serialize into.
std::string grpc_frame(size_t size);

/// grpc-message's percent-encoding: bytes outside 0x20..0x7E and '%' as %XX.
std::string grpc_percent_encode(std::string_view text);

class GrpcSession {
 public:
  /// Requests larger than `max_message_bytes` are answered RESOURCE_EXHAUSTED.
  explicit GrpcSession(size_t max_message_bytes);
  ~GrpcSession();
  GrpcSession(const GrpcSession&) = delete;
  GrpcSession& operator=(const GrpcSession&) = delete;

  /// Feeds bytes from the peer (the first ones are the client preface). Returns false on
  /// a connection error (the GOAWAY is queued: flush the output, then close).
  bool receive(const uint8_t* data, size_t size);
  /// The calls completed since the last take, in arrival order.
  std::vector<GrpcCall> take_calls();
  /// Answers a call taken from take_calls(); ignored if its stream was reset meanwhile.
  void respond(int32_t stream_id, GrpcReply reply);
  /// Appends the bytes to send to `out`, stopping once it holds `limit` bytes. Returns
  /// false on an internal nghttp2 error (close the connection).
  bool fill_output(std::string* out, size_t limit = 256 << 10);
  /// Graceful shutdown: GOAWAY with the last stream seen; the calls up to it still finish.
  void go_away();
  /// Nothing left to read or write (after go_away or a connection error): close.
  bool finished() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace deepflow::serving
