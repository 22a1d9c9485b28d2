// SPDX-License-Identifier: Apache-2.0
// The TF Lite converter: Keras models and traced functions to .tflite files that
// deepflow_lite runs with deepflow's outputs, in each mode (float32 within 1e-5; float16
// weights within float16 rounding and at most 0.52x the size; dynamic range and full
// integer within a few quantization steps), the interface types, the calibration methods,
// the int8 error report, and the errors (ops without a builtin or an int8 kernel, a
// representative dataset of the wrong shape, integer-only without a dataset).
// python/tests/test_lite_convert.py runs the same files in LiteRT.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "deepflow/core/error.h"
#include "deepflow/keras/keras.h"
#include "deepflow/lite/interpreter.h"
#include "deepflow/ops/ops.h"
#include "deepflow/quantize/converter.h"

using namespace deepflow;
namespace q = deepflow::quantize;

namespace {

Tensor rnd(const Shape& s, uint64_t seed) { return random_normal(s, 0.0, 1.0, DType::Float32, seed); }

// Runs a .tflite file in deepflow_lite; int8 / uint8 inputs are quantized and outputs
// dequantized with the file's parameters.
std::vector<std::vector<float>> run_lite(const std::string& bytes, const TensorList& xs, int threads = 1) {
  lite::Interpreter interp(lite::Model::from_buffer(bytes), threads);
  for (size_t i = 0; i < xs.size(); ++i)
    interp.resize_input_tensor(interp.inputs()[i], std::vector<int>(xs[i].shape().begin(), xs[i].shape().end()));
  interp.allocate_tensors();
  for (size_t i = 0; i < xs.size(); ++i) {
    lite::Tensor& t = interp.input_tensor(int(i));
    const std::vector<float> v = xs[i].to_vector<float>();
    if (t.type == lite::DType::kFloat32) {
      std::memcpy(t.data_ptr, v.data(), v.size() * 4);
      continue;
    }
    const double s = t.quant.scale[0], zp = double(t.quant.zero_point[0]);
    for (size_t k = 0; k < v.size(); ++k) {
      const double qv = std::round(v[k] / s) + zp;
      if (t.type == lite::DType::kInt8) t.data<int8_t>()[k] = int8_t(std::clamp(qv, -128.0, 127.0));
      else t.data<uint8_t>()[k] = uint8_t(std::clamp(qv, 0.0, 255.0));
    }
  }
  interp.invoke();
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < interp.outputs().size(); ++i) {
    const lite::Tensor& t = interp.output_tensor(int(i));
    std::vector<float> v(size_t(t.num_elements()));
    for (size_t k = 0; k < v.size(); ++k) {
      if (t.type == lite::DType::kFloat32) v[k] = t.data<float>()[k];
      else if (t.type == lite::DType::kInt8)
        v[k] = float(t.quant.scale[0] * (t.data<int8_t>()[k] - t.quant.zero_point[0]));
      else v[k] = float(t.quant.scale[0] * (t.data<uint8_t>()[k] - t.quant.zero_point[0]));
    }
    out.push_back(v);
  }
  return out;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(double(x)));
  return m;
}

// |got - want| <= tol * max(1, max |want|) elementwise.
void expect_near(const std::vector<float>& got, const Tensor& want, double tol, const std::string& what) {
  const std::vector<float> w = want.to_vector<float>();
  ASSERT_EQ(got.size(), w.size()) << what;
  const double scale = std::max(1.0, max_abs(w));
  for (size_t k = 0; k < w.size(); ++k)
    ASSERT_LE(std::fabs(double(got[k]) - w[k]), tol * scale) << what << " element " << k << ": " << got[k] << " vs " << w[k];
}

std::shared_ptr<keras::Model> small_cnn() {
  namespace L = keras::layers;
  Tensor x = keras::Input({12, 12, 3}, "image");
  Tensor h = L::Conv2D(8, 3, {.padding = "same", .activation = "relu"})(x);
  h = L::BatchNormalization()(h);
  h = L::DepthwiseConv2D(3, {.strides = 2, .padding = "same", .activation = "relu6"})(h);
  h = L::MaxPooling2D()(h);
  h = L::GlobalAveragePooling2D()(h);
  h = L::Dense(40, "relu")(h);
  Tensor out = L::Dense(5, "softmax")(h);
  return std::make_shared<keras::Model>(TensorList{x}, TensorList{out});
}

q::RepresentativeDataset samples(Shape shape, int n, uint64_t seed) {
  return [shape, n, seed, i = 0]() mutable -> std::optional<TensorList> {
    if (i == n) return std::nullopt;
    return TensorList{rnd(shape, seed + uint64_t(i++))};
  };
}

TEST(LiteConverter, Float32KerasCnnRunsWithDeepflowsOutputs) {
  auto model = small_cnn();
  q::Conversion c = q::convert_keras_model(*model);
  EXPECT_EQ(c.mode, "float32");
  ASSERT_GE(c.bytes.size(), 8u);
  EXPECT_EQ(c.bytes.substr(4, 4), "TFL3");
  for (int batch : {1, 3}) {
    Tensor x = rnd({batch, 12, 12, 3}, 7);
    Tensor want = (*model)(TensorList{x}, false)[0];
    for (int threads : {1, 2}) expect_near(run_lite(c.bytes, {x}, threads)[0], want, 1e-5, "float32 cnn");
  }
  auto lm = lite::Model::from_buffer(c.bytes);
  lite::Interpreter interp(lm);
  ASSERT_EQ(interp.signature_keys(), std::vector<std::string>{"serving_default"});
}

TEST(LiteConverter, Float16WeightsHalveTheFile) {
  namespace L = keras::layers;
  Tensor in = keras::Input({12, 12, 3}, "image");
  Tensor h = L::Conv2D(16, 3, {.activation = "relu"})(in);
  h = L::Flatten()(L::MaxPooling2D()(h));
  auto model = std::make_shared<keras::Model>(TensorList{in}, TensorList{L::Dense(10, "softmax")(L::Dense(64, "relu")(h))});
  const std::string f32 = q::convert_keras_model(*model).bytes;
  q::ConverterOptions o;
  o.optimizations = {q::Optimize::kDefault};
  o.supported_types = {DType::Float16};
  q::Conversion c = q::convert_keras_model(*model, o);
  EXPECT_EQ(c.mode, "float16");
  EXPECT_LE(double(c.bytes.size()), 0.52 * double(f32.size())) << c.bytes.size() << " vs " << f32.size();
  Tensor x = rnd({2, 12, 12, 3}, 8);
  expect_near(run_lite(c.bytes, {x})[0], (*model)(TensorList{x}, false)[0], 2e-3, "float16 cnn");
}

TEST(LiteConverter, FullIntegerInt8IsWithinAFewStepsAndReportsPerOp) {
  auto model = small_cnn();
  for (DType io : {DType::Float32, DType::Int8, DType::UInt8}) {
    q::ConverterOptions o;
    o.optimizations = {q::Optimize::kDefault};
    o.representative_dataset = samples({1, 12, 12, 3}, 32, 100);
    o.inference_input_type = io;
    o.inference_output_type = io;
    q::Conversion c = q::convert_keras_model(*model, o);
    EXPECT_EQ(c.mode, "int8");
    Tensor x = rnd({4, 12, 12, 3}, 9);
    // Softmax outputs in [0, 1] at int8 steps of 1/256: a few steps of error end to end.
    expect_near(run_lite(c.bytes, {x})[0], (*model)(TensorList{x}, false)[0], 0.06, std::string("int8 cnn, io ") + dtype_name(io));
    ASSERT_FALSE(c.report.empty());
    bool conv = false;
    for (const q::LayerError& e : c.report) {
      conv = conv || e.op == "CONV_2D";
      EXPECT_GE(e.rmse, 0.0);
      EXPECT_LE(e.max_abs, 64 * e.scale + 1e-6) << e.op << " " << e.tensor;
    }
    EXPECT_TRUE(conv);
    EXPECT_NE(q::format_report(c.report).find("DEPTHWISE_CONV_2D"), std::string::npos);
  }
}

TEST(LiteConverter, CalibrationMethodsAllGiveWorkingModels) {
  auto model = small_cnn();
  for (q::Calibration m : {q::Calibration::kMinMax, q::Calibration::kMovingAverage, q::Calibration::kPercentile,
                           q::Calibration::kEntropy}) {
    q::ConverterOptions o;
    o.optimizations = {q::Optimize::kDefault};
    o.representative_dataset = samples({1, 12, 12, 3}, 16, 200);
    o.calibration = m;
    Tensor x = rnd({2, 12, 12, 3}, 10);
    expect_near(run_lite(q::convert_keras_model(*model, o).bytes, {x})[0], (*model)(TensorList{x}, false)[0], 0.1,
                "calibration " + std::to_string(int(m)));
  }
}

TEST(LiteConverter, DynamicRangeQuantizesLargeWeightsOnly) {
  namespace L = keras::layers;
  Tensor x = keras::Input({64}, "x");
  Tensor out = L::Dense(8)(L::Dense(32, "relu")(x));  // 64x32 = 2048 weights: int8; 32x8 = 256: float
  auto model = std::make_shared<keras::Model>(TensorList{x}, TensorList{out});
  q::ConverterOptions o;
  o.optimizations = {q::Optimize::kDefault};
  q::Conversion c = q::convert_keras_model(*model, o);
  EXPECT_EQ(c.mode, "dynamic_range");
  lite::Interpreter interp(lite::Model::from_buffer(c.bytes));
  int int8_tensors = 0;
  for (size_t t = 0; t < interp.tensors_size(); ++t) int8_tensors += interp.tensor(int(t)).type == lite::DType::kInt8;
  EXPECT_EQ(int8_tensors, 1);
  EXPECT_LT(c.bytes.size(), q::convert_keras_model(*model).bytes.size());
}

TEST(LiteConverter, UnsupportedOpsAreAllNamed) {
  Variable w(rnd({4, 3}, 1), "w");
  Function f = function([&](const TensorList& xs) { return TensorList{erf(matmul(xs[0], w.value())) + reduce_sum(cumsum(xs[0], 1), {1}, true)}; },
                        {.input_signature = Signature{{DType::Float32, {-1, 4}}}});
  try {
    q::convert_function(f.get_concrete_function());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[lite::convert]"), std::string::npos) << m;
    EXPECT_NE(m.find("(erf)"), std::string::npos) << m;
    EXPECT_NE(m.find("(cumsum)"), std::string::npos) << m;
  }
}

TEST(LiteConverter, BadRepresentativeDatasetsAndIntegerOnlyWithoutOne) {
  auto model = small_cnn();
  q::ConverterOptions o;
  o.optimizations = {q::Optimize::kDefault};
  o.representative_dataset = samples({1, 10, 12, 3}, 2, 0);
  EXPECT_THROW(
      {
        try {
          q::convert_keras_model(*model, o);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("does not fit the model's float32[?, 12, 12, 3]"), std::string::npos)
              << e.what();
          throw;
        }
      },
      Error);
  q::ConverterOptions int8_only;
  int8_only.optimizations = {q::Optimize::kDefault};
  int8_only.supported_ops = {q::OpsSet::kTfliteBuiltinsInt8};
  EXPECT_THROW(q::convert_keras_model(*model, int8_only), Error);
}

TEST(LiteConverter, OpsWithoutInt8KernelsFailFullIntegerByName) {
  Variable w(rnd({4, 3}, 2), "w");
  Function f = function([&](const TensorList& xs) { return TensorList{exp(matmul(xs[0], w.value()))}; },
                        {.input_signature = Signature{{DType::Float32, {-1, 4}}}});
  q::ConverterOptions o;
  o.optimizations = {q::Optimize::kDefault};
  o.representative_dataset = samples({2, 4}, 4, 0);
  try {
    q::convert_function(f.get_concrete_function(), o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("EXP (from node"), std::string::npos) << e.what();
  }
}

}  // namespace
