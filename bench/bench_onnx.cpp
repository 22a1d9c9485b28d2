// SPDX-License-Identifier: Apache-2.0
// Inference of imported ONNX models (torchvision classifiers exported by PyTorch): the
// time of one OnnxModel::run at batch 1 and 8, on the inputs scripts/make-onnx-models.py
// wrote. ONNX Runtime times the same file and input in bench/peers/onnx_ort.js.
//
//   /usr/bin/python3 scripts/make-onnx-models.py data/onnx_models
//   DEEPFLOW_ONNX_MODELS=data/onnx_models build*/bench/deepflow_bench --benchmark_filter=onnx/
//
// The models directory: $DEEPFLOW_ONNX_MODELS, else the compile definition
// DEEPFLOW_ONNX_MODELS_DIR; without it (or the model files) each benchmark is skipped with
// the reason. The import happens once per model and process, outside the timing.
// With DEEPFLOW_BENCH_PROFILE=1 each benchmark also prints deepflow::profiler's per-op
// table of a run (once per model and batch, before the timing).
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "bench_util.h"
#include "deepflow/graph/profiler.h"
#include "deepflow/onnx/onnx.h"

namespace deepflow {
namespace {

namespace fs = std::filesystem;

struct Loaded {
  onnx::OnnxModel model;
  std::map<int, Tensor> inputs;  // by batch
};

// $DEEPFLOW_ONNX_MODELS, else the compile definition DEEPFLOW_ONNX_MODELS_DIR.
std::string models_dir() {
  if (const char* env = std::getenv("DEEPFLOW_ONNX_MODELS"); env && *env) return env;
#ifdef DEEPFLOW_ONNX_MODELS_DIR
  return DEEPFLOW_ONNX_MODELS_DIR;
#else
  return "";
#endif
}

// Imported once per process (an import costs up to a second; the benchmark repeats).
Loaded& load(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Loaded>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return *it->second;
  const std::string dir = models_dir();
  if (dir.empty()) throw std::runtime_error("DEEPFLOW_ONNX_MODELS is not set (scripts/make-onnx-models.py DIR)");
  const fs::path path = fs::path(dir) / name / "model.onnx";
  if (!fs::exists(path)) throw std::runtime_error(path.string() + " is missing (scripts/make-onnx-models.py)");
  auto loaded = std::make_unique<Loaded>(Loaded{onnx::import_model(path.string()), {}});
  return *cache.emplace(name, std::move(loaded)).first->second;
}

const Tensor& input(Loaded& m, const std::string& name, int batch) {
  auto it = m.inputs.find(batch);
  if (it != m.inputs.end()) return it->second;
  const fs::path pb = fs::path(models_dir()) / name / ("b" + std::to_string(batch)) / "test_data_set_0" / "input_0.pb";
  if (!fs::exists(pb)) throw std::runtime_error(pb.string() + " is missing (scripts/make-onnx-models.py)");
  return m.inputs.emplace(batch, onnx::read_tensor_file(pb.string())).first->second;
}

double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

void bm_onnx(benchmark::State& state, const std::string& name, int batch) {
  Loaded* m = nullptr;
  const Tensor* x = nullptr;
  if (!bench::warm_up(state, [&] {
        m = &load(name);
        x = &input(*m, name, batch);
        m->model.run({{"input", *x}});  // the first run compiles kernels and plans the executor
      })) {
    return;
  }
  const std::map<std::string, Tensor> feeds{{"input", *x}};
  if (const char* p = std::getenv("DEEPFLOW_BENCH_PROFILE"); p && *p == '1') {
    static std::map<std::string, bool> profiled;
    if (!std::exchange(profiled[name + "/b" + std::to_string(batch)], true)) {
      constexpr int kRuns = 50;
      profiler::start();
      for (int i = 0; i < kRuns; ++i) m->model.run(feeds);
      std::printf("onnx/%s/b%d, per op:\n%s", name.c_str(), batch, profiler::summary(profiler::stop(), kRuns).c_str());
    }
  }
  const double cpu0 = process_cpu_ms();
  for (auto _ : state) {
    auto out = m->model.run(feeds);
    benchmark::DoNotOptimize(out);
  }
  // Every thread's CPU time per run: on a busy machine the work apart from the waiting (and,
  // above the wall time times the threads, spinning). A counter, so the name stays onnx/<model>/b<batch>.
  state.counters["cpu_ms"] = (process_cpu_ms() - cpu0) / double(std::max<int64_t>(state.iterations(), 1));
  state.counters["images/s"] = benchmark::Counter(double(batch) * double(state.iterations()),
                                                  benchmark::Counter::kIsRate);
}

const int kRegistered = [] {
  for (const char* name : {"resnet18", "mobilenet_v2"}) {
    for (int batch : {1, 8}) {
      benchmark::RegisterBenchmark(("onnx/" + std::string(name) + "/b" + std::to_string(batch)).c_str(),
                                   [name = std::string(name), batch](benchmark::State& s) { bm_onnx(s, name, batch); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  return 0;
}();

}  // namespace
}  // namespace deepflow
