// SPDX-License-Identifier: Apache-2.0
// Real .tflite files run here as in LiteRT with its reference kernels: every float output
// within 1e-5 of LiteRT's (relative to the largest), every int8 output and the float outputs
// of the one-op hybrid models ("hyb_*") bit for bit, at each batch size a case lists (a resize
// of the -1 batch dimension), on 1 and 2 threads. The files: written by TensorFlow 2.21's
// converter (float32, float16 and dynamic-range int8 weights; small Keras models,
// MobileNetV2, IF / WHILE, one-op models of each conv / FC / pool and hybrid variant), and
// shipped by packages (MediaPipe's face detection, with sparse weights too, and hand
// landmarks; openWakeWord's models).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "deepflow/lite/interpreter.h"
#include "deepflow/lite/kernels/gemm.h"
#include "lite_test_util.h"

namespace deepflow::lite {
namespace {

using nlohmann::json;

// fast_steps >= 0: with Interpreter::set_fast_int8, int8 outputs may be that many steps from
// LiteRT's reference ones (for files with int8 outputs).
void run_case(const std::string& name, const json& c, int threads, int fast_steps = -1) {
  const std::string dir = testing::litert_cases_dir();
  const std::string file = c["file"].get<std::string>();
  auto model = Model::from_file(file.front() == '/' ? file : dir + "/" + file);
  Interpreter interp(model, threads);
  interp.set_fast_int8(fast_steps >= 0);
  for (const json& run : c["runs"]) {
    SCOPED_TRACE(name + " batch " + run["batch"].dump() + " threads " + std::to_string(threads));
    const auto& inputs = run["inputs"];
    ASSERT_EQ(inputs.size(), interp.inputs().size());
    for (size_t i = 0; i < inputs.size(); ++i)
      interp.resize_input_tensor(interp.inputs()[i], inputs[i]["shape"].get<std::vector<int>>());
    interp.allocate_tensors();
    for (size_t i = 0; i < inputs.size(); ++i) {
      Tensor& t = interp.input_tensor(static_cast<int>(i));
      const std::string bytes = testing::read_file(dir + "/" + inputs[i]["file"].get<std::string>());
      ASSERT_EQ(bytes.size(), t.bytes) << "input " << i;
      std::memcpy(t.data_ptr, bytes.data(), bytes.size());
    }
    interp.invoke();
    const auto& outputs = run["outputs"];
    ASSERT_EQ(outputs.size(), interp.outputs().size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& t = interp.output_tensor(static_cast<int>(i));
      ASSERT_EQ(t.shape, outputs[i]["shape"].get<std::vector<int>>()) << "output " << i;
      const std::string bytes = testing::read_file(dir + "/" + outputs[i]["file"].get<std::string>());
      ASSERT_EQ(bytes.size(), t.bytes);
      if (outputs[i]["dtype"] == "int8") {
        // int8 kernels follow LiteRT's reference arithmetic: bit for bit.
        const auto* want = reinterpret_cast<const int8_t*>(bytes.data());
        for (int64_t k = 0; k < t.num_elements(); ++k) {
          if (fast_steps >= 0) {
            ASSERT_LE(std::abs(t.data<int8_t>()[k] - want[k]), fast_steps) << "output " << i << " element " << k;
          } else {
            ASSERT_EQ(t.data<int8_t>()[k], want[k]) << "output " << i << " element " << k;
          }
        }
        continue;
      }
      ASSERT_EQ(outputs[i]["dtype"], "float32");
      const auto* want = reinterpret_cast<const float*>(bytes.data());
      const float* got = t.data<float>();
      if (name.rfind("hyb_", 0) == 0) {
        // One hybrid op: LiteRT's quantizers and roundings (kernels/hybrid.cpp), bit for bit.
        for (int64_t k = 0; k < t.num_elements(); ++k)
          ASSERT_EQ(std::memcmp(&got[k], &want[k], sizeof(float)), 0)
              << "output " << i << " element " << k << ": " << got[k] << " vs LiteRT's " << want[k];
        continue;
      }
      double scale = 1.0;
      for (int64_t k = 0; k < t.num_elements(); ++k) scale = std::max(scale, std::fabs(static_cast<double>(want[k])));
      for (int64_t k = 0; k < t.num_elements(); ++k)
        ASSERT_LE(std::fabs(static_cast<double>(got[k]) - want[k]), 1e-5 * scale)
            << "output " << i << " element " << k << ": " << got[k] << " vs LiteRT's " << want[k];
    }
  }
}

// The cases whose name starts with "real_" (packaged files) or not (converter output).
void run_cases(bool real, size_t at_least) {
  const json cases = testing::litert_cases();
  size_t count = 0;
  for (const auto& [name, c] : cases.items()) {
    if ((name.rfind("real_", 0) == 0) != real) continue;
    ++count;
    for (int threads : {1, 2}) {
      run_case(name, c, threads);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  if (real && count < at_least)
    DEEPFLOW_ORACLE_MISSING("only " << count << " of the packaged .tflite files are in data/tflite_files "
                                    "(scripts/fetch-test-deps.sh lite)");
  EXPECT_GE(count, at_least);
}

TEST(LiteRtFiles, ConverterFilesMatchLiteRt) {
  DEEPFLOW_NEED_LITERT_CASES();
  run_cases(false, 70);
}

TEST(LiteRtFiles, Int8FilesMatchLiteRtOnBothKernelSets) {
  // The fast int8 kernels (VNNI where the CPU has it) and the portable ones: the same bytes.
  DEEPFLOW_NEED_LITERT_CASES();
  const Simd before = simd();
  const json cases = testing::litert_cases();
  size_t count = 0;
  for (Simd isa : {Simd::kAvx2, Simd::kAvx512}) {
    set_simd(isa);
    for (const auto& [name, c] : cases.items()) {
      if (name.find("_int8_") == std::string::npos) continue;
      ++count;
      SCOPED_TRACE(std::string(isa == Simd::kAvx2 ? "portable" : "simd") + " kernels");
      run_case(name, c, 1);
      if (HasFatalFailure()) break;
    }
  }
  set_simd(before);
  EXPECT_GE(count, 28u);
}

TEST(LiteRtFiles, FastInt8IsWithinStepsOfLiteRt) {
  // Requantizing in float (XNNPACK's way) moves an op's output by at most one step; through
  // a few layers the differences add up a little.
  DEEPFLOW_NEED_LITERT_CASES();
  const json cases = testing::litert_cases();
  size_t count = 0;
  for (const auto& [name, c] : cases.items()) {
    if (name.find("_int8_int8_io") == std::string::npos) continue;
    ++count;
    run_case(name, c, 1, name.rfind("mnv3", 0) == 0 ? 8 : 3);
    if (HasFatalFailure()) return;
  }
  EXPECT_GE(count, 7u);
}

TEST(LiteRtFiles, PackagedFilesMatchLiteRt) {
  DEEPFLOW_NEED_LITERT_CASES();
  run_cases(true, 13);
}

TEST(LiteRtFiles, SignatureRunnerNamesInputsAndOutputs) {
  DEEPFLOW_NEED_LITERT_CASES();
  auto model = Model::from_file(testing::litert_cases_dir() + "/mlp_float32.tflite");
  Interpreter interp(model);
  ASSERT_EQ(interp.signature_keys(), std::vector<std::string>{"serving_default"});
  SignatureRunner& runner = interp.get_signature_runner();
  ASSERT_EQ(runner.input_names().size(), 1u);
  ASSERT_EQ(runner.output_names().size(), 1u);
  runner.resize_input(runner.input_names()[0], {2, 12});
  runner.allocate_tensors();
  Tensor& x = runner.input(runner.input_names()[0]);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = 0.1f * static_cast<float>(i % 7);
  runner.invoke();
  const Tensor& y = runner.output(runner.output_names()[0]);
  ASSERT_EQ(y.shape, (std::vector<int>{2, 4}));
  for (int r = 0; r < 2; ++r) {
    float sum = 0;
    for (int k = 0; k < 4; ++k) sum += y.data<float>()[r * 4 + k];
    EXPECT_NEAR(sum, 1.0f, 1e-5);  // a softmax row
  }
  EXPECT_THROW(interp.get_signature_runner("nope"), Error);
  EXPECT_THROW(runner.input("nope"), Error);
}

TEST(LiteRtFiles, StrictResizeTakesOnlyUnknownDimensions) {
  DEEPFLOW_NEED_LITERT_CASES();
  auto model = Model::from_file(testing::litert_cases_dir() + "/cnn_float32.tflite");
  Interpreter interp(model);
  const int in = interp.inputs()[0];
  EXPECT_EQ(interp.tensor(in).shape_signature, (std::vector<int>{-1, 20, 20, 3}));
  interp.resize_input_tensor(in, {4, 20, 20, 3}, /*strict=*/true);
  try {
    interp.resize_input_tensor(in, {4, 21, 20, 3}, /*strict=*/true);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shape_signature [-1,20,20,3]"), std::string::npos) << e.what();
  }
  interp.allocate_tensors();
  EXPECT_EQ(interp.output_tensor(0).shape, (std::vector<int>{4, 5}));
}

TEST(LiteRtFiles, Float16WeightsAreFoldedOnce) {
  DEEPFLOW_NEED_LITERT_CASES();
  // Each DEQUANTIZE of a float16 weight runs at allocate_tensors(), so the arena holds
  // activations only: the float16 file's arena is the float32 file's.
  auto f32 = Model::from_file(testing::litert_cases_dir() + "/mobilenet_v2_96_float32.tflite");
  auto f16 = Model::from_file(testing::litert_cases_dir() + "/mobilenet_v2_96_float16.tflite");
  Interpreter a(f32), b(f16);
  a.allocate_tensors();
  b.allocate_tensors();
  EXPECT_EQ(a.subgraph(0).arena_bytes(), b.subgraph(0).arena_bytes());
  EXPECT_GT(a.subgraph(0).arena_bytes(), 0u);
}

}  // namespace
}  // namespace deepflow::lite
