// SPDX-License-Identifier: Apache-2.0
// SavedModels written by TensorFlow 2.21 (tests/tf/tf_saved_models.py, run here through the
// peers environment) load and run in deepflow with TensorFlow's outputs, for two batch
// sizes each: a tf.Module with two signatures, one with tf.cond and a while loop, Keras 3
// exports of an MLP, a CNN (batch norm in inference mode, depthwise convolution), an LSTM,
// a GRU (While loops over TensorLists) and multi-head attention (Einsum), and a tf-keras
// CNN (BiasAdd, FusedBatchNormV3).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "deepflow/io/npy.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/io/saved_model_formats.h"
#include "deepflow/ops/ops.h"
#include "deepflow/tf/graph_def.h"
#include "deepflow/tf/saved_model.h"
#include "oracle.h"

namespace deepflow {
namespace {

namespace fs = std::filesystem;

// The models, written by TensorFlow once (about 20 s) and kept in the build tree under
// the hash of the generator's text: ctest runs every test in its own process.
const std::string& models_dir() {
  static const std::string dir =
      testing::oracle_output_dir("tests/tf/tf_saved_models.py", DEEPFLOW_TF_TEST_CACHE, "", "cases.json");
  return dir;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  for (int64_t i = 0; i < got.size(); ++i) {
    const double g = got.flat(i), w = want.flat(i);
    ASSERT_LE(std::abs(g - w), 1e-4 * std::max(1.0, std::abs(w))) << what << " element " << i;
  }
}

void check_model(const std::string& name) {
  const std::string& root = models_dir();
  if (root.empty()) DEEPFLOW_ORACLE_MISSING("TensorFlow 2.21 (make peers) could not write the test SavedModels");
  nlohmann::json index;
  std::ifstream(fs::path(root) / "cases.json") >> index;
  const auto& entry = index.at(name);
  const std::string dir_name = entry.value("dir", name);
  const fs::path dir = fs::path(root) / dir_name;
  tf::TfSavedModel model = tf::load_tf_saved_model((dir / "saved_model").string());
  EXPECT_EQ(model.tensorflow_version(), "2.21.0");
  const tf::TfSignature& sig = model.signature(entry.at("signature"));
  for (int k : entry.at("cases")) {
    std::map<std::string, Tensor> inputs;
    for (const std::string in : entry.at("inputs")) {
      inputs[in] = io::read_npy((dir / ("case" + std::to_string(k) + ".in." + in + ".npy")).string());
    }
    std::map<std::string, Tensor> out = sig(inputs);
    for (const std::string o : entry.at("outputs")) {
      ASSERT_TRUE(out.count(o)) << name << ": no output " << o;
      expect_close(out.at(o), io::read_npy((dir / ("case" + std::to_string(k) + ".out." + o + ".npy")).string()),
                   name + " case " + std::to_string(k) + " output " + o);
    }
  }
}

TEST(TfSavedModel, ModuleWithVariablesAndTwoSignatures) {
  check_model("module_math");
  check_model("module_math_combine");
}
TEST(TfSavedModel, ModuleWithCondAndWhileLoop) { check_model("module_flow"); }
TEST(TfSavedModel, Keras3ExportOfAnMlp) { check_model("keras_mlp"); }
TEST(TfSavedModel, Keras3ExportOfACnn) { check_model("keras_cnn"); }

TEST(TfSavedModel, Keras3ExportOfAnLstm) { check_model("keras_lstm"); }
TEST(TfSavedModel, Keras3ExportOfAGru) { check_model("keras_gru"); }
TEST(TfSavedModel, Keras3ExportOfAttention) { check_model("keras_attention"); }
TEST(TfSavedModel, TfKerasCnn) { check_model("tf_keras_cnn"); }

// What `deepflow serve` runs (io::load_saved_model): each input shape gets its own traced
// graph, up to io::kMaxSpecializations; beyond that, calls run the graph with the unknown
// batch. Every path gives TensorFlow's outputs.
TEST(TfSavedModel, ServingPathSpecializesPerInputShape) {
  const std::string& root = models_dir();
  if (root.empty()) DEEPFLOW_ORACLE_MISSING("TensorFlow 2.21 (make peers) could not write the test SavedModels");
  nlohmann::json index;
  std::ifstream(fs::path(root) / "cases.json") >> index;
  const auto& entry = index.at("keras_cnn");
  const fs::path dir = fs::path(root) / entry.value("dir", "keras_cnn");
  const std::string in_key = entry.at("inputs")[0], out_key = entry.at("outputs")[0];
  tf::register_tf_saved_model_format();
  io::SavedModel model = io::load_saved_model((dir / "saved_model").string());
  const io::LoadedSignature& sig = model.signature(entry.at("signature"));
  EXPECT_EQ(sig.specialized_shapes(), 0u);
  std::vector<std::pair<Tensor, Tensor>> cases;
  for (int k : entry.at("cases")) {
    const std::string c = "case" + std::to_string(k);
    cases.emplace_back(io::read_npy((dir / (c + ".in." + in_key + ".npy")).string()),
                       io::read_npy((dir / (c + ".out." + out_key + ".npy")).string()));
  }
  ASSERT_GE(cases.size(), 2u);
  ASSERT_NE(cases[0].first.shape(), cases[1].first.shape());
  for (int round = 0; round < 2; ++round)
    for (const auto& [x, want] : cases) expect_close(sig({{in_key, x}}).at(out_key), want, "specialized");
  EXPECT_EQ(sig.specialized_shapes(), cases.size());  // the second round reused the graphs

  // More batch sizes than the cache holds (rows of the largest case, repeated): each correct.
  const auto& [x, y] = *std::max_element(cases.begin(), cases.end(), [](const auto& a, const auto& b) {
    return a.first.shape()[0] < b.first.shape()[0];
  });
  for (int64_t b = 1; b <= int64_t(io::kMaxSpecializations) + 3; ++b) {
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < b; ++i) ids.push_back(int32_t(i % x.shape()[0]));
    const Tensor rows = constant(ids);
    expect_close(sig({{in_key, gather(x, rows)}}).at(out_key), gather(y, rows), "batch " + std::to_string(b));
  }
  EXPECT_EQ(sig.specialized_shapes(), io::kMaxSpecializations);
}

// A TF1-style SavedModel (tf.compat.v1 builder): classify and regress signatures on
// serialized tf.Examples (ParseExampleV2), restored by running saver_def's restore NoOp.
TEST(TfSavedModel, EstimatorStyleClassifyAndRegressOnExamples) {
  check_model("estimator_style");
  check_model("estimator_style_regress");
}

// The module's function frozen by convert_variables_to_constants_v2: a bare GraphDef.
TEST(TfGraphDef, FrozenFunctionMatchesTensorFlow) {
  const std::string& root = models_dir();
  if (root.empty()) DEEPFLOW_ORACLE_MISSING("TensorFlow 2.21 (make peers) could not write the test SavedModels");
  nlohmann::json index;
  std::ifstream(fs::path(root) / "cases.json") >> index;
  const auto& entry = index.at("frozen_math");
  const fs::path dir = fs::path(root) / "frozen_math";
  std::vector<std::string> outputs = entry.at("outputs");
  tf::GraphDefModel m = tf::import_graph_def((dir / "frozen.pb").string(), {}, outputs);
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0] + ":0", entry.at("inputs")[0].get<std::string>());
  TensorList out = m.function(TensorList{io::read_npy((dir / "case0.in.x.npy").string())});
  ASSERT_EQ(out.size(), outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string file = outputs[i];
    std::replace(file.begin(), file.end(), ':', '_');
    expect_close(out[i], io::read_npy((dir / ("case0.out." + file + ".npy")).string()), "frozen " + outputs[i]);
  }
  // Imported through the CLI into a deepflow SavedModel that serves the same outputs.
  const std::string dest = (fs::temp_directory_path() / ("deepflow_frozen_sm_" + std::to_string(::getpid()))).string();
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
      fs::remove(dir + ".log", ec);
    }
  } cleanup{dest};
  const std::string cmd = std::string(DEEPFLOW_CLI_PATH) + " tf import " + (dir / "frozen.pb").string() + " " + dest +
                          " --to saved_model --outputs " + outputs[0] + " > " + dest + ".log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  io::SavedModel sm = io::load_saved_model(dest);
  const auto& sig = sm.signature("serving_default");
  ASSERT_EQ(sig.inputs().size(), 1u);
  std::map<std::string, Tensor> r = sig({{sig.inputs().begin()->first, io::read_npy((dir / "case0.in.x.npy").string())}});
  ASSERT_EQ(r.size(), 1u);
  expect_close(r.begin()->second, out[0], "imported SavedModel");
}

// Every truncation of a small TF SavedModel's files (saved_model.pb, the checkpoint index and
// its data shard) fails to load with a deepflow::Error naming the file, never a crash or a
// model that loads with missing parts; the intact copy then loads and answers as before.
TEST(TfSavedModel, EveryTruncationIsAClearError) {
  const std::string& root = models_dir();
  if (root.empty()) DEEPFLOW_ORACLE_MISSING("TensorFlow 2.21 (make peers) could not write the test SavedModels");
  const fs::path dir = fs::temp_directory_path() / ("deepflow_tf_truncated_" + std::to_string(::getpid()));
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  fs::copy(fs::path(root) / "module_math" / "saved_model", dir, fs::copy_options::recursive);
  const Tensor x = io::read_npy((fs::path(root) / "module_math" / "case0.in.x.npy").string());
  const Tensor want = tf::load_tf_saved_model(dir.string()).signature("serving_default")({{"x", x}}).begin()->second;
  for (const char* name : {"saved_model.pb", "variables/variables.index", "variables/variables.data-00000-of-00001"}) {
    const fs::path file = dir / name;
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(bytes.size(), 0u) << file;
    int failures = 0;
    for (size_t len = 0; len < bytes.size(); ++len) {
      std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(len));
      try {
        tf::load_tf_saved_model(dir.string()).signature("serving_default")({{"x", x}});
        ADD_FAILURE() << file << " cut to " << len << " of " << bytes.size() << " bytes loaded";
      } catch (const Error& e) {
        const std::string what = e.what();
        if (what.find(dir.string()) == std::string::npos && ++failures <= 3)
          ADD_FAILURE() << file << " cut to " << len << " bytes: the error does not name the model: " << what;
      }
    }
    std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  }
  expect_close(tf::load_tf_saved_model(dir.string()).signature("serving_default")({{"x", x}}).begin()->second, want,
               "intact copy");
}

TEST(TfSavedModel, WrongTagsNameTheAvailableOnes) {
  const std::string& root = models_dir();
  if (root.empty()) DEEPFLOW_ORACLE_MISSING("TensorFlow 2.21 (make peers) could not write the test SavedModels");
  try {
    tf::load_tf_saved_model(root + "/module_math/saved_model", {"train"});
    FAIL() << "loaded with the wrong tags";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("available: { serve }"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace deepflow
