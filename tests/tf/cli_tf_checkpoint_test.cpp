// SPDX-License-Identifier: Apache-2.0
// `deepflow checkpoint inspect` on TensorFlow's checkpoint format (tests/io covers ours),
// run as the built binary: the listing with the object graph's paths, one tensor, JSON, a
// SavedModel directory, and a corrupt index.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "deepflow/io/atomic_file.h"
#include "deepflow/tf/checkpoint.h"
#include "deepflow/tf/object_graph.h"
#include "tensorflow/tensor_bundle.pb.h"

namespace deepflow::tf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Result {
  int code = -1;
  std::string out, err;
};

class TfCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "tf_cli_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    // A SavedModel-like layout: <dir>/model/variables/variables.{index,data-*}.
    fs::create_directories(dir_ + "/model/variables");
    prefix_ = dir_ + "/model/variables/variables";
    ObjectGraphBuilder g;
    CheckpointWriter w(prefix_);
    w.add(g.add_variable({"dense", "kernel"}), constant({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3}));
    w.add(g.add_variable({"step"}), scalar(7, DType::Int64));
    w.add_object_graph(g.graph());
    w.finish();
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result run_cli(const std::string& args) {
    const std::string err_path = dir_ + "/stderr";
    Result r;
    FILE* p = ::popen((std::string(DEEPFLOW_CLI_PATH) + " " + args + " 2>" + err_path).c_str(), "r");
    if (!p) return r;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
    const int status = ::pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = io::detail::read_file(err_path, "");
    return r;
  }
  std::string dir_, prefix_;
};

TEST_F(TfCli, ListsTensorsAndTheObjectGraph) {
  const std::string want =
      "TensorFlow checkpoint " + prefix_ + ": 3 tensors, 203 B\n"
      "key                                      dtype    shape  size\n"
      "_CHECKPOINTABLE_OBJECT_GRAPH             string   []     171 B\n"
      "dense/kernel/.ATTRIBUTES/VARIABLE_VALUE  float32  [2,3]  24 B\n"
      "step/.ATTRIBUTES/VARIABLE_VALUE          int64    []     8 B\n"
      "\n"
      "Object graph: 4 objects, 2 saved tensors\n"
      "  step.VARIABLE_VALUE          step/.ATTRIBUTES/VARIABLE_VALUE\n"
      "  dense/kernel.VARIABLE_VALUE  dense/kernel/.ATTRIBUTES/VARIABLE_VALUE\n";
  for (const std::string& path : {prefix_, prefix_ + ".index", dir_ + "/model"}) {
    const Result r = run_cli("checkpoint inspect " + path);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, want) << path;
  }
}

TEST_F(TfCli, PrintsOneTensorAndJson) {
  Result r = run_cli("checkpoint inspect " + prefix_ + " --tensor dense/kernel/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "dense/kernel/.ATTRIBUTES/VARIABLE_VALUE: float32[2,3]\n[[1. 2. 3.]\n [4. 5. 6.]]\n");
  r = run_cli("checkpoint inspect " + prefix_ + " --json");
  EXPECT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "tensorflow");
  ASSERT_EQ(j["tensors"].size(), 3u);
  EXPECT_EQ(j["tensors"][1]["shape"], nlohmann::json::array({2, 3}));
  ASSERT_EQ(j["object_graph"].size(), 2u);
  EXPECT_EQ(j["object_graph"][1]["path"], "dense/kernel");
  EXPECT_EQ(j["object_graph"][1]["key"], "dense/kernel/.ATTRIBUTES/VARIABLE_VALUE");
  r = run_cli("checkpoint inspect " + prefix_ + " --json --tensor step/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_EQ(nlohmann::json::parse(r.out)["values"], nlohmann::json::array({7}));
}

TEST_F(TfCli, CorruptIndexIsAnErrorNamingTheFile) {
  std::string index = io::detail::read_file(prefix_ + ".index", "");
  index[5] = char(index[5] ^ 0x20);
  io::detail::write_file_atomic(prefix_ + ".index", index, "");
  const Result r = run_cli("checkpoint inspect " + prefix_);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("[tf::checkpoint] " + prefix_ + ".index"));
  EXPECT_THAT(r.err, HasSubstr("CRC32C"));
}

}  // namespace
}  // namespace deepflow::tf
