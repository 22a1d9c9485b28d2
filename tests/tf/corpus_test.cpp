// SPDX-License-Identifier: Apache-2.0
// The TensorFlow-written corpus (scripts/make-tf-models.py into data/tf_models, made at
// install time; docs/tf_corpus.md): for every model, each SavedModel variant through
// io::load_saved_model (Keras 3 exports, tf-keras SavedModels, tf.Modules, a TF1 builder's),
// its frozen GraphDef through tf::import_graph_def, and the `deepflow saved_model run`
// command, on every stored case, against TensorFlow's outputs within 1e-4 (relative).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "deepflow/io/npy.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/tf/graph_def.h"
#include "deepflow/tf/saved_model.h"
#include "oracle.h"

namespace deepflow {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path corpus_dir() {
  if (const char* d = std::getenv("DEEPFLOW_TF_MODELS"); d && *d) return d;
  return fs::path(DEEPFLOW_TESTS_SOURCE_ROOT) / "data" / "tf_models";
}

std::vector<std::string> corpus_models() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(corpus_dir(), ec)) {
    if (fs::exists(e.path() / "io.json") && fs::exists(e.path() / "done.json") && fs::exists(e.path() / "saved_model"))
      out.push_back(e.path().filename());
  }
  std::sort(out.begin(), out.end());
  return out;
}

json read_json(const fs::path& p) {
  json j;
  std::ifstream(p) >> j;
  return j;
}

::testing::AssertionResult close(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    return ::testing::AssertionFailure() << "got " << dtype_name(got.dtype()) << got.shape() << ", TF "
                                         << dtype_name(want.dtype()) << want.shape();
  }
  for (int64_t i = 0; i < got.size(); ++i) {
    if (got.dtype() == DType::String) {
      if (got.data<std::string>()[i] != want.data<std::string>()[i]) return ::testing::AssertionFailure() << i;
      continue;
    }
    const double g = got.flat(i), w = want.flat(i);
    if (!(std::abs(g - w) <= 1e-4 * std::max(1.0, std::abs(w)))) {
      return ::testing::AssertionFailure() << "element " << i << ": " << g << " vs TF's " << w;
    }
  }
  return ::testing::AssertionSuccess();
}

// What the importer does not take yet, each with the error it must give (so a fix, or a
// different failure, is noticed): (model, test) -> (error text, reason).
const std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> kKnownFailures = {};

class Corpus : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    tf::register_tf_saved_model_format();
    dir_ = corpus_dir() / GetParam();
    io_ = read_json(dir_ / "io.json");
  }
  void check_saved_models();
  void check_frozen();
  void check_command_line();
  Tensor input(const json& c, const std::string& name) const {
    return io::read_npy((dir_ / c.at("inputs").at(name).at("file").get<std::string>()).string());
  }
  // Runs `body`; for a known failure, checks that it fails as listed and skips with the reason.
  template <class F>
  void run(const char* test, F body) {
    auto known = kKnownFailures.find({GetParam(), test});
    if (known == kKnownFailures.end()) return body();
    try {
      body();
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(known->second.first), std::string::npos) << e.what();
      GTEST_SKIP() << "known: " << known->second.second;
    }
    ADD_FAILURE() << GetParam() << " " << test << " passes now: remove it from kKnownFailures";
  }
  fs::path dir_;
  json io_;
};

TEST_P(Corpus, SavedModelsMatchTensorFlow) { run("SavedModel", [&] { check_saved_models(); }); }
TEST_P(Corpus, FrozenGraphMatchesTensorFlow) { run("Frozen", [&] { check_frozen(); }); }
TEST_P(Corpus, CommandLineRunMatchesTensorFlow) { run("CommandLine", [&] { check_command_line(); }); }

void Corpus::check_saved_models() {
  int checked = 0;
  // Each variant as served (a graph specialized to each input shape) and as saved (one
  // graph with the unknown dims, which each call resolves).
  for (const auto& [variant, info] : io_.at("variants").items()) {
    for (bool specialize : {true, false}) {
      const auto tags = info.value("tags", std::vector<std::string>{"serve"});
      io::SavedModel model = io::load_saved_model((dir_ / variant).string(), tags, {.specialize_shapes = specialize});
      for (const json& c : io_.at("cases")) {
        for (const auto& [sig, by_variant] : c.at("signatures").items()) {
          if (!by_variant.contains(variant)) continue;
          const json& v = by_variant.at(variant);
          std::map<std::string, Tensor> feeds;
          for (const auto& [key, name] : v.at("feeds").items()) feeds[key] = input(c, name);
          std::map<std::string, Tensor> out = model.signature(sig)(feeds);
          for (const auto& [key, o] : v.at("outputs").items()) {
            ASSERT_TRUE(out.count(key)) << variant << " " << sig << ": no output " << key;
            EXPECT_TRUE(close(out.at(key), io::read_npy((dir_ / o.at("file").get<std::string>()).string())))
                << GetParam() << " " << variant << (specialize ? "" : " (unspecialized)") << " signature " << sig
                << " case " << c.at("name") << " output " << key;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

void Corpus::check_frozen() {
  if (!io_.contains("frozen")) GTEST_SKIP() << GetParam() << " has no frozen graph";
  const json& f = io_.at("frozen");
  std::vector<std::string> inputs, outputs, input_keys, output_keys;
  for (const auto& [k, v] : f.at("inputs").items()) {
    input_keys.push_back(k);
    inputs.push_back(v);
  }
  for (const auto& [k, v] : f.at("outputs").items()) {
    output_keys.push_back(k);
    outputs.push_back(v);
  }
  tf::GraphDefModel m = tf::import_graph_def((dir_ / f.at("file").get<std::string>()).string(), inputs, outputs);
  int checked = 0;
  for (const json& c : io_.at("cases")) {
    for (const auto& [sig, by_variant] : c.at("signatures").items()) {
      if (!by_variant.contains("frozen")) continue;
      const json& v = by_variant.at("frozen");
      TensorList args;
      for (const std::string& in : inputs) args.push_back(input(c, v.at("feeds").at(in)));
      TensorList out = m.function(args);
      for (size_t i = 0; i < outputs.size(); ++i) {
        const json& o = v.at("outputs").at(output_keys[i]);
        EXPECT_TRUE(close(out[i], io::read_npy((dir_ / o.at("file").get<std::string>()).string())))
            << GetParam() << " frozen case " << c.at("name") << " output " << output_keys[i];
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// The first case of serving_default through `deepflow saved_model run --inputs --outdir`.
void Corpus::check_command_line() {
  const json& c = io_.at("cases").at(0);
  if (!c.at("signatures").contains("serving_default") || !c.at("signatures").at("serving_default").contains("saved_model"))
    GTEST_SKIP() << GetParam() << " has no serving_default signature";
  const json& v = c.at("signatures").at("serving_default").at("saved_model");
  std::string inputs;
  for (const auto& [key, name] : v.at("feeds").items())
    inputs += (inputs.empty() ? "" : ";") + key + "=" + (dir_ / c.at("inputs").at(name).at("file").get<std::string>()).string();
  const fs::path out = fs::temp_directory_path() / ("deepflow_corpus_" + GetParam() + "_" + std::to_string(::getpid()));
  const std::vector<std::string> tags = io_.at("variants").at("saved_model").value("tags", std::vector<std::string>{"serve"});
  const std::string cmd = std::string(DEEPFLOW_CLI_PATH) + " saved_model run --dir " + (dir_ / "saved_model").string() +
                          " --tag_set " + tags.at(0) + " --signature_def serving_default --inputs '" + inputs +
                          "' --outdir " + out.string() + " > " + out.string() + ".log 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::stringstream log;
    log << std::ifstream(out.string() + ".log").rdbuf();
    throw std::runtime_error(cmd + " failed: " + log.str());
  }
  for (const auto& [key, o] : v.at("outputs").items()) {
    EXPECT_TRUE(close(io::read_npy((out / (key + ".npy")).string()), io::read_npy((dir_ / o.at("file").get<std::string>()).string())))
        << GetParam() << " CLI output " << key;
  }
  std::error_code ec;
  fs::remove_all(out, ec);
  fs::remove(out.string() + ".log", ec);
}

INSTANTIATE_TEST_SUITE_P(Tf, Corpus, ::testing::ValuesIn(corpus_models()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Corpus);

TEST(CorpusInstalled, HasTheDefaultTier) {
  if (corpus_models().empty())
    DEEPFLOW_ORACLE_MISSING("no TensorFlow-written corpus in " << corpus_dir() << " (scripts/make-tf-models.py)");
  for (const char* m : {"mlp", "cnn", "control_flow", "estimator", "text_lstm", "transformer"}) {
    EXPECT_TRUE(fs::exists(corpus_dir() / m / "done.json")) << m;
  }
}

}  // namespace
}  // namespace deepflow
