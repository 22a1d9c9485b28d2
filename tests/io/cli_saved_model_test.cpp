// SPDX-License-Identifier: Apache-2.0
// `deepflow saved_model show / run`, run as a separate process: the binary links
// deepflow_io but none of the model code below, so a model trained here and run there
// proves that a SavedModel runs without the code that built it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

#include "deepflow/core/random.h"
#include "deepflow/io/npy.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/keras/layers.h"
#include "deepflow/keras/losses.h"
#include "deepflow/keras/model.h"
#include "deepflow/ops/ops.h"
#include "io/io_test_util.h"
#include "saved_model.pb.h"
#include "test_util.h"

namespace deepflow::io {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::TempDir;

// build*/tools/cli/deepflow next to this build's tests/io_test.
std::string cli_path() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path p = exe.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path())
    if (fs::is_regular_file(p / "tools/cli/deepflow", ec)) return (p / "tools/cli/deepflow").string();
  return "";
}

struct Result {
  int status = -1;
  std::string out;  // stdout and stderr
};

Result run(const std::string& args) {
  Result r;
  FILE* f = ::popen((cli_path() + " " + args + " 2>&1").c_str(), "r");
  if (!f) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) r.out.append(buf, n);
  const int st = ::pclose(f);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// A Python literal that reads back to exactly these float32 values.
std::string literal(const Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(0); ++i) {
    s += i ? ",[" : "[";
    for (int64_t j = 0; j < t.dim(1); ++j) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%s%.9g", j ? "," : "", double(t.data<float>()[i * t.dim(1) + j]));
      s += buf;
    }
    s += "]";
  }
  return s + "]";
}

void expect_same_bytes(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(std::string(static_cast<const char*>(a.raw_data()), a.nbytes()),
            std::string(static_cast<const char*>(b.raw_data()), b.nbytes()));
}

class CliSavedModel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cli_path().empty()) GTEST_SKIP() << "build the deepflow_cli target (tools/cli/deepflow) first";
  }
  TempDir tmp;
};

// The "done when": a trained model, saved, run by another process, equal outputs.
TEST_F(CliSavedModel, TrainedKerasModelRunsInAnotherProcessWithEqualOutputs) {
  namespace layers = keras::layers;
  set_random_seed(3);
  auto model = std::make_shared<keras::Sequential>(
      std::vector<keras::LayerPtr>{layers::InputLayer(Shape{4}), layers::Dense(16, "relu"), layers::Dense(3)});
  model->compile({.optimizer = "adam", .loss = {keras::losses::SparseCategoricalCrossentropy({.from_logits = true})}});
  Tensor x = random_normal({64, 4}, 0, 1, DType::Float32, int64_t(11));
  Tensor y = cast(argmax(slice(x, {0, 0}, {64, 3}), 1), DType::Int32);
  const Tensor before = model->predict(x);
  model->fit(x, y, {.batch_size = 16, .epochs = 3, .verbose = 0});
  Function serve = function([&](const Tensor& in) { return model->call(TensorList{in}, false)[0]; },
                            {.name = "serve", .input_signature = Signature{{DType::Float32, {-1, 4}}}});
  const Tensor batch = slice(x, {0, 0}, {5, 4});
  const Tensor expected = serve(batch)[0];
  EXPECT_GT(reduce_max(abs(model->predict(x) - before)).item<float>(), 0.f);  // it did train
  save_saved_model(tmp / "m", {{.fn = serve.get_concrete_function(), .input_names = {"x"}}});

  Result r = run("saved_model run --dir " + tmp / "m" +
                 " --tag_set serve --signature_def serving_default --input_exprs 'x=" + literal(batch) + "' --outdir " +
                 tmp / "out");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "Result for output key output_0:\n" + array_string(expected) + "\nOutput output_0 is saved to " +
                       tmp / "out/output_0.npy" + "\n");
  expect_same_bytes(read_npy(tmp / "out/output_0.npy"), expected);

  // The same through a .npy input, and --outdir refusing to overwrite.
  write_npy(tmp / "x.npy", batch);
  r = run("saved_model run --dir " + tmp / "m" + " --signature_def serving_default --inputs 'x=" + tmp / "x.npy" +
          "' --outdir " + tmp / "out");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("Output file " + tmp / "out/output_0.npy" +
                               " already exists. Add \"--overwrite\" to overwrite the existing output files."));
  r = run("saved_model run --dir " + tmp / "m" + " --signature_def serving_default --inputs 'x=" + tmp / "x.npy" +
          "' --outdir " + tmp / "out --overwrite");
  ASSERT_EQ(r.status, 0) << r.out;
  expect_same_bytes(read_npy(tmp / "out/output_0.npy"), expected);
}

TEST_F(CliSavedModel, ShowPrintsWhatSavedModelCliPrints) {
  Variable w(ones({784, 10}), "w");
  Function f = function(
      [&](const Tensor& x) {
        return TensorList{matmul(x, w.value()), reduce_sum(x, {1})};
      },
      {.name = "f", .input_signature = Signature{{DType::Float32, {-1, 784}}}});
  Function g = function([](const Tensor& a) { return cast(a, DType::Int64); },
                        {.name = "g", .input_signature = Signature{{DType::Int32, {}}}});
  save_saved_model(tmp / "m",
                   {{.fn = f.get_concrete_function(), .input_names = {"images"}, .output_names = {"logits", "sum"}},
                    {.key = "cast", .fn = g.get_concrete_function()}});
  const SignatureInfo s = read_saved_model_info(tmp / "m")[0].signatures.at("serving_default");
  const std::string logits = s.outputs.at("logits").name, sum = s.outputs.at("sum").name;
  const std::string cast_out = read_saved_model_info(tmp / "m")[0].signatures.at("cast").outputs.at("output_0").name;

  Result r = run("saved_model show --dir " + tmp / "m");
  EXPECT_EQ(r.out, "The given SavedModel contains the following tag-sets:\n'serve'\n");
  r = run("saved_model show --dir " + tmp / "m" + " --tag_set serve");
  EXPECT_EQ(r.out,
            "The given SavedModel MetaGraphDef contains SignatureDefs with the following keys:\n"
            "SignatureDef key: \"cast\"\nSignatureDef key: \"serving_default\"\n");
  const std::string block =
      "The given SavedModel SignatureDef contains the following input(s):\n"
      "  inputs['images'] tensor_info:\n"
      "      dtype: DT_FLOAT\n"
      "      shape: (-1, 784)\n"
      "      name: input:0\n"
      "The given SavedModel SignatureDef contains the following output(s):\n"
      "  outputs['logits'] tensor_info:\n"
      "      dtype: DT_FLOAT\n"
      "      shape: (-1, 10)\n"
      "      name: " +
      logits +
      "\n"
      "  outputs['sum'] tensor_info:\n"
      "      dtype: DT_FLOAT\n"
      "      shape: (-1)\n"
      "      name: " +
      sum +
      "\n"
      "Method name is: tensorflow/serving/predict\n";
  r = run("saved_model show --dir " + tmp / "m" + " --tag_set serve --signature_def serving_default");
  EXPECT_EQ(r.out, block);
  auto indent = [](const std::string& text) {
    std::string out;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      out += "  " + text.substr(start, end - start + 1);
      start = end + 1;
    }
    return out;
  };
  r = run("saved_model show --dir " + tmp / "m" + " --all");
  EXPECT_EQ(r.out,
            "\nMetaGraphDef with tag-set: 'serve' contains the following SignatureDefs:\n"
            "\nsignature_def['cast']:\n"
            "  The given SavedModel SignatureDef contains the following input(s):\n"
            "    inputs['input'] tensor_info:\n"
            "        dtype: DT_INT32\n"
            "        shape: ()\n"
            "        name: input:0\n"
            "  The given SavedModel SignatureDef contains the following output(s):\n"
            "    outputs['output_0'] tensor_info:\n"
            "        dtype: DT_INT64\n"
            "        shape: ()\n"
            "        name: " +
                cast_out +
                "\n"
                "  Method name is: tensorflow/serving/predict\n"
                "\nsignature_def['serving_default']:\n" +
                indent(block));

  // A second MetaGraph, tagged {serve, gpu}: listed after {serve}, as saved_model_cli sorts.
  proto::SavedModel sm;
  ASSERT_TRUE(sm.ParseFromString(testing::read_bytes(tmp / "m/saved_model.pb")));
  proto::MetaGraphDef* gpu = sm.add_meta_graphs();
  *gpu = sm.meta_graphs(0);
  gpu->mutable_meta_info_def()->add_tags("gpu");
  testing::write_bytes(tmp / "m/saved_model.pb", sm.SerializeAsString());
  r = run("saved_model show --dir " + tmp / "m");
  EXPECT_EQ(r.out, "The given SavedModel contains the following tag-sets:\n'serve'\n'gpu, serve'\n");
  r = run("saved_model show --dir " + tmp / "m" + " --tag_set gpu,serve");
  EXPECT_THAT(r.out, HasSubstr("SignatureDef key: \"cast\""));
  r = run("saved_model show --dir " + tmp / "m" + " --all");
  EXPECT_THAT(r.out, HasSubstr("\nMetaGraphDef with tag-set: 'serve, gpu' contains the following SignatureDefs:\n"));

  r = run("saved_model show --dir " + tmp / "m" + " --tag_set train");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("MetaGraphDef associated with tag-set 'train' could not be found; available tag sets: "
                               "'serve', 'gpu, serve'"));
  r = run("saved_model show --dir " + tmp / "m" + " --tag_set serve --signature_def nope");
  EXPECT_THAT(r.out, HasSubstr("Could not find signature \"nope\". Please choose from: cast, serving_default"));
  r = run("saved_model show --dir " + tmp / "nothing");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr(tmp / "nothing" + ": no such directory"));
}

TEST_F(CliSavedModel, RunInputExpressionsAndErrors) {
  Function f = function(
      [](const Tensor& a, const Tensor& b) {
        return TensorList{a + b, reduce_sum(a)};
      },
      {.name = "f", .input_signature = Signature{{DType::Float32, {-1, 3}}, {DType::Float32, {-1, 3}}}});
  save_saved_model(tmp / "m",
                   {{.fn = f.get_concrete_function(), .input_names = {"a", "b"}, .output_names = {"sum", "total"}}});
  const std::string cmd = "saved_model run --dir " + tmp / "m" + " --tag_set serve --signature_def serving_default ";
  Result r = run(cmd + "--input_exprs 'a=[[1,2,3],[4,5,6]];b=np.ones((2,3))'");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "Result for output key sum:\n" + array_string(constant({2.f, 3.f, 4.f, 5.f, 6.f, 7.f}, {2, 3})) +
                       "\nResult for output key total:\n" + array_string(scalar(21)) + "\n");
  r = run(cmd + "--input_exprs 'a=np.zeros((1, 3), dtype=np.float32);b=np.array([[0.5, -1e3, 2]])'");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr(array_string(constant({0.5f, -1000.f, 2.f}, {1, 3}))));
  // --input_exprs wins over --inputs for the same key, with a warning.
  write_npy(tmp / "a.npy", fill({1, 3}, 100));
  r = run(cmd + "--inputs 'a=" + tmp / "a.npy" + ";b=" + tmp / "a.npy" + "[ignored]' --input_exprs 'a=[[1,1,1]]'");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("Value in --input_exprs will be used."));
  EXPECT_THAT(r.out, HasSubstr("Name key \"ignored\" ignored."));
  EXPECT_THAT(r.out, HasSubstr(array_string(fill({1, 3}, 101))));

  auto err = [&](const std::string& args) {
    Result e = run(cmd + args);
    EXPECT_EQ(e.status, 1) << args;
    return e.out;
  };
  EXPECT_THAT(err("--input_exprs 'c=[1];a=[[1,2,3]];b=[[1,2,3]]'"),
              HasSubstr("\"c\" is not a valid input key. Please choose from \"a\", \"b\", or use --show option."));
  EXPECT_THAT(err("--input_exprs 'a=[[1,2,3]]'"),
              HasSubstr("missing input 'b'; expected inputs: a: float32[?,3], b: float32[?,3]"));
  EXPECT_THAT(err("--input_exprs 'a=[[1,2],[3]];b=[[1,2,3]]'"), HasSubstr("the nested lists are not rectangular"));
  EXPECT_THAT(err("--input_exprs 'a=__import__(\"os\");b=[[1,2,3]]'"), HasSubstr("is not a valid literal"));
  EXPECT_THAT(err("--input_exprs 'a=np.random.rand(3);b=[[1,2,3]]'"), HasSubstr("np.random.rand is not supported"));
  EXPECT_THAT(err("--input_exprs 'a=[[1,2,3,4]];b=[[1,2,3]]'"), HasSubstr("input 'a' is float32[1,4]"));
  EXPECT_THAT(err("--inputs 'a=" + tmp / "none.npy" + "' --input_exprs 'b=[[1,2,3]]'"), HasSubstr(tmp / "none.npy"));
  EXPECT_THAT(err("--inputs 'a=x.npz' --input_exprs 'b=[[1,2,3]]'"), HasSubstr(".npz files are not supported"));
  EXPECT_THAT(err("--input_exprs 'a'"), HasSubstr("--input_exprs \"a\" format is incorrect"));
  Result r2 = run("saved_model run --dir " + tmp / "m" + " --signature_def nope --input_exprs 'a=[1]'");
  EXPECT_THAT(r2.out, HasSubstr("Could not find signature \"nope\". Please choose from: serving_default"));
  Result help = run("saved_model --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.out, HasSubstr("show"));
  EXPECT_THAT(help.out, HasSubstr("run"));
}

}  // namespace
}  // namespace deepflow::io
