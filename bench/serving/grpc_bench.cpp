// SPDX-License-Identifier: Apache-2.0
// Load and latency client for the gRPC Predict API (TF Serving's PredictionService).
//
//   grpc_bench <address|inproc> <model> <input shape> <concurrency> <seconds> [saved_model_dir]
//   grpc_bench inproc dense 1,784 1 5                  # in-process server, dense 784->512
//   grpc_bench 127.0.0.1:8500 dense 1,784 8 10 /models/dense/1
//
// Sends Predict requests with one float32 input "x" of the given shape (random values,
// tensor_content encoding) from `concurrency` threads, each on its own channel, for
// `seconds`, and prints p50 / p99 latency and throughput. The model's own compute time is
// measured in the same program by calling the signature directly (in-process: the model
// the server serves; otherwise the SavedModel at saved_model_dir), and the server
// overhead is p50 - compute p50.
//
// "inproc" writes a dense 784 -> 512 SavedModel (input shape [-1, 784]) into a temp dir
// and serves it with ModelManager + GrpcServer on a free loopback port in this process.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "deepflow/io/saved_model.h"
#include "deepflow/ops/ops.h"
#include "deepflow/serving/grpc_service.h"
#include "deepflow/serving/predict.h"
#include "deepflow/serving/tensor_proto.h"
#include "serving_apis.grpc.pb.h"

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

// The model's compute time at this input: the signature called directly, p50 in us.
double compute_p50_us(const io::SavedModel& model, const Tensor& x, double seconds) {
  const io::LoadedSignature& sig = model.signature("serving_default");
  std::vector<double> us;
  for (int i = 0; i < 200; ++i) sig({{"x", x}});
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end || us.size() < 100) {
    auto t0 = Clock::now();
    sig({{"x", x}});
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return percentile(us, 0.5);
}

struct LoadResult {
  std::vector<double> latencies_us;
  int64_t errors = 0;
  std::string first_error;
};

LoadResult run_load(const std::string& address, const pb::PredictRequest& request, int concurrency, double seconds) {
  std::vector<LoadResult> results(concurrency);
  std::atomic<bool> measuring{false}, stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&, t] {
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // one connection per thread
      args.SetMaxReceiveMessageSize(-1);
      auto stub = pb::PredictionService::NewStub(
          grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
      pb::PredictResponse response;
      LoadResult& r = results[t];
      while (!stop.load(std::memory_order_relaxed)) {
        grpc::ClientContext ctx;
        auto t0 = Clock::now();
        grpc::Status s = stub->Predict(&ctx, request, &response);
        double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (!measuring.load(std::memory_order_relaxed)) continue;
        if (s.ok()) {
          r.latencies_us.push_back(us);
        } else if (r.errors++ == 0) {
          r.first_error = s.error_message();
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // connect and warm up
  measuring = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  measuring = false;
  stop = true;
  for (auto& t : threads) t.join();
  LoadResult all;
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
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s <address|inproc> <model> <input shape, e.g. 1,784> <concurrency> <seconds> "
                         "[saved_model_dir]\n", argv[0]);
    return 2;
  }
  std::string address = argv[1], model_name = argv[2];
  std::vector<int64_t> dims = parse_shape(argv[3]);
  int concurrency = std::atoi(argv[4]);
  double seconds = std::atof(argv[5]);
  std::string model_dir = argc > 6 ? argv[6] : "";

  std::unique_ptr<serving::ModelManager> manager;
  std::unique_ptr<serving::GrpcServer> server;
  std::string tmp;
  if (address == "inproc") {
    tmp = (std::filesystem::temp_directory_path() / ("grpc_bench_" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(tmp);
    model_dir = tmp + "/" + model_name + "/1";
    std::filesystem::create_directories(tmp + "/" + model_name);
    save_dense_model(model_dir, 784, 512);
    serving::ManagerOptions options;
    options.poll_seconds = 0;
    manager = std::make_unique<serving::ModelManager>(serving::single_model(model_name, tmp + "/" + model_name),
                                                      options);
    manager->start();
    server = std::make_unique<serving::GrpcServer>(*manager, serving::run_signature_directly, nullptr,
                                                   serving::GrpcOptions{.address = "127.0.0.1:0"});
    server->start();
    address = "127.0.0.1:" + std::to_string(server->port());
  }

  Tensor x = random_normal(Shape(dims), 0, 1, DType::Float32, 7);
  pb::PredictRequest request;
  request.mutable_model_spec()->set_name(model_name);
  serving::tensor_to_proto(x, &(*request.mutable_inputs())["x"]);

  double compute_us = 0;
  if (!model_dir.empty()) compute_us = compute_p50_us(io::load_saved_model(model_dir), x, std::min(seconds, 2.0));

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
  // (NOT_FOUND), one client.
  double floor_us = 0;
  {
    auto stub = pb::PredictionService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    pb::PredictRequest none;
    none.mutable_model_spec()->set_name("__no_such_model__");
    pb::PredictResponse response;
    std::vector<double> us;
    for (int i = 0; i < 3000; ++i) {
      grpc::ClientContext ctx;
      auto t0 = Clock::now();
      stub->Predict(&ctx, none, &response);
      if (i >= 500) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    floor_us = percentile(us, 0.5);
  }

  LoadResult r = run_load(address, request, concurrency, seconds);
  double p50 = percentile(r.latencies_us, 0.5), p99 = percentile(r.latencies_us, 0.99);
  std::printf("grpc Predict %s model=%s shape=%s concurrency=%d seconds=%.1f\n", address.c_str(), model_name.c_str(),
              argv[3], concurrency, seconds);
  std::printf("  requests=%zu errors=%lld throughput=%.0f req/s\n", r.latencies_us.size(),
              static_cast<long long>(r.errors), double(r.latencies_us.size()) / seconds);
  std::printf("  latency p50=%.1f us p99=%.1f us\n", p50, p99);
  if (!model_dir.empty()) {
    std::printf("  compute p50=%.1f us (signature called directly)  overhead=p50-compute=%.1f us\n", compute_us,
                p50 - compute_us);
  }
  std::printf("  transport floor p50=%.1f us (Predict on an unknown model, 1 client)\n", floor_us);
  if (manager) std::printf("  handler p50=%.1f us (get + decode + run_predict + encode, no transport)\n", handler_us);
  if (r.errors) std::printf("  first error: %s\n", r.first_error.c_str());

  server.reset();
  manager.reset();
  if (!tmp.empty()) std::filesystem::remove_all(tmp);
  return r.errors ? 1 : 0;
}
