// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/h2_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace deepflow::serving {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxWorkers = 256;
// After GOAWAY, how long a connection waits for requests that started but never finish
// arriving (the handlers themselves are always waited for).
constexpr auto kShutdownGrace = std::chrono::seconds(5);
// A connection that saw concurrent calls runs calls inline again after this many arrived
// one at a time.
constexpr int kLoneCallsToInline = 16;

// Replies from workers to one connection's I/O thread; shared so a worker may finish
// after its connection closed.
struct Replies {
  std::mutex mutex;
  std::vector<std::pair<int32_t, GrpcReply>> done;
  int event_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ~Replies() { ::close(event_fd); }
  void wake() const {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(event_fd, &one, sizeof one);
  }
  void post(int32_t stream_id, GrpcReply reply) {
    {
      std::lock_guard lock(mutex);
      done.emplace_back(stream_id, std::move(reply));
    }
    wake();
  }
};

// Threads are added while every worker is busy (a batching handler may hold many at once),
// up to kMaxWorkers; they live until stop().
class WorkerPool {
 public:
  explicit WorkerPool(std::function<GrpcReply(const GrpcCall&)> run) : run_(std::move(run)) {}
  ~WorkerPool() { stop(); }

  void submit(std::shared_ptr<Replies> replies, GrpcCall call) {
    std::lock_guard lock(mutex_);
    queue_.push_back({std::move(replies), std::move(call)});
    if (queue_.size() > idle_ && threads_.size() < kMaxWorkers) threads_.emplace_back([this] { loop(); });
    cv_.notify_one();
  }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  struct Task {
    std::shared_ptr<Replies> replies;
    GrpcCall call;
  };

  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      --idle_;
      if (queue_.empty()) return;
      Task task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task.replies->post(task.call.stream_id, run_(task.call));
      lock.lock();
    }
  }

  std::function<GrpcReply(const GrpcCall&)> run_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  size_t idle_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

struct Connection {
  int fd = -1;
  std::shared_ptr<Replies> replies = std::make_shared<Replies>();
  std::thread thread;
  std::atomic<bool> closed{false};
};

// Writes what the session has to send until the socket would block. False: the
// connection is broken.
bool flush(GrpcSession& session, int fd, std::string& out, size_t& pos) {
  for (;;) {
    if (pos == out.size()) {
      out.clear();
      pos = 0;
      if (!session.fill_output(&out)) return false;
      if (out.empty()) return true;
    }
    ssize_t n = ::send(fd, out.data() + pos, out.size() - pos, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    pos += size_t(n);
  }
}

// "host:port", "[v6]:port", ":port"; an empty host or 0.0.0.0 / [::] listens on all.
int listen_on(const std::string& address, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return -1;
  std::string host = address.substr(0, colon), service = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 1024) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return -1;
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  *port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
}

}  // namespace

struct H2Server::Impl {
  H2ServerOptions options;
  GrpcHandler handler;
  WorkerPool pool{[this](const GrpcCall& call) { return run(call); }};
  int listen_fd = -1;
  int stop_fd = -1;
  int port = 0;
  std::atomic<bool> stopping{false};
  std::thread acceptor;
  std::mutex mutex;  // connections
  std::list<std::unique_ptr<Connection>> connections;
  std::mutex lifecycle;  // start / shutdown

  Impl(H2ServerOptions o, GrpcHandler h) : options(std::move(o)), handler(std::move(h)) {}

  GrpcReply run(const GrpcCall& call) {
    if (Clock::now() > call.deadline) return {Code::DeadlineExceeded, "Deadline Exceeded", {}};
    try {
      return handler(call);
    } catch (const std::exception& e) {
      return {Code::Internal, e.what(), {}};
    }
  }

  void accept_loop() {
    for (;;) {
      pollfd fds[2] = {{listen_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if (fds[1].revents || stopping) return;
      if (!(fds[0].revents & POLLIN)) continue;
      int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::lock_guard lock(mutex);
      connections.remove_if([](const std::unique_ptr<Connection>& c) {
        if (!c->closed) return false;
        c->thread.join();
        return true;
      });
      auto& c = connections.emplace_back(std::make_unique<Connection>());
      c->fd = fd;
      c->thread = std::thread([this, conn = c.get()] { serve(*conn); });
    }
  }

  // One connection's I/O thread.
  void serve(Connection& c) {
    GrpcSession session(options.max_message_bytes);
    std::vector<uint8_t> in(256 << 10);
    std::string out;
    size_t out_pos = 0;
    int running = 0;  // calls on workers
    bool concurrent = false;
    int lone_calls = 0;
    bool going_away = false;
    Clock::time_point goaway_at;
    for (;;) {
      if (!flush(session, c.fd, out, out_pos)) break;
      if (stopping && !going_away) {
        session.go_away();
        going_away = true;
        goaway_at = Clock::now();
        continue;
      }
      const bool pending = out_pos < out.size();
      if (session.finished() && running == 0 && !pending) break;
      if (going_away && running == 0 && Clock::now() - goaway_at > kShutdownGrace) break;
      pollfd fds[2] = {{c.fd, short(POLLIN | (pending ? POLLOUT : 0)), 0}, {c.replies->event_fd, POLLIN, 0}};
      if (::poll(fds, 2, going_away ? 100 : -1) < 0 && errno != EINTR) break;
      if (fds[1].revents & POLLIN) {
        uint64_t count;
        [[maybe_unused]] ssize_t n = ::read(c.replies->event_fd, &count, sizeof count);
        std::vector<std::pair<int32_t, GrpcReply>> done;
        {
          std::lock_guard lock(c.replies->mutex);
          done.swap(c.replies->done);
        }
        for (auto& [id, reply] : done) {
          session.respond(id, std::move(reply));
          --running;
        }
      }
      if (!(fds[0].revents & (POLLIN | POLLERR | POLLHUP))) continue;
      ssize_t n = ::recv(c.fd, in.data(), in.size(), MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (n <= 0) break;  // the peer closed: nobody to answer
      if (!session.receive(in.data(), size_t(n))) {
        flush(session, c.fd, out, out_pos);  // the GOAWAY nghttp2 queued, best effort
        break;
      }
      std::vector<GrpcCall> calls = session.take_calls();
      if (calls.empty()) continue;
      const bool lone = calls.size() == 1 && running == 0;
      if (options.inline_calls && concurrent) {
        lone_calls = lone ? lone_calls + 1 : 0;
        if (lone_calls >= kLoneCallsToInline) concurrent = false;
      } else if (!lone) {
        concurrent = true;
        lone_calls = 0;
      }
      if (options.inline_calls && lone && !concurrent) {
        session.respond(calls[0].stream_id, run(calls[0]));
        continue;
      }
      for (GrpcCall& call : calls) {
        ++running;
        pool.submit(c.replies, std::move(call));
      }
    }
    ::close(c.fd);
    c.closed = true;
  }
};

H2Server::H2Server(H2ServerOptions options, GrpcHandler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

H2Server::~H2Server() { shutdown(); }

void H2Server::start() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->listen_fd >= 0) throw ServingError(Code::FailedPrecondition, "[H2Server::start] already started");
  impl_->listen_fd = listen_on(impl_->options.address, &impl_->port);
  if (impl_->listen_fd < 0) {
    throw ServingError(Code::Unavailable, "[GrpcServer::start] cannot listen on " + impl_->options.address);
  }
  impl_->stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  impl_->acceptor = std::thread([this] { impl_->accept_loop(); });
}

int H2Server::port() const { return impl_->port; }

void H2Server::shutdown() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->listen_fd < 0 || impl_->stopping) return;
  impl_->stopping = true;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(impl_->stop_fd, &one, sizeof one);
  impl_->acceptor.join();
  ::close(impl_->listen_fd);
  // Every connection sends GOAWAY, answers its calls in flight and closes.
  std::list<std::unique_ptr<Connection>> connections;
  {
    std::lock_guard guard(impl_->mutex);
    connections.swap(impl_->connections);
  }
  for (auto& c : connections) c->replies->wake();
  for (auto& c : connections) c->thread.join();
  impl_->pool.stop();
  ::close(impl_->stop_fd);
}

}  // namespace deepflow::serving
