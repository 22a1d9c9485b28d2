// SPDX-License-Identifier: Apache-2.0
// `deepflow onnx info | run | convert`, run as a subprocess (DEEPFLOW_CLI_PATH).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "deepflow/onnx/export.h"
#include "deepflow/onnx/onnx.h"
#include "deepflow/ops/ops.h"

using namespace deepflow;
namespace dfo = deepflow::onnx;
namespace fs = std::filesystem;

namespace {

struct Result {
  int status = -1;
  std::string out;
};

Result cli(const std::string& args) {
  Result r;
  FILE* p = ::popen((std::string("'") + DEEPFLOW_CLI_PATH + "' " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int rc = ::pclose(p);
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return r;
}

// Float32 .npy files (onnx_test does not link deepflow_io).
void write_f32_npy(const std::string& path, const Tensor& t) {
  std::string shape;
  for (int64_t d : t.shape()) shape += std::to_string(d) + ", ";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
  std::ofstream f(path, std::ios::binary);
  f << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff) << char(header.size() >> 8) << header;
  f.write(static_cast<const char*>(t.raw_data()), std::streamsize(t.nbytes()));
}
std::vector<float> read_f32_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10) return {};
  const size_t len = size_t(uint8_t(bytes[8])) | size_t(uint8_t(bytes[9])) << 8;
  std::vector<float> v((bytes.size() - 10 - len) / 4);
  std::memcpy(v.data(), bytes.data() + 10 + len, v.size() * 4);
  return v;
}

void expect_values(const std::vector<float>& got, const Tensor& want, const std::string& what) {
  const std::vector<float> w = want.to_vector<float>();
  ASSERT_EQ(got.size(), w.size()) << what;
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(got[i], w[i], 1e-5 * (1 + std::abs(w[i]))) << what << " " << i;
}

class OnnxCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "onnx_cli_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    static Variable w(random_normal({4, 3}, 0, 1, DType::Float32, 1), "w");
    static Variable b(random_normal({3}, 0, 1, DType::Float32, 2), "b");
    f_ = function([](const Tensor& x) { return softmax(relu(matmul(x, w.value()) + b.value())); },
                  {.input_signature = Signature{{DType::Float32, {-1, 4}}}});
    model_ = dir_ + "/model.onnx";
    dfo::export_model(f_.get_concrete_function(), model_, {.input_names = {"x"}, .output_names = {"y"}});
    x_ = random_normal({2, 4}, 0, 1, DType::Float32, 3);
    write_f32_npy(dir_ + "/x.npy", x_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string dir_, model_;
  Function f_;
  Tensor x_;
};

TEST_F(OnnxCliTest, Info) {
  Result r = cli("onnx info '" + model_ + "'");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* want : {"ir_version: 8", "opsets: ai.onnx=17", "producer: deepflow", "x: FLOAT[batch, 4]",
                           "y: FLOAT[batch, 3]", "Gemm: 1", "Relu: 1", "unsupported ops: none", "initializers: "})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  Result bad = cli("onnx info '" + dir_ + "/x.npy'");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("[onnx::info]"), std::string::npos) << bad.out;
}

TEST_F(OnnxCliTest, Run) {
  Result r = cli("onnx run '" + model_ + "' --inputs 'x=" + dir_ + "/x.npy' --outdir '" + dir_ + "/out'");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Result for output key y:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Output y is saved to"), std::string::npos) << r.out;
  expect_values(read_f32_npy(dir_ + "/out/y.npy"), f_(x_)[0], "onnx run");
  Result missing = cli("onnx run '" + model_ + "'");
  EXPECT_EQ(missing.status, 1) << missing.out;
  EXPECT_NE(missing.out.find("x"), std::string::npos) << missing.out;
  Result bad = cli("onnx run '" + model_ + "' --inputs 'x'");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("<input name>=<file.npy>"), std::string::npos) << bad.out;
}

TEST_F(OnnxCliTest, ConvertBothWays) {
  const std::string sm = dir_ + "/sm";
  Result r = cli("onnx convert '" + model_ + "' --to saved_model '" + sm + "'");
  ASSERT_EQ(r.status, 0) << r.out;
  ASSERT_TRUE(fs::exists(sm + "/saved_model.pb"));
  Result run = cli("saved_model run --dir '" + sm + "' --signature_def serving_default --inputs 'x=" + dir_ +
                   "/x.npy' --outdir '" + dir_ + "/sm_out'");
  ASSERT_EQ(run.status, 0) << run.out;
  expect_values(read_f32_npy(dir_ + "/sm_out/y.npy"), f_(x_)[0], "saved_model run");

  const std::string back = dir_ + "/back.onnx";
  Result b = cli("onnx convert '" + sm + "' --to onnx '" + back + "'");
  ASSERT_EQ(b.status, 0) << b.out;
  dfo::OnnxModel m = dfo::import_model(back);
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].name, "x");
  EXPECT_EQ(m.inputs()[0].type.shape, Shape({-1, 4}));
  expect_values(m.run({{"x", x_}}).at("y").to_vector<float>(), f_(x_)[0], "round trip through SavedModel");

  Result exists = cli("onnx convert '" + sm + "' --to onnx '" + back + "'");
  EXPECT_EQ(exists.status, 1);
  EXPECT_NE(exists.out.find("--overwrite"), std::string::npos) << exists.out;
  Result bad_to = cli("onnx convert '" + model_ + "' --to tflite '" + dir_ + "/t'");
  EXPECT_NE(bad_to.status, 0);
}

}  // namespace
