// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the gRPC server's HTTP/2 side (make fuzz): a GrpcSession (nghttp2
// plus gRPC's framing, deepflow/serving/grpc_h2_session.h) fed the client preface and
// then arbitrary bytes, in chunks whose size the first input byte picks, on an in-memory
// connection (no socket). Every call that comes out is answered (OK with an echo of its
// message, or an error on every third) and the output drained after each chunk, so the
// response, trailer and RST_STREAM paths run too. Any input may end the connection;
// a crash, a hang, a sanitizer report or an exception is a bug.
// Invariants checked: a call handed out has a path, an uncompressed 5-byte prefix whose
// length matches its message, and a message within the size limit.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "deepflow/serving/grpc_h2_session.h"

namespace {

using namespace deepflow::serving;

constexpr size_t kMaxMessage = 1 << 16;

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

void answer_calls(GrpcSession& session, int* count) {
  for (GrpcCall& call : session.take_calls()) {
    if (call.path.empty()) bug("call without a path");
    if (call.body.size() < 5 || call.body[0] != 0) bug("call with a bad prefix");
    const auto* p = reinterpret_cast<const unsigned char*>(call.body.data());
    const size_t length = (size_t(p[1]) << 24) | (size_t(p[2]) << 16) | (size_t(p[3]) << 8) | size_t(p[4]);
    if (length != call.message().size()) bug("prefix length differs from the message");
    if (length > kMaxMessage) bug("message over the limit handed out");
    GrpcReply reply;
    if (++*count % 3 == 0) {
      reply.code = Code::InvalidArgument;
      reply.message = "bad \xff request %";
    } else {
      reply.body = grpc_frame(call.message().size());
      std::memcpy(reply.body.data() + 5, call.message().data(), call.message().size());
    }
    session.respond(call.stream_id, std::move(reply));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  const size_t chunk = size > 0 ? 1 + data[0] * 16 : 1;
  if (size > 0) {
    ++data;
    --size;
  }
  GrpcSession session(kMaxMessage);
  std::string out;
  if (!session.fill_output(&out)) bug("no server preface");
  if (out.size() < 9 || out[3] != 0x04) bug("the server did not start with SETTINGS");
  int calls = 0;
  bool open = session.receive(reinterpret_cast<const uint8_t*>(kPreface.data()), kPreface.size());
  for (size_t at = 0; open && at < size; at += chunk) {
    open = session.receive(data + at, std::min(chunk, size - at));
    answer_calls(session, &calls);
    out.clear();
    if (!session.fill_output(&out, 1 << 20)) break;
  }
  if (open) session.go_away();
  out.clear();
  session.fill_output(&out, 1 << 20);
  return 0;
}
