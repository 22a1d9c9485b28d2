// SPDX-License-Identifier: Apache-2.0
// Keras model files (deepflow/io/keras_file.h) against Keras itself (tests/io/keras_files.py,
// run in the peers environment, its files cached in the build tree): .keras files Keras 3
// wrote and legacy .h5 files tf-keras wrote load here and predict as Keras did; .keras
// files we write load in Keras 3 and predict as we do, and back here; a layer class we
// lack is named; the TF corpus's Keras files (data/tf_models) match Keras; every
// truncation of a small file and of its weights member is a clean error naming the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zip.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "deepflow/deepflow.h"
#include "deepflow/io/keras_file.h"
#include "deepflow/io/keras_saving.h"
#include "deepflow/io/npy.h"
#include "deepflow/keras/layers.h"
#include "io_test_util.h"
#include "oracle.h"
#include "test_util.h"

namespace deepflow::keras {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using deepflow::testing::error_of;

std::string script() { return std::string(DEEPFLOW_TESTS_SOURCE_ROOT) + "/tests/io/keras_files.py"; }

std::string run_peers(const std::string& args, const std::string& log) {
  const std::string py = deepflow::testing::peers_python();
  if (py.empty()) return "no peers python";
  const std::string cmd = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE " + py + " " + script() + " " + args + " > " +
                          log + " 2>&1";
  return std::system(cmd.c_str()) == 0 ? "" : "`" + cmd + "` failed; see " + log;
}

// The files Keras wrote, made once per version of the script (ctest runs tests in their
// own processes) and kept under the hash of its text.
const std::string& keras_dir() {
  static const std::string dir = deepflow::testing::oracle_output_dir(
      "tests/io/keras_files.py", DEEPFLOW_KERAS_TEST_CACHE, "", "cases.json", "write");
  return dir;
}

// Within 1e-4 relative of the reference (absolute near zero).
void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  for (int64_t i = 0; i < got.size(); ++i) {
    const double g = got.flat(i), w = want.flat(i);
    ASSERT_LE(std::abs(g - w), 1e-4 * std::max(1.0, std::abs(w))) << what << " element " << i;
  }
}

TensorList case_inputs(const fs::path& dir, const std::string& name, int n) {
  TensorList xs;
  for (int i = 0; i < n; ++i) xs.push_back(io::read_npy((dir / (name + ".in" + std::to_string(i) + ".npy")).string()));
  return xs;
}

void check_keras_case(const std::string& name) {
  const std::string& root = keras_dir();
  if (root.empty()) DEEPFLOW_ORACLE_MISSING("Keras 3 / tf-keras (make peers) could not write the test files");
  nlohmann::json cases;
  std::ifstream(fs::path(root) / "cases.json") >> cases;
  const auto& c = cases.at(name);
  ModelPtr model = load_model((fs::path(root) / c.at("file").get<std::string>()).string());
  const TensorList y = model->predict(case_inputs(root, name, c.at("inputs").get<int>()));
  ASSERT_EQ(y.size(), 1u) << name;
  expect_close(y[0], io::read_npy((fs::path(root) / (name + ".out.npy")).string()), name);
}

TEST(KerasFile, Keras3SequentialMlp) { check_keras_case("mlp"); }
TEST(KerasFile, Keras3FunctionalCnnWithBatchNorm) { check_keras_case("cnn"); }
TEST(KerasFile, Keras3EmbeddingLstm) { check_keras_case("text_lstm"); }
TEST(KerasFile, Keras3EmbeddingGruSequences) { check_keras_case("text_gru"); }
TEST(KerasFile, Keras3TwoInputsConcatenate) { check_keras_case("two_inputs"); }
TEST(KerasFile, TfKerasH5Cnn) { check_keras_case("tfk_cnn"); }
TEST(KerasFile, TfKerasH5EmbeddingGru) { check_keras_case("tfk_text_gru"); }
TEST(KerasFile, TfKerasH5TwoInputs) { check_keras_case("tfk_two_inputs"); }

TEST(KerasFile, UnknownLayerClassIsNamedWithItsLayer) {
  const std::string& root = keras_dir();
  if (root.empty()) DEEPFLOW_ORACLE_MISSING("Keras 3 (make peers) could not write the test files");
  const std::string path = (fs::path(root) / "unknown_layer.keras").string();
  const std::string msg = error_of([&] { load_model(path); });
  EXPECT_THAT(msg, HasSubstr("[keras.load_model] " + path));
  EXPECT_THAT(msg, HasSubstr("'unit_norm' (class UnitNormalization)"));
}

// The Keras files of the TF corpus (data/tf_models, written by TensorFlow 2.21 at install
// time): each case's outputs within 1e-4 of Keras's (`keras`: the .keras file's, `tf_keras`:
// the .h5 file's).
void check_corpus(const std::string& model, const std::string& file, const std::string& variant) {
  const fs::path dir = fs::path(DEEPFLOW_TESTS_SOURCE_ROOT) / "data" / "tf_models" / model;
  if (!fs::exists(dir / file)) DEEPFLOW_ORACLE_MISSING("the TF corpus has no " << (dir / file).string());
  ModelPtr m = load_model((dir / file).string());
  int checked = 0;
  for (const auto& c : fs::directory_iterator(dir / "cases")) {
    const fs::path outs = c.path() / variant / "serving_default";
    if (!fs::exists(c.path() / "in") || !fs::exists(outs)) continue;
    std::vector<fs::path> ins, want;
    for (const auto& p : fs::directory_iterator(c.path() / "in")) ins.push_back(p.path());
    for (const auto& p : fs::directory_iterator(outs)) want.push_back(p.path());
    ASSERT_EQ(ins.size(), 1u) << c.path();
    ASSERT_EQ(want.size(), 1u) << outs;
    expect_close(m->predict(TensorList{io::read_npy(ins[0].string())})[0], io::read_npy(want[0].string()),
                 model + "/" + file + " " + c.path().filename().string());
    ++checked;
  }
  EXPECT_GT(checked, 0) << model;
}

// text_lstm reads tokens of any length; text_gru's padded rows need masking.
TEST(KerasFile, TfCorpusKeras3Files) {
  for (const char* model : {"mlp", "cnn", "transformer", "preprocessing", "text_lstm", "text_gru"})
    check_corpus(model, "model.keras", "keras");
}
TEST(KerasFile, TfCorpusTfKerasH5Files) {
  for (const char* model : {"mlp", "cnn", "transformer", "preprocessing", "text_lstm", "text_gru"})
    check_corpus(model, "model.h5", "tf_keras");
}
// The keras.applications tier (make tf-models-apps): ZeroPadding2D, ReLU(6), depthwise convs.
TEST(KerasFile, TfCorpusApplicationFiles) {
  const fs::path dir = fs::path(DEEPFLOW_TESTS_SOURCE_ROOT) / "data" / "tf_models" / "mobilenet_v2";
  if (!fs::exists(dir / "model.keras")) GTEST_SKIP() << "the apps tier is not made (make tf-models-apps)";
  check_corpus("mobilenet_v2", "model.keras", "keras");
  check_corpus("mobilenet_v2", "model.h5", "tf_keras");
}

// --- models built here ---

// Every weight set from a seeded draw (variances positive), so nothing is at its initializer.
void fill_weights(Model& m, int64_t seed) {
  for (Variable v : m.weights()) {
    const bool variance = v.name().find("variance") != std::string::npos;
    v.assign(random_uniform(v.shape(), variance ? 0.5 : -0.5, variance ? 1.5 : 0.5, v.dtype(), seed++));
  }
}

struct Built {
  ModelPtr model;
  TensorList inputs;
};

std::map<std::string, Built> deepflow_models() {
  using namespace layers;
  std::map<std::string, Built> out;
  auto mlp = std::make_shared<Sequential>(
      std::vector<LayerPtr>{InputLayer(Shape{5}), Dense(8, {.activation = "relu"}), Dense(3, {.activation = "softmax"})},
      "df_mlp");
  out["df_mlp"] = {mlp, {random_normal({4, 5}, 0, 1, DType::Float32, 1)}};

  Tensor img = Input({8, 8, 3}, "df_image");
  Tensor x = Conv2D(6, {3, 3}, {.padding = "same", .activation = "relu"})(img);
  x = BatchNormalization()(x);
  x = MaxPooling2D({2, 2})(x);
  x = Conv2D(4, {3, 3}, {.activation = "relu"})(x);
  x = Flatten()(x);
  x = Dense(5)(x);
  out["df_cnn"] = {std::make_shared<Model>(TensorList{img}, TensorList{x}, "df_cnn"),
                   {random_normal({3, 8, 8, 3}, 0, 1, DType::Float32, 2)}};

  auto text = std::make_shared<Sequential>(
      std::vector<LayerPtr>{InputLayer(Shape{7}, DType::Int32), Embedding(20, 6), LSTM(5), Dense(2)}, "df_text");
  out["df_text"] = {text, {cast(random_uniform({3, 7}, 0, 20, DType::Float32, 3), DType::Int32)}};

  Tensor a = Input({4}, "df_a"), b = Input({4}, "df_b");
  Tensor ha = Dense(4, {.activation = "tanh"})(a);
  Tensor hb = Dense(4, {.activation = "tanh"})(Dense(4)(b));
  Tensor y = Dense(3)(Concatenate()(TensorList{ha, hb})[0]);
  out["df_two_inputs"] = {std::make_shared<Model>(TensorList{a, b}, TensorList{y}, "df_two_inputs"),
                          {random_normal({3, 4}, 0, 1, DType::Float32, 4), random_normal({3, 4}, 0, 1, DType::Float32, 5)}};
  // Padded rows: Keras 3 itself checks our masking (and the unknown-length input).
  auto masked = std::make_shared<Sequential>(
      std::vector<LayerPtr>{InputLayer(Shape{-1}, DType::Int32), Embedding(20, 6, {.mask_zero = true}),
                            GRU(5, {.return_sequences = true}), LSTM(4), Dense(2)},
      "df_masked_text");
  out["df_masked_text"] = {masked, {constant(std::vector<int32_t>{3, 9, 4, 0, 0, 0, 0, 7, 7, 1, 5, 2, 8, 6, 1, 0, 2, 0},
                                             Shape{3, 6})}};
  // Keras 3's own text_gru (an explicit NotEqual mask node) written back by us.
  const fs::path gru = fs::path(DEEPFLOW_TESTS_SOURCE_ROOT) / "data" / "tf_models" / "text_gru" / "model.keras";
  if (fs::exists(gru))
    out["df_rewritten_text_gru"] = {load_model(gru.string()),
                                    {constant(std::vector<int32_t>{4, 8, 15, 16, 0, 0, 23, 42, 1, 2, 3, 0}, Shape{2, 6})}};
  int64_t seed = 100;
  for (auto& [name, built] : out) fill_weights(*built.model, seed += 50);
  return out;
}

TEST(KerasFile, OurFilesRoundTripHere) {
  deepflow::testing::TempDir tmp;
  for (auto& [name, built] : deepflow_models()) {
    const std::string path = tmp / (name + ".keras");
    save_model(*built.model, path);
    ModelPtr back = load_model(path);
    const TensorList want = built.model->predict(built.inputs), got = back->predict(built.inputs);
    ASSERT_EQ(got.size(), want.size()) << name;
    expect_close(got[0], want[0], name + " after a round trip");
    EXPECT_EQ(back->weights().size(), built.model->weights().size()) << name;
  }
}

TEST(KerasFile, Keras3LoadsOurFiles) {
  if (deepflow::testing::peers_python().empty())
    DEEPFLOW_ORACLE_MISSING("Keras 3 (make peers) is not installed to load the files");
  deepflow::testing::TempDir tmp;
  auto models = deepflow_models();
  for (auto& [name, built] : models) {
    save_model(*built.model, tmp / (name + ".keras"));
    for (size_t i = 0; i < built.inputs.size(); ++i)
      io::write_npy(tmp / (name + ".in" + std::to_string(i) + ".npy"), built.inputs[i]);
  }
  const std::string err = run_peers("check " + tmp.path(), tmp / "check.log");
  ASSERT_EQ(err, "") << deepflow::testing::read_bytes(tmp / "check.log");
  for (auto& [name, built] : models) {
    const Tensor theirs = io::read_npy(tmp / (name + ".keras_out.npy"));
    expect_close(built.model->predict(built.inputs)[0], theirs, name + ": ours vs Keras 3 on our file");
  }
}

// --- bad input ---

// The member `name` of a zip archive in memory.
std::string zip_member(const std::string& archive, const char* name) {
  zip_error_t e;
  zip_source_t* src = zip_source_buffer_create(archive.data(), archive.size(), 0, &e);
  zip_t* z = zip_open_from_source(src, ZIP_RDONLY, &e);
  zip_stat_t st;
  zip_stat(z, name, 0, &st);
  std::string out(size_t(st.size), '\0');
  zip_file_t* f = zip_fopen(z, name, 0);
  zip_fread(f, out.data(), out.size());
  zip_fclose(f);
  zip_discard(z);
  return out;
}

// A .keras archive of the given members (stored), made with libzip as a writer other
// than ours would.
std::string zip_of(const std::vector<std::pair<std::string, std::string>>& members) {
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* out = zip_source_buffer_create(nullptr, 0, 0, &err);
  zip_source_keep(out);
  zip_t* z = zip_open_from_source(out, ZIP_TRUNCATE, &err);
  for (const auto& [name, bytes] : members) {
    zip_source_t* s = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    const zip_int64_t i = zip_file_add(z, name.c_str(), s, 0);
    zip_set_file_compression(z, zip_uint64_t(i), ZIP_CM_STORE, 0);
  }
  zip_close(z);
  zip_stat_t st;
  zip_source_stat(out, &st);
  zip_source_open(out);
  std::string bytes(size_t(st.size), '\0');
  zip_source_read(out, bytes.data(), bytes.size());
  zip_source_close(out);
  zip_source_free(out);
  return bytes;
}

TEST(KerasFile, EveryTruncationIsACleanError) {
  using namespace layers;
  auto small = std::make_shared<Sequential>(
      std::vector<LayerPtr>{InputLayer(Shape{3}), Dense(2, {.activation = "relu"}), Dense(1)}, "trunc_small");
  const auto start = std::chrono::steady_clock::now();
  const std::string file = keras_file_bytes(*small, "small.keras");
  ASSERT_NO_THROW(load_keras_file_from_memory(file, "small.keras"));
  for (size_t n = 0; n < file.size(); ++n) {
    const std::string msg = error_of([&] { load_keras_file_from_memory(file.substr(0, n), "small.keras"); });
    ASSERT_THAT(msg, HasSubstr("[keras.load_model] small.keras: ")) << "truncated to " << n << " bytes";
  }
  // The weights member cut short inside a well-formed archive.
  const std::string h5 = keras_weights_h5_bytes(*small);
  const std::string config = zip_member(file, "config.json");
  ASSERT_NO_THROW(load_keras_file_from_memory(zip_of({{"config.json", config}, {"model.weights.h5", h5}}), "w.keras"));
  for (size_t n = 0; n < h5.size(); ++n) {
    const std::string msg = error_of([&] {
      load_keras_file_from_memory(zip_of({{"config.json", config}, {"model.weights.h5", h5.substr(0, n)}}), "w.keras");
    });
    ASSERT_THAT(msg, HasSubstr("[keras.load_model] w.keras: ")) << "weights truncated to " << n << " bytes";
  }
  // About 3 s on an idle core (a wall-clock bound here would fail under a loaded machine).
  std::cout << "truncations: " << file.size() << " file lengths and " << h5.size() << " weights lengths in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
}

TEST(KerasFile, WrongShapeNamesTheWeight) {
  using namespace layers;
  auto a = std::make_shared<Sequential>(std::vector<LayerPtr>{InputLayer(Shape{3}), Dense(2, {.name = "head"})}, "ws_a");
  auto b = std::make_shared<Sequential>(std::vector<LayerPtr>{InputLayer(Shape{4}), Dense(2, {.name = "head"})}, "ws_b");
  const std::string config = zip_member(keras_file_bytes(*a), "config.json");
  // a's architecture with b's weights: the kernel is [4, 2] in the file, [3, 2] here.
  const std::string msg = error_of([&] {
    load_keras_file_from_memory(zip_of({{"config.json", config}, {"model.weights.h5", keras_weights_h5_bytes(*b)}}),
                                "mixed.keras");
  });
  EXPECT_THAT(msg, HasSubstr("[keras.load_model] mixed.keras: layer 'head' weight 0"));
  EXPECT_THAT(msg, HasSubstr("'/layers/dense/vars/0' is float32[4,2]"));
}

TEST(KerasFile, SubclassedModelsAndH5OutputAreRefused) {
  auto sub = std::make_shared<Model>("sub");
  EXPECT_THAT(error_of([&] { keras_file_bytes(*sub, "s.keras"); }), HasSubstr("[keras.save_model] s.keras: model 'sub'"));
  auto m = std::make_shared<Sequential>(std::vector<LayerPtr>{layers::InputLayer(Shape{2}), layers::Dense(1)});
  EXPECT_THAT(error_of([&] { save_keras_file(*m, "/tmp/x.h5"); }), HasSubstr(".keras format only"));
}

}  // namespace
}  // namespace deepflow::keras
