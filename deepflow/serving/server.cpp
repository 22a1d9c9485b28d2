// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/server.h"

#include <httplib.h>
#include <pthread.h>
#include <cstdlib>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <thread>

#include "deepflow/serving/grpc_service.h"
#include "deepflow/serving/json_tensor.h"
#include "deepflow/serving/rest_api.h"

namespace deepflow::serving {

struct ModelServer::Impl {
  ServerOptions options;
  Metrics metrics;
  std::unique_ptr<Batcher> batcher;
  std::unique_ptr<ModelManager> manager;
  std::unique_ptr<ModelAdmin> admin;  // run-time load/unload (REST) and config reloads (gRPC)
  SignatureRunner runner = run_signature_directly;
  std::unique_ptr<RestHandler> rest;
  std::unique_ptr<httplib::Server> http;
  std::thread http_thread;
  socket_t listen_socket = INVALID_SOCKET;  // the REST listener (httplib owns it)
  std::unique_ptr<GrpcServer> grpc;
  int rest_port = 0;
  int grpc_port = 0;

  std::mutex mu;
  std::condition_variable cv;
  bool started = false;
  bool stopping = false;  // shutdown() began
  bool stopped = false;   // shutdown() finished

  void start_http();
  void finish();
};

namespace {

void log_event(const ManagerEvent& e) {
  switch (e.kind) {
    case ManagerEvent::Kind::LoadStarted:
      std::cerr << "deepflow serve: loading " << e.model << " version " << e.version << "\n";
      break;
    case ManagerEvent::Kind::Loaded:
      std::cerr << "deepflow serve: " << e.model << " version " << e.version << " is available (" << e.seconds
                << " s with warmup)\n";
      break;
    case ManagerEvent::Kind::LoadFailed:
      std::cerr << "deepflow serve: " << e.model << " version " << e.version << " failed to load: " << e.error << "\n";
      break;
    case ManagerEvent::Kind::Unloaded:
      std::cerr << "deepflow serve: " << e.model << " version " << e.version << " unloaded\n";
      break;
  }
}

// The raw path of a request: httplib's req.path is already percent-decoded, which would
// let an encoded '/' or ':' in a model name change the route.
std::string_view raw_path(const httplib::Request& req) {
  std::string_view target = req.target;
  return target.substr(0, target.find('?'));
}

// The most HTTP threads the default picks with batching.
constexpr int kMaxRestThreads = 256;

// options.rest_threads when > 0; otherwise 4 x cores (TF Serving's default) without
// batching, and with batching enough threads for the batches to fill.
int rest_thread_count(const ServerOptions& options) {
  if (options.rest_threads > 0) return options.rest_threads;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (!options.batching) return 4 * cores;
  // httplib gives each keep-alive connection a thread for as long as the client keeps it
  // open, and a connection beyond the pool is not read at all. Without batching those
  // threads run the model, so 4 x cores bounds the CPU contention; with batching they only
  // parse and wait, and a batch can hold no more requests than there are threads: with
  // 4 x cores = 8 threads and 64 clients the batches never passed 8 rows and waited out
  // their timeout (0.61x the throughput of no batching at 64 connections on 2 cores).
  // Enough threads for a full batch to fill while the batch threads run theirs, as TF
  // Serving's guide asks of the clients (specs.md 1.13), bounded so that the default
  // max_batch_size (1000) does not start thousands of threads.
  const int64_t fill = (options.batching->num_batch_threads > 0 ? options.batching->num_batch_threads : cores) + 1;
  return static_cast<int>(std::clamp<int64_t>(fill * options.batching->max_batch_size, 4 * cores, kMaxRestThreads));
}

}  // namespace

// --- signals: a watcher thread waits in sigwait() and calls shutdown() outside any
// handler; SIGTERM and SIGINT are blocked in the calling thread, so every thread the
// server starts afterwards inherits the mask and the watcher alone receives them.

namespace {
std::mutex g_signal_mu;
ModelServer* g_signal_server = nullptr;
bool g_watcher_started = false;

void forget_server_for_signals(ModelServer* server) {
  std::lock_guard lock(g_signal_mu);
  if (g_signal_server == server) g_signal_server = nullptr;
}
}  // namespace

ModelServer::ModelServer(ServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}

ModelServer::~ModelServer() {
  shutdown();
  forget_server_for_signals(this);
}

void ModelServer::start() {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    if (s.started) throw ServingError(Code::FailedPrecondition, "[ModelServer::start] the server was already started");
    s.started = true;
  }
  if (s.options.rest_port != 0 && s.options.rest_port == s.options.grpc_port && s.options.rest_port > 0)
    throw ServingError(Code::InvalidArgument, "[ModelServer::start] the REST port and the gRPC port must differ (both " +
                                                  std::to_string(s.options.rest_port) + ")");
  if (s.options.batching) {
    s.batcher = std::make_unique<Batcher>(*s.options.batching);
    s.batcher->set_batch_listener(
        [metrics = &s.metrics](const BatchStats& b) { metrics->record_batch(b.model, b.rows, b.padded_rows); });
    s.runner = s.batcher->runner();
  }
  ManagerOptions mo;
  mo.poll_seconds = s.options.poll_seconds;
  mo.num_load_threads = s.options.num_load_threads;
  if (s.options.enable_warmup) {
    WarmupOptions warmup = s.options.warmup;
    // Warm every batch size the batcher can produce, so the first padded batch is warm too.
    if (s.options.batching)
      for (int64_t size : s.options.batching->allowed_batch_sizes)
        if (std::find(warmup.batch_sizes.begin(), warmup.batch_sizes.end(), size) == warmup.batch_sizes.end())
          warmup.batch_sizes.push_back(size);
    mo.warmup = [warmup](const Servable& servable) {
      WarmupStats stats = warm_up(servable, warmup);
      for (const std::string& skipped : stats.skipped)
        std::cerr << "deepflow serve: warmup of " << servable.name << " version " << servable.version
                  << " skipped " << skipped << "\n";
      for (const std::string& key : stats.single_threaded)
        std::cerr << "deepflow serve: " << servable.name << " version " << servable.version << ": signature '" << key
                  << "' runs one-row requests on one thread (short or no slower alone at warmup)\n";
    };
  }
  mo.on_event = [metrics = &s.metrics](const ManagerEvent& e) {
    metrics->record_event(e);
    log_event(e);
  };
  s.manager = std::make_unique<ModelManager>(s.options.config, std::move(mo));
  s.manager->start();
  s.admin = std::make_unique<ModelAdmin>(*s.manager);
  s.rest = std::make_unique<RestHandler>(*s.manager, s.runner, &s.metrics, s.admin.get());

  if (s.options.grpc_port != 0) {
    GrpcOptions go;
    go.address = s.options.host + ":" + std::to_string(s.options.grpc_port < 0 ? 0 : s.options.grpc_port);
    std::function<void(const ServerConfig&)> reload = [admin = s.admin.get()](const ServerConfig& config) {
      admin->reload(config);
    };
    s.grpc = std::make_unique<GrpcServer>(*s.manager, s.runner, &s.metrics, go, reload);
    s.grpc->start();
    s.grpc_port = s.grpc->port();
  }
  if (s.options.rest_port != 0) s.start_http();
}

void ModelServer::Impl::start_http() {
  http = std::make_unique<httplib::Server>();
  const int threads = rest_thread_count(options);
  http->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http->set_payload_max_length(options.max_body_bytes);
  http->set_keep_alive_max_count(1u << 30);
  // httplib writes a response's headers and body separately: with Nagle's algorithm the
  // body waits for the client's delayed ACK (~40 ms per request).
  http->set_tcp_nodelay(true);
  // httplib listens with a backlog of 5: 64 clients connecting at once overflowed the
  // accept queue, and a client whose handshake ACK was dropped retransmitted its first
  // request 0.2-1 s later (TcpExtListenDrops; p99 of 0.3-1.2 s in bench/serving at 64
  // connections). The listening socket is re-listened with the system's bound below.
  http->set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_socket = sock;
  });
  time_t timeout_s = static_cast<time_t>(options.rest_timeout_ms / 1000);
  time_t timeout_us = static_cast<time_t>((options.rest_timeout_ms % 1000) * 1000);
  http->set_read_timeout(timeout_s, timeout_us);
  http->set_write_timeout(timeout_s, timeout_us);

  auto reply_with = [this](std::string_view method, const httplib::Request& req, httplib::Response& res,
                           const std::string& body) {
    const std::string content_type = req.get_header_value("Content-Type");
    const std::string accept = req.get_header_value("Accept");
    RestResponse r = rest->handle(method, raw_path(req), body, {.content_type = content_type, .accept = accept});
    res.status = r.status;
    res.set_content(std::move(r.body), r.content_type);
  };
  auto reply = [reply_with](std::string_view method, const httplib::Request& req, httplib::Response& res) {
    reply_with(method, req, res, req.body);
  };
  auto metrics_or_rest = [this, reply](std::string_view method, const httplib::Request& req, httplib::Response& res) {
    if (options.monitoring.enable && raw_path(req) == options.monitoring.path) {
      res.set_content(metrics.prometheus_text(), "text/plain; version=0.0.4");
      return;
    }
    reply(method, req, res);
  };
  http->Get(".*", [metrics_or_rest](const httplib::Request& req, httplib::Response& res) {
    metrics_or_rest("GET", req, res);
  });
  // POST bodies through a content reader: httplib 0.11 (compiled into Debian's library)
  // refuses form-urlencoded bodies over 8 KiB with 413 when it reads them itself, and
  // `curl -d` (TF Serving's documented client) sends predict bodies with that content type.
  http->Post(".*", [reply_with, this](const httplib::Request& req, httplib::Response& res,
                                      const httplib::ContentReader& read) {
    std::string body;
    bool too_large = false;
    const bool complete = read([&](const char* data, size_t n) {
      too_large = body.size() + n > options.max_body_bytes;
      if (!too_large) body.append(data, n);
      return !too_large;
    });
    // httplib stops reading at its own payload limit (the same max_body_bytes) before our
    // receiver sees the bytes: then the declared length says why.
    if (!complete && !too_large && req.has_header("Content-Length"))
      too_large = std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10) > options.max_body_bytes;
    if (!complete && !too_large) {
      res.status = 400;
      res.set_content(write_error("[rest] the request body ended early (POST " + std::string(raw_path(req)) + ")"),
                      "application/json");
      return;
    }
    if (too_large) {
      res.status = 413;
      res.set_content(write_error("[rest] request body larger than the server's limit of " +
                                  std::to_string(options.max_body_bytes) + " bytes (POST " +
                                  std::string(raw_path(req)) + ")"),
                      "application/json");
      return;
    }
    if (options.monitoring.enable && raw_path(req) == options.monitoring.path) {
      res.set_content(metrics.prometheus_text(), "text/plain; version=0.0.4");
      return;
    }
    reply_with("POST", req, res, body);
  });
  for (const char* method : {"PUT", "DELETE", "PATCH"}) {
    auto handler = [reply, method](const httplib::Request& req, httplib::Response& res) { reply(method, req, res); };
    if (std::string_view(method) == "PUT") http->Put(".*", handler);
    else if (std::string_view(method) == "DELETE") http->Delete(".*", handler);
    else http->Patch(".*", handler);
  }
  // CORS pre-flight as TF Serving: OK only for an http(s) Origin.
  http->Options(".*", [](const httplib::Request& req, httplib::Response& res) {
    std::string origin = req.get_header_value("Origin");
    if (origin.rfind("http://", 0) == 0 || origin.rfind("https://", 0) == 0) {
      res.status = 200;
      res.set_content("{}", "application/json");
    } else {
      res.status = 400;
      res.set_content(write_error("Origin header is missing in CORS preflight"), "application/json");
    }
  });
  // httplib's own errors (413 payload too large, 404, 400 on a bad request line) carry no
  // body: give them TF Serving's {"error": ...} shape.
  http->set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                       httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message;
    if (res.status == 413)
      message = "[rest] request body larger than the server's limit of " + std::to_string(options.max_body_bytes) +
                " bytes (" + req.method + " " + std::string(raw_path(req)) + ")";
    else
      message = "[rest] HTTP " + std::to_string(res.status) + " for " + req.method + " " + std::string(raw_path(req));
    res.set_content(write_error(message), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  http->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string message = "[rest] internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      message += std::string(": ") + e.what();
    } catch (...) {
    }
    res.status = 500;
    res.set_content(write_error(message), "application/json");
  });

  if (options.rest_port < 0) {
    rest_port = http->bind_to_any_port(options.host);
  } else {
    rest_port = http->bind_to_port(options.host, options.rest_port) ? options.rest_port : -1;
  }
  if (rest_port <= 0)
    throw ServingError(Code::Unavailable, "[ModelServer::start] cannot bind the REST API to " + options.host + ":" +
                                              std::to_string(options.rest_port));
  // Listening again on a listening socket only changes its backlog (Linux, BSD).
  if (listen_socket != INVALID_SOCKET) ::listen(listen_socket, SOMAXCONN);
  http_thread = std::thread([this] { http->listen_after_bind(); });
}

void ModelServer::wait() {
  std::unique_lock lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return impl_->stopped; });
}

void ModelServer::shutdown() {
  Impl& s = *impl_;
  {
    std::unique_lock lock(s.mu);
    if (s.stopping) {
      s.cv.wait(lock, [&] { return s.stopped; });
      return;
    }
    s.stopping = true;
  }
  s.finish();
  {
    std::lock_guard lock(s.mu);
    s.stopped = true;
  }
  s.cv.notify_all();
}

void ModelServer::Impl::finish() {
  // Listeners first: httplib's stop() closes the socket and its pool finishes the
  // requests in flight before listen_after_bind() returns; then gRPC does the same.
  if (http) {
    http->stop();
    if (http_thread.joinable()) http_thread.join();
  }
  if (grpc) grpc->shutdown();
  batcher.reset();  // drains the queued batches
  rest.reset();
  http.reset();
  grpc.reset();
  admin.reset();
  manager.reset();  // unloads every version
}

int ModelServer::rest_port() const { return impl_->rest_port; }
int ModelServer::grpc_port() const { return impl_->grpc_port; }
ModelManager& ModelServer::manager() {
  if (!impl_->manager) throw ServingError(Code::FailedPrecondition, "[ModelServer::manager] the server is not running");
  return *impl_->manager;
}
Metrics& ModelServer::metrics() { return impl_->metrics; }

void install_signal_handlers(ModelServer& server) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::lock_guard lock(g_signal_mu);
  g_signal_server = &server;
  if (g_watcher_started) return;
  g_watcher_started = true;
  std::thread([set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      std::lock_guard lock(g_signal_mu);
      if (g_signal_server) {
        std::cerr << "deepflow serve: received " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ", shutting down\n";
        g_signal_server->shutdown();
      }
    }
  }).detach();
}

}  // namespace deepflow::serving
