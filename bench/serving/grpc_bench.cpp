// SPDX-License-Identifier: Apache-2.0
// Load and latency client for the gRPC Predict API (TF Serving's PredictionService).
//
//   grpc_bench [--client=grpc|h2] <spawn|inproc|address> <model> <input shape> <concurrency> <seconds>
//              [saved_model_dir]
//   grpc_bench spawn dense 1,784 1 5                   # server in a child process, dense 784->512
//   grpc_bench 127.0.0.1:8500 dense 1,784 8 10 /models/dense/1
//   grpc_bench --client=h2 spawn dense 1,784 1 5       # the lean client (below)
//   GRPC_BENCH_SERVER=old/grpc_bench grpc_bench spawn ...  # serve from another build's binary
//
// Sends Predict requests with one float32 input "x" of the given shape (random values,
// tensor_content encoding) from `concurrency` threads, each on its own plain channel, for
// `seconds`, and prints p50 / p99 latency and throughput. The model's own compute time is
// measured in the same program by calling the signature directly (the model the server
// serves, or the SavedModel at saved_model_dir), and the server overhead is p50 - compute
// p50. CPU time per request (server and client apart when the server is a child) stays
// meaningful on a shared machine where wall-clock latency does not.
//
// "spawn" writes a dense 784 -> 512 SavedModel (input shape [-1, 784]) into a temp dir and
// serves it with ModelManager + GrpcServer from a child process (this program re-run with
// --serve) on a free loopback port: client and server in two processes, as deployed.
// "inproc" serves it from this process instead; it is not the headline figure: the CPU
// time of client and server is one figure, and with the grpc++ client, grpc's one epoll
// poller per process makes its threads hand calls to each other.
//
// The client is grpc++ (the default and the headline: what TF Serving users run). With
// --client=h2 it is instead a lean blocking HTTP/2 client on libnghttp2, one connection
// per thread, sending the same bytes: grpc++'s client costs ~70 us of CPU per call, which
// hides the server's own overhead; this one costs a fraction of it.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "deepflow/io/saved_model.h"
#include "deepflow/ops/ops.h"
#include "deepflow/serving/grpc_h2_session.h"
#include "deepflow/serving/grpc_service.h"
#include "deepflow/serving/predict.h"
#include "deepflow/serving/tensor_proto.h"
#include "deepflow/serving/warmup.h"
#include "serving_apis.grpc.pb.h"

extern char** environ;

namespace {

using namespace deepflow;
namespace pb = tensorflow::serving;
using Clock = std::chrono::steady_clock;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> dims;
  std::stringstream in(text);
  for (std::string d; std::getline(in, d, ',');) dims.push_back(std::stoll(d));
  return dims;
}

// The model's compute time at this input, p50 in us: the signature run as the server runs
// it (run_signature_directly on a warmed-up servable, so with the same thread plan).
double compute_p50_us(const std::string& model_dir, const Tensor& x, double seconds) {
  auto servable = std::make_shared<serving::Servable>(serving::Servable{"compute", 1, model_dir, io::load_saved_model(model_dir)});
  serving::warm_up(*servable);
  const std::map<std::string, Tensor> inputs{{"x", x}};
  std::vector<double> us;
  for (int i = 0; i < 200; ++i) serving::run_signature_directly(servable, "serving_default", inputs);
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end || us.size() < 100) {
    auto t0 = Clock::now();
    serving::run_signature_directly(servable, "serving_default", inputs);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return percentile(us, 0.5);
}

// A plain channel, as a TF Serving client opens one (no tuning: the client's cost is part
// of the latency measured); load threads each get their own connection.
std::shared_ptr<grpc::Channel> make_channel(const std::string& address, bool own_connection) {
  grpc::ChannelArguments args;
  if (own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

// One unary caller on its own connection: grpc++'s stub, or the lean HTTP/2 client.
class Caller {
 public:
  virtual ~Caller() = default;
  /// False on a non-OK status (its message in *error).
  virtual bool predict(const pb::PredictRequest& request, pb::PredictResponse* response, std::string* error) = 0;
};

class GrpcCaller : public Caller {
 public:
  GrpcCaller(const std::string& address, bool own_connection)
      : stub_(pb::PredictionService::NewStub(make_channel(address, own_connection))) {}
  bool predict(const pb::PredictRequest& request, pb::PredictResponse* response, std::string* error) override {
    grpc::ClientContext ctx;
    grpc::Status s = stub_->Predict(&ctx, request, response);
    if (!s.ok()) *error = s.error_message();
    return s.ok();
  }

 private:
  std::unique_ptr<pb::PredictionService::Stub> stub_;
};

// A blocking gRPC client on libnghttp2: one connection, one call at a time, no threads
// of its own (send the request's frames, read until the stream closes).
class H2Caller : public Caller {
 public:
  explicit H2Caller(const std::string& address) {
    const size_t colon = address.rfind(':');
    authority_ = address;
    addrinfo hints{}, *found = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    if (::getaddrinfo(address.substr(0, colon).c_str(), address.substr(colon + 1).c_str(), &hints, &found) != 0)
      throw std::runtime_error("[grpc_bench] cannot resolve " + address);
    fd_ = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc = ::connect(fd_, found->ai_addr, found->ai_addrlen);
    ::freeaddrinfo(found);
    if (rc != 0) throw std::runtime_error("[grpc_bench] cannot connect to " + address);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
    nghttp2_session_client_new(&session_, cb, this);
    nghttp2_session_callbacks_del(cb);
    const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 30}};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, 1 << 30);
  }
  ~H2Caller() override {
    nghttp2_session_del(session_);
    ::close(fd_);
  }

  bool predict(const pb::PredictRequest& request, pb::PredictResponse* response, std::string* error) override {
    body_ = serving::grpc_frame(request.ByteSizeLong());
    request.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(body_.data() + 5));
    body_pos_ = 0;
    response_.clear();
    status_ = -1;
    message_.clear();
    done_ = false;
    auto nv = [](const char* name, const std::string& value) {
      return nghttp2_nv{(uint8_t*)name, (uint8_t*)value.data(), std::strlen(name), value.size(), NGHTTP2_NV_FLAG_NONE};
    };
    static const std::string kPost = "POST", kHttp = "http", kPath = "/tensorflow.serving.PredictionService/Predict",
                             kGrpc = "application/grpc", kTrailers = "trailers";
    const nghttp2_nv headers[] = {nv(":method", kPost), nv(":scheme", kHttp), nv(":path", kPath),
                                  nv(":authority", authority_), nv("content-type", kGrpc), nv("te", kTrailers)};
    nghttp2_data_provider provider;
    provider.source.ptr = this;
    provider.read_callback = read_body;
    if (nghttp2_submit_request(session_, nullptr, headers, std::size(headers), &provider, this) < 0) {
      *error = "nghttp2_submit_request failed";
      return false;
    }
    std::string out;
    char in[1 << 16];
    for (;;) {
      out.clear();
      const uint8_t* data = nullptr;
      for (ssize_t n; (n = nghttp2_session_mem_send(session_, &data)) > 0;) out.append((const char*)data, size_t(n));
      for (size_t at = 0; at < out.size();) {
        ssize_t n = ::send(fd_, out.data() + at, out.size() - at, MSG_NOSIGNAL);
        if (n <= 0) return *error = "send failed", false;
        at += size_t(n);
      }
      if (done_) break;
      ssize_t n = ::recv(fd_, in, sizeof in, 0);
      if (n <= 0 || nghttp2_session_mem_recv(session_, (const uint8_t*)in, size_t(n)) < 0)
        return *error = "connection lost", false;
    }
    if (status_ != 0) return *error = "grpc-status " + std::to_string(status_) + ": " + message_, false;
    if (response_.size() < 5 || !response->ParseFromArray(response_.data() + 5, int(response_.size() - 5)))
      return *error = "bad response message", false;
    return true;
  }

 private:
  static ssize_t read_body(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                           nghttp2_data_source* source, void*) {
    auto* self = static_cast<H2Caller*>(source->ptr);
    size_t n = std::min(length, self->body_.size() - self->body_pos_);
    std::memcpy(buf, self->body_.data() + self->body_pos_, n);
    self->body_pos_ += n;
    if (self->body_pos_ == self->body_.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return ssize_t(n);
  }
  static int on_header(nghttp2_session*, const nghttp2_frame*, const uint8_t* name, size_t namelen,
                       const uint8_t* value, size_t valuelen, uint8_t, void* user) {
    auto* self = static_cast<H2Caller*>(user);
    std::string_view n((const char*)name, namelen), v((const char*)value, valuelen);
    if (n == "grpc-status") self->status_ = std::atoi(std::string(v).c_str());
    if (n == "grpc-message") self->message_ = v;
    return 0;
  }
  static int on_data(nghttp2_session*, uint8_t, int32_t, const uint8_t* data, size_t len, void* user) {
    static_cast<H2Caller*>(user)->response_.append((const char*)data, len);
    return 0;
  }
  static int on_close(nghttp2_session*, int32_t, uint32_t, void* user) {
    static_cast<H2Caller*>(user)->done_ = true;
    return 0;
  }

  int fd_ = -1;
  nghttp2_session* session_ = nullptr;
  std::string authority_, body_, response_, message_;
  size_t body_pos_ = 0;
  int status_ = -1;
  bool done_ = false;
};

bool g_lean_client = false;

std::unique_ptr<Caller> make_caller(const std::string& address, bool own_connection) {
  if (g_lean_client) return std::make_unique<H2Caller>(address);
  return std::make_unique<GrpcCaller>(address, own_connection);
}

// This process's CPU seconds (user + system, every thread) and context switches: on a
// shared machine the cost per request stays meaningful when wall-clock latency does not.
struct Usage {
  double cpu_s = 0;
  double switches = 0;
  static Usage now() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return {double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec),
            double(u.ru_nvcsw + u.ru_nivcsw)};
  }
};

// --serve <base> <name>: the child's side. Prints the port, then answers each "usage"
// line on stdin with its CPU seconds and context switches; exits on EOF.
int serve_child(const std::string& base, const std::string& name) {
  serving::ManagerOptions options;
  options.poll_seconds = 0;
  options.warmup = [](const serving::Servable& s) { serving::warm_up(s); };  // as deepflow serve does
  serving::ModelManager manager(serving::single_model(name, base), options);
  manager.start();
  serving::GrpcServer server(manager, serving::run_signature_directly, nullptr,
                             serving::GrpcOptions{.address = "127.0.0.1:0"});
  server.start();
  std::cout << server.port() << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
    Usage u = Usage::now();
    std::cout << u.cpu_s << " " << u.switches << std::endl;
  }
  server.shutdown();
  return 0;
}

// The parent's side: the child on two pipes.
class ServerProcess {
 public:
  ServerProcess(const std::string& base, const std::string& name) {
    int in[2], out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) throw std::runtime_error("[grpc_bench] pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, in[1]);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    // GRPC_BENCH_SERVER: another grpc_bench binary (same --serve protocol) serves instead,
    // e.g. an older build's, to compare two servers under the same client.
    const char* other = std::getenv("GRPC_BENCH_SERVER");
    std::string self = other && *other ? other : std::filesystem::read_symlink("/proc/self/exe").string();
    std::vector<std::string> args{self, "--serve", base, name};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int rc = posix_spawn(&pid_, self.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    if (rc != 0) throw std::runtime_error(std::string("[grpc_bench] cannot start the server: ") + std::strerror(rc));
    to_ = ::fdopen(in[1], "w");
    from_ = ::fdopen(out[0], "r");
    if (std::fscanf(from_, "%d", &port_) != 1) throw std::runtime_error("[grpc_bench] the server did not start");
  }
  ~ServerProcess() {
    std::fclose(to_);  // EOF: the child shuts down
    std::fclose(from_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  int port() const { return port_; }
  Usage usage() {
    std::fputs("usage\n", to_);
    std::fflush(to_);
    Usage u;
    if (std::fscanf(from_, "%lf %lf", &u.cpu_s, &u.switches) != 2)
      throw std::runtime_error("[grpc_bench] lost the server");
    return u;
  }

 private:
  pid_t pid_ = 0;
  int port_ = 0;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

struct LoadResult {
  std::vector<double> latencies_us;
  Usage usage;         // this process, over the measured window
  Usage server_usage;  // the child server, over the same window (spawn only)
  int64_t errors = 0;
  std::string first_error;
};

LoadResult run_load(const std::string& address, const pb::PredictRequest& request, int concurrency, double seconds,
                    ServerProcess* child) {
  std::vector<LoadResult> results(concurrency);
  std::atomic<bool> measuring{false}, stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&, t] {
      std::unique_ptr<Caller> caller = make_caller(address, true);
      pb::PredictResponse response;
      LoadResult& r = results[t];
      std::string error;
      while (!stop.load(std::memory_order_relaxed)) {
        auto t0 = Clock::now();
        bool ok = caller->predict(request, &response, &error);
        double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (!measuring.load(std::memory_order_relaxed)) continue;
        if (ok) {
          r.latencies_us.push_back(us);
        } else if (r.errors++ == 0) {
          r.first_error = error;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // connect and warm up
  Usage s0 = child ? child->usage() : Usage{};
  Usage u0 = Usage::now();
  measuring = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  measuring = false;
  Usage u1 = Usage::now();
  Usage s1 = child ? child->usage() : Usage{};
  stop = true;
  for (auto& t : threads) t.join();
  LoadResult all;
  all.usage = {u1.cpu_s - u0.cpu_s, u1.switches - u0.switches};
  all.server_usage = {s1.cpu_s - s0.cpu_s, s1.switches - s0.switches};
  for (auto& r : results) {
    all.latencies_us.insert(all.latencies_us.end(), r.latencies_us.begin(), r.latencies_us.end());
    all.errors += r.errors;
    if (all.first_error.empty()) all.first_error = r.first_error;
  }
  return all;
}

void save_dense_model(const std::string& dir, int64_t in, int64_t out) {
  Variable w(random_normal({in, out}, 0, 1, DType::Float32, 1), "dense/kernel");
  Variable b(zeros({out}), "dense/bias");
  Function f = function([&](const Tensor& x) { return add(matmul(x, w.value()), b.value()); },
                        {.name = "dense", .input_signature = Signature{{DType::Float32, Shape({-1, in})}}});
  io::save_saved_model(dir, {{.fn = f.get_concrete_function(), .input_names = {"x"}, .output_names = {"y"}}});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--serve") return serve_child(argv[2], argv[3]);
  if (argc > 1 && std::string(argv[1]).rfind("--client=", 0) == 0) {
    const std::string client = std::string(argv[1]).substr(9);
    if (client != "grpc" && client != "h2") {
      std::fprintf(stderr, "unknown client %s: grpc (grpc++, the default) or h2 (lean nghttp2 client)\n", argv[1]);
      return 2;
    }
    g_lean_client = client == "h2";
    --argc;
    ++argv;
  }
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: %s [--client=grpc|h2] <spawn|inproc|address> <model> <input shape, e.g. 1,784> "
                 "<concurrency> <seconds> [saved_model_dir]\n",
                 argv[0]);
    return 2;
  }
  std::string address = argv[1], model_name = argv[2];
  const std::string mode = address;
  std::vector<int64_t> dims = parse_shape(argv[3]);
  int concurrency = std::atoi(argv[4]);
  double seconds = std::atof(argv[5]);
  std::string model_dir = argc > 6 ? argv[6] : "";

  std::unique_ptr<serving::ModelManager> manager;
  std::unique_ptr<serving::GrpcServer> server;
  std::unique_ptr<ServerProcess> child;
  std::string tmp;
  if (mode == "inproc" || mode == "spawn") {
    tmp = (std::filesystem::temp_directory_path() / ("grpc_bench_" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(tmp);
    const std::string base = tmp + "/" + model_name;
    model_dir = base + "/1";
    std::filesystem::create_directories(base);
    save_dense_model(model_dir, 784, 512);
    serving::ManagerOptions options;
    options.poll_seconds = 0;
    options.warmup = [](const serving::Servable& s) { serving::warm_up(s); };  // as deepflow serve does
    // Also in spawn mode: the handler figure below runs on the same servable, here.
    manager = std::make_unique<serving::ModelManager>(serving::single_model(model_name, base), options);
    manager->start();
    if (mode == "spawn") {
      child = std::make_unique<ServerProcess>(base, model_name);
      address = "127.0.0.1:" + std::to_string(child->port());
    } else {
      server = std::make_unique<serving::GrpcServer>(*manager, serving::run_signature_directly, nullptr,
                                                     serving::GrpcOptions{.address = "127.0.0.1:0"});
      server->start();
      address = "127.0.0.1:" + std::to_string(server->port());
    }
  }

  Tensor x = random_normal(Shape(dims), 0, 1, DType::Float32, 7);
  pb::PredictRequest request;
  request.mutable_model_spec()->set_name(model_name);
  serving::tensor_to_proto(x, &(*request.mutable_inputs())["x"]);

  double compute_us = 0;
  if (!model_dir.empty()) compute_us = compute_p50_us(model_dir, x, std::min(seconds, 2.0));

  // The server's own work per request without the transport: resolve, decode, run,
  // encode (what a Predict handler does), timed in this process.
  double handler_us = 0;
  if (manager) {
    std::vector<double> us;
    for (int i = 0; i < 2000; ++i) {
      auto t0 = Clock::now();
      serving::ServableHandle s = manager->get({.name = model_name});
      std::map<std::string, Tensor> in{{"x", serving::tensor_from_proto(request.inputs().at("x"))}};
      auto out = serving::run_predict(s, "", in);
      pb::PredictResponse response;
      for (const auto& [k, t] : out) serving::tensor_to_proto(t, &(*response.mutable_outputs())[k]);
      std::string bytes = response.SerializeAsString();
      if (i >= 200) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    handler_us = percentile(us, 0.5);
  }

  // gRPC's own round trip with almost no server work: Predict on an unknown model
  // (NOT_FOUND), one client on a plain channel.
  double floor_us = 0;
  Usage floor_client, floor_server;
  const int floor_calls = 2500;
  {
    std::unique_ptr<Caller> caller = make_caller(address, false);
    std::string error;
    pb::PredictRequest none;
    none.mutable_model_spec()->set_name("__no_such_model__");
    pb::PredictResponse response;
    std::vector<double> us;
    Usage u0, s0;
    for (int i = 0; i < 500 + floor_calls; ++i) {
      if (i == 500) {
        s0 = child ? child->usage() : Usage{};
        u0 = Usage::now();
      }
      auto t0 = Clock::now();
      caller->predict(none, &response, &error);
      if (i >= 500) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    Usage u1 = Usage::now();
    Usage s1 = child ? child->usage() : Usage{};
    floor_us = percentile(us, 0.5);
    floor_client = {u1.cpu_s - u0.cpu_s, u1.switches - u0.switches};
    floor_server = {s1.cpu_s - s0.cpu_s, s1.switches - s0.switches};
  }

  LoadResult r = run_load(address, request, concurrency, seconds, child.get());
  double p50 = percentile(r.latencies_us, 0.5), p99 = percentile(r.latencies_us, 0.99);
  const double n = double(std::max<size_t>(1, r.latencies_us.size()));
  // Per request: CPU us and context switches, of the client (and of the server when it
  // is a child; inproc: one figure for both).
  auto costs = [&](const Usage& client, const Usage& srv, double calls) {
    char text[160];
    if (child)
      std::snprintf(text, sizeof text, "server cpu=%.1f us csw=%.1f, client cpu=%.1f us csw=%.1f per request",
                    srv.cpu_s * 1e6 / calls, srv.switches / calls, client.cpu_s * 1e6 / calls, client.switches / calls);
    else
      std::snprintf(text, sizeof text, "process cpu=%.1f us csw=%.1f per request%s", client.cpu_s * 1e6 / calls,
                    client.switches / calls, server ? " (client and server)" : " (client)");
    return std::string(text);
  };
  std::printf("grpc Predict %s (%s) model=%s shape=%s concurrency=%d seconds=%.1f client=%s\n", address.c_str(),
              mode == "spawn" ? "server in a child process" : mode == "inproc" ? "server in this process" : "remote",
              model_name.c_str(), argv[3], concurrency, seconds, g_lean_client ? "h2 (lean nghttp2)" : "grpc++");
  std::printf("  requests=%zu errors=%lld throughput=%.0f req/s\n", r.latencies_us.size(),
              static_cast<long long>(r.errors), double(r.latencies_us.size()) / seconds);
  std::printf("  latency p50=%.1f us p99=%.1f us\n", p50, p99);
  std::printf("  %s\n", costs(r.usage, r.server_usage, n).c_str());
  if (!model_dir.empty()) {
    std::printf("  compute p50=%.1f us (signature called directly)  overhead=p50-compute=%.1f us\n", compute_us,
                p50 - compute_us);
  }
  std::printf("  transport floor p50=%.1f us (Predict on an unknown model, 1 client); %s\n", floor_us,
              costs(floor_client, floor_server, floor_calls).c_str());
  if (manager) std::printf("  handler p50=%.1f us (get + decode + run_predict + encode, no transport)\n", handler_us);
  if (r.errors) std::printf("  first error: %s\n", r.first_error.c_str());

  server.reset();
  child.reset();
  manager.reset();
  if (!tmp.empty()) std::filesystem::remove_all(tmp);
  return r.errors ? 1 : 0;
}
