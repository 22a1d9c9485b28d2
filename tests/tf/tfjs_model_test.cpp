// SPDX-License-Identifier: Apache-2.0
// TF.js graph models (tf::import_tfjs_model, `deepflow tf import model.json`). Hand-written
// model.json files check the weight format (shards cut in manifest order, uint8 and float16
// dequantization, int32 rounding, strings, bools), TF.js's fused ops and the errors for
// missing and short shards. Models converted by the real tensorflowjs converter from
// TensorFlow 2.21 SavedModels (tests/tf/tf_tfjs_models.py: a CNN with conv + BN + ReLU6,
// LeakyReLU and PReLU; a MobileNetV2 block with depthwise convolutions; a Keras 3 MLP; a
// while loop whose body is a library function), each plain, uint8- and float16-quantized,
// match TensorFlow's outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "deepflow/io/npy.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/tf/tfjs_model.h"
#include "oracle.h"

namespace deepflow {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;  // the key order of the files matters here

// A temporary directory, removed at the end of the test.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("deepflow_tfjs_" + std::to_string(::getpid()) + "_" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write_file(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

json placeholder(const std::string& name, const std::vector<int64_t>& dims) {
  json shape = {{"dim", json::array()}};
  for (int64_t d : dims) shape["dim"].push_back({{"size", std::to_string(d)}});
  return {{"name", name}, {"op", "Placeholder"}, {"attr", {{"dtype", {{"type", "DT_FLOAT"}}}, {"shape", {{"shape", shape}}}}}};
}
// A Const as the converter leaves it: dtype and shape, no values.
json weight_const(const std::string& name, const std::string& dtype, const std::vector<int64_t>& dims) {
  json shape = {{"dim", json::array()}};
  for (int64_t d : dims) shape["dim"].push_back({{"size", std::to_string(d)}});
  return {{"name", name},
          {"op", "Const"},
          {"attr", {{"dtype", {{"type", dtype}}}, {"value", {{"tensor", {{"dtype", dtype}, {"tensorShape", shape}}}}}}}};
}
json identity(const std::string& name, const std::string& input, const std::string& type = "DT_FLOAT") {
  return {{"name", name}, {"op", "Identity"}, {"input", {input}}, {"attr", {{"T", {{"type", type}}}}}};
}

// x [-1, 3] -> prelu(x @ w + b, alpha) through _FusedMatMul [BiasAdd, Prelu], and Consts of
// every weight kind: w float32, b uint8, alpha float16, k int32 as uint8, s string, flag bool.
// Two shards that split w's bytes.
struct HandWritten {
  json model;
  std::string shard1, shard2;
  HandWritten() {
    json nodes = json::array({placeholder("x", {-1, 3}), weight_const("w", "DT_FLOAT", {3, 2}),
                              weight_const("b", "DT_FLOAT", {2}), weight_const("alpha", "DT_FLOAT", {2}),
                              weight_const("k", "DT_INT32", {3}), weight_const("s", "DT_STRING", {2}),
                              weight_const("flag", "DT_BOOL", {2})});
    nodes.push_back({{"name", "y"},
                     {"op", "_FusedMatMul"},
                     {"input", {"x", "w", "b", "alpha"}},
                     {"attr",
                      {{"T", {{"type", "DT_FLOAT"}}},
                       {"num_args", {{"i", "2"}}},
                       {"fused_ops", {{"list", {{"s", {"Qmlhc0FkZA==", "UHJlbHU="}}}}}}}}});  // BiasAdd, Prelu
    nodes.push_back(identity("y_out", "y"));
    nodes.push_back(identity("k_out", "k", "DT_INT32"));
    nodes.push_back(identity("s_out", "s", "DT_STRING"));
    nodes.push_back(identity("flag_out", "flag", "DT_BOOL"));
    json weights = json::array(
        {{{"name", "w"}, {"shape", {3, 2}}, {"dtype", "float32"}},
         {{"name", "b"}, {"shape", {2}}, {"dtype", "float32"},
          {"quantization", {{"dtype", "uint8"}, {"min", -1.0}, {"scale", 0.5}, {"original_dtype", "float32"}}}},
         {{"name", "alpha"}, {"shape", {2}}, {"dtype", "float32"}, {"quantization", {{"dtype", "float16"}}}},
         {{"name", "k"}, {"shape", {3}}, {"dtype", "int32"},
          {"quantization", {{"dtype", "uint8"}, {"min", -2.0}, {"scale", 0.5}, {"original_dtype", "int32"}}}},
         {{"name", "s"}, {"shape", {2}}, {"dtype", "string"}},
         {{"name", "flag"}, {"shape", {2}}, {"dtype", "bool"}}});
    model = {{"format", "graph-model"},
             {"modelTopology", {{"node", nodes}}},
             {"signature",
              {{"inputs", {{"x", {{"name", "x:0"}}}}},
               {"outputs", {{"y", {{"name", "y_out:0"}}}, {"k", {{"name", "k_out:0"}}},
                            {"s", {{"name", "s_out:0"}}}, {"flag", {{"name", "flag_out:0"}}}}}}},
             {"weightsManifest", {{{"paths", {"group1-shard1of2.bin", "group1-shard2of2.bin"}}, {"weights", weights}}}}};
    std::string all = bytes_of(std::vector<float>{1, -1, 2, 0.5f, -3, 1});
    all += bytes_of(std::vector<uint8_t>{1, 4});                  // b = [-0.5, 1]
    all += bytes_of(std::vector<uint16_t>{0x3400, 0x3800});       // alpha = [0.25, 0.5] in float16
    all += bytes_of(std::vector<uint8_t>{0, 3, 7});               // k = round([-2, -0.5, 1.5]) = [-2, 0, 2]
    all += std::string("\x02\0\0\0ab\0\0\0\0", 10);               // s = ["ab", ""]
    all += bytes_of(std::vector<uint8_t>{1, 0});                  // flag
    shard1 = all.substr(0, 10);
    shard2 = all.substr(10);
  }
  std::string write(const fs::path& dir) const {
    write_file(dir / "model.json", model.dump());
    write_file(dir / "group1-shard1of2.bin", shard1);
    write_file(dir / "group1-shard2of2.bin", shard2);
    return (dir / "model.json").string();
  }
};

std::string import_error(const std::string& path) {
  try {
    tf::import_tfjs_model(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TfjsModel, HandWrittenModelDecodesShardsQuantizationStringsAndFusedPrelu) {
  TempDir tmp;
  tf::GraphDefModel m = tf::import_tfjs_model(HandWritten().write(tmp.path));
  EXPECT_EQ(m.inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(m.input_keys, std::vector<std::string>{"x"});
  EXPECT_EQ(m.output_keys, (std::vector<std::string>{"y", "k", "s", "flag"}));  // the file's order
  Tensor x = constant(std::vector<float>{1, 2, 3, -1, 0, 0}, Shape{2, 3});
  TensorList out = m.function(TensorList{x});
  ASSERT_EQ(out.size(), 4u);
  // x @ w + b, then prelu: negatives times alpha [0.25, 0.5].
  const float w[3][2] = {{1, -1}, {2, 0.5f}, {-3, 1}}, b[2] = {-0.5f, 1}, alpha[2] = {0.25f, 0.5f};
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      float v = b[j];
      for (int k = 0; k < 3; ++k) v += x.flat(i * 3 + k) * w[k][j];
      EXPECT_FLOAT_EQ(float(out[0].flat(i * 2 + j)), v < 0 ? alpha[j] * v : v) << i << "," << j;
    }
  }
  EXPECT_EQ(out[1].dtype(), DType::Int32);
  EXPECT_EQ(out[1].to_vector<int32_t>(), (std::vector<int32_t>{-2, 0, 2}));  // TF.js's Math.round
  ASSERT_EQ(out[2].dtype(), DType::String);
  EXPECT_EQ(out[2].data<std::string>()[0], "ab");
  EXPECT_EQ(out[2].data<std::string>()[1], "");
  EXPECT_EQ(out[3].dtype(), DType::Bool);
  EXPECT_EQ(out[3].flat(0), 1.0);
  EXPECT_EQ(out[3].flat(1), 0.0);
}

TEST(TfjsModel, MissingShardNamesTheFile) {
  TempDir tmp;
  const std::string path = HandWritten().write(tmp.path);
  fs::remove(tmp.path / "group1-shard2of2.bin");
  const std::string e = import_error(path);
  EXPECT_NE(e.find("[tf::import_tfjs_model]"), std::string::npos) << e;
  EXPECT_NE(e.find("group1-shard2of2.bin"), std::string::npos) << e;
}

TEST(TfjsModel, ShortShardNamesTheWeightAndTheShards) {
  TempDir tmp;
  HandWritten h;
  h.shard2.resize(h.shard2.size() - 3);  // cuts into flag's and s's bytes
  const std::string e = import_error(h.write(tmp.path));
  EXPECT_NE(e.find("weight 's'"), std::string::npos) << e;
  EXPECT_NE(e.find("group1-shard1of2.bin, group1-shard2of2.bin"), std::string::npos) << e;
  EXPECT_NE(e.find("short"), std::string::npos) << e;
}

TEST(TfjsModel, BadManifestsAndFormatsAreNamed) {
  TempDir tmp;
  HandWritten extra;  // a weight no Const takes
  extra.model["weightsManifest"][0]["weights"].push_back({{"name", "ghost"}, {"shape", {1}}, {"dtype", "bool"}});
  extra.shard2 += '\1';
  EXPECT_NE(import_error(extra.write(tmp.path)).find("weight 'ghost' names no Const node"), std::string::npos);
  HandWritten layers;
  layers.model["format"] = "layers-model";
  EXPECT_NE(import_error(layers.write(tmp.path)).find("layers-model"), std::string::npos);
  HandWritten shape;  // the manifest disagrees with the Const
  shape.model["weightsManifest"][0]["weights"][0]["shape"] = {2, 3};
  EXPECT_NE(import_error(shape.write(tmp.path)).find("weight 'w' has shape"), std::string::npos);
  HandWritten quant;
  quant.model["weightsManifest"][0]["weights"][1]["quantization"]["dtype"] = "int4";
  EXPECT_NE(import_error(quant.write(tmp.path)).find("unknown quantization dtype 'int4'"), std::string::npos);
  write_file(tmp.path / "model.json", "{\"modelTopology\": {\"node\": [{\"name\": 7}]}}");
  EXPECT_NE(import_error((tmp.path / "model.json").string()).find("modelTopology is not a GraphDef"),
            std::string::npos);
  write_file(tmp.path / "model.json", "{not json");
  EXPECT_NE(import_error((tmp.path / "model.json").string()).find("[tf::import_tfjs_model]"), std::string::npos);
}

// _FusedConv2D [FusedBatchNorm] (Grappler's form; num_args 4) equals Conv2D followed by
// FusedBatchNormV3 on the same weights, in one graph.
TEST(TfjsModel, FusedConvWithBatchNormMatchesConvThenBatchNorm) {
  TempDir tmp;
  json attrs = {{"T", {{"type", "DT_FLOAT"}}},
                {"strides", {{"list", {{"i", {"1", "1", "1", "1"}}}}}},
                {"padding", {{"s", "U0FNRQ=="}}}};  // SAME
  json fused = {{"name", "fused"}, {"op", "_FusedConv2D"}, {"input", {"x", "f", "scale", "offset", "mean", "var"}},
                {"attr", attrs}};
  fused["attr"]["fused_ops"] = {{"list", {{"s", {"RnVzZWRCYXRjaE5vcm0="}}}}};  // FusedBatchNorm
  fused["attr"]["num_args"] = {{"i", "4"}};
  fused["attr"]["epsilon"] = {{"f", 0.001}};
  json conv = {{"name", "conv"}, {"op", "Conv2D"}, {"input", {"x", "f"}}, {"attr", attrs}};
  json bn = {{"name", "bn"}, {"op", "FusedBatchNormV3"}, {"input", {"conv", "scale", "offset", "mean", "var"}},
             {"attr", {{"T", {{"type", "DT_FLOAT"}}}, {"U", {{"type", "DT_FLOAT"}}}, {"epsilon", {{"f", 0.001}}},
                       {"is_training", {{"b", false}}}}}};
  json nodes = json::array({placeholder("x", {1, 4, 4, 2}), weight_const("f", "DT_FLOAT", {3, 3, 2, 3})});
  json weights = json::array({{{"name", "f"}, {"shape", {3, 3, 2, 3}}, {"dtype", "float32"}}});
  std::vector<float> data;
  for (int i = 0; i < 54; ++i) data.push_back(std::sin(float(i)) * 0.5f);
  for (const char* n : {"scale", "offset", "mean", "var"}) {
    nodes.push_back(weight_const(n, "DT_FLOAT", {3}));
    weights.push_back({{"name", n}, {"shape", {3}}, {"dtype", "float32"}});
  }
  for (float v : {1.5f, 0.5f, -0.7f, 0.1f, -0.2f, 0.3f, 0.05f, 0.4f, -0.1f, 0.9f, 1.7f, 0.3f}) data.push_back(v);
  for (const json& n : {fused, conv, bn}) nodes.push_back(n);
  json model = {{"modelTopology", {{"node", nodes}}},
                {"weightsManifest", {{{"paths", {"w.bin"}}, {"weights", weights}}}}};
  write_file(tmp.path / "model.json", model.dump());
  write_file(tmp.path / "w.bin", bytes_of(data));
  tf::GraphDefModel m = tf::import_tfjs_model((tmp.path / "model.json").string(), {"x"}, {"fused:0", "bn:0"});
  std::vector<float> xs;
  for (int i = 0; i < 32; ++i) xs.push_back(std::cos(float(i)));
  TensorList out = m.function(TensorList{constant(xs, Shape{1, 4, 4, 2})});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].shape(), (Shape{1, 4, 4, 3}));
  ASSERT_EQ(out[1].shape(), out[0].shape());
  for (int64_t i = 0; i < out[0].size(); ++i) EXPECT_NEAR(out[0].flat(i), out[1].flat(i), 1e-5) << i;
}

// --- models converted by tensorflowjs from TensorFlow's SavedModels ---

const std::string& converted_dir() {
  static const std::string dir =
      testing::oracle_output_dir("tests/tf/tf_tfjs_models.py", DEEPFLOW_TF_TEST_CACHE, "tfjs_", "cases.json");
  return dir;
}

// |got - want| <= tol * max(1, |want|) per element, or with `scale` > 0, <= tol * scale.
void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what, double scale = 0) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  for (int64_t i = 0; i < got.size(); ++i) {
    const double g = got.flat(i), w = want.flat(i);
    ASSERT_LE(std::abs(g - w), tol * (scale > 0 ? scale : std::max(1.0, std::abs(w)))) << what << " element " << i;
  }
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.size(); ++i) m = std::max(m, std::abs(double(t.flat(i))));
  return m;
}

// Every variant of a converted model against TensorFlow on every case: within 1e-4 of TF
// running the same converted weights; the plain variant within 1e-4 of the SavedModel too,
// the quantized ones within what their rounding allows (float16: a relative 2^-11 per
// weight; uint8: half a step of 1/255 of each weight's range), here 0.5% and 5% of the
// output's magnitude (measured: 0.05% and 2%).
void check_converted(const std::string& name, const std::vector<std::string>& must_have_ops) {
  const std::string& root = converted_dir();
  if (root.empty()) DEEPFLOW_ORACLE_MISSING("TensorFlow 2.21 and tensorflowjs (make peers) could not convert the models");
  json index;
  std::ifstream(fs::path(root) / "cases.json") >> index;
  const json& entry = index.at(name);
  for (const std::string& op : must_have_ops) {
    EXPECT_NE(std::find(entry.at("ops").begin(), entry.at("ops").end(), op), entry.at("ops").end())
        << name << " has no " << op << " node: the test no longer covers it";
  }
  const fs::path dir = fs::path(root) / name;
  const std::vector<std::string> inputs = entry.at("inputs"), outputs = entry.at("outputs");
  for (const char* variant : {"plain", "uint8", "float16"}) {
    tf::GraphDefModel m = tf::import_tfjs_model((dir / variant / "model.json").string());
    ASSERT_EQ(m.input_keys, inputs) << name << " " << variant;
    ASSERT_EQ(m.output_keys, outputs) << name << " " << variant;
    for (int k = 0; k < entry.at("cases").get<int>(); ++k) {
      const std::string c = "case" + std::to_string(k) + ".";
      TensorList args;
      for (const std::string& in : inputs) args.push_back(io::read_npy((dir / (c + "in." + in + ".npy")).string()));
      TensorList out = m.function(args);
      ASSERT_EQ(out.size(), outputs.size());
      for (size_t i = 0; i < outputs.size(); ++i) {
        const std::string what = name + " " + variant + " " + c + outputs[i];
        Tensor same = io::read_npy((dir / (c + variant + "." + outputs[i] + ".npy")).string());
        Tensor tf = io::read_npy((dir / (c + "tf." + outputs[i] + ".npy")).string());
        expect_close(out[i], same, 1e-4, what + " (vs TF on the converted weights)");
        const std::string v = variant;
        const double tol = v == "plain" ? 1e-4 : v == "float16" ? 5e-3 : 5e-2;
        expect_close(out[i], tf, tol, what + " (vs TF's SavedModel)", v == "plain" ? 0 : std::max(1.0, max_abs(tf)));
      }
    }
  }
}

TEST(TfjsConverted, CnnWithConvBatchNormRelu6LeakyReluAndPrelu) {
  check_converted("cnn", {"_FusedConv2D", "_FusedMatMul"});
}
TEST(TfjsConverted, MobileNetBlockWithDepthwiseConvolutions) {
  check_converted("mobilenet_block", {"FusedDepthwiseConv2dNative", "_FusedConv2D"});
}
TEST(TfjsConverted, Keras3DenseModel) { check_converted("dense", {"_FusedMatMul"}); }
TEST(TfjsConverted, WhileLoopWithItsBodyInTheLibrary) { check_converted("loop", {"While"}); }
TEST(TfjsConverted, WhileLoopAsTf1ControlFlow) {
  check_converted("loop_v1", {"Enter", "Merge", "Switch", "LoopCond", "NextIteration", "Exit"});
}

// `deepflow tf import model.json DIR --to saved_model` writes a SavedModel whose
// serving_default has the TF.js signature's keys and gives the same outputs.
TEST(TfjsConverted, CommandLineImportsToASavedModel) {
  const std::string& root = converted_dir();
  if (root.empty()) DEEPFLOW_ORACLE_MISSING("TensorFlow 2.21 and tensorflowjs (make peers) could not convert the models");
  TempDir tmp;
  const fs::path dir = fs::path(root) / "cnn";
  const fs::path dest = tmp.path / "sm";
  const std::string cmd = std::string(DEEPFLOW_CLI_PATH) + " tf import " + (dir / "uint8" / "model.json").string() +
                          " " + dest.string() + " --to saved_model > " + (tmp.path / "log").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  io::SavedModel sm = io::load_saved_model(dest.string());
  const auto& sig = sm.signature("serving_default");
  std::map<std::string, Tensor> r = sig({{"image", io::read_npy((dir / "case1.in.image.npy").string())}});
  ASSERT_TRUE(r.count("scores"));
  expect_close(r.at("scores"), io::read_npy((dir / "case1.uint8.scores.npy").string()), 1e-4, "imported SavedModel");
}

}  // namespace
}  // namespace deepflow
