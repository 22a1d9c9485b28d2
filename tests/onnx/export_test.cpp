// SPDX-License-Identifier: Apache-2.0
// ONNX export: small functions of every exportable op family exported, checked by
// onnx::checker, imported back and run (outputs equal to deepflow's within 1e-5), and run
// in ONNX Runtime (npm onnxruntime-node, when installed) the same way; Keras models;
// dynamic dims; the error for ops without a mapping.
#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "deepflow/core/error.h"
#include "deepflow/keras/keras.h"
#include "deepflow/onnx/export.h"
#include "deepflow/onnx/onnx.h"
#include "deepflow/ops/conv.h"
#include "deepflow/ops/ops.h"
#include "oracle.h"

using namespace deepflow;
namespace op = ::onnx;
namespace dfo = deepflow::onnx;
namespace fs = std::filesystem;

namespace {

op::ModelProto parse(const std::string& bytes) {
  op::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  return m;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what, double tol = 1e-5) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::vector<double> g = cast(got, DType::Float64).to_vector<double>();
  std::vector<double> w = cast(want, DType::Float64).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << what << " element " << i;
  }
}

// --- ONNX Runtime through node (skipped when absent) ---

// .npy files for ort_run.js (onnx_test does not link deepflow_io): C order, little-endian.
const std::vector<std::pair<DType, std::string>> kNpyDescr = {
    {DType::Float32, "<f4"}, {DType::Float64, "<f8"}, {DType::Int64, "<i8"},
    {DType::Int32, "<i4"},   {DType::Bool, "|b1"},    {DType::UInt8, "|u1"}, {DType::Int8, "|i1"}};

void write_npy(const std::string& path, const Tensor& t) {
  std::string descr;
  for (const auto& [d, s] : kNpyDescr)
    if (d == t.dtype()) descr = s;
  ASSERT_FALSE(descr.empty()) << "no npy dtype for " << dtype_name(t.dtype());
  std::string shape;
  for (int64_t d : t.shape()) shape += std::to_string(d) + ", ";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
  std::ofstream f(path, std::ios::binary);
  f << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff) << char(header.size() >> 8) << header;
  f.write(static_cast<const char*>(t.raw_data()), std::streamsize(t.nbytes()));
}

Tensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t len = size_t(uint8_t(bytes[8])) | size_t(uint8_t(bytes[9])) << 8;
  const std::string header = bytes.substr(10, len);
  DType dtype = DType::Float32;
  for (const auto& [d, s] : kNpyDescr)
    if (header.find("'" + s + "'") != std::string::npos) dtype = d;
  Shape shape;
  const size_t open = header.find('(', header.find("'shape'"));
  std::string dims = header.substr(open + 1, header.find(')', open) - open - 1);
  for (size_t i = 0; i < dims.size();) {
    size_t j = dims.find(',', i);
    if (j == std::string::npos) j = dims.size();
    if (dims.find_first_not_of(' ', i) < j) shape.push_back(std::stoll(dims.substr(i, j - i)));
    i = j + 1;
  }
  Tensor t = zeros(shape, dtype);
  std::memcpy(t.raw_data(), bytes.data() + 10 + len, t.nbytes());
  return t;
}

std::string run_command(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    *status = -1;
    return out;
  }
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int rc = ::pclose(p);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

std::string source_root() {
  if (const char* s = std::getenv("DEEPFLOW_SOURCE_DIR")) return s;
  fs::path p = fs::path(__FILE__).parent_path().parent_path().parent_path();
  if (p.is_absolute() && fs::exists(p / "tests/onnx/ort_run.js")) return p.string();
  // A relative __FILE__ (ccache's base dir): look upwards from the working directory.
  std::error_code ec;
  for (fs::path d = fs::current_path(ec); !d.empty(); d = d.parent_path()) {
    if (fs::exists(d / "tests/onnx/ort_run.js")) return d.string();
    if (d == d.parent_path()) break;
  }
  return "";
}

// The node_modules holding onnxruntime-node: $DEEPFLOW_ORT_NODE_MODULES, else data/node_modules
// (scripts/fetch-test-deps.sh); "" with the reason in *why when ORT cannot run here.
std::string ort_modules(std::string* why) {
  static std::string modules, reason;
  static bool done = false;
  if (!done) {
    done = true;
    const std::string root = source_root();
    int status = 0;
    run_command("node --version >/dev/null 2>&1", &status);
    if (root.empty()) {
      reason = "cannot find the source tree (set DEEPFLOW_SOURCE_DIR)";
    } else if (status != 0) {
      reason = "node is not installed";
    } else {
      const char* env = std::getenv("DEEPFLOW_ORT_NODE_MODULES");
      std::string m = env ? env : root + "/data/node_modules";
      if (!fs::exists(m + "/onnxruntime-node/package.json"))
        reason = "onnxruntime-node is not in " + m + " (run scripts/fetch-test-deps.sh)";
      else
        modules = m;
    }
  }
  *why = reason;
  return modules;
}

// Runs `bytes` in ONNX Runtime on `inputs`; outputs by name, or nullopt (with a reason).
std::optional<std::map<std::string, Tensor>> run_ort(const std::string& bytes,
                                                     const std::map<std::string, Tensor>& inputs, std::string* why) {
  const std::string modules = ort_modules(why);
  if (modules.empty()) return std::nullopt;
  std::string tmpl = ::testing::TempDir() + "ort_XXXXXX";
  if (!::mkdtemp(tmpl.data())) {
    *why = "mkdtemp failed";
    return std::nullopt;
  }
  const fs::path dir(tmpl);
  {
    std::ofstream f(dir / "model.onnx", std::ios::binary);
    f << bytes;
  }
  std::string cmd = "NODE_PATH='" + modules + "' node '" + source_root() + "/tests/onnx/ort_run.js' '" +
                    (dir / "model.onnx").string() + "' '" + (dir / "out").string() + "'";
  for (const auto& [name, t] : inputs) {
    const std::string file = (dir / (name + ".npy")).string();
    write_npy(file, t);
    cmd += " '" + name + "=" + file + "'";
  }
  int status = 0;
  const std::string out = run_command(cmd + " 2>&1", &status);
  std::map<std::string, Tensor> result;
  if (status == 0) {
    for (const auto& entry : fs::directory_iterator(dir / "out"))
      result[entry.path().stem().string()] = read_npy(entry.path().string());
  } else {
    ADD_FAILURE() << "onnxruntime failed: " << out;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return result;
}

// Exports fn, checks the model, imports it back and runs both (and ONNX Runtime) on inputs.
void round_trip(const std::string& what, const ConcreteFunction& fn, const TensorList& inputs,
                const dfo::ExportOptions& options = {}, double tol = 1e-5) {
  SCOPED_TRACE(what);
  std::string bytes;
  try {
    bytes = dfo::export_to_bytes(fn, options);
  } catch (const std::exception& e) {
    FAIL() << what << ": export failed: " << e.what();
  }
  op::ModelProto m = parse(bytes);
  EXPECT_NO_THROW(op::checker::check_model(m));
  EXPECT_EQ(m.ir_version(), 8);
  EXPECT_EQ(m.producer_name(), "deepflow");
  const TensorList want = fn(inputs);
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i)
    feeds[options.input_names.empty() ? "input_" + std::to_string(i) : options.input_names[i]] = inputs[i];
  auto out_name = [&](size_t j) {
    return options.output_names.empty() ? "output_" + std::to_string(j) : options.output_names[j];
  };
  dfo::OnnxModel imported = dfo::import_model_from_bytes(bytes, {}, what);
  std::map<std::string, Tensor> got = imported.run(feeds);
  ASSERT_EQ(got.size(), want.size());
  for (size_t j = 0; j < want.size(); ++j) expect_close(got.at(out_name(j)), want[j], what + " (import)", tol);
  std::string why;
  if (auto ort = run_ort(bytes, feeds, &why)) {
    for (size_t j = 0; j < want.size(); ++j) {
      ASSERT_TRUE(ort->count(out_name(j))) << what << ": ORT gave no " << out_name(j);
      expect_close(ort->at(out_name(j)), want[j], what + " (onnxruntime)", tol);
    }
  }
}

struct Case {
  std::string name;
  std::function<TensorList(const TensorList&)> fn;
  Signature sig;
  TensorList inputs;
};

Tensor rnd(const Shape& s, int64_t seed) { return random_normal(s, 0, 1, DType::Float32, seed); }
Tensor pos(const Shape& s, int64_t seed) { return abs(rnd(s, seed)) + 0.1; }
TensorType f32(const Shape& s) { return {DType::Float32, s}; }

std::vector<Case> cases() {
  static Variable w(rnd({4, 3}, 1), "w"), b(rnd({3}, 2), "b");
  static Tensor k33(rnd({3, 3, 3, 4}, 3)), kg(rnd({3, 3, 2, 4}, 4)), kd(rnd({3, 3, 4, 2}, 5)), kt(rnd({3, 3, 2, 3}, 6)), k84(rnd({1, 1, 8, 4}, 16));
  static Tensor scale(pos({3}, 7)), offset(rnd({3}, 8)), mean(rnd({3}, 9)), var(pos({3}, 10));
  Tensor img = rnd({2, 7, 7, 3}, 11), img4 = rnd({2, 6, 6, 4}, 12), m = rnd({2, 3, 4}, 13), mp = pos({2, 3, 4}, 14);
  std::vector<Case> c;
  auto unary = [&](std::string name, std::function<Tensor(const Tensor&)> f, Tensor x) {
    c.push_back({name, [f](const TensorList& xs) { return TensorList{f(xs[0])}; }, {{x.dtype(), x.shape()}}, {x}});
  };
  auto binary = [&](std::string name, std::function<Tensor(const Tensor&, const Tensor&)> f, Tensor x, Tensor y) {
    c.push_back({name, [f](const TensorList& xs) { return TensorList{f(xs[0], xs[1])}; },
                 {{x.dtype(), x.shape()}, {y.dtype(), y.shape()}}, {x, y}});
  };
  // matmul / dense (the passes fuse matmul + bias + relu into fused_matmul)
  c.push_back({"dense_relu", [](const TensorList& xs) { return TensorList{relu(matmul(xs[0], w.value()) + b.value())}; },
               {f32({-1, 4})}, {rnd({5, 4}, 20)}});
  c.push_back({"dense_sigmoid", [](const TensorList& xs) { return TensorList{sigmoid(matmul(xs[0], w.value()) + b.value())}; },
               {f32({-1, 4})}, {rnd({5, 4}, 21)}});
  binary("matmul_batched_transposed", [](const Tensor& a, const Tensor& bb) { return matmul(a, bb, true, true); },
         rnd({2, 4, 3}, 22), rnd({2, 5, 4}, 23));
  binary("matmul_2d_transposed_b", [](const Tensor& a, const Tensor& bb) { return matmul(a, bb, false, true); },
         rnd({3, 4}, 24), rnd({5, 4}, 25));
  // convolution and pooling
  unary("conv2d_valid", [](const Tensor& x) { return conv2d(x, k33); }, img);
  unary("conv2d_same_stride2", [](const Tensor& x) { return conv2d(x, k33, {2, 2}, "SAME"); }, img);
  unary("conv2d_same_dilation2", [](const Tensor& x) { return conv2d(x, k33, {1, 1}, "SAME", {2, 2}); }, img);
  unary("conv2d_strides_2_1", [](const Tensor& x) { return conv2d(x, k33, {2, 1}, "VALID"); }, img);
  unary("conv2d_groups", [](const Tensor& x) { return conv2d(x, kg, {1, 1}, "SAME"); }, img4);
  unary("depthwise_conv2d", [](const Tensor& x) { return depthwise_conv2d(x, kd, {2, 2}, "SAME"); }, img4);
  unary("conv2d_transpose", [](const Tensor& x) { return conv2d_transpose(x, kt, {2, 13, 13, 2}, {2, 2}, "SAME"); },
        img);
  unary("conv2d_transpose_valid",
        [](const Tensor& x) { return conv2d_transpose(x, kt, {2, 16, 16, 2}, {2, 2}, "VALID"); }, img);
  unary("conv2d_relu_pool", [](const Tensor& x) { return max_pool2d(relu(conv2d(x, k33, {1, 1}, "SAME")), {2, 2}, {2, 2}); },
        img);
  // fuse_conv makes this one fused_conv2d with the residual as its summand: Conv, Add, Relu.
  binary("conv2d_residual_relu",
         [](const Tensor& x, const Tensor& r) { return relu(conv2d(x, k33, {1, 1}, "SAME") + r); }, img,
         rnd({2, 7, 7, 4}, 15));
  // fuse_conv_chain makes these convs one fused_conv_chain; the export writes its layers.
  unary("conv_chain_inverted_residual",
        [](const Tensor& x) { return x + conv2d(relu6(depthwise_conv2d(x, kd, {1, 1}, "SAME")), k84); }, img4);
  unary("max_pool_same", [](const Tensor& x) { return max_pool2d(x, {3, 3}, {2, 2}, "SAME"); }, img);
  unary("max_pool_explicit",
        [](const Tensor& x) { return max_pool2d(x - 5.0, {3, 3}, {2, 2}, "EXPLICIT", {1, 1, 0, 2}); }, img);
  unary("avg_pool_same", [](const Tensor& x) { return avg_pool2d(x, {3, 3}, {2, 2}, "SAME"); }, img);
  unary("avg_pool_valid", [](const Tensor& x) { return avg_pool2d(x, {2, 2}, {1, 1}); }, img);
  // normalization
  unary("fused_batch_norm_inference",
        [](const Tensor& x) { return fused_batch_norm(x, scale, offset, mean, var, 1e-3, false).y; }, img);
  unary("batch_normalization", [](const Tensor& x) { return batch_normalization(x, mean, var, offset, scale, 1e-3); },
        img);
  unary("layer_normalization", [](const Tensor& x) { return layer_normalization(x, scale, offset); }, rnd({2, 5, 3}, 30));
  // elementwise math
  unary("exp_log1p_expm1", [](const Tensor& x) { return exp(x) + log1p(abs(x)) - expm1(x * 0.5); }, m);
  unary("sqrt_rsqrt_square", [](const Tensor& x) { return sqrt(x) + rsqrt(x) + square(x); }, mp);
  unary("log_div_pow", [](const Tensor& x) { return log(x) / pow(x, scalar(1.5)); }, mp);
  unary("trig_erf", [](const Tensor& x) { return sin(x) * cos(x) + erf(x) + tanh(x); }, m);
  unary("neg_abs_sign", [](const Tensor& x) { return neg(abs(x)) + sign(x); }, m);
  unary("floor_ceil_round", [](const Tensor& x) { return floor(x * 3.0) + ceil(x * 2.0) + round(x * 4.0); }, m);
  binary("max_min_sub", [](const Tensor& x, const Tensor& y) { return maximum(x, y) - minimum(x, y) * 2.0; }, m,
         rnd({4}, 31));
  unary("clip", [](const Tensor& x) { return clip_by_value(x, -0.5, 0.5); }, m);
  // activations
  unary("activations", [](const Tensor& x) { return elu(x) + selu(x) + softplus(x) + leaky_relu(x) + relu6(x * 4.0); }, m);
  unary("gelu", [](const Tensor& x) { return gelu(x) + gelu(x, true); }, m);
  unary("softmax", [](const Tensor& x) { return softmax(x); }, m);
  unary("log_softmax_axis1", [](const Tensor& x) { return log_softmax(x, 1); }, m);
  // reductions
  unary("reduce_sum_mean", [](const Tensor& x) { return reduce_sum(x, {1}) + reduce_mean(x, {-1}, false); },
        rnd({2, 4, 4}, 32));
  unary("reduce_all", [](const Tensor& x) { return reduce_sum(x) + reduce_max(x) + reduce_min(x); }, m);
  unary("reduce_max_keepdims", [](const Tensor& x) { return reduce_max(x, {0, 2}, true) * reduce_prod(x, {0, 2}, true); }, m);
  unary("argmax", [](const Tensor& x) { return argmax(x, 2); }, m);
  unary("argmin_int32", [](const Tensor& x) { return argmin(x, 1, DType::Int32); }, m);
  unary("cumsum", [](const Tensor& x) { return cumsum(x, 1) + cumsum(x, 2, true, true); }, m);
  c.push_back({"top_k", [](const TensorList& xs) { auto [v, i] = top_k(xs[0], 2); return TensorList{v, i}; },
               {f32({2, 3, 4})}, {m}});
  // shape and layout
  unary("reshape_transpose", [](const Tensor& x) { return transpose(reshape(x, {2, 12}), {1, 0}); }, m);
  unary("concat_slice", [](const Tensor& x) { return concat({slice(x, {0, 1, 0}, {2, 2, -1}), x}, 1); }, m);
  unary("strided_slice", [](const Tensor& x) { return strided_slice(x, {0, 2, 1}, {2, 0, 4}, {1, -1, 2}); }, m);
  unary("strided_slice_masks",
        [](const Tensor& x) { return strided_slice(x, {1, 0}, {2, 3}, {1, 1}, 0, 2, 0, 0, 1); }, m);
  unary("strided_slice_newaxis_ellipsis",
        [](const Tensor& x) { return strided_slice(x, {0, 0, 1}, {0, 0, 3}, {1, 1, 1}, 0, 0, 2, 1, 0); }, m);
  unary("pad_tile_reverse", [](const Tensor& x) { return reverse(tile(pad(x, {{0, 0}, {1, 2}, {0, 1}}, "CONSTANT", 0.5), {1, 2, 1}), {1, 2}); },
        m);
  unary("pad_reflect", [](const Tensor& x) { return pad(x, {{0, 0}, {1, 1}, {2, 2}}, "REFLECT"); }, m);
  unary("broadcast_expand_squeeze",
        [](const Tensor& x) { return squeeze(broadcast_to(expand_dims(x, 0), {3, 2, 3, 4}) + 1.0, {}); }, m);
  unary("split_stack", [](const Tensor& x) { auto p = split(x, 2, 2); return stack({p[1], p[0]}, 0); }, m);
  binary("gather", [](const Tensor& x, const Tensor& i) { return gather(x, i, 1); }, m,
         constant<int64_t>({2, 0, 1, 2}, Shape{2, 2}));
  binary("gather_int32_axis2", [](const Tensor& x, const Tensor& i) { return gather(x, i, 2); }, m,
         constant<int32_t>({3, 1}, Shape{2}));
  binary("gather_nd", [](const Tensor& x, const Tensor& i) { return gather_nd(x, i); }, m,
         constant<int32_t>({0, 1, 1, 2}, Shape{2, 2}));
  binary("one_hot", [](const Tensor&, const Tensor& i) { return one_hot(i, 5); }, m, constant<int64_t>({0, 4, 2}, Shape{3}));
  // cast, where, comparisons
  unary("cast_int_float", [](const Tensor& x) { return cast(cast(x * 3.0, DType::Int32), DType::Float32); }, m);
  binary("where_compare", [](const Tensor& x, const Tensor& y) { return where(greater(x, y), x, y * 2.0); }, m, rnd({4}, 33));
  binary("comparisons",
         [](const Tensor& x, const Tensor& y) {
           return logical_or(logical_and(less(x, y), not_equal(x, y)), logical_not(greater_equal(x, y * 0.5)));
         },
         m, rnd({2, 3, 4}, 34));
  binary("equal_less_equal", [](const Tensor& x, const Tensor& y) { return logical_and(equal(x, y), less_equal(x, y)); },
         constant<int64_t>({1, 2, 3, 4}, Shape{4}), constant<int64_t>({1, 3, 3, 0}, Shape{4}));
  return c;
}

TEST(OnnxExport, EveryOpFamilyRoundTrips) {
  for (const Case& c : cases()) {
    Function f(c.fn, FunctionOptions{.name = c.name, .input_signature = c.sig});
    round_trip(c.name, f.get_concrete_function(), c.inputs);
  }
}

// A residual block's add and relu are the fused conv's summand and activation in the
// optimized graph; the export writes them back as Add and Relu after the Conv.
TEST(OnnxExport, ConvSummandIsAnAddBeforeTheActivation) {
  const std::vector<Case> all = cases();
  const auto c = std::find_if(all.begin(), all.end(), [](const Case& k) { return k.name == "conv2d_residual_relu"; });
  ASSERT_NE(c, all.end());
  Function f(c->fn, FunctionOptions{.input_signature = c->sig});
  int summands = 0, fused = 0;
  for (const Node& n : f.get_concrete_function().optimized_graph().nodes()) {
    if (n.op != OpId::FusedConv2D) continue;
    ++fused;
    const AttrValue* v = n.attrs.find("has_summand");
    summands += v && std::get<bool>(*v);
  }
  EXPECT_EQ(fused, 1);
  EXPECT_EQ(summands, 1);
  op::ModelProto m = parse(dfo::export_to_bytes(f.get_concrete_function()));
  std::vector<std::string> ops;
  for (const auto& n : m.graph().node())
    if (n.op_type() != "Transpose") ops.push_back(n.op_type());
  EXPECT_EQ(ops, (std::vector<std::string>{"Conv", "Add", "Relu"}));
}

TEST(OnnxExport, ConvChainIsWrittenAsItsConvs) {
  const std::vector<Case> all = cases();
  const auto c =
      std::find_if(all.begin(), all.end(), [](const Case& k) { return k.name == "conv_chain_inverted_residual"; });
  ASSERT_NE(c, all.end());
  Function f(c->fn, FunctionOptions{.input_signature = c->sig});
  int chains = 0;
  for (const Node& n : f.get_concrete_function().optimized_graph().nodes()) chains += n.op == OpId::FusedConvChain;
  EXPECT_EQ(chains, 1);
  op::ModelProto m = parse(dfo::export_to_bytes(f.get_concrete_function()));
  std::vector<std::string> ops;
  for (const auto& n : m.graph().node())
    if (n.op_type() != "Transpose") ops.push_back(n.op_type());
  EXPECT_EQ(ops, (std::vector<std::string>{"Conv", "Clip", "Conv", "Add"}));
}

TEST(OnnxExport, UnoptimizedGraphAndOpsets) {
  const Case c = cases()[0];
  Function f(c.fn, FunctionOptions{.input_signature = c.sig});
  for (int64_t opset : {13, 15, 17}) {
    round_trip("dense opset " + std::to_string(opset), f.get_concrete_function(), c.inputs,
               {.opset = opset, .input_names = {"x"}, .output_names = {"y"}, .optimized = false});
    op::ModelProto m = parse(dfo::export_to_bytes(f.get_concrete_function(), {.opset = opset}));
    ASSERT_EQ(m.opset_import_size(), 1);
    EXPECT_EQ(m.opset_import(0).version(), opset);
  }
  EXPECT_THROW(dfo::export_to_bytes(f.get_concrete_function(), {.opset = 12}), Error);
}

TEST(OnnxExport, ConvTransposesCancel) {
  static Tensor k1 = rnd({3, 3, 3, 4}, 40), k2 = rnd({1, 1, 4, 2}, 41);
  Function f = function([](const Tensor& x) { return conv2d(conv2d(x, k1, {1, 1}, "SAME"), k2); },
             FunctionOptions{.input_signature = Signature{f32({-1, 8, 8, 3})}});
  const std::string bytes = dfo::export_to_bytes(f.get_concrete_function());
  op::ModelProto m = parse(bytes);
  int transposes = 0, convs = 0;
  for (const auto& n : m.graph().node()) transposes += n.op_type() == "Transpose", convs += n.op_type() == "Conv";
  EXPECT_EQ(convs, 2);
  EXPECT_EQ(transposes, 2);  // in and out only: the pair between the convolutions cancels
  round_trip("conv_conv", f.get_concrete_function(), {rnd({2, 8, 8, 3}, 42)});
}

TEST(OnnxExport, DynamicBatchStaysSymbolic) {
  const Case c = cases()[0];
  Function f(c.fn, FunctionOptions{.input_signature = c.sig});
  op::ModelProto m = parse(dfo::export_to_bytes(f.get_concrete_function(), {.input_names = {"x"}}));
  const auto& in = m.graph().input(0);
  EXPECT_EQ(in.name(), "x");
  const auto& shape = in.type().tensor_type().shape();
  ASSERT_EQ(shape.dim_size(), 2);
  EXPECT_EQ(shape.dim(0).dim_param(), "batch");
  EXPECT_FALSE(shape.dim(0).has_dim_value());
  EXPECT_EQ(shape.dim(1).dim_value(), 4);
  const auto& out = m.graph().output(0).type().tensor_type().shape();
  EXPECT_EQ(out.dim(0).dim_param(), "batch");
  EXPECT_EQ(out.dim(1).dim_value(), 3);
  // Variables became initializers with their current values.
  bool found = false;
  for (const auto& t : m.graph().initializer()) found = found || t.name() == "w";
  EXPECT_TRUE(found);
  // Runs at several batch sizes.
  dfo::OnnxModel imported = dfo::import_model_from_bytes(m.SerializeAsString());
  EXPECT_EQ(imported.inputs()[0].type.shape, Shape({-1, 4}));
  for (int64_t n : {1, 7}) {
    Tensor x = rnd({n, 4}, 50 + n);
    expect_close(imported.run({{"x", x}}).at("output_0"), f(x)[0], "batch " + std::to_string(n));
  }
}

TEST(OnnxExport, UnmappedOpsAreListed) {
  static const OpId custom = register_custom_op(OpDef{
      .name = "export_test_custom",
      .num_inputs = 1,
      .infer = [](const OpCall& c, TypeList& out) { out.push_back({c.in(0).dtype(), c.in(0).shape()}); },
      .non_differentiable = true});
  Function f = function([](const Tensor& x) { return relu(dispatch1(custom, {dispatch1(custom, {x})})); },
             FunctionOptions{.input_signature = Signature{f32({2})}});
  try {
    dfo::export_to_bytes(f.get_concrete_function());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[onnx::export] 2 node(s) have no ONNX mapping"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(export_test_custom)"), std::string::npos) << msg;
  }
  EXPECT_THROW(dfo::export_to_bytes(f.get_concrete_function(), {.input_names = {"a", "b"}}), Error);
}

TEST(OnnxExport, ExportableOpsAndAtomicWrite) {
  const std::vector<std::string> ops = dfo::exportable_ops();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  for (const char* name : {"conv2d", "fused_matmul", "max_pool", "read_variable", "fused_elementwise"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), name), ops.end()) << name;
  const Case c = cases()[0];
  Function f(c.fn, FunctionOptions{.input_signature = c.sig});
  const std::string dir = ::testing::TempDir() + "onnx_export_atomic";
  fs::create_directories(dir);
  const std::string path = dir + "/m.onnx";
  dfo::export_model(f.get_concrete_function(), path);
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1);  // no temp file left behind
  EXPECT_EQ(dfo::import_model(path).outputs().size(), 1u);
  EXPECT_THROW(dfo::export_model(f.get_concrete_function(), "/nonexistent-dir/m.onnx"), Error);
  fs::remove_all(dir);
}

TEST(OnnxExport, KerasSequentialCnn) {
  namespace L = keras::layers;
  auto model = std::make_shared<keras::Sequential>(std::vector<keras::LayerPtr>{
      L::InputLayer(Shape{12, 12, 3}), L::Conv2D(8, 3, {.padding = "same", .activation = "relu"}),
      L::MaxPooling2D(), L::Conv2D(4, 3, {.strides = 2, .activation = "relu"}), L::Flatten(),
      L::Dense(10, "softmax")});
  const std::string path = ::testing::TempDir() + "keras_cnn.onnx";
  dfo::export_keras_model(*model, path, {.input_names = {"image"}, .output_names = {"probs"}});
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  op::ModelProto m = parse(bytes);
  EXPECT_NO_THROW(op::checker::check_model(m));
  EXPECT_EQ(m.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
  Tensor x = rnd({3, 12, 12, 3}, 60);
  Tensor want = (*model)(TensorList{x}, false)[0];
  dfo::OnnxModel imported = dfo::import_model(path);
  expect_close(imported.run({{"image", x}}).at("probs"), want, "keras cnn");
  std::string why;
  if (auto ort = run_ort(bytes, {{"image", x}}, &why)) expect_close(ort->at("probs"), want, "keras cnn (onnxruntime)");
  fs::remove(path);
}

TEST(OnnxExport, KerasFunctionalTwoInputs) {
  namespace L = keras::layers;
  Tensor a = keras::Input({6}, "a"), b = keras::Input({4}, "b");
  Tensor h = L::Concatenate(-1)(TensorList{L::Dense(5, "tanh")(a), L::Dense(3, "relu")(b)})[0];
  Tensor out = L::Dense(2)(L::BatchNormalization()(h));
  auto model = std::make_shared<keras::Model>(TensorList{a, b}, TensorList{out});
  const std::string path = ::testing::TempDir() + "keras_two_inputs.onnx";
  dfo::export_keras_model(*model, path, {.input_names = {"a", "b"}});
  Tensor xa = rnd({4, 6}, 61), xb = rnd({4, 4}, 62);
  Tensor want = (*model)(TensorList{xa, xb}, false)[0];
  dfo::OnnxModel imported = dfo::import_model(path);
  ASSERT_EQ(imported.inputs().size(), 2u);
  expect_close(imported.run({{"a", xa}, {"b", xb}}).at("output_0"), want, "keras functional");
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string why;
  if (auto ort = run_ort(bytes, {{"a", xa}, {"b", xb}}, &why))
    expect_close(ort->at("output_0"), want, "keras functional (onnxruntime)");
  fs::remove(path);
}

TEST(OnnxExport, OnnxRuntimeAvailability) {
  std::string why;
  if (ort_modules(&why).empty()) DEEPFLOW_ORACLE_MISSING("ONNX Runtime checks skipped: " << why);
  SUCCEED();
}

}  // namespace
