// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/grpc_h2_session.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <unordered_map>
#include <utility>

namespace deepflow::serving {
namespace {

using Clock = std::chrono::steady_clock;

// One request stream, from its HEADERS until nghttp2 closes it.
struct Stream {
  int32_t id = 0;
  std::string path, content_type, encoding;
  Clock::time_point deadline = Clock::time_point::max();
  std::string data;         // the request's DATA so far
  bool request_ended = false;
  bool answered = false;    // a reply (or an early error) was submitted: ignore what follows
  bool reset_after_reply = false;  // the client is still sending: RST_STREAM once the reply is out
  std::string out;          // the response body being sent
  size_t out_pos = 0;
  std::string status_message;
};

nghttp2_nv header(std::string_view name, std::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

uint32_t read_be32(const char* p) {
  auto b = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | uint32_t(b[3]);
}

// grpc-timeout: at most 8 digits and a unit (H M S m u n).
Clock::time_point parse_timeout(std::string_view v) {
  if (v.size() < 2 || v.size() > 9) return Clock::time_point::max();
  int64_t n = 0;
  for (char c : v.substr(0, v.size() - 1)) {
    if (c < '0' || c > '9') return Clock::time_point::max();
    n = n * 10 + (c - '0');
  }
  std::chrono::nanoseconds d;
  switch (v.back()) {
    case 'H': d = std::chrono::hours(n); break;
    case 'M': d = std::chrono::minutes(n); break;
    case 'S': d = std::chrono::seconds(n); break;
    case 'm': d = std::chrono::milliseconds(n); break;
    case 'u': d = std::chrono::microseconds(n); break;
    case 'n': d = std::chrono::nanoseconds(n); break;
    default: return Clock::time_point::max();
  }
  return Clock::now() + d;
}

}  // namespace

std::string grpc_frame(size_t size) {
  std::string body(5 + size, '\0');
  body[1] = char((size >> 24) & 0xff);
  body[2] = char((size >> 16) & 0xff);
  body[3] = char((size >> 8) & 0xff);
  body[4] = char(size & 0xff);
  return body;
}

std::string grpc_percent_encode(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c >= 0x20 && c <= 0x7e && c != '%') {
      out += char(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

struct GrpcSession::Impl {
  nghttp2_session* session = nullptr;
  size_t max_message_bytes;
  std::unordered_map<int32_t, std::unique_ptr<Stream>> streams;
  std::vector<GrpcCall> ready;

  explicit Impl(size_t max_bytes) : max_message_bytes(max_bytes) {}

  Stream* find(int32_t id) {
    auto it = streams.find(id);
    return it == streams.end() ? nullptr : it->second.get();
  }

  // A trailers-only response (HEADERS with END_STREAM): every error answer. A client still
  // sending is told to stop with RST_STREAM(NO_ERROR) after it, as HTTP/2 8.1 allows
  // (before it, grpc clients report the reset instead of the status).
  void answer_error(Stream& s, Code code, const std::string& message, const char* http_status = "200") {
    s.answered = true;
    std::string status = std::to_string(static_cast<int>(code));
    std::string encoded = grpc_percent_encode(message);
    const nghttp2_nv nva[] = {header(":status", http_status), header("content-type", "application/grpc"),
                              header("grpc-status", status), header("grpc-message", encoded),
                              header("grpc-accept-encoding", "identity")};
    nghttp2_submit_response(session, s.id, nva, std::size(nva), nullptr);
    s.reset_after_reply = !s.request_ended;
    s.data.clear();
    s.data.shrink_to_fit();
  }

  // The request's last frame arrived: check gRPC's framing and hand the call out.
  void complete(Stream& s) {
    s.request_ended = true;
    if (s.answered) return;
    if (s.data.size() < 5) {
      answer_error(s, Code::Internal, s.data.empty() ? "[grpc] the request has no message"
                                                      : "[grpc] the request ends inside the 5-byte message prefix");
      return;
    }
    const uint8_t flag = uint8_t(s.data[0]);
    const size_t length = read_be32(s.data.data() + 1);
    if (s.data.size() < 5 + length) {
      answer_error(s, Code::Internal, "[grpc] truncated request: the prefix says " + std::to_string(length) +
                                          " bytes, the stream ended after " + std::to_string(s.data.size() - 5));
      return;
    }
    if (s.data.size() > 5 + length) {
      answer_error(s, Code::Internal, "[grpc] more than one request message on a unary call");
      return;
    }
    if (flag > 1) {
      answer_error(s, Code::Internal, "[grpc] invalid compressed flag " + std::to_string(flag));
      return;
    }
    if (flag == 1) {
      if (s.encoding.empty() || s.encoding == "identity") {
        answer_error(s, Code::Internal, "[grpc] compressed flag set but grpc-encoding is identity");
      } else {
        answer_error(s, Code::Unimplemented, "[grpc] grpc-encoding '" + s.encoding +
                                                 "' is not supported: this server accepts identity only");
      }
      return;
    }
    ready.push_back(GrpcCall{s.id, s.path, std::move(s.data), s.deadline});
    s.data = std::string();
  }

  static Impl* self(void* user_data) { return static_cast<Impl*>(user_data); }

  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    auto stream = std::make_unique<Stream>();
    stream->id = frame->hd.stream_id;
    self(user_data)->streams[stream->id] = std::move(stream);
    return 0;
  }

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                       const uint8_t* value, size_t valuelen, uint8_t, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    Stream* s = self(user_data)->find(frame->hd.stream_id);
    if (!s) return 0;
    std::string_view n(reinterpret_cast<const char*>(name), namelen);
    std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":path") s->path = v;
    else if (n == "content-type") s->content_type = v;
    else if (n == "grpc-encoding") s->encoding = v;
    else if (n == "grpc-timeout") s->deadline = parse_timeout(v);
    return 0;
  }

  static int on_data_chunk(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                           void* user_data) {
    Impl* impl = self(user_data);
    Stream* s = impl->find(stream_id);
    if (!s || s->answered) return 0;
    const size_t before = s->data.size();
    s->data.append(reinterpret_cast<const char*>(data), len);
    // Check the declared length as soon as the prefix is in, before buffering the message.
    if (before < 5 && s->data.size() >= 5) {
      const size_t length = read_be32(s->data.data() + 1);
      if (length > impl->max_message_bytes) {
        impl->answer_error(*s, Code::ResourceExhausted,
                           "[grpc] received message larger than max (" + std::to_string(length) + " vs. " +
                               std::to_string(impl->max_message_bytes) + ")");
        return 0;
      }
      s->data.reserve(std::min<size_t>(5 + length, 16 << 20));
    }
    return 0;
  }

  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    Impl* impl = self(user_data);
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    Stream* s = impl->find(frame->hd.stream_id);
    if (!s) return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST && !s->answered) {
      if (s->content_type.rfind("application/grpc", 0) != 0) {
        impl->answer_error(*s, Code::Internal, "[grpc] content-type '" + s->content_type +
                                                   "' is not application/grpc", "415");
      }
    }
    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) impl->complete(*s);
    return 0;
  }

  static int on_frame_send(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
    Stream* s = self(user_data)->find(frame->hd.stream_id);
    if (s && s->reset_after_reply && !s->request_ended) {
      s->reset_after_reply = false;
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_NO_ERROR);
    }
    return 0;
  }

  static int on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t, void* user_data) {
    self(user_data)->streams.erase(stream_id);
    return 0;
  }

  // The response body, one DATA frame's worth at a time; the trailers follow the last.
  static ssize_t read_body(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length,
                           uint32_t* flags, nghttp2_data_source* source, void*) {
    auto* s = static_cast<Stream*>(source->ptr);
    const size_t n = std::min(length, s->out.size() - s->out_pos);
    std::memcpy(buf, s->out.data() + s->out_pos, n);
    s->out_pos += n;
    if (s->out_pos == s->out.size()) {
      *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
      const nghttp2_nv trailers[] = {header("grpc-status", "0")};
      if (nghttp2_submit_trailer(session, stream_id, trailers, std::size(trailers)) != 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      s->out = std::string();
    }
    return ssize_t(n);
  }
};

GrpcSession::GrpcSession(size_t max_message_bytes) : impl_(std::make_unique<Impl>(max_message_bytes)) {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) throw std::bad_alloc();
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, Impl::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, Impl::on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, Impl::on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, Impl::on_frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, Impl::on_stream_close);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, Impl::on_frame_send);
  int rc = nghttp2_session_server_new(&impl_->session, callbacks, impl_.get());
  nghttp2_session_callbacks_del(callbacks);
  if (rc != 0) throw std::bad_alloc();
  // Windows large enough that a max-size message is never throttled by flow control (the
  // HTTP/2 default, 64 KiB, would cost a round trip per 64 KiB); nghttp2 returns window
  // as the application consumes data.
  constexpr size_t kMaxWindow = std::numeric_limits<int32_t>::max();
  const int32_t window = int32_t(std::clamp<size_t>(max_message_bytes + (1 << 16), 1 << 20, kMaxWindow));
  const int32_t connection_window = int32_t(std::min<size_t>(size_t(window) * 4, kMaxWindow));
  const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000},
                                             {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, uint32_t(window)}};
  nghttp2_submit_settings(impl_->session, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(impl_->session, NGHTTP2_FLAG_NONE, 0, connection_window);
}

GrpcSession::~GrpcSession() { nghttp2_session_del(impl_->session); }

bool GrpcSession::receive(const uint8_t* data, size_t size) {
  return nghttp2_session_mem_recv(impl_->session, data, size) >= 0;
}

std::vector<GrpcCall> GrpcSession::take_calls() { return std::exchange(impl_->ready, {}); }

void GrpcSession::respond(int32_t stream_id, GrpcReply reply) {
  Stream* s = impl_->find(stream_id);
  if (!s || s->answered) return;
  if (reply.code != Code::Ok) {
    impl_->answer_error(*s, reply.code, reply.message);
    return;
  }
  s->answered = true;
  s->out = std::move(reply.body);
  s->out_pos = 0;
  const nghttp2_nv nva[] = {header(":status", "200"), header("content-type", "application/grpc"),
                            header("grpc-accept-encoding", "identity")};
  nghttp2_data_provider provider;
  provider.source.ptr = s;
  provider.read_callback = Impl::read_body;
  nghttp2_submit_response(impl_->session, stream_id, nva, std::size(nva), &provider);
}

bool GrpcSession::fill_output(std::string* out, size_t limit) {
  while (out->size() < limit) {
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(impl_->session, &data);
    if (n < 0) return false;
    if (n == 0) break;
    out->append(reinterpret_cast<const char*>(data), size_t(n));
  }
  return true;
}

void GrpcSession::go_away() {
  nghttp2_submit_goaway(impl_->session, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(impl_->session),
                        NGHTTP2_NO_ERROR, nullptr, 0);
}

bool GrpcSession::finished() const {
  return !nghttp2_session_want_read(impl_->session) && !nghttp2_session_want_write(impl_->session);
}

}  // namespace deepflow::serving
