// SPDX-License-Identifier: Apache-2.0
// SavedModels written by TensorFlow (the keras.applications tier of the corpus:
// scripts/make-tf-models.py --apps, or `make tf-models-apps`), run by deepflow:
//
//   tf/<model>/b<batch>   one serving_default call on random images (load outside the timing)
//   tf/<model>/served_b1  the same through io::load_saved_model (what `deepflow serve` runs)
//   tf/<model>/load       tf::load_tf_saved_model plus the first call at batch 1 (each
//                         iteration loads anew: parse, restore, trace, plan, run)
//
// bench/tf/compare.py runs these and TensorFlow 2.21 on the same files side by side. The
// models directory: $DEEPFLOW_TF_MODELS, else <checkout>/data/tf_models; a missing model
// skips its rows with the reason.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <cstdio>

#include "bench_util.h"
#include "deepflow/graph/profiler.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/ops/ops.h"
#include "deepflow/tf/saved_model.h"

namespace deepflow {
namespace {

namespace fs = std::filesystem;

const char* const kModels[] = {"resnet50", "mobilenet_v2", "efficientnet_b0", "densenet121", "inception_v3"};

fs::path model_dir(const std::string& name) {
  fs::path root = DEEPFLOW_TF_MODELS_DIR;
  if (const char* env = std::getenv("DEEPFLOW_TF_MODELS"); env && *env) root = env;
  const fs::path dir = root / name / "saved_model";
  if (!fs::exists(dir / "saved_model.pb"))
    throw std::runtime_error(dir.string() + " is missing (make tf-models-apps)");
  return dir;
}

// The signature's one image input: its key and [h, w, c].
std::pair<std::string, Shape> image_input(const tf::TfSignature& sig) {
  const auto& [key, type] = *sig.inputs().begin();
  return {key, Shape{type.shape[1], type.shape[2], type.shape[3]}};
}

tf::TfSavedModel& loaded(const std::string& name) {
  static std::map<std::string, std::unique_ptr<tf::TfSavedModel>> cache;
  auto& m = cache[name];
  if (!m) m = std::make_unique<tf::TfSavedModel>(tf::load_tf_saved_model(model_dir(name).string()));
  return *m;
}

void bm_infer(benchmark::State& state, const std::string& name, int batch) {
  const tf::TfSignature* sig = nullptr;
  std::map<std::string, Tensor> feeds;
  if (!bench::warm_up(state, [&] {
        sig = &loaded(name).signature("serving_default");
        auto [key, hwc] = image_input(*sig);
        feeds[key] = random_uniform(Shape{batch, hwc[0], hwc[1], hwc[2]}, 0, 1, DType::Float32, 7);
        (*sig)(feeds);  // traces and plans for this batch
      })) {
    return;
  }
  if (const char* p = std::getenv("DEEPFLOW_BENCH_PROFILE"); p && *p == '1') {
    constexpr int kRuns = 3;
    profiler::start();
    for (int i = 0; i < kRuns; ++i) (*sig)(feeds);
    std::printf("tf/%s/b%d, per op:\n%s", name.c_str(), batch, profiler::summary(profiler::stop(), kRuns).c_str());
  }
  for (auto _ : state) {
    auto out = (*sig)(feeds);
    benchmark::DoNotOptimize(out);
  }
  state.counters["images/s"] = benchmark::Counter(double(batch) * double(state.iterations()), benchmark::Counter::kIsRate);
}

// What `deepflow serve` runs: io::load_saved_model's signature (a graph specialized to the
// batch, io/saved_model_formats.h), at batch 1; it should cost what tf/<model>/b1 does.
void bm_served(benchmark::State& state, const std::string& name) {
  std::optional<io::SavedModel> m;
  std::map<std::string, Tensor> feeds;
  if (!bench::warm_up(state, [&] {
        tf::register_tf_saved_model_format();
        m = io::load_saved_model(model_dir(name).string());
        const auto inputs = m->signature("serving_default").inputs();  // a copy
        const auto& [key, type] = *inputs.begin();
        feeds[key] = random_uniform(Shape{1, type.shape[1], type.shape[2], type.shape[3]}, 0, 1, DType::Float32, 7);
        m->signature("serving_default")(feeds);
      })) {
    return;
  }
  for (auto _ : state) {
    auto out = m->signature("serving_default")(feeds);
    benchmark::DoNotOptimize(out);
  }
}

void bm_load(benchmark::State& state, const std::string& name) {
  fs::path dir;
  if (!bench::warm_up(state, [&] { dir = model_dir(name); })) return;
  for (auto _ : state) {
    tf::TfSavedModel m = tf::load_tf_saved_model(dir.string());
    const tf::TfSignature& sig = m.signature("serving_default");
    auto [key, hwc] = image_input(sig);
    auto out = sig({{key, zeros(Shape{1, hwc[0], hwc[1], hwc[2]})}});
    benchmark::DoNotOptimize(out);
  }
}

const int kRegistered = [] {
  for (const char* name : kModels) {
    for (int batch : {1, 8}) {
      benchmark::RegisterBenchmark(("tf/" + std::string(name) + "/b" + std::to_string(batch)).c_str(),
                                   [name = std::string(name), batch](benchmark::State& s) { bm_infer(s, name, batch); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
    benchmark::RegisterBenchmark(("tf/" + std::string(name) + "/served_b1").c_str(),
                                 [name = std::string(name)](benchmark::State& s) { bm_served(s, name); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("tf/" + std::string(name) + "/load").c_str(),
                                 [name = std::string(name)](benchmark::State& s) { bm_load(s, name); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(1);
  }
  return 0;
}();

}  // namespace
}  // namespace deepflow
