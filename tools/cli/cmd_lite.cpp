// SPDX-License-Identifier: Apache-2.0
// `deepflow lite`: .tflite files on deepflow_lite's interpreter.
//
//   deepflow lite info model.tflite [--json]        # tensors, ops, signatures, arena size
//   deepflow lite run model.tflite --input x=in.npy [--output-dir out/] [--threads 2]
//   deepflow lite benchmark model.tflite [--threads 2] [--runs 50] [--warmup 5] [--batch 1] [--profile] [--fast-int8]
//
// run reads each input from a .npy file (by tensor name, or by position with 0=..., 1=...;
// an input's -1 dimensions take the array's) or, without --input, fills it with a fixed
// pseudo-random pattern; it prints each output (and writes <name>.npy under --output-dir).
// benchmark times invoke() like TFLite's benchmark_model: init, first run, then the median,
// mean, p90 and min of --runs runs after --warmup.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "cli.h"
#include "deepflow/core/error.h"
#include "deepflow/io/npy.h"
#include "deepflow/lite/interpreter.h"
#include "deepflow/lite/kernel.h"

namespace deepflow::cli {

void setup_lite_convert(CLI::App* lite);  // cmd_lite_convert.cpp

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// deepflow's dtype of a lite type, for .npy files.
DType core_dtype(lite::DType t) {
  switch (t) {
    case lite::DType::kFloat32: return DType::Float32;
    case lite::DType::kFloat16: return DType::Float16;
    case lite::DType::kInt32: return DType::Int32;
    case lite::DType::kInt64: return DType::Int64;
    case lite::DType::kUInt8: return DType::UInt8;
    case lite::DType::kInt8: return DType::Int8;
    case lite::DType::kBool: return DType::Bool;
    case lite::DType::kFloat64: return DType::Float64;
    default: fail("[lite] tensors of type ", lite::dtype_name(t), " cannot be read from or written to .npy yet");
  }
}

nlohmann::json tensor_json(const lite::Tensor& t, int index) {
  nlohmann::json j = {{"index", index}, {"name", t.name}, {"dtype", lite::dtype_name(t.type)},
                      {"shape", t.shape}, {"shape_signature", t.shape_signature}};
  if (t.quantized())
    j["quantization"] = {{"scales", t.quant.scale}, {"zero_points", t.quant.zero_point}, {"dimension", t.quant.dim}};
  return j;
}

nlohmann::json info_json(const std::string& path) {
  auto model = lite::Model::from_file(path);
  lite::Interpreter interp(model);
  const auto& fbm = *model->fb();
  nlohmann::json j = {{"file", path}, {"bytes", model->size()}, {"schema_version", fbm.version()},
                      {"description", fbm.description() ? fbm.description()->str() : ""},
                      {"min_runtime_version", model->min_runtime_version()}};
  nlohmann::json subgraphs = nlohmann::json::array();
  for (int s = 0; s < interp.num_subgraphs(); ++s) {
    lite::Subgraph& g = interp.subgraph(s);
    nlohmann::json sg = {{"index", s}, {"name", g.name()}, {"tensors", g.tensors().size()}, {"operators", g.num_nodes()}};
    for (const char* kind : {"inputs", "outputs"}) {
      nlohmann::json list = nlohmann::json::array();
      for (int t : (std::string(kind) == "inputs" ? g.inputs() : g.outputs())) list.push_back(tensor_json(g.tensor(t), t));
      sg[kind] = list;
    }
    std::map<std::string, int> ops;
    const auto* fsg = fbm.subgraphs()->Get(static_cast<uint32_t>(s));
    if (fsg->operators()) {
      for (const auto* op : *fsg->operators()) {
        const auto* code = fbm.operator_codes()->Get(op->opcode_index());
        const auto builtin = static_cast<lite::fb::BuiltinOperator>(
            std::max<int32_t>(static_cast<int32_t>(code->builtin_code()), code->deprecated_builtin_code()));
        const std::string name = builtin == lite::fb::BuiltinOperator::CUSTOM
                                     ? "CUSTOM:" + (code->custom_code() ? code->custom_code()->str() : std::string())
                                     : lite::fb::EnumNameBuiltinOperator(builtin);
        ++ops[name + " v" + std::to_string(code->version())];
      }
    }
    sg["ops"] = ops;
    subgraphs.push_back(sg);
  }
  j["subgraphs"] = subgraphs;
  j["signatures"] = interp.signature_keys();
  interp.allocate_tensors();
  j["arena_bytes"] = interp.subgraph(0).arena_bytes();
  return j;
}

void print_info(const nlohmann::json& j) {
  std::cout << j["file"].get<std::string>() << ": " << j["bytes"] << " bytes, schema " << j["schema_version"];
  if (!j["min_runtime_version"].get<std::string>().empty()) std::cout << ", min runtime " << j["min_runtime_version"].get<std::string>();
  std::cout << "\n";
  for (const auto& sg : j["subgraphs"]) {
    std::cout << "subgraph " << sg["index"] << (sg["name"].get<std::string>().empty() ? "" : " '" + sg["name"].get<std::string>() + "'")
              << ": " << sg["operators"] << " operators, " << sg["tensors"] << " tensors\n";
    for (const char* kind : {"inputs", "outputs"})
      for (const auto& t : sg[kind])
        std::cout << "  " << (std::string(kind) == "inputs" ? "input  " : "output ") << t["index"] << " '"
                  << t["name"].get<std::string>() << "' " << t["dtype"].get<std::string>() << " "
                  << t["shape_signature"].dump() << (t.contains("quantization") ? " quantized" : "") << "\n";
    std::cout << "  ops:";
    for (const auto& [name, count] : sg["ops"].items()) std::cout << " " << name << " x" << count;
    std::cout << "\n";
  }
  std::cout << "signatures: " << j["signatures"].dump() << "\narena: " << j["arena_bytes"] << " bytes\n";
}

// A fixed pattern in [-1, 1) (integers: small values), so runs repeat.
void fill_pattern(lite::Tensor& t, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0, n = t.num_elements(); i < n; ++i) {
    switch (t.type) {
      case lite::DType::kFloat32: t.data<float>()[i] = u(gen); break;
      case lite::DType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(gen() % 8); break;
      case lite::DType::kInt64: t.data<int64_t>()[i] = static_cast<int64_t>(gen() % 8); break;
      case lite::DType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(gen() % 256 - 128); break;
      case lite::DType::kUInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(gen() % 256); break;
      case lite::DType::kBool: t.data<bool>()[i] = gen() % 2; break;
      default: fail("[lite run] cannot make values for input '", t.name, "' of type ", lite::dtype_name(t.type));
    }
  }
}

std::vector<int> concrete_shape(const lite::Tensor& t, int batch) {
  std::vector<int> shape = t.shape_signature;
  for (int& d : shape)
    if (d == -1) d = batch;
  return shape;
}

struct RunOptions {
  std::string path;
  std::vector<std::string> inputs;
  std::string output_dir;
  int threads = 1;
  int batch = 1;
};

void run(const RunOptions& o) {
  auto model = lite::Model::from_file(o.path);
  lite::Interpreter interp(model, o.threads);
  std::map<int, Tensor> arrays;
  for (const std::string& spec : o.inputs) {
    const auto eq = spec.find('=');
    DF_CHECK(eq != std::string::npos, "[lite run] --input takes NAME=FILE.npy, not '", spec, "'");
    const std::string key = spec.substr(0, eq);
    int which = -1;
    for (size_t i = 0; i < interp.inputs().size(); ++i)
      if (interp.input_tensor(static_cast<int>(i)).name == key || std::to_string(i) == key) which = static_cast<int>(i);
    DF_CHECK(which >= 0, "[lite run] the model has no input '", key, "'");
    arrays[which] = io::read_npy(spec.substr(eq + 1));
  }
  for (size_t i = 0; i < interp.inputs().size(); ++i) {
    const lite::Tensor& t = interp.input_tensor(static_cast<int>(i));
    std::vector<int> shape = concrete_shape(t, o.batch);
    if (auto it = arrays.find(static_cast<int>(i)); it != arrays.end()) shape.assign(it->second.shape().begin(), it->second.shape().end());
    interp.resize_input_tensor(interp.inputs()[i], shape);
  }
  interp.allocate_tensors();
  for (size_t i = 0; i < interp.inputs().size(); ++i) {
    lite::Tensor& t = interp.input_tensor(static_cast<int>(i));
    if (auto it = arrays.find(static_cast<int>(i)); it != arrays.end()) {
      DF_CHECK(it->second.dtype() == core_dtype(t.type), "[lite run] input '", t.name, "' is ", lite::dtype_name(t.type),
               "; the .npy file holds ", dtype_name(it->second.dtype()));
      std::memcpy(t.data_ptr, it->second.raw_data(), t.bytes);
    } else {
      fill_pattern(t, static_cast<uint32_t>(i + 1));
    }
  }
  const auto t0 = Clock::now();
  interp.invoke();
  const double ms = ms_since(t0);
  if (!o.output_dir.empty()) fs::create_directories(o.output_dir);
  for (size_t i = 0; i < interp.outputs().size(); ++i) {
    const lite::Tensor& t = interp.output_tensor(static_cast<int>(i));
    std::vector<int64_t> dims(t.shape.begin(), t.shape.end());
    Tensor out(Shape(dims), core_dtype(t.type));
    std::memcpy(out.raw_data(), t.data_ptr, t.bytes);
    std::cout << "output " << i << " '" << t.name << "': " << out.to_string() << "\n";
    if (!o.output_dir.empty()) {
      std::string file = t.name.empty() ? "output_" + std::to_string(i) : t.name;
      std::replace(file.begin(), file.end(), '/', '_');
      std::replace(file.begin(), file.end(), ':', '_');
      io::write_npy(o.output_dir + "/" + file + ".npy", out);
    }
  }
  std::cout << "invoke: " << ms << " ms\n";
}

struct BenchOptions {
  std::string path;
  bool profile = false;
  bool fast_int8 = false;
  int threads = 1;
  int runs = 50;
  int warmup = 5;
  int batch = 1;
};

void benchmark(const BenchOptions& o) {
  auto t0 = Clock::now();
  auto model = lite::Model::from_file(o.path);
  lite::Interpreter interp(model, o.threads);
  interp.set_fast_int8(o.fast_int8);
  for (size_t i = 0; i < interp.inputs().size(); ++i)
    interp.resize_input_tensor(interp.inputs()[i], concrete_shape(interp.input_tensor(static_cast<int>(i)), o.batch));
  interp.allocate_tensors();
  const double init_ms = ms_since(t0);
  for (size_t i = 0; i < interp.inputs().size(); ++i) fill_pattern(interp.input_tensor(static_cast<int>(i)), 1);
  t0 = Clock::now();
  interp.invoke();
  const double first_ms = ms_since(t0);
  for (int i = 0; i < o.warmup; ++i) interp.invoke();
  std::vector<double> times;
  for (int i = 0; i < o.runs; ++i) {
    t0 = Clock::now();
    interp.invoke();
    times.push_back(ms_since(t0));
  }
  std::sort(times.begin(), times.end());
  double mean = 0;
  for (double t : times) mean += t;
  mean /= std::max<size_t>(times.size(), 1);
  const auto at = [&](double q) { return times.empty() ? 0.0 : times[std::min(times.size() - 1, static_cast<size_t>(q * times.size()))]; };
  if (o.profile) {
    // Time per op type over the timed runs, largest first.
    interp.set_profiling(true);
    for (int i = 0; i < o.runs; ++i) interp.invoke();
    lite::Subgraph& g = interp.subgraph(0);
    std::map<std::string, std::pair<double, int>> by_op;
    double total = 0;
    for (int i = 0; i < g.num_nodes() && i < static_cast<int>(g.node_times().size()); ++i) {
      auto& e = by_op[g.node_name(i)];
      e.first += g.node_times()[static_cast<size_t>(i)];
      ++e.second;
      total += g.node_times()[static_cast<size_t>(i)];
    }
    std::vector<std::pair<double, std::string>> rows;
    for (const auto& [name, e] : by_op) rows.emplace_back(e.first, name);
    std::sort(rows.rbegin(), rows.rend());
    std::cout << "profile (ms per invoke, share):\n";
    for (const auto& [t, name] : rows)
      std::cout << "  " << name << " x" << by_op[name].second << ": " << 1e3 * t / o.runs << " ms, "
                << (total > 0 ? 100 * t / total : 0) << "%\n";
  }
  std::cout << o.path << ": threads " << o.threads << ", batch " << o.batch << "\n"
            << "init " << init_ms << " ms, first invoke " << first_ms << " ms\n"
            << "invoke over " << o.runs << " runs: median " << at(0.5) << " ms, mean " << mean << " ms, p90 " << at(0.9)
            << " ms, min " << (times.empty() ? 0.0 : times.front()) << " ms\n";
}

void setup_lite(CLI::App& app) {
  CLI::App* lite = app.add_subcommand("lite", "Inspect, run and time .tflite models (deepflow's TF Lite interpreter)");
  lite->require_subcommand(1);

  auto info_path = std::make_shared<std::string>();
  auto info_as_json = std::make_shared<bool>(false);
  CLI::App* info = lite->add_subcommand("info", "Tensors, operators, signatures and arena size of a .tflite file");
  info->add_option("file", *info_path, "the .tflite file")->required();
  info->add_flag("--json", *info_as_json, "print JSON");
  info->callback([info_path, info_as_json] {
    const nlohmann::json j = info_json(*info_path);
    if (*info_as_json) std::cout << j.dump(1) << "\n";
    else print_info(j);
  });

  auto ro = std::make_shared<RunOptions>();
  CLI::App* r = lite->add_subcommand("run", "Run a .tflite model once on .npy inputs (or a fixed pattern)");
  r->add_option("file", ro->path, "the .tflite file")->required();
  r->add_option("--input", ro->inputs, "NAME=FILE.npy (or INDEX=FILE.npy); repeatable");
  r->add_option("--output-dir", ro->output_dir, "write each output as <name>.npy here");
  r->add_option("--threads", ro->threads, "interpreter threads")->check(CLI::PositiveNumber);
  r->add_option("--batch", ro->batch, "size of -1 dimensions of inputs without --input")->check(CLI::PositiveNumber);
  r->callback([ro] { run(*ro); });

  auto bo = std::make_shared<BenchOptions>();
  CLI::App* b = lite->add_subcommand("benchmark", "Time invoke() on a .tflite model");
  b->add_option("file", bo->path, "the .tflite file")->required();
  b->add_option("--threads", bo->threads, "interpreter threads")->check(CLI::PositiveNumber);
  b->add_option("--runs", bo->runs, "timed runs")->check(CLI::PositiveNumber);
  b->add_option("--warmup", bo->warmup, "untimed runs first");
  b->add_option("--batch", bo->batch, "size of the inputs' -1 dimensions")->check(CLI::PositiveNumber);
  b->add_flag("--profile", bo->profile, "then time each op type over --runs more runs");
  b->add_flag("--fast-int8", bo->fast_int8,
              "requantize int8 convolutions in float, as LiteRT's default kernels (within a step of its reference)");
  b->callback([bo] { benchmark(*bo); });

  setup_lite_convert(lite);
}

}  // namespace

DF_CLI_COMMAND(setup_lite)

}  // namespace deepflow::cli
