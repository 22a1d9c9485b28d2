// SPDX-License-Identifier: Apache-2.0
// `deepflow --help` and `deepflow checkpoint inspect`, run as the built binary
// (build/tools/cli/deepflow, found next to this test binary's directory): the listing,
// one tensor's values, JSON, and the errors with their exit code.
#include <sys/wait.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

#include "deepflow/io/bundle.h"
#include "deepflow/io/checkpoint_manager.h"
#include "deepflow/ops/ops.h"
#include "io_test_util.h"

namespace deepflow::io {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

struct Result {
  int code = -1;
  std::string out, err;
};

// The build may say where the binary is; else it is ../tools/cli/deepflow from this
// test's directory (build/tests/io_test).
std::string cli_path() {
#ifdef DEEPFLOW_CLI_PATH
  return DEEPFLOW_CLI_PATH;
#else
  const auto exe = std::filesystem::read_symlink("/proc/self/exe");
  return (exe.parent_path().parent_path() / "tools/cli/deepflow").string();
#endif
}

Result run_cli(const std::string& args) {
  static const TempDir scratch;
  const std::string err_path = scratch / "stderr";
  Result r;
  FILE* p = ::popen((cli_path() + " " + args + " 2>" + err_path).c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = testing::read_bytes(err_path);
  return r;
}

// Two variables and the counter: 40 bytes in three tensors.
std::string small_checkpoint(const std::string& dir) {
  Variable w(constant({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3}), "w");
  Variable step(scalar(7, DType::Int64), "step", false);
  CheckpointManager m(Checkpoint({{"w", w}, {"step", step}}), dir, 2);
  m.save();
  return m.save();
}

TEST(CliCheckpoint, HelpDescribesEveryLevel) {
  ASSERT_TRUE(std::filesystem::exists(cli_path())) << cli_path() << " (build the deepflow_cli target)";
  Result r = run_cli("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("deepflow: train, inspect, convert and serve models"));
  EXPECT_THAT(r.out, HasSubstr("checkpoint"));
  EXPECT_THAT(r.out, HasSubstr("Inspect training checkpoints"));
  r = run_cli("checkpoint --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("inspect"));
  EXPECT_THAT(r.out, HasSubstr("List a checkpoint's tensors"));
  r = run_cli("checkpoint inspect --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("--tensor"));
  EXPECT_THAT(r.out, HasSubstr("--json"));
  EXPECT_THAT(r.out, HasSubstr("or a directory (its latest checkpoint)"));
  r = run_cli("");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("subcommand"));
}

TEST(CliCheckpoint, InspectListsTheTensors) {
  TempDir dir;
  const std::string prefix = small_checkpoint(dir.path());
  const std::string want = "Checkpoint " + prefix + ": 3 tensors, 40 B\n"
                           "key                                      dtype    shape  size\n"
                           "save_counter/.ATTRIBUTES/VARIABLE_VALUE  int64    []     8 B\n"
                           "step/.ATTRIBUTES/VARIABLE_VALUE          int64    []     8 B\n"
                           "w/.ATTRIBUTES/VARIABLE_VALUE             float32  [2,3]  24 B\n";
  for (const std::string& path : {dir.path(), prefix, prefix + ".index"}) {
    Result r = run_cli("checkpoint inspect " + path);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, want) << path;
    EXPECT_EQ(r.err, "");
  }
}

TEST(CliCheckpoint, InspectPrintsOneTensorAndJson) {
  TempDir dir;
  const std::string prefix = small_checkpoint(dir.path());
  Result r = run_cli("checkpoint inspect " + dir.path() + " --tensor w/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "w/.ATTRIBUTES/VARIABLE_VALUE: float32[2,3]\n[[1. 2. 3.]\n [4. 5. 6.]]\n");

  r = run_cli("checkpoint inspect " + prefix + " --json");
  EXPECT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["path"], prefix);
  EXPECT_EQ(j["total_size"], 40);
  ASSERT_EQ(j["tensors"].size(), 3u);
  EXPECT_EQ(j["tensors"][2]["key"], "w/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_EQ(j["tensors"][2]["dtype"], "float32");
  EXPECT_EQ(j["tensors"][2]["shape"], nlohmann::json::array({2, 3}));
  EXPECT_EQ(j["tensors"][2]["size"], 24);

  r = run_cli("checkpoint inspect " + prefix + " --json --tensor step/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_EQ(r.code, 0) << r.err;
  const nlohmann::json s = nlohmann::json::parse(r.out);
  EXPECT_EQ(s["dtype"], "int64");
  EXPECT_EQ(s["values"], nlohmann::json::array({7}));
}

TEST(CliCheckpoint, ErrorsGoToStderrWithExitCode1) {
  TempDir dir;
  Result r = run_cli("checkpoint inspect " + dir.path());
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "deepflow: [checkpoint inspect] " + dir.path() +
                       ": no checkpoint in this directory (no 'checkpoint' state file naming an existing bundle)\n");
  r = run_cli("checkpoint inspect " + dir / "nope");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "deepflow: [BundleReader] " + dir / "nope.index" + ": cannot open: No such file or directory\n");

  const std::string prefix = small_checkpoint(dir.path());
  r = run_cli("checkpoint inspect " + prefix + " --tensor nope");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("deepflow: [BundleReader] " + prefix + ": no tensor 'nope'"));

  std::string index = testing::read_bytes(prefix + ".index");
  index[5] = char(index[5] ^ 1);
  testing::write_bytes(prefix + ".index", index);
  r = run_cli("checkpoint inspect " + prefix);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("deepflow: [BundleReader] " + prefix + ".index: corrupt: the index fails its checksum"));

  r = run_cli("checkpoint inspect");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("path is required"));
}

}  // namespace
}  // namespace deepflow::io
