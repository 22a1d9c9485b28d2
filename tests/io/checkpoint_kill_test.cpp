// SPDX-License-Identifier: Apache-2.0
// Crash safety of CheckpointManager: a writer process saves checkpoints in a loop (a
// model of ~3 MB whose every weight holds the save number n, and a step variable = n),
// and is SIGKILLed at random points, 50 times. After every kill the directory's latest
// checkpoint, and every checkpoint the state file names, must load completely (CRCs,
// assert_consumed) with every value equal to its save number, and the latest may never
// go back.
//
// The writer is this test binary run again (posix_spawn of /proc/self/exe, filtered to
// CheckpointKill.Writer, with DEEPFLOW_CKPT_KILL_DIR set): no fork() of a process that
// has OpenMP threads. It resumes from the latest checkpoint each time, as a restarted
// job would, and writes one byte to fd 3 when it is about to start saving.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "deepflow/io/bundle.h"
#include "deepflow/io/checkpoint_manager.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/model.h"
#include "deepflow/ops/ops.h"
#include "io_test_util.h"

extern char** environ;

namespace deepflow::io {
namespace {

constexpr const char* kDirEnv = "DEEPFLOW_CKPT_KILL_DIR";
constexpr int kReadyFd = 3;

std::shared_ptr<keras::Sequential> writer_model() {
  namespace layers = keras::layers;
  // 256*1024 + 1024 + 1024*512 + 512 floats: 3.0 MiB.
  return std::make_shared<keras::Sequential>(std::vector<keras::LayerPtr>{
      layers::InputLayer(Shape{256}), layers::Dense(1024), layers::Dense(512)});
}

TEST(CheckpointKill, Writer) {
  const char* dir = std::getenv(kDirEnv);
  if (!dir) GTEST_SKIP() << "the writer half of CheckpointKill.SigkillWhileSaving, which runs it";
  auto model = writer_model();
  Variable step(scalar(0, DType::Int64), "step", false);
  Checkpoint ckpt({{"model", model}, {"step", step}});
  CheckpointManager manager(ckpt, dir, 3);
  manager.restore_or_initialize();
  const char ready = 1;
  if (::write(kReadyFd, &ready, 1) != 1) std::abort();
  for (;;) {
    const int64_t n = ckpt.save_counter().value().item<int64_t>() + 1;  // the number this save gets
    for (Variable w : model->weights()) w.assign(fill(w.shape(), double(n), w.dtype()));
    step.assign(scalar(double(n), DType::Int64));
    ASSERT_EQ(manager.save(), std::string(dir) + "/ckpt-" + std::to_string(n));
  }
}

// Loads `prefix` into the reader's model (built once: building takes longer than a
// restore) and checks that every value is the save number.
struct Reader {
  std::shared_ptr<keras::Sequential> model = writer_model();
  Variable step{scalar(0, DType::Int64), "step", false};
  Checkpoint ckpt{{{"model", model}, {"step", step}}};

  void expect_complete(const std::string& prefix) {
    const int64_t n = std::stoll(prefix.substr(prefix.rfind('-') + 1));
    for (Variable w : model->weights()) w.assign(zeros(w.shape()));
    ckpt.restore(prefix).assert_consumed();
    EXPECT_EQ(step.value().item<int64_t>(), n) << prefix;
    EXPECT_EQ(ckpt.save_counter().value().item<int64_t>(), n) << prefix;
    for (const Variable& w : model->weights()) {
      const Tensor t = w.value();
      const float* p = t.data<float>();
      int64_t bad = 0;
      for (int64_t i = 0; i < t.size(); ++i) bad += p[i] != float(n);
      EXPECT_EQ(bad, 0) << prefix << " " << w.name();
    }
  }
};

pid_t spawn_writer(const std::string& dir, int ready_write_end, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ready_write_end, kReadyFd);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  std::vector<std::string> env_strings{std::string(kDirEnv) + "=" + dir, "OMP_NUM_THREADS=1"};
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("GTEST_", 0) != 0 && std::string(*e).rfind("OMP_NUM_THREADS=", 0) != 0)
      env_strings.push_back(*e);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", filter = "--gtest_filter=CheckpointKill.Writer";
  char* argv[] = {exe.data(), filter.data(), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

TEST(CheckpointKill, SigkillWhileSaving) {
  testing::TempDir dir, logs;
  const std::string log = logs / "writer.log";  // the writer's gtest output
  std::mt19937 rng(20240611);
  Reader reader;
  int64_t last = 0;
  int advanced = 0, interrupted = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < 50; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    const pid_t pid = spawn_writer(dir.path(), fds[1], log);
    ::close(fds[1]);
    ASSERT_GT(pid, 0) << "posix_spawn failed";
    // Wait for the writer to be ready (most rounds), then kill it somewhere in its saves;
    // every 10th round it dies while still loading.
    bool ready = false;
    if (round % 10 != 9) {
      pollfd p{fds[0], POLLIN, 0};
      ready = ::poll(&p, 1, 60000) == 1;
      char c;
      ready = ready && ::read(fds[0], &c, 1) == 1;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 200000)(rng)));
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, WNOHANG), 0)
        << "the writer exited early (round " << round << ", status " << status << "):\n" << testing::read_bytes(log);
    ::kill(pid, SIGKILL);
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ::close(fds[0]);  // only now: a writer that never got to say "ready" would die of SIGPIPE
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "round " << round;
    ASSERT_TRUE(ready || round % 10 == 9) << "the writer never got ready (round " << round << ")";

    for (const std::string& name : testing::list_dir(dir.path()))
      if (name.find(".tmp-") != std::string::npos) {
        ++interrupted;  // killed mid-write: the temporaries show it
        break;
      }
    const std::string latest = latest_checkpoint(dir.path());
    if (latest.empty()) {
      EXPECT_EQ(last, 0) << "the latest checkpoint vanished (round " << round << ")";
      continue;
    }
    const int64_t n = std::stoll(latest.substr(latest.rfind('-') + 1));
    EXPECT_GE(n, last) << "the latest checkpoint went back (round " << round << ")";
    advanced += n > last;
    last = n;
    reader.expect_complete(latest);
    CheckpointState state;
    ASSERT_TRUE(read_checkpoint_state(dir.path(), &state));
    for (const std::string& p : state.all_model_checkpoint_paths) reader.expect_complete(dir / p);
    if (::testing::Test::HasFailure()) break;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[CheckpointKill] 50 kills in %.1f s: %lld saves completed, the latest advanced in %d rounds, "
              "%d kills interrupted a write\n",
              secs, static_cast<long long>(last), advanced, interrupted);
  EXPECT_GE(advanced, 10);     // the writer did make progress between kills
  EXPECT_GE(interrupted, 5);   // and kills did land inside saves
}

}  // namespace
}  // namespace deepflow::io
