// SPDX-License-Identifier: Apache-2.0
// TensorFlow-format SavedModels through the front doors: keras::save_model with
// {.format = "TensorFlow"} (a Sequential CNN trained one epoch with Adam), io::save_saved_model's format option, and
// `deepflow onnx convert X --to saved_model DIR --format tf`; TensorFlow 2.21 runs each
// (tests/tf/tf_run_saved_model.py) with deepflow's outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#include "deepflow/core/error.h"
#include "deepflow/io/keras_saving.h"
#include "deepflow/io/npy.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/model.h"
#include "deepflow/keras/optimizers.h"
#include "deepflow/ops/ops.h"
#include "deepflow/tf/saved_model.h"
#include "oracle.h"

namespace deepflow {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("deepflow_tf_export_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const Tensor g = cast(got, DType::Float64), w = cast(want, DType::Float64);
  for (int64_t i = 0; i < g.size(); ++i) {
    const double a = g.data<double>()[i], b = w.data<double>()[i];
    ASSERT_LE(std::abs(a - b), 1e-4 * std::max(1.0, std::abs(b))) << what << " element " << i << ": " << a
                                                                    << " vs " << b;
  }
}

// Runs the model in TensorFlow (both loaders) and compares every output with `want`.
void expect_tf_outputs(const fs::path& model, const std::map<std::string, Tensor>& inputs,
                       const std::map<std::string, Tensor>& want) {
  const std::string py = testing::peers_python();
  if (py.empty()) DEEPFLOW_ORACLE_MISSING("TensorFlow 2.21 (make peers) is missing");
  const fs::path out = model.string() + "_out";
  fs::create_directories(out);
  std::string cmd = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE " + py + " " + DEEPFLOW_TESTS_SOURCE_ROOT +
                    "/tests/tf/tf_run_saved_model.py " + model.string() + " serving_default " + out.string();
  for (const auto& [k, t] : inputs) {
    const std::string path = (out / ("in_" + k + ".npy")).string();
    io::write_npy(path, t);
    cmd += " " + k + "=" + path;
  }
  cmd += " > " + (out / "tf.log").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << "\nsee " << (out / "tf.log").string();
  for (const auto& [k, t] : want) {
    for (const std::string prefix : {"", "session_"}) {
      const fs::path p = out / (prefix + k + ".npy");
      ASSERT_TRUE(fs::exists(p)) << p;
      expect_close(io::read_npy(p.string()), t, "TensorFlow " + prefix + k);
    }
  }
}

TEST(TfExportKeras, SequentialCnnSavedInTensorFlowFormat) {
  tf::register_tf_saved_model_format();
  using namespace keras;
  auto model = std::make_shared<Sequential>(
      std::vector<LayerPtr>{layers::InputLayer(Shape{10, 10, 3}, DType::Float32, "image"),
                            layers::Conv2D(4, {3, 3}, {.padding = "same", .activation = "relu", .name = "conv"}),
                            layers::DepthwiseConv2D({3, 3}, {.name = "dw"}), layers::BatchNormalization({.name = "bn"}),
                            layers::Activation("relu6"), layers::MaxPooling2D(2), layers::Flatten(),
                            layers::Dense(3, {.activation = "softmax", .name = "head"})},
      "tf_cnn");
  // Trained a little: batch norm's moving statistics move, and the optimizer's variables
  // (iterations, slots) are saved with the weights.
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = {"sparse_categorical_crossentropy"}});
  const Tensor train_x = random_normal({16, 10, 10, 3}, 0, 1, DType::Float32, 3);
  const Tensor train_y = constant(std::vector<int32_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0});
  model->fit(train_x, train_y, {.batch_size = 8, .epochs = 1, .verbose = 0});
  const Tensor x = random_normal({2, 10, 10, 3}, 0, 1, DType::Float32, 5);
  const Tensor want = (*model)(TensorList{x}, false).at(0);
  const fs::path root = fresh_dir("keras");
  const fs::path dir = root / "cnn";
  keras::save_model(*model, dir.string(), {.format = "TensorFlow"});
  ASSERT_TRUE(tf::is_tf_saved_model(dir.string()));

  tf::TfSavedModel back = tf::load_tf_saved_model(dir.string());
  const tf::TfSignature& sig = back.signature("serving_default");
  ASSERT_EQ(sig.inputs().size(), 1u);
  ASSERT_EQ(sig.outputs().size(), 1u);
  const std::string in_key = sig.inputs().begin()->first, out_key = sig.outputs().begin()->first;
  expect_close(sig({{in_key, x}}).at(out_key), want, "round trip");
  // io::load_saved_model takes it too (through the TensorFlow format).
  expect_close(io::load_saved_model(dir.string()).signature("serving_default")({{in_key, x}}).at(out_key), want,
               "io::load_saved_model");
  expect_tf_outputs(dir, {{in_key, x}}, {{out_key, want}});
  std::error_code ec;
  if (!::testing::Test::HasFailure()) fs::remove_all(root, ec);
}

TEST(TfExportKeras, UnknownFormatIsAnError) {
  Variable w(constant({1.f, 2.f}), "w");
  Function f = function([&](const TensorList& xs) { return TensorList{xs[0] * w.value()}; },
                        {.input_signature = Signature{{DType::Float32, {2}}}});
  const fs::path root = fresh_dir("format");
  try {
    io::save_saved_model((root / "m").string(), {{.fn = f.get_concrete_function()}}, {.format = "NoSuchFormat"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NoSuchFormat"), std::string::npos) << e.what();
  }
  std::error_code ec;
  fs::remove_all(root, ec);
}

TEST(TfExportCli, OnnxConvertToTensorFlowFormat) {
  const std::string py = testing::peers_python();
  if (py.empty()) DEEPFLOW_ORACLE_MISSING("the peers environment (onnx, TensorFlow 2.21) is missing");
  const fs::path root = fresh_dir("cli");
  const fs::path onnx = root / "mlp.onnx", dir = root / "sm";
  const std::string make = py + " " + DEEPFLOW_TESTS_SOURCE_ROOT + "/tests/tf/make_onnx_mlp.py " + onnx.string();
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  const std::string convert = std::string(DEEPFLOW_CLI_PATH) + " onnx convert " + onnx.string() +
                              " --to saved_model " + dir.string() + " --format tf > " + (root / "cli.log").string() +
                              " 2>&1";
  ASSERT_EQ(std::system(convert.c_str()), 0) << convert;
  ASSERT_TRUE(tf::is_tf_saved_model(dir.string()));
  const Tensor x = random_normal({3, 4}, 0, 1, DType::Float32, 9);
  const Tensor want = tf::load_tf_saved_model(dir.string()).signature("serving_default")({{"x", x}}).at("y");
  // deepflow's own format of the same file gives the same numbers.
  const fs::path own = root / "own";
  const std::string convert_own = std::string(DEEPFLOW_CLI_PATH) + " onnx convert " + onnx.string() +
                                  " --to saved_model " + own.string() + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(convert_own.c_str()), 0) << convert_own;
  expect_close(io::load_saved_model(own.string()).signature("serving_default")({{"x", x}}).at("y"), want, "own format");
  expect_tf_outputs(dir, {{"x", x}}, {{"y", want}});
  std::error_code ec;
  if (!::testing::Test::HasFailure()) fs::remove_all(root, ec);
}

}  // namespace
}  // namespace deepflow
