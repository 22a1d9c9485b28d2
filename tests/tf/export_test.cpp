// SPDX-License-Identifier: Apache-2.0
// SavedModels written in TensorFlow's format (tf::save_tf_saved_model) run in TensorFlow
// 2.21 with deepflow's outputs: an MLP and a small CNN (conv, depthwise conv, batch norm,
// pools, relu6, concat, transpose, reductions, cast) are saved, then
// tests/tf/tf_run_saved_model.py calls tf.saved_model.load(dir).signatures[...] and TF1's
// session loader on the same inputs. deepflow's own TF importer loads them back too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include "deepflow/core/error.h"
#include "deepflow/core/random.h"
#include "deepflow/io/npy.h"
#include "deepflow/ops/fused.h"
#include "deepflow/ops/ops.h"
#include "deepflow/tf/export.h"
#include "deepflow/tf/saved_model.h"
#include "oracle.h"

namespace deepflow {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("deepflow_tf_export_" + std::to_string(::getpid()) + "_" + name) / name;
  fs::remove_all(d);
  fs::create_directories(d.parent_path());
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

// Runs the oracle script; returns false (after skipping) when TensorFlow is missing.
bool run_tf(const fs::path& model, const std::string& key, const std::map<std::string, Tensor>& inputs,
            const fs::path& out) {
  const std::string py = testing::peers_python();
  if (py.empty()) return false;
  fs::create_directories(out);
  std::string cmd = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE " + py + " " + DEEPFLOW_TESTS_SOURCE_ROOT +
                    "/tests/tf/tf_run_saved_model.py " + model.string() + " " + key + " " + out.string();
  for (const auto& [k, t] : inputs) {
    const std::string path = (out / ("in_" + k + ".npy")).string();
    io::write_npy(path, t);
    cmd += " " + k + "=" + path;
  }
  cmd += " > " + (out / "tf.log").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\nsee " << (out / "tf.log").string();
  return true;
}

// Saves `fn` in TF's format, runs it in TensorFlow (both loaders) and in deepflow's TF
// importer, and compares every output with fn's own.
void check_model(const std::string& name, const ConcreteFunction& fn, const std::vector<std::string>& in_names,
                 const std::vector<std::string>& out_names, const TensorList& inputs) {
  const fs::path dir = fresh_dir(name);
  tf::save_tf_saved_model(dir.string(), {{.fn = fn, .input_names = in_names, .output_names = out_names}});
  ASSERT_TRUE(fs::exists(dir / "saved_model.pb"));
  ASSERT_TRUE(fs::exists(dir / "variables" / "variables.index"));
  const TensorList want = fn(inputs);
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds[in_names[i]] = inputs[i];

  // Round trip through deepflow's own importer.
  tf::TfSavedModel back = tf::load_tf_saved_model(dir.string());
  const auto ours = back.signature("serving_default")(feeds);
  for (size_t j = 0; j < out_names.size(); ++j) expect_close(ours.at(out_names[j]), want[j], name + " round trip " + out_names[j]);

  const fs::path out = dir.string() + "_out";
  if (!run_tf(dir, "serving_default", feeds, out)) DEEPFLOW_ORACLE_MISSING("TensorFlow 2.21 (make peers) is missing");
  for (size_t j = 0; j < out_names.size(); ++j) {
    for (const std::string prefix : {"", "session_"}) {
      const fs::path p = out / (prefix + out_names[j] + ".npy");
      ASSERT_TRUE(fs::exists(p)) << p << " (see " << (out / "tf.log").string() << ")";
      expect_close(io::read_npy(p.string()), want[j], name + " TensorFlow " + prefix + out_names[j]);
    }
  }
  // saver_def's save function wrote every variable and the object graph.
  std::ifstream keys(out / "saved_keys.txt");
  std::string all((std::istreambuf_iterator<char>(keys)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("_CHECKPOINTABLE_OBJECT_GRAPH\n"), std::string::npos) << all;
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), int64_t(back.variables().size()) + 1) << all;
  std::error_code ec;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir.parent_path(), ec);  // kept for a look when it fails
}

TEST(TfExport, MlpRunsInTensorFlow) {
  set_random_seed(7);
  Variable w1(random_normal({4, 8}), "dense/kernel"), b1(random_normal({8}), "dense/bias");
  Variable w2(random_normal({8, 3}), "dense_1/kernel"), b2(random_normal({3}), "dense_1/bias");
  Function f = function(
      [&](const TensorList& xs) {
        Tensor h = relu(matmul(xs[0], w1.value()) + b1.value());
        Tensor logits = matmul(h, w2.value()) + b2.value();
        return TensorList{softmax(logits), tanh(logits)};
      },
      {.input_signature = Signature{{DType::Float32, {-1, 4}}}});
  check_model("mlp", f.get_concrete_function(), {"features"}, {"probs", "scores"}, {random_normal({5, 4})});
}

TEST(TfExport, CnnRunsInTensorFlow) {
  set_random_seed(11);
  Variable k1(random_normal({3, 3, 3, 4}, 0, 0.3), "conv/kernel"), c1(random_normal({4}), "conv/bias");
  Variable dw(random_normal({3, 3, 4, 2}, 0, 0.3), "depthwise/kernel");
  Variable gamma(random_uniform({8}, 0.5, 1.5), "bn/gamma"), beta(random_normal({8}), "bn/beta");
  Variable mean(random_normal({8}), "bn/moving_mean"), var(random_uniform({8}, 0.5, 2), "bn/moving_variance");
  Variable wd(random_normal({16, 2}), "head/kernel");
  Function f = function(
      [&](const TensorList& xs) {
        Tensor x = relu(conv2d(xs[0], k1.value(), {1, 1}, "SAME") + c1.value());
        x = depthwise_conv2d(x, dw.value(), {2, 2}, "VALID");
        x = fused_batch_norm(x, gamma.value(), beta.value(), mean.value(), var.value(), 1e-3, false).y;
        x = relu6(x);
        Tensor a = max_pool2d(x, {2, 2}, {1, 1}, "SAME"), b = avg_pool2d(x, {2, 2}, {1, 1}, "VALID");
        Tensor pooled = concat({reduce_mean(a, {1, 2}), reduce_sum(transpose(b, {0, 3, 1, 2}), {2, 3})}, 1);
        Tensor logits = matmul(pooled, wd.value());
        return TensorList{sigmoid(logits), cast(greater(reduce_max(x, {1, 2, 3}), scalar(1.0)), DType::Float32)};
      },
      {.input_signature = Signature{{DType::Float32, {-1, 9, 9, 3}}}});
  check_model("cnn", f.get_concrete_function(), {"image"}, {"prob", "flag"}, {random_normal({2, 9, 9, 3})});
}

// The fused kernels deepflow's passes make (written as the TF ops they fuse), layer norm,
// a rank-2 batch norm, and shape and indexing ops.
TEST(TfExport, FusedKernelsAndShapeOpsRunInTensorFlow) {
  set_random_seed(13);
  Variable wm(random_normal({6, 5}), "fused/kernel"), bm(random_normal({5}), "fused/bias");
  Variable kc(random_normal({3, 3, 2, 4}, 0, 0.3), "fconv/kernel"), bc(random_normal({4}), "fconv/bias");
  Variable kd(random_normal({3, 3, 1, 4}, 0, 0.3), "fdw/kernel");
  Variable g(random_uniform({5}, 0.5, 1.5), "ln/gamma"), b(random_normal({5}), "ln/beta");
  Function f = function(
      [&](const TensorList& xs) {
        // xs[0] [n, 6], xs[1] [n, 6, 6, 2]
        Tensor h = fused_matmul(xs[0], wm.value(), bm.value(), false, false, "gelu");
        h = layer_normalization(h, g.value(), b.value());
        h = fused_batch_norm(h, g.value(), b.value(), b.value() * 0.1, g.value(), 1e-3, false).y;
        h = fused_elementwise({h, bm.value()}, "$0 $1 add #0.5 mul sigmoid");
        Tensor img = fused_conv2d(xs[1], kc.value(), bc.value(),
                                  {.padding = "EXPLICIT", .explicit_paddings = {1, 1, 0, 2}, .activation = "relu6"});
        Tensor dw = fused_conv2d(img, kd.value(), Tensor(), {.padding = "SAME", .activation = "leaky_relu"}, img);
        Tensor cut = strided_slice(dw, {0, 1, 0, 0}, {0, -1, 0, 0}, {1, 2, 1, 1}, 0b1101, 0b1101);
        Tensor padded = pad(slice(cut, {0, 0, 0, 1}, {-1, -1, -1, 2}), {{0, 0}, {1, 0}, {0, 1}, {0, 0}});
        Tensor picked = gather(tile(h, {1, 2}), constant(std::vector<int32_t>{3, 0, 7}), 1);
        Tensor best = cast(argmax(reduce_sum(padded, {1, 2}), 1), DType::Float32);
        return TensorList{picked, padded, best, maximum(h, minimum(h * 2.0, exp(h)))};
      },
      {.input_signature = Signature{{DType::Float32, {-1, 6}}, {DType::Float32, {-1, 6, 6, 2}}}});
  check_model("fused", f.get_concrete_function(), {"features", "image"}, {"picked", "padded", "best", "mixed"},
              {random_normal({3, 6}), random_normal({3, 6, 6, 2})});
}

// Two signatures sharing a variable; keys out of sorted order (TF flattens keyword
// arguments and dict outputs by sorted key); an int32 input and output.
TEST(TfExport, TwoSignaturesWithUnsortedKeys) {
  set_random_seed(17);
  Variable w(random_normal({3}), "shared/w");
  Function f = function(
      [&](const TensorList& xs) {
        // xs[0] "zeta" [n, 3] float, xs[1] "alpha" [n] int32
        Tensor a = cast(xs[1], DType::Float32);
        Tensor y = xs[0] * w.value() - reshape(a, {-1, 1});
        return TensorList{y, xs[1] + constant(std::vector<int32_t>{1}), reduce_sum(y, {1})};
      },
      {.input_signature = Signature{{DType::Float32, {-1, 3}}, {DType::Int32, {-1}}}});
  Function g = function([&](const TensorList& xs) { return TensorList{xs[0] + w.value()}; },
                        {.input_signature = Signature{{DType::Float32, {-1, 3}}}});
  const fs::path dir = fresh_dir("two");
  tf::save_tf_saved_model(dir.string(), {{.fn = f.get_concrete_function(), .input_names = {"zeta", "alpha"},
                                          .output_names = {"y_out", "next", "a_sum"}},
                                         {.key = "add_w", .fn = g.get_concrete_function(), .input_names = {"x"}}});
  const Tensor x = random_normal({4, 3});
  const Tensor n = constant(std::vector<int32_t>{1, -2, 3, 0});
  const TensorList want = f.get_concrete_function()({x, n});
  const Tensor want_g = g.get_concrete_function()({x}).at(0);
  tf::TfSavedModel back = tf::load_tf_saved_model(dir.string());
  const auto ours = back.signature("serving_default")({{"zeta", x}, {"alpha", n}});
  expect_close(ours.at("y_out"), want[0], "round trip y_out");
  expect_close(ours.at("next"), want[1], "round trip next");
  expect_close(ours.at("a_sum"), want[2], "round trip a_sum");
  expect_close(back.signature("add_w")({{"x", x}}).at("output_0"), want_g, "round trip add_w");

  const fs::path out = dir.string() + "_out", out_g = dir.string() + "_out_g";
  if (!run_tf(dir, "serving_default", {{"zeta", x}, {"alpha", n}}, out))
    DEEPFLOW_ORACLE_MISSING("TensorFlow 2.21 (make peers) is missing");
  ASSERT_TRUE(run_tf(dir, "add_w", {{"x", x}}, out_g));
  for (const std::string prefix : {"", "session_"}) {
    expect_close(io::read_npy((out / (prefix + "y_out.npy")).string()), want[0], prefix + "y_out");
    const Tensor next = io::read_npy((out / (prefix + "next.npy")).string());
    EXPECT_EQ(next.dtype(), DType::Int32);
    expect_close(next, want[1], prefix + "next");
    expect_close(io::read_npy((out / (prefix + "a_sum.npy")).string()), want[2], prefix + "a_sum");
    expect_close(io::read_npy((out_g / (prefix + "output_0.npy")).string()), want_g, prefix + "add_w");
  }
  std::error_code ec;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir.parent_path(), ec);
}

TEST(TfExport, FunctionWithoutVariables) {
  Function f = function([](const TensorList& xs) { return TensorList{xs[0] * 2.0 + 1.0}; },
                        {.input_signature = Signature{{DType::Float32, {-1, 2}}}});
  check_model("novars", f.get_concrete_function(), {"x"}, {"y"}, {random_normal({3, 2})});
}

TEST(TfExport, UnmappedOpIsNamed) {
  const std::vector<std::string> mapped = tf::tf_exportable_primitives();
  for (const char* op : {"matmul", "conv2d", "fused_batch_norm", "max_pool", "fused_conv2d", "read_variable"})
    EXPECT_TRUE(std::binary_search(mapped.begin(), mapped.end(), op)) << op;
  EXPECT_FALSE(std::binary_search(mapped.begin(), mapped.end(), "random_uniform"));
  Function f = function([](const TensorList& xs) { return TensorList{random_uniform_like(xs[0])}; },
                        {.input_signature = Signature{{DType::Float32, {2}}}});
  const fs::path dir = fresh_dir("unmapped");
  try {
    tf::save_tf_saved_model(dir.string(), {{.fn = f.get_concrete_function()}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("[tf::export]", 0), 0u) << what;
    EXPECT_NE(what.find("no TensorFlow op"), std::string::npos) << what;
    EXPECT_FALSE(fs::exists(dir));
  }
}

}  // namespace
}  // namespace deepflow
