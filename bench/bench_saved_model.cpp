// SPDX-License-Identifier: Apache-2.0
// Loading a ~100 MB SavedModel (three 33.6 MB float32 variables): memory-mapped against
// read into memory, with the data file in the page cache ("warm") and evicted from it
// first ("cold", posix_fadvise DONTNEED). Besides the time, each run reports what the
// loaded model adds to the process's resident memory (VmRSS, and its anonymous and
// file-backed parts from /proc/self/status), measured while the model is alive.
//
//   build*/bench/deepflow_bench --benchmark_filter=saved_model
//
// Two levels: `bundle_read` reads every tensor of variables/ through BundleReader (what
// a loader that adopts mapped tensors costs), `saved_model_load` is load_saved_model
// (which adopts them when the core's Variable can, and copies them otherwise).
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench_util.h"
#include "deepflow/core/allocator.h"
#include "deepflow/io/bundle.h"
#include "deepflow/io/saved_model.h"
#include "deepflow/ops/ops.h"

namespace deepflow {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kDim = 2900;  // 2900^2 floats = 33.6 MB: above glibc's 32 MiB mmap threshold

struct Rss {
  double total = 0, anon = 0, file = 0;  // MiB
};

Rss rss() {
  std::ifstream in("/proc/self/status");
  Rss r;
  std::string line;
  auto value = [](const std::string& l) { return std::stod(l.substr(l.find(':') + 1)) / 1024; };  // kB -> MiB
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) r.total = value(line);
    if (line.rfind("RssAnon:", 0) == 0) r.anon = value(line);
    if (line.rfind("RssFile:", 0) == 0) r.file = value(line);
  }
  return r;
}

// A scratch directory, removed when the process ends.
struct Scratch {
  std::string root, model;
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

// Saved once per process.
const std::string& model_dir() {
  static const Scratch scratch = [] {
    std::string tmpl = (fs::temp_directory_path() / "deepflow_bench_sm_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    std::vector<Variable> ws;
    for (int i = 0; i < 3; ++i)
      ws.emplace_back(random_normal({kDim, kDim}, 0, 1.0 / kDim, DType::Float32, int64_t(i)), "w" + std::to_string(i));
    Function f = function([ws](const Tensor& x) { return matmul(matmul(matmul(x, ws[0]), ws[1]), ws[2]); },
                          {.input_signature = Signature{{DType::Float32, {-1, kDim}}}});
    const std::string d = tmpl + "/model";
    io::save_saved_model(d, {{.fn = f.get_concrete_function(), .input_names = {"x"}}});
    return Scratch{tmpl, d};
  }();
  return scratch.model;
}

std::string data_file() { return model_dir() + "/variables/variables.data-00000-of-00001"; }

void evict_from_page_cache(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// Runs `load` (which returns something holding the loaded model) once per iteration and
// reports the time and the memory the held model adds.
template <class Load>
void measure(benchmark::State& state, Load&& load) {
  const bool cold = state.range(1) != 0;
  if (!bench::warm_up(state, [&] { (void)model_dir(); })) return;
  Rss added{};
  for (auto _ : state) {
    state.PauseTiming();
    cpu_release_cached();  // freed buffers must not be handed out again unseen
    if (cold) evict_from_page_cache(data_file());
    const Rss before = rss();
    state.ResumeTiming();
    auto held = load();
    state.PauseTiming();
    const Rss after = rss();
    added = {after.total - before.total, after.anon - before.anon, after.file - before.file};
    { auto drop = std::move(held); }
    state.ResumeTiming();
  }
  state.counters["rss_MiB"] = added.total;
  state.counters["anon_MiB"] = added.anon;
  state.counters["file_MiB"] = added.file;
  state.SetLabel(std::string(state.range(0) ? "mmap" : "read") + (cold ? ", cold cache" : ", warm cache"));
}

void bm_bundle_read(benchmark::State& state) {
  const bool mmap = state.range(0) != 0;
  measure(state, [&] {
    io::BundleReader r(model_dir() + "/variables/variables", {.mmap = mmap});
    std::vector<Tensor> ts;
    for (const std::string& k : r.keys()) ts.push_back(r.read(k));
    return ts;
  });
}

void bm_saved_model_load(benchmark::State& state) {
  const bool mmap = state.range(0) != 0;
  measure(state, [&] { return io::load_saved_model(model_dir(), {"serve"}, {.mmap = mmap}); });
}

// Load and run once: the first call touches every weight.
void bm_saved_model_load_and_run(benchmark::State& state) {
  const bool mmap = state.range(0) != 0;
  const Tensor x = ones({1, kDim});
  measure(state, [&] {
    io::SavedModel m = io::load_saved_model(model_dir(), {"serve"}, {.mmap = mmap});
    benchmark::DoNotOptimize(m.signature("serving_default")({{"x", x}}));
    return m;
  });
}

const int kRegistered = [] {
  for (auto [name, fn] :
       {std::pair{"saved_model/bundle_read", &bm_bundle_read}, std::pair{"saved_model/load", &bm_saved_model_load},
        std::pair{"saved_model/load_and_run", &bm_saved_model_load_and_run}})
    benchmark::RegisterBenchmark(name, fn)
        ->ArgsProduct({{1, 0}, {0, 1}})
        ->ArgNames({"mmap", "cold"})
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(5);
  return 0;
}();

}  // namespace
}  // namespace deepflow
