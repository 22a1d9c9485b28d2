// SPDX-License-Identifier: Apache-2.0
// Cross-checks with TensorFlow 2.21 (the peers environment): TF writes checkpoints
// (tf.train.Checkpoint of variables of many dtypes and shapes, a Keras 3 model with its
// Adam optimizer after a train step, a SavedModel's variables/) and dumps every key as
// tf.train.load_checkpoint reads it; we read every key and compare, and re-encode TF's
// files byte for byte. Then TF reads and restores a checkpoint we write, and parses a
// saved_model.pb we re-serialized. Driven through tests/tf/tf_checkpoint.py; skips without
// the environment (fails under CI).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "deepflow/core/crc32c.h"
#include "deepflow/io/atomic_file.h"
#include "deepflow/io/npy.h"
#include "deepflow/tf/checkpoint.h"
#include "deepflow/tf/dtype.h"
#include "deepflow/tf/object_graph.h"
#include "deepflow/tf/table.h"
#include "oracle.h"
#include "tensorflow/saved_model.pb.h"
#include "tensorflow/trackable_object_graph.pb.h"

namespace deepflow::tf {
namespace {

namespace fs = std::filesystem;

std::string hex(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

// Runs tf_checkpoint.py with `args`; returns its exit status, output in *log.
int run_tf(const std::string& args, std::string* log) {
  const std::string cmd = "unset OPENBLAS_CORETYPE; TF_CPP_MIN_LOG_LEVEL=3 '" + testing::peers_python() +
                          "' '" DEEPFLOW_TESTS_SOURCE_ROOT "/tests/tf/tf_checkpoint.py' " + args + " 2>&1";
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) log->append(buf, n);
  return ::pclose(f);
}

class TfOracle : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::peers_python().empty())
      DEEPFLOW_ORACLE_MISSING("no .venv-peers/bin/python (make peers installs TensorFlow 2.21)");
    std::string tmpl = ::testing::TempDir() + "tf_oracle_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // TensorFlow writes its files (under dir_/tf) for the tests that read them; its start-up
  // is most of the time, so once per test.
  void tf_writes() {
    std::string log;
    ASSERT_EQ(run_tf("write '" + dir_ + "/tf'", &log), 0) << log;
  }
  std::string dir_;
};

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(io::detail::read_file(path, "")); }

// Every key of a TF-written checkpoint, against TF's own reading of it.
void check_against_dump(const std::string& prefix) {
  SCOPED_TRACE(prefix);
  const nlohmann::json manifest = read_json(prefix + ".dump/manifest.json");
  CheckpointReader r(prefix);
  ASSERT_EQ(r.entries().size(), manifest.size());
  for (const nlohmann::json& item : manifest) {
    const std::string key = item["key"];
    const CheckpointEntry& e = r.entry(key);
    const std::optional<DType> dtype = dtype_from_tf(e.tf_dtype);
    ASSERT_TRUE(dtype.has_value()) << key << " " << tf_dtype_name(e.tf_dtype);
    EXPECT_EQ(dtype_name(*dtype), item["dtype"].get<std::string>()) << key;
    EXPECT_EQ(e.shape, item["shape"].get<std::vector<int64_t>>()) << key;
    const Tensor t = r.read(key);
    if (item.contains("strings")) {
      std::vector<std::string> got;
      for (const std::string& s : t.to_vector<std::string>()) got.push_back(hex(s));
      EXPECT_EQ(got, item["strings"].get<std::vector<std::string>>()) << key;
    } else {
      const Tensor want = io::read_npy(prefix + ".dump/" + item["npy"].get<std::string>());
      EXPECT_EQ(t.to_vector<double>(), want.to_vector<double>()) << key;
    }
  }
  // The object graph names only keys that are there.
  tensorflow::TrackableObjectGraph g;
  ASSERT_TRUE(r.object_graph(&g));
  const std::vector<ObjectTensor> named = object_graph_tensors(g);
  EXPECT_EQ(named.size(), manifest.size() - 1);  // all but the graph itself
  for (const ObjectTensor& t : named) EXPECT_TRUE(r.has(t.checkpoint_key)) << t.path << " " << t.checkpoint_key;

  // Our writers re-create TF's files byte for byte: the index table from its entries,
  // and the whole checkpoint from the tensors added in their data-file order.
  const std::string index = io::detail::read_file(prefix + ".index", "");
  TableWriter table;
  for (const TableEntry& e : read_table(index, prefix)) table.add(e.key, e.value);
  EXPECT_TRUE(table.finish() == index) << "index table differs";
  std::vector<CheckpointEntry> by_offset = r.entries();
  std::sort(by_offset.begin(), by_offset.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
  const std::string copy = prefix + ".copy";
  CheckpointWriter w(copy);
  for (const CheckpointEntry& e : by_offset) w.add(e.key, r.read(e.key));
  w.finish();
  EXPECT_TRUE(io::detail::read_file(copy + ".index", "") == index) << "checkpoint index differs";
  EXPECT_TRUE(io::detail::read_file(checkpoint_data_path(copy, 0, 1), "") ==
              io::detail::read_file(checkpoint_data_path(prefix, 0, 1), ""))
      << "data file differs";
}

TEST_F(TfOracle, ReadsTensorFlowsCheckpoints) {
  ASSERT_NO_FATAL_FAILURE(tf_writes());
  check_against_dump(dir_ + "/tf/vars/ckpt");                          // variables of every dtype
  check_against_dump(dir_ + "/tf/keras/ckpt");                         // Keras 3 model, Adam slots
  check_against_dump(dir_ + "/tf/saved_model/variables/variables");  // a SavedModel's variables
}

TEST_F(TfOracle, TensorFlowReadsAndRestoresOurs) {
  const std::string d = dir_ + "/ours";
  fs::create_directories(d + "/expect");
  struct Var {
    std::vector<std::string> path;
    Tensor value;
  };
  const std::vector<Var> vars = {
      {{"f32"}, constant({1.5f, -2.f, 3.25f, 0.f, 7.f, 8.f}, {2, 3})},
      {{"f64"}, constant(std::vector<double>{1e300, -0.5}, Shape{2}, DType::Float64)},
      {{"i32"}, constant(std::vector<int32_t>{-7, 1 << 30}, Shape{2})},
      {{"i64"}, scalar(double(int64_t(1) << 40), DType::Int64)},
      {{"flags"}, constant(std::vector<bool>{true, false, true}, Shape{3})},
      {{"f16"}, constant(std::vector<double>{0.5, -1.25, 2048}, Shape{3}, DType::Float16)},
      {{"words"}, constant(std::vector<std::string>{"", "hello", std::string(300, 'x'), "a\nb"}, Shape{2, 2})},
      {{"word"}, string_scalar("scalar string")},
      {{"empty"}, zeros(Shape{0, 4})},
      {{"large"}, arange(0, 300000)},
      {{"model", "dense", "kernel"}, ones(Shape{4, 3})},
      {{"model", "with.dot/slash"}, constant({5.f})},
      {{"save_counter"}, scalar(1, DType::Int64)},  // what tf.train.Checkpoint.save adds
  };
  ObjectGraphBuilder graph;
  CheckpointWriter w(d + "/ckpt");
  nlohmann::json manifest = nlohmann::json::array();
  for (size_t i = 0; i < vars.size(); ++i) {
    const std::string key = graph.add_variable(vars[i].path);
    w.add(key, vars[i].value);
    nlohmann::json item = {{"key", key}, {"path", vars[i].path}, {"dtype", dtype_name(vars[i].value.dtype())},
                           {"shape", vars[i].value.shape().to_vector()}};
    if (vars[i].value.dtype() == DType::String) {
      item["strings"] = nlohmann::json::array();
      for (const std::string& s : vars[i].value.to_vector<std::string>()) item["strings"].push_back(hex(s));
    } else {
      item["npy"] = std::to_string(i) + ".npy";
      io::write_npy(d + "/expect/" + item["npy"].get<std::string>(), vars[i].value);
    }
    manifest.push_back(item);
  }
  w.add_object_graph(graph.graph());
  w.finish();
  io::detail::write_file_atomic(d + "/expect/manifest.json", manifest.dump(1), "");
  std::string log;
  EXPECT_EQ(run_tf("check_ours '" + d + "'", &log), 0) << log;
  EXPECT_NE(log.find("ok"), std::string::npos) << log;
}

TEST_F(TfOracle, SavedModelProtoSurvivesOurParseAndSerialize) {
  ASSERT_NO_FATAL_FAILURE(tf_writes());
  const std::string original = dir_ + "/tf/saved_model/saved_model.pb";
  tensorflow::SavedModel m;
  ASSERT_TRUE(m.ParseFromString(io::detail::read_file(original, "")));
  ASSERT_EQ(m.meta_graphs_size(), 1);
  const auto& mg = m.meta_graphs(0);
  EXPECT_TRUE(mg.signature_def().count("serving_default"));
  EXPECT_GT(mg.graph_def().library().function_size(), 0);
  EXPECT_GT(mg.object_graph_def().nodes_size(), 0);
  const std::string ours = dir_ + "/ours_saved_model.pb";
  io::detail::write_file_atomic(ours, m.SerializeAsString(), "");
  std::string log;
  EXPECT_EQ(run_tf("same_saved_model '" + original + "' '" + ours + "'", &log), 0) << log;
}

}  // namespace
}  // namespace deepflow::tf
