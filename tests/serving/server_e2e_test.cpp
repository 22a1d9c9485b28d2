// SPDX-License-Identifier: Apache-2.0
// The model server end to end on loopback: an in-process ModelServer on free ports
// called with httplib::Client (predict, 413, metrics, hot reload under load, a corrupt
// version, bad requests next to good ones), and the real `deepflow serve` binary driven
// with curl as docs/serving.md shows, stopped with SIGTERM.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "deepflow/serving/server.h"
#include "serving/serving_test_util.h"
#include "oracle.h"

namespace deepflow {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;

// Polls `done` every few ms until it holds or `seconds` pass (waiting on another
// process or the file-system poller: there is nothing to block on).
template <class F>
bool eventually(F done, double seconds = 20) {
  auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

constexpr char kOne[] = R"({"instances": [1.0]})";

class ServerE2E : public ::testing::Test {
 protected:
  void start(int grpc_port = 0) {
    serving::ServerOptions o;
    o.config = serving::single_model("half", base_);
    o.grpc_port = grpc_port;
    o.rest_port = -1;
    o.host = "127.0.0.1";
    o.poll_seconds = 0.05;
    o.rest_threads = 16;
    o.max_body_bytes = 1 << 20;
    o.monitoring.enable = true;
    server_ = std::make_unique<serving::ModelServer>(std::move(o));
    server_->start();
  }
  std::unique_ptr<httplib::Client> client() {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", server_->rest_port());
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);  // the client writes headers and body separately
    return c;
  }

  void SetUp() override { fs::create_directories(base_); }

  testing::TempDir tmp_;
  std::string base_ = tmp_ / "half";
  std::unique_ptr<serving::ModelServer> server_;
};

// `curl -d` (TF Serving's documented client) sends form-urlencoded: a body over httplib's
// 8 KiB form limit still predicts.
TEST_F(ServerE2E, FormEncodedBodiesOverEightKibPredict) {
  testing::save_half_plus(base_, 1, 2.f);
  start();
  auto form = client()->Post("/v1/models/half:predict", R"({"instances": [1.0, 2.0, 5.0]})" + std::string(20000, ' '),
                             "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 200) << form->body;
  EXPECT_EQ(form->body, R"({"predictions":[2.5,3.0,4.5]})");
}

TEST_F(ServerE2E, PredictOversizedBodyAndMetrics) {
  testing::save_half_plus(base_, 1, 2.f);
  start();
  auto c = client();
  auto r = c->Post("/v1/models/half:predict", R"({"instances": [1.0, 2.0, 5.0]})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, R"({"predictions":[2.5,3.0,4.5]})");
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");

  auto s = c->Get("/v1/models/half");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, 200);
  EXPECT_THAT(s->body, HasSubstr(R"("state":"AVAILABLE")"));

  auto big = client()->Post("/v1/models/half:predict", std::string(2 << 20, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(big->get_header_value("Content-Type"), "application/json");
  EXPECT_THAT(big->body, HasSubstr("{\"error\":\"[rest] request body larger than the server's limit of 1048576"));

  auto bad = c->Get("/nothing/here");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 404);
  EXPECT_EQ(bad->get_header_value("Content-Type"), "application/json");

  auto m = c->Get("/monitoring/prometheus/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_THAT(m->get_header_value("Content-Type"), HasSubstr("text/plain"));
  EXPECT_THAT(m->body, HasSubstr(":tensorflow:serving:request_count{model_name=\"half\",version=\"1\",API=\"predict\","
                                 "entrypoint=\"REST\",status=\"OK\"} 1\n"));
  EXPECT_THAT(m->body, HasSubstr(":tensorflow:serving:model_load_count{model_name=\"half\",status=\"OK\"} 1\n"));

  auto o = c->Options("/v1/models/half:predict", {{"Origin", "http://example.com"}});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->status, 200);
  c.reset();  // an idle keep-alive connection would hold its worker until the keep-alive timeout
  server_->shutdown();
  server_->shutdown();  // idempotent
}

TEST_F(ServerE2E, GrpcAndRestOnFreePorts) {
  testing::save_half_plus(base_, 1, 2.f);
  start(-1);
  EXPECT_GT(server_->grpc_port(), 0);
  EXPECT_GT(server_->rest_port(), 0);
  EXPECT_NE(server_->grpc_port(), server_->rest_port());
  auto r = client()->Post("/v1/models/half:predict", kOne, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, R"({"predictions":[2.5]})");
  server_->shutdown();
  EXPECT_FALSE(client()->Get("/v1/models/half"));  // the listener is gone
}

TEST_F(ServerE2E, HotReloadUnderLoadFailsNoRequest) {
  testing::save_half_plus(base_, 1, 2.f);
  start();
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0}, saw_v1{0}, saw_v2{0};
  std::string first_failure;
  std::mutex failure_mu;
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t)
    clients.emplace_back([&] {
      auto c = client();
      while (!stop) {
        auto r = c->Post("/v1/models/half:predict", kOne, "application/json");
        if (r && r->status == 200 && (r->body == R"({"predictions":[2.5]})" || r->body == R"({"predictions":[3.5]})")) {
          ++ok;
          ++(r->body == R"({"predictions":[2.5]})" ? saw_v1 : saw_v2);
        } else {
          ++failed;
          std::lock_guard lock(failure_mu);
          if (first_failure.empty()) first_failure = r ? std::to_string(r->status) + " " + r->body : "no response";
        }
      }
    });
  ASSERT_TRUE(eventually([&] { return saw_v1 > 50; }));
  // Version 2 appears atomically (renamed into the base path), then version 1 goes.
  std::string staging = tmp_ / "staging";
  fs::create_directories(staging);
  testing::save_half_plus(staging, 2, 3.f);
  fs::rename(staging + "/2", base_ + "/2");
  ASSERT_TRUE(eventually([&] { return saw_v2 > 50; }));
  fs::remove_all(base_ + "/1");
  ASSERT_TRUE(eventually([&] {
    auto st = server_->manager().status({.name = "half"});
    return st.size() == 1 || (st.size() == 2 && st[1].state == serving::VersionState::End);
  }));
  int after = saw_v2;
  ASSERT_TRUE(eventually([&] { return saw_v2 > after + 50; }));
  stop = true;
  for (auto& t : clients) t.join();
  EXPECT_EQ(failed, 0) << first_failure;
  EXPECT_GT(ok, 150);
  EXPECT_EQ(client()->Post("/v1/models/half/versions/1:predict", kOne, "application/json")->status, 404);
}

// httplib holds a worker thread per keep-alive connection, so with the old default of
// 4 x cores threads a batch could not take more requests than that: the rest of the
// clients were not even read. With batching the default sizes the pool for full batches.
TEST_F(ServerE2E, BatchingDefaultThreadsLetMoreClientsThanFourPerCoreFillABatch) {
  const int clients = 4 * int(std::max(1u, std::thread::hardware_concurrency())) + 4;
  if (clients > 100) GTEST_SKIP() << "the point is made on machines with fewer cores";
  testing::save_half_plus(base_, 1, 2.f);
  serving::ServerOptions o;
  o.config = serving::single_model("half", base_);
  o.grpc_port = 0;
  o.rest_port = -1;
  o.host = "127.0.0.1";
  o.poll_seconds = 0;
  o.monitoring.enable = true;
  // The batch closes only when full: a request that cannot reach the batcher leaves it
  // short, and the clients' 5 s read timeout fails the test.
  o.batching = serving::BatchingOptions{
      .max_batch_size = clients, .batch_timeout_micros = 10'000'000, .num_batch_threads = 1};
  server_ = std::make_unique<serving::ModelServer>(std::move(o));
  server_->start();
  std::vector<std::string> bodies(static_cast<size_t>(clients));
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i)
    threads.emplace_back([&, i] {
      auto r = client()->Post("/v1/models/half:predict", "{\"instances\": [" + std::to_string(2 * i) + ".0]}",
                              "application/json");
      bodies[size_t(i)] = r ? std::to_string(r->status) + " " + r->body : "no response";
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < clients; ++i)
    EXPECT_EQ(bodies[size_t(i)], "200 {\"predictions\":[" + std::to_string(i + 2) + ".0]}") << "client " << i;
  auto m = client()->Get("/monitoring/prometheus/metrics");
  ASSERT_TRUE(m);
  EXPECT_THAT(m->body, HasSubstr(":tensorflow:serving:batching_session:processed_batch_size_count{model_name=\"half\"} 1\n"));
  EXPECT_THAT(m->body, HasSubstr(":tensorflow:serving:batching_session:processed_batch_size_sum{model_name=\"half\"} " +
                                 std::to_string(clients) + "\n"));
}

TEST_F(ServerE2E, CorruptVersionNextToAGoodOne) {
  testing::save_half_plus(base_, 1, 2.f);
  start();
  // A newer version that cannot load appears next to the serving one.
  std::string staging = tmp_ / "staging";
  fs::create_directories(staging + "/2");
  testing::write_bytes(staging + "/2/saved_model.pb", "this is not a SavedModel");
  fs::rename(staging + "/2", base_ + "/2");
  auto c = client();
  ASSERT_TRUE(eventually([&] {
    auto s = c->Get("/v1/models/half/versions/2");
    return s && s->body.find(R"("state":"END")") != std::string::npos;
  }));
  auto s = c->Get("/v1/models/half/versions/2");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, 200);
  EXPECT_THAT(s->body, HasSubstr(R"("version":"2","state":"END")"));
  EXPECT_THAT(s->body, HasSubstr("not a valid SavedModel"));
  EXPECT_THAT(s->body, Not(HasSubstr(R"("error_code":"OK")")));
  for (int i = 0; i < 20; ++i) {
    auto r = c->Post("/v1/models/half:predict", kOne, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, R"({"predictions":[2.5]})");
  }
}

TEST_F(ServerE2E, BadRequestsDoNotDisturbGoodOnes) {
  testing::save_half_plus(base_, 1, 2.f);
  start();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"/v1/models/half:predict", R"({"instances": [1.0, )"},
      {"/v1/models/half:predict", R"({"instances": ["a"]})"},
      {"/v1/models/half:predict", R"({"instances": [[1.0], [2.0, 3.0]]})"},
      {"/v1/models/nope:predict", kOne},
      {"/v1/models/half/versions/7:predict", kOne},
      {"/v1/models/half:predict", std::string(1000, '[')},
  };
  std::atomic<int> good_failures{0}, bad_not_4xx{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto c = client();
      for (int i = 0; i < 60; ++i) {
        if (t % 2 == 0) {
          auto r = c->Post("/v1/models/half:predict", kOne, "application/json");
          if (!r || r->status != 200 || r->body != R"({"predictions":[2.5]})") ++good_failures;
        } else {
          const auto& [path, body] = bad[i % bad.size()];
          auto r = c->Post(path, body, "application/json");
          if (!r || r->status < 400 || r->status >= 500 || r->body.rfind("{\"error\":", 0) != 0) ++bad_not_4xx;
        }
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(good_failures, 0);
  EXPECT_EQ(bad_not_4xx, 0);
}

// --- the real binary ---

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string run_command(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST(ServeBinary, CurlAsDocumentedThenSigterm) {
  if (std::system("curl --version > /dev/null 2>&1") != 0) DEEPFLOW_ORACLE_MISSING("curl is not installed");
  testing::TempDir tmp;
  std::string base = tmp / "half_plus_two";
  fs::create_directories(base);
  testing::save_half_plus(base, 1, 2.f);
  int port = free_port();
  std::string log = tmp / "serve.log";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FILE* out = std::freopen(log.c_str(), "w", stdout);
    (void)out;
    std::string port_flag = "--rest_api_port=" + std::to_string(port);
    std::string base_flag = "--model_base_path=" + base;
    ::execl(DEEPFLOW_CLI_PATH, DEEPFLOW_CLI_PATH, "serve", "--port=0", port_flag.c_str(), "--model_name=half_plus_two",
            base_flag.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  httplib::Client c("127.0.0.1", port);
  bool ready = eventually(
      [&] {
        auto r = c.Get("/v1/models/half_plus_two");
        return r && r->status == 200;
      },
      60);
  if (!ready) ::kill(pid, SIGKILL);
  ASSERT_TRUE(ready) << testing::read_bytes(log);
  std::string url = "http://localhost:" + std::to_string(port) + "/v1/models/half_plus_two";
  EXPECT_EQ(run_command("curl -s -d '{\"instances\": [1.0, 2.0, 5.0]}' -X POST " + url + ":predict"),
            R"({"predictions":[2.5,3.0,4.5]})");
  EXPECT_EQ(run_command("curl -s " + url),
            R"({"model_version_status":[{"version":"1","state":"AVAILABLE","status":{"error_code":"OK","error_message":""}}]})");
  EXPECT_EQ(run_command("curl -s -d '{\"signature_name\": \"regress_x_to_y\", \"examples\": [{\"x\": 1.0}]}' -X POST " +
                        url + ":regress"),
            R"({"results":[2.5]})");
  EXPECT_EQ(run_command("curl -s -o /dev/null -w '%{http_code}' " + url + "/versions/3"), "404");
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << "signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << testing::read_bytes(log);
  EXPECT_THAT(testing::read_bytes(log), HasSubstr("Exporting HTTP/REST API at:localhost:" + std::to_string(port) + " ..."));
}

}  // namespace
}  // namespace deepflow
