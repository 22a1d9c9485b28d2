// SPDX-License-Identifier: Apache-2.0
// The serving optimizer (deepflow/quantize/serving_optimizer.h) on a residual Keras CNN
// saved as a SavedModel: FP32 keeps the outputs, INT8 puts the conv chain in int8 and stays
// within a few percent of float, the saved model loads and runs as it was converted, and
// bad settings or calibration input are clear errors. python/tests/test_tensorrt.py runs
// TensorFlow-written SavedModels through the TF-TRT-shaped Python API.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "deepflow/core/error.h"
#include "deepflow/io/keras_saving.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/keras/keras.h"
#include "deepflow/ops/conv_chain.h"
#include "deepflow/ops/ops.h"
#include "deepflow/quantize/serving_optimizer.h"

using namespace deepflow;
namespace q = deepflow::quantize;
namespace fs = std::filesystem;

namespace {

Tensor rnd(const Shape& s, uint64_t seed) { return random_normal(s, 0.0, 1.0, DType::Float32, seed); }

// A stem, a residual block and strided convs: a chain of 5 convolutions after the stem.
std::string residual_cnn_dir() {
  static const std::string dir = [] {
    namespace L = keras::layers;
    Tensor x = keras::Input({16, 16, 3}, "image");
    Tensor h = L::Conv2D(16, 3, {.padding = "same", .activation = "relu"})(x);
    h = L::BatchNormalization()(h);
    Tensor r = L::Conv2D(16, 3, {.padding = "same", .activation = "relu"})(h);
    r = L::Conv2D(16, 3, {.padding = "same"})(r);
    h = L::Activation("relu")(L::Add()(TensorList{h, r})[0]);
    h = L::Conv2D(32, 3, {.strides = 2, .padding = "same", .activation = "relu"})(h);
    h = L::Conv2D(32, 1, {.activation = "relu"})(h);
    h = L::Conv2D(32, 3, {.padding = "same", .activation = "relu"})(h);
    h = L::GlobalAveragePooling2D()(h);
    Tensor out = L::Dense(10)(h);
    auto model = std::make_shared<keras::Model>(TensorList{x}, TensorList{out});
    const std::string d = (fs::temp_directory_path() / ("df_serving_opt_src_" + std::to_string(::getpid()))).string();
    keras::save_model(*model, d);
    return d;
  }();
  return dir;
}

std::string temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("df_serving_opt_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p.string();
}

q::InputFn batches(int n, int64_t batch, uint64_t seed) {
  return [n, batch, seed, i = 0]() mutable -> std::optional<TensorList> {
    if (i == n) return std::nullopt;
    return TensorList{rnd({batch, 16, 16, 3}, seed + uint64_t(i++))};
  };
}

Tensor run(const std::string& dir, const Tensor& x) {
  io::SavedModel m = io::load_saved_model(dir);
  const io::LoadedSignature& sig = m.signature("serving_default");
  const std::string in = sig.inputs().begin()->first;
  return sig({{in, x}}).begin()->second;
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (float v : t.to_vector<float>()) m = std::max(m, double(std::fabs(v)));
  return m;
}

double max_diff(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  EXPECT_EQ(x.size(), y.size());
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, double(std::fabs(x[i] - y[i])));
  return m;
}

q::ServingOptimizerOptions options(q::Precision p) {
  q::ServingOptimizerOptions o;
  o.input_saved_model_dir = residual_cnn_dir();
  o.precision_mode = p;
  return o;
}

}  // namespace

TEST(ServingOptimizer, Fp32KeepsTheOutputsAndFusesTheChain) {
  q::ServingOptimizer opt(options(q::Precision::kFp32));
  opt.convert();
  ASSERT_EQ(opt.summary().size(), 1u);
  EXPECT_EQ(opt.summary()[0].conv_chains, 1) << opt.summary()[0].to_string();
  EXPECT_EQ(opt.summary()[0].int8_chains, 0);
  const std::string out = temp_dir("fp32");
  opt.save(out);
  for (int64_t b : {1, 5}) {
    const Tensor x = rnd({b, 16, 16, 3}, 100 + uint64_t(b));
    const Tensor want = run(residual_cnn_dir(), x), got = run(out, x);
    EXPECT_LE(max_diff(got, want), 1e-5 * max_abs(want)) << "batch " << b;
  }
  fs::remove_all(out);
}

TEST(ServingOptimizer, Int8RunsTheChainInInt8WithinAFewPercentOfFloat) {
  q::ServingOptimizerOptions o = options(q::Precision::kInt8);
  o.calibration = q::Calibration::kMinMax;
  q::ServingOptimizer opt(o);
  opt.convert(batches(4, 8, 1));
  const q::SignatureSummary& s = opt.summary()[0];
  EXPECT_EQ(s.int8_chains, 1) << s.to_string();
  EXPECT_EQ(s.int8_layers, 5) << s.to_string();
  EXPECT_EQ(s.float_convs, 1) << s.to_string();  // the stem: the batch norm after its relu does not fold
  EXPECT_EQ(s.calibration_batches, 4);
  // The chain carries a range per value, each containing zero.
  const Graph& g = opt.graph("serving_default");
  int chains = 0;
  for (const Node& n : g.nodes()) {
    if (n.op != OpId::FusedConvChain) continue;
    ++chains;
    const auto& r = std::get<std::vector<double>>(*n.attrs.find("int8_ranges"));
    ASSERT_EQ(r.size(), 12u);
    for (size_t v = 0; v < r.size(); v += 2) EXPECT_TRUE(r[v] <= 0 && r[v + 1] >= 0 && r[v + 1] > r[v]) << v;
  }
  EXPECT_EQ(chains, 1);
  const std::string out = temp_dir("int8");
  opt.save(out);
  for (int64_t b : {1, 8}) {
    const Tensor x = rnd({b, 16, 16, 3}, 200 + uint64_t(b));  // not the calibration data
    const Tensor want = run(residual_cnn_dir(), x), got = run(out, x);
    const double err = max_diff(got, want), scale = max_abs(want);
    EXPECT_LE(err, 0.05 * scale) << "batch " << b << ": int8 off by " << err << " of " << scale;
    EXPECT_GT(err, 0.0) << "batch " << b << ": bit-identical to float, so int8 did not run";
  }
  fs::remove_all(out);
}

TEST(ServingOptimizer, MinimumSegmentSizeLeavesShortChainsInFloat) {
  q::ServingOptimizerOptions o = options(q::Precision::kInt8);
  o.minimum_segment_size = 7;
  q::ServingOptimizer opt(o);
  opt.convert(batches(1, 2, 1));
  EXPECT_EQ(opt.summary()[0].int8_chains, 0);
  EXPECT_EQ(opt.summary()[0].float_convs, 6);
}

TEST(ServingOptimizer, ErrorsNameWhatIsWrong) {
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message([] { q::parse_precision("int4"); }).find("[ServingOptimizer] precision_mode must be"),
            std::string::npos);
  EXPECT_NE(message([] { q::ServingOptimizer(options(q::Precision::kInt8)).convert(); })
                .find("INT8 needs a calibration_input"),
            std::string::npos);
  const std::string shape = message([] {
    q::ServingOptimizer opt(options(q::Precision::kInt8));
    opt.convert([]() -> std::optional<TensorList> { return TensorList{rnd({2, 8, 8, 3}, 1)}; });
  });
  EXPECT_NE(shape.find("[ServingOptimizer] calibration input 0 for signature 'serving_default', input 'image'"),
            std::string::npos)
      << shape;
  EXPECT_NE(shape.find("float32[2,8,8,3] does not fit float32[?,16,16,3]"), std::string::npos) << shape;
  const std::string batch = message([] {
    q::ServingOptimizerOptions o = options(q::Precision::kInt8);
    o.max_batch_size = 4;
    q::ServingOptimizer(o).convert(batches(1, 8, 1));
  });
  EXPECT_NE(batch.find("batch 8 is over max_batch_size 4"), std::string::npos) << batch;
  EXPECT_NE(message([] {
              q::ServingOptimizer(options(q::Precision::kInt8))
                  .convert([]() -> std::optional<TensorList> { return std::nullopt; });
            }).find("calibration_input yielded nothing"),
            std::string::npos);
  EXPECT_NE(message([] { q::ServingOptimizer(options(q::Precision::kFp32)).save("/tmp/x"); })
                .find("save() before convert()"),
            std::string::npos);
}
