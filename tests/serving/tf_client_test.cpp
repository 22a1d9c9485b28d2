// SPDX-License-Identifier: Apache-2.0
// The official TF Serving client against `deepflow serve` on SavedModels TensorFlow
// writes: TensorFlow 2.21 (the peers environment) exports a Keras 3 MLP, an
// estimator-style classify/regress model and a classifier with string classes, the real binary serves them, and
// tests/serving/tf_serving_client.py calls Predict, Classify, Regress, GetModelMetadata,
// GetModelStatus and HandleReloadConfigRequest with tensorflow-serving-api's stubs,
// comparing every answer with TensorFlow's own signatures, then a raw binary REST predict
// and a REST :load / :unload of a TF-written model. Skips (fails under CI)
// without TensorFlow and tensorflow-serving-api.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "oracle.h"
#include "serving/serving_test_util.h"

namespace deepflow {
namespace {

namespace fs = std::filesystem;

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The peers interpreter as a shell command prefix; TensorFlow's bundled OpenBLAS must
// not see the core type the build machine forces.
std::string python_command() {
  return "unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE; TF_CPP_MIN_LOG_LEVEL=3 '" + testing::peers_python() + "'";
}

const std::string kScript = std::string(DEEPFLOW_PROTO_DIR) + "/../tests/serving/tf_serving_client.py";

// `deepflow serve` on a model config file, stopped with SIGTERM by the destructor.
struct ServeProcess {
  pid_t pid = -1;
  std::string log;
  ServeProcess(const std::string& config, int grpc_port, int rest_port, const std::string& log_path) : log(log_path) {
    pid = ::fork();
    if (pid == 0) {
      FILE* out = std::freopen(log.c_str(), "w", stdout);
      FILE* err = std::freopen(log.c_str(), "a", stderr);
      (void)out;
      (void)err;
      std::string grpc_flag = "--port=" + std::to_string(grpc_port);
      std::string rest_flag = "--rest_api_port=" + std::to_string(rest_port);
      std::string config_flag = "--model_config_file=" + config;
      ::execl(DEEPFLOW_CLI_PATH, DEEPFLOW_CLI_PATH, "serve", grpc_flag.c_str(), rest_flag.c_str(), config_flag.c_str(),
              "--host=127.0.0.1", static_cast<char*>(nullptr));
      std::_Exit(127);
    }
  }
  // The exit status after SIGTERM (0 when it shut down cleanly).
  int stop() {
    if (pid <= 0) return -1;
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ~ServeProcess() { stop(); }
};

bool wait_available(int rest_port, const std::vector<std::string>& models, double seconds) {
  httplib::Client c("127.0.0.1", rest_port);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (const auto& m : models) {
    for (;;) {
      auto r = c.Get("/v1/models/" + m);
      if (r && r->status == 200 && r->body.find("AVAILABLE") != std::string::npos) break;
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return true;
}

TEST(TfServingClient, OfficialClientMatchesTensorFlow) {
  if (testing::peers_python().empty()) DEEPFLOW_ORACLE_MISSING("no .venv-peers/bin/python (make peers)");
  if (std::system((python_command() + " -c 'import tensorflow, tensorflow_serving.apis' >/dev/null 2>&1").c_str()))
    DEEPFLOW_ORACLE_MISSING("the peers python cannot import tensorflow and tensorflow_serving (make peers)");
  testing::TempDir tmp;
  const std::string root = tmp / "models";
  const std::string write_log = tmp / "write.log";
  int rc = std::system((python_command() + " " + kScript + " write " + root + " > " + write_log + " 2>&1").c_str());
  ASSERT_EQ(rc, 0) << "TensorFlow could not write the models:\n" << testing::read_bytes(write_log);

  const std::string config = tmp / "models.config";
  std::ofstream(config) << "model_config_list {\n"
                        << "  config { name: \"mlp\" base_path: \"" << root << "/mlp\" model_platform: \"tensorflow\" }\n"
                        << "  config { name: \"estimator\" base_path: \"" << root
                        << "/estimator\" model_platform: \"tensorflow\" }\n"
                        << "  config { name: \"labelled\" base_path: \"" << root
                        << "/labelled\" model_platform: \"tensorflow\" }\n}\n";
  const int grpc_port = free_port(), rest_port = free_port();
  ServeProcess serve(config, grpc_port, rest_port, tmp / "serve.log");
  ASSERT_TRUE(wait_available(rest_port, {"mlp", "estimator", "labelled"}, 120)) << testing::read_bytes(serve.log);

  const std::string client_log = tmp / "client.log";
  rc = std::system((python_command() + " " + kScript + " check " + root + " 127.0.0.1:" + std::to_string(grpc_port) +
                    " 127.0.0.1:" + std::to_string(rest_port) + " > " + client_log + " 2>&1")
                       .c_str());
  const std::string client_out = testing::read_bytes(client_log);
  EXPECT_EQ(rc, 0) << client_out << "\n--- server log ---\n" << testing::read_bytes(serve.log);
  EXPECT_NE(client_out.find("tf_serving_client.py: ok"), std::string::npos) << client_out;
  EXPECT_EQ(serve.stop(), 0) << testing::read_bytes(serve.log);
}

}  // namespace
}  // namespace deepflow
