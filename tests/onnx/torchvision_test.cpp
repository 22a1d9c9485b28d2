// SPDX-License-Identifier: Apache-2.0
// Whole models exported from PyTorch: torchvision classifiers (random weights, calibrated
// BatchNorms) that scripts/make-onnx-models.py writes with torch's outputs for a fixed
// input at batch 1 and 8. Each model is imported once and must match torch to
// max|a-b| <= 1e-4 * max(1, max|b|) at both batches (one import, dynamic batch).
//
// The models directory: $DEEPFLOW_ONNX_MODELS, else the compile definition
// DEEPFLOW_ONNX_MODELS_DIR; a model (or the directory) that is missing is skipped, saying
// how to make it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "deepflow/onnx/onnx.h"
#include "oracle.h"

using namespace deepflow;
namespace fs = std::filesystem;

namespace {

constexpr double kRelTol = 1e-4;
constexpr int kBatches[] = {1, 8};

std::string models_dir() {
  if (const char* env = std::getenv("DEEPFLOW_ONNX_MODELS"); env && *env) return env;
#ifdef DEEPFLOW_ONNX_MODELS_DIR
  return DEEPFLOW_ONNX_MODELS_DIR;
#else
  return "";
#endif
}

class TorchvisionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchvisionTest, MatchesTorch) {
  const std::string dir = models_dir();
  if (dir.empty()) DEEPFLOW_ORACLE_MISSING("set DEEPFLOW_ONNX_MODELS (scripts/make-onnx-models.py OUTDIR writes the models)");
  const fs::path model_dir = fs::path(dir) / GetParam();
  const fs::path model_path = model_dir / "model.onnx";
  if (!fs::exists(model_path)) {
    DEEPFLOW_ORACLE_MISSING(model_path << " is missing: /usr/bin/python3 scripts/make-onnx-models.py " << dir);
  }

  auto t0 = std::chrono::steady_clock::now();
  onnx::OnnxModel model = onnx::import_model(model_path.string());
  const double import_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(model.inputs().size(), 1u);
  ASSERT_EQ(model.outputs().size(), 1u);
  EXPECT_EQ(model.inputs()[0].name, "input");
  EXPECT_EQ(model.outputs()[0].name, "output");

  for (int batch : kBatches) {
    const fs::path data = model_dir / ("b" + std::to_string(batch)) / "test_data_set_0";
    if (!fs::exists(data / "input_0.pb") || !fs::exists(data / "output_0.pb")) {
      ADD_FAILURE() << data << ": input_0.pb or output_0.pb missing (rerun scripts/make-onnx-models.py)";
      continue;
    }
    const Tensor input = onnx::read_tensor_file((data / "input_0.pb").string());
    const Tensor want = onnx::read_tensor_file((data / "output_0.pb").string());
    t0 = std::chrono::steady_clock::now();
    const auto outputs = model.run({{"input", input}});
    const double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(outputs.count("output"), 1u);
    const Tensor& got = outputs.at("output");
    ASSERT_EQ(got.dtype(), want.dtype()) << GetParam() << " b" << batch;
    ASSERT_EQ(got.shape(), want.shape()) << GetParam() << " b" << batch;

    double max_diff = 0, max_ref = 0;
    int64_t worst = 0;
    for (int64_t i = 0; i < want.size(); ++i) {
      const double a = got.flat(i), b = want.flat(i);
      const double d = std::abs(a - b);
      if (!(d <= max_diff)) {  // NaN counts as the worst
        max_diff = d;
        worst = i;
      }
      max_ref = std::max(max_ref, std::abs(b));
    }
    const double scale = std::max(1.0, max_ref);
    // Printed for the record: the margin each model keeps under the tolerance.
    std::printf("[ torchvision ] %s b%d: max|a-b| %.3g, max|b| %.3g, max rel err %.3g (tol %.0e); import %.2fs, "
                "first run %.3fs\n",
                GetParam().c_str(), batch, max_diff, max_ref, max_diff / scale, kRelTol, import_s, run_s);
    EXPECT_LE(max_diff, kRelTol * scale) << GetParam() << " b" << batch << ": worst at [" << worst << "] got "
                                         << got.flat(worst) << ", torch " << want.flat(worst);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, TorchvisionTest,
                         ::testing::Values("resnet18", "mobilenet_v2", "squeezenet1_0", "efficientnet_b0",
                                           "shufflenet_v2_x0_5"),
                         [](const auto& info) { return info.param; });

}  // namespace
