// SPDX-License-Identifier: Apache-2.0
// io::Checkpoint and TensorFlow's tf.train.Checkpoint of Keras models, both ways
// (deepflow/tf/checkpoint_format.cpp). TensorFlow 2.21 (tests/tf/tf_keras_checkpoint.py)
// trains a Keras 3 and a tf-keras MLP and CNN (batch norm) with Adam and writes their
// checkpoints; the same architectures built here restore them through the object graph
// with TensorFlow's predictions, and one more train step lands on TensorFlow's next
// checkpoint (weights, moving statistics, iterations and Adam's slots). Then ours, written
// in TensorFlow's format, restore in TensorFlow (assert_consumed) with our predictions and
// our next step. Without TensorFlow those skip (fail under CI); the round trip of our
// TensorFlow-format files and the mismatch errors run on their own.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "deepflow/io/checkpoint.h"
#include "deepflow/io/npy.h"
#include "deepflow/keras/keras.h"
#include "deepflow/tf/checkpoint.h"
#include "oracle.h"
#include "test_util.h"

namespace deepflow {
namespace {

namespace fs = std::filesystem;
using deepflow::testing::error_of;

const std::vector<std::string> kCases = {"keras3_mlp", "keras3_cnn", "tf_keras_mlp", "tf_keras_cnn"};

std::string arch_of(const std::string& c) { return c.substr(c.rfind('_') + 1); }

// TensorFlow's checkpoints, written once (about 15 s) and kept in the build tree under the
// hash of the script's text: ctest runs every test in its own process.
const std::string& tf_dir() {
  static const std::string dir =
      testing::oracle_output_dir("tests/tf/tf_keras_checkpoint.py", DEEPFLOW_TF_TEST_CACHE, "keras_ckpt_",
                                 "tf_keras_cnn/next.index", "write");
  return dir;
}

// The script's architectures, compiled with another learning rate than TensorFlow's (the
// checkpoint's must come across).
std::shared_ptr<keras::Sequential> build(const std::string& arch, int64_t hidden = 8) {
  namespace L = keras::layers;
  std::vector<keras::LayerPtr> layers;
  if (arch == "mlp") {
    layers = {L::InputLayer(Shape{4}), L::Dense(hidden, "relu"), L::Dense(3)};
  } else {
    layers = {L::InputLayer(Shape{6, 6, 2}), L::Conv2D(3, 3, {.activation = "relu"}), L::BatchNormalization(),
              L::Flatten(), L::Dense(2)};
  }
  auto m = std::make_shared<keras::Sequential>(layers);
  m->compile({.optimizer = keras::optimizers::Adam({.learning_rate = 0.001}), .loss = {"mse"}});
  return m;
}

io::Checkpoint checkpoint_of(const std::shared_ptr<keras::Sequential>& m) {
  return io::Checkpoint({{"model", m}, {"optimizer", m->optimizer()}});
}

void expect_near(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) ASSERT_LE(std::abs(g[i] - w[i]), tol) << what << " element " << i;
}

// Every model weight and optimizer variable of a and b agree within tol.
void expect_same_state(keras::Sequential& a, keras::Sequential& b, double tol, const std::string& what) {
  const std::vector<Variable> wa = a.weights(), wb = b.weights();
  ASSERT_EQ(wa.size(), wb.size()) << what;
  for (size_t i = 0; i < wa.size(); ++i) expect_near(wa[i].value(), wb[i].value(), tol, what + ": " + wa[i].name());
  const std::vector<Variable> oa = a.optimizer()->variables(), ob = b.optimizer()->variables();
  ASSERT_EQ(oa.size(), ob.size()) << what;
  for (size_t i = 0; i < oa.size(); ++i) expect_near(oa[i].value(), ob[i].value(), tol, what + ": " + oa[i].name());
}

Tensor input(const std::string& arch, const std::string& name) {
  return io::read_npy(tf_dir() + "/" + arch + "_" + name + ".npy");
}

class KerasCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    tf::register_tf_checkpoint_format();
    std::string tmpl = ::testing::TempDir() + "keras_ckpt_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void need_tf() {
    if (tf_dir().empty()) DEEPFLOW_ORACLE_MISSING("TensorFlow 2.21 (make peers) could not write the Keras checkpoints");
  }
  std::string dir_;
};

TEST_F(KerasCheckpoint, RestoresTensorFlowsAndTrainsOnLikeIt) {
  ASSERT_NO_FATAL_FAILURE(need_tf());
  if (::testing::Test::IsSkipped()) return;
  for (const std::string& c : kCases) {
    SCOPED_TRACE(c);
    const std::string arch = arch_of(c), d = tf_dir() + "/" + c;
    auto m = build(arch);
    checkpoint_of(m).restore(d + "/ckpt").assert_consumed();
    EXPECT_EQ(m->optimizer()->iterations().value().item<int64_t>(), 2);
    EXPECT_NEAR(m->optimizer()->current_learning_rate(), 0.01, 1e-9);
    expect_near(m->predict(input(arch, "x_eval")), io::read_npy(d + "/pred.npy"), 1e-5, "predictions");

    m->train_on_batch({input(arch, "x_next")}, {input(arch, "y_next")});
    auto next = build(arch);
    checkpoint_of(next).restore(d + "/next").assert_consumed();
    EXPECT_EQ(next->optimizer()->iterations().value().item<int64_t>(), 3);
    expect_same_state(*m, *next, 1e-4, "after one more step");
  }
}

TEST_F(KerasCheckpoint, TensorFlowRestoresOursAndTrainsOnLikeUs) {
  ASSERT_NO_FATAL_FAILURE(need_tf());
  if (::testing::Test::IsSkipped()) return;
  for (const std::string& c : kCases) {
    SCOPED_TRACE(c);
    const std::string arch = arch_of(c), d = dir_ + "/" + c;
    for (const char* name : {"x_eval", "x_next", "y_next"})
      fs::copy_file(tf_dir() + "/" + arch + "_" + name + ".npy", dir_ + "/" + arch + "_" + name + ".npy",
                    fs::copy_options::overwrite_existing);
    // Our state: TF's after two steps, then one step of ours (iterations 3).
    auto m = build(arch);
    io::Checkpoint ckpt = checkpoint_of(m);
    ckpt.restore(tf_dir() + "/" + c + "/ckpt").assert_consumed();
    m->train_on_batch({input(arch, "x_next")}, {input(arch, "y_next")});
    fs::create_directories(d + "/ours");
    fs::create_directories(d + "/ours_after");
    EXPECT_EQ(ckpt.write(d + "/ours/ckpt", {.format = "TensorFlow"}), d + "/ours/ckpt");
    io::write_npy(d + "/ours_pred.npy", m->predict(input(arch, "x_eval")));
    m->train_on_batch({input(arch, "x_next")}, {input(arch, "y_next")});
    ckpt.write(d + "/ours_after/ckpt", {.format = "TensorFlow"});
  }
  const std::string cmd = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE TF_CPP_MIN_LOG_LEVEL=3 '" +
                          testing::peers_python() + "' '" DEEPFLOW_TESTS_SOURCE_ROOT
                          "/tests/tf/tf_keras_checkpoint.py' check_ours '" + dir_ + "' 2>&1";
  std::string log;
  FILE* f = ::popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) log.append(buf, n);
  EXPECT_EQ(::pclose(f), 0) << log;
  EXPECT_NE(log.find("ok 4"), std::string::npos) << log;
}

TEST_F(KerasCheckpoint, ShapeMismatchNamesTheVariableAndChangesNothing) {
  ASSERT_NO_FATAL_FAILURE(need_tf());
  if (::testing::Test::IsSkipped()) return;
  auto m = build("mlp", 9);
  const Tensor before = m->weights()[0].value();
  const std::string e = error_of([&] { checkpoint_of(m).restore(tf_dir() + "/keras3_mlp/ckpt"); });
  EXPECT_NE(e.find("[Checkpoint.restore] " + tf_dir() + "/keras3_mlp/ckpt: "), std::string::npos) << e;
  // Keras 3 saved the kernel under the optimizer's path: the message names both.
  EXPECT_NE(e.find("model/layer_with_weights-0/kernel (" + m->weights()[0].name() +
                   ") (as optimizer/_trainable_variables/0/.ATTRIBUTES/VARIABLE_VALUE): checkpoint has "
                   "float32[4,8], the model has float32[4,9]"),
            std::string::npos)
      << e;
  EXPECT_EQ(m->weights()[0].value().to_vector<double>(), before.to_vector<double>());
}

// Without TensorFlow: our TensorFlow-format files restore here into a fresh model, and the
// index is TensorFlow's (a table), keyed by our names plus the object graph.
TEST_F(KerasCheckpoint, OurTensorFlowFormatRoundTrips) {
  for (const std::string arch : {"mlp", "cnn"}) {
    SCOPED_TRACE(arch);
    auto a = build(arch);
    const Tensor x = random_normal(arch == "mlp" ? Shape{8, 4} : Shape{8, 6, 6, 2});
    const Tensor y = random_normal(Shape{8, arch == "mlp" ? 3 : 2});
    a->train_on_batch({x}, {y});
    io::Checkpoint ca = checkpoint_of(a);
    const std::string prefix = dir_ + "/" + arch;
    ca.save(prefix, {.format = "TensorFlow"});
    EXPECT_TRUE(tf::is_tf_checkpoint(prefix + "-1"));
    tf::CheckpointReader r(prefix + "-1");
    std::vector<std::string> keys;
    for (const tf::CheckpointEntry& e : r.entries())
      if (e.key != tf::kObjectGraphKey) keys.push_back(e.key);
    EXPECT_EQ(keys, ca.keys());
    auto b = build(arch);
    io::Checkpoint cb = checkpoint_of(b);
    cb.restore(dir_).assert_consumed();  // the directory's latest
    expect_same_state(*a, *b, 0, "restored");
    EXPECT_EQ(cb.save_counter().value().item<int64_t>(), 1);
    const std::string e = error_of([&] { ca.write(prefix, {.format = "nope"}); });
    EXPECT_NE(e.find("no registered checkpoint format \"nope\""), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace deepflow
