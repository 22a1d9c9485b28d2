// SPDX-License-Identifier: Apache-2.0
#include "deepflow/serving/warmup.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "deepflow/core/parallel.h"
#include "deepflow/data/tfrecord.h"
#include "deepflow/serving/predict.h"
#include "deepflow/serving/tensor_proto.h"
#include "serving_apis.pb.h"

namespace deepflow::serving {
namespace {

// TF Serving's limit (saved_model_warmup_util.cc): a warmup file is a sample, not a
// data set, and a huge one would hold a version in LOADING for long.
constexpr int64_t kMaxWarmupRecords = 1000;

std::vector<std::string> serialized_examples(const tensorflow::serving::Input& input, std::string* context) {
  std::vector<std::string> out;
  context->clear();
  if (input.has_example_list()) {
    for (const auto& ex : input.example_list().examples()) out.push_back(ex.SerializeAsString());
  } else if (input.has_example_list_with_context()) {
    for (const auto& ex : input.example_list_with_context().examples()) out.push_back(ex.SerializeAsString());
    if (input.example_list_with_context().has_context())
      *context = input.example_list_with_context().context().SerializeAsString();
  }
  return out;
}

// Runs one PredictionLog; returns false for the log kinds that are not replayed.
bool replay(const ServableHandle& handle, const tensorflow::serving::PredictionLog& log) {
  using tensorflow::serving::PredictionLog;
  std::string context;
  switch (log.log_type_case()) {
    case PredictionLog::kPredictLog: {
      const auto& req = log.predict_log().request();
      std::map<std::string, Tensor> inputs;
      for (const auto& [key, proto] : req.inputs()) {
        try {
          inputs.emplace(key, tensor_from_proto(proto));
        } catch (const std::exception& e) {
          throw ServingError(code_of(e), "input '" + key + "': " + e.what());
        }
      }
      std::vector<std::string> filter(req.output_filter().begin(), req.output_filter().end());
      run_predict(handle, req.model_spec().signature_name(), inputs, filter);
      return true;
    }
    case PredictionLog::kClassifyLog: {
      const auto& req = log.classify_log().request();
      run_classify(handle, req.model_spec().signature_name(), serialized_examples(req.input(), &context), context);
      return true;
    }
    case PredictionLog::kRegressLog: {
      const auto& req = log.regress_log().request();
      run_regress(handle, req.model_spec().signature_name(), serialized_examples(req.input(), &context), context);
      return true;
    }
    default: return false;
  }
}

[[noreturn]] void fail(const Servable& servable, const std::string& path, Code code, int64_t index,
                       const std::string& why) {
  throw ServingError(code, "[warm_up] " + servable.name + " version " + std::to_string(servable.version) +
                               ": warmup file " + path + ", record " + std::to_string(index) + ": " + why);
}

void replay_file(const Servable& servable, const std::string& path, const WarmupOptions& options, WarmupStats& stats) {
  // warm_up runs before the manager hands out handles, so a non-owning one is enough.
  ServableHandle handle(std::shared_ptr<const Servable>(), &servable);
  const int64_t iterations = std::max<int64_t>(1, options.num_iterations);
  std::optional<data::RecordReader> reader;
  try {
    reader.emplace(path);
  } catch (const std::exception& e) {
    fail(servable, path, Code::DataLoss, 0, e.what());
  }
  stats.from_file = true;
  for (int64_t index = 0;; ++index) {
    std::optional<std::string_view> rec;
    try {
      rec = reader->read();
    } catch (const std::exception& e) {
      fail(servable, path, Code::DataLoss, index, e.what());
    }
    if (!rec) break;
    if (index >= kMaxWarmupRecords)
      fail(servable, path, Code::InvalidArgument, index,
           "more than " + std::to_string(kMaxWarmupRecords) + " warmup records");
    tensorflow::serving::PredictionLog log;
    if (!log.ParseFromArray(rec->data(), int(rec->size())))
      fail(servable, path, Code::InvalidArgument, index,
           "not a tensorflow.serving.PredictionLog (" + std::to_string(rec->size()) + " bytes)");
    try {
      for (int64_t it = 0; it < iterations; ++it) {
        if (!replay(handle, log)) break;
        ++stats.runs;
      }
    } catch (const std::exception& e) {
      fail(servable, path, code_of(e), index, e.what());
    }
    ++stats.records;
  }
}

Tensor zero_input(const TensorType& type, int64_t batch) {
  Shape shape = type.shape;
  for (int i = 0; i < shape.rank(); ++i)
    if (shape[i] < 0) shape[i] = (i == 0 && batch > 0) ? batch : 1;
  Tensor t(shape, type.dtype);  // strings: empty
  if (type.dtype != DType::String && t.nbytes() > 0) std::memset(t.raw_data(), 0, t.nbytes());
  return t;
}

void automatic(const Servable& servable, const WarmupOptions& options, WarmupStats& stats) {
  // Through run_predict, as requests will come, so that its code path is warm too.
  ServableHandle handle(std::shared_ptr<const Servable>(), &servable);
  for (const std::string& key : servable.model.signature_keys()) {
    std::map<std::string, TensorType> types = servable.model.signature(key).inputs();
    bool batched = false;
    for (const auto& kv : types) batched |= kv.second.shape.rank() > 0 && kv.second.shape[0] < 0;
    // The first run at size 1, then one per batch size the server will use, so that
    // each shape the batcher produces has been through the kernels once.
    std::vector<int64_t> sizes = {0};
    if (batched)
      for (int64_t b : options.batch_sizes)
        if (b > 0) sizes.push_back(b);
    try {
      for (int64_t b : sizes) {
        std::map<std::string, Tensor> inputs;
        for (const auto& [name, type] : types) inputs.emplace(name, zero_input(type, b));
        run_predict(handle, key, inputs);
        ++stats.runs;
      }
    } catch (const std::exception& e) {
      // Zeros are not a valid input for every model (a string input that is parsed, an
      // id that must exist): such a signature stays cold rather than failing the load.
      stats.skipped.push_back(key + ": " + e.what());
      std::fprintf(stderr,
                   "deepflow: warning: [warm_up] %s version %lld: automatic warmup of signature '%s' failed: %s\n",
                   servable.name.c_str(), static_cast<long long>(servable.version), key.c_str(), e.what());
    }
  }
}

// One-row requests of a small model run faster on the request's thread alone than with
// an OpenMP team (whose other members must be woken for every parallel region): time both
// on zeros, interleaved, and record the signatures where the lone thread is not slower
// (within 10%: it also leaves the other cores to other requests), or is short anyway. Each
// timed run follows an idle pause, as a request to a quiet server does (back to back, the
// team's threads would still be spinning from the last run). A short run stays alone even
// when the team finishes it sooner: the team's other members then spin after every
// parallel region, on cores the server's I/O and other requests need. On the 2-core VM the
// dense 784 -> 512 layer took 33-40 us alone and 23-34 us with 2 threads after a pause, and
// served alone it cost 79-92 us of server CPU per request against 106-110 us with the team,
// at a p50 latency no worse (grpc_bench spawn, OMP_NUM_THREADS=2).
void plan_threads(const Servable& servable, WarmupStats& stats) {
  using Clock = std::chrono::steady_clock;
  constexpr int kRuns = 5;
  constexpr auto kIdle = std::chrono::milliseconds(3);  // past libgomp's spin before sleeping
  constexpr double kShortMicros = 50;
  constexpr double kMaxTeamMicros = 2000;  // larger models keep their team: no need to time
  const int team = intra_op_threads();
  if (team == 1) return;
  for (const std::string& key : servable.model.signature_keys()) {
    const io::LoadedSignature& sig = servable.model.signature(key);
    std::map<std::string, Tensor> inputs;
    bool numeric = true;
    for (const auto& [name, type] : sig.inputs()) {
      numeric &= type.dtype != DType::String;
      inputs.emplace(name, zero_input(type, 1));
    }
    if (!numeric || inputs.empty()) continue;
    auto time_with = [&](int threads) {
      ScopedIntraOpThreads scope(threads);
      std::this_thread::sleep_for(kIdle);
      const auto t0 = Clock::now();
      sig(inputs);
      return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    };
    try {
      time_with(1);  // the first one-thread run may build kernels for that team size
      std::vector<double> alone, together;
      for (int i = 0; i < kRuns; ++i) {
        together.push_back(time_with(team));
        if (together.back() > kMaxTeamMicros) break;
        alone.push_back(time_with(1));
      }
      if (alone.size() < size_t(kRuns)) continue;
      std::sort(alone.begin(), alone.end());
      std::sort(together.begin(), together.end());
      if (alone[kRuns / 2] > 1.1 * together[kRuns / 2] && alone[kRuns / 2] > kShortMicros) continue;
      servable.threads->single_thread_signatures.insert(key);
      stats.single_threaded.push_back(key);
    } catch (const std::exception&) {
      // zeros are not a valid input here: keep the team
    }
  }
}

}  // namespace

WarmupStats warm_up(const Servable& servable, const WarmupOptions& options) {
  WarmupStats stats;
  std::string path = servable.path + "/" + kWarmupFile;
  std::error_code ec;
  if (std::filesystem::exists(path, ec))
    replay_file(servable, path, options, stats);
  else if (options.automatic)
    automatic(servable, options, stats);
  if (options.plan_threads) plan_threads(servable, stats);
  return stats;
}

void write_warmup_file(const std::string& version_dir,
                       const std::vector<std::map<std::string, Tensor>>& predict_requests,
                       const std::string& signature_name) {
  std::string path = version_dir + "/" + kWarmupFile;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec)
    throw ServingError(Code::Internal,
                       "[write_warmup_file] cannot create " + version_dir + "/assets.extra: " + ec.message());
  data::RecordWriter writer(path);  // atomic: the file appears whole at close()
  for (const auto& inputs : predict_requests) {
    tensorflow::serving::PredictionLog log;
    auto* req = log.mutable_predict_log()->mutable_request();
    req->mutable_model_spec()->set_signature_name(signature_name);
    for (const auto& [key, tensor] : inputs) tensor_to_proto(tensor, &(*req->mutable_inputs())[key]);
    writer.write(log.SerializeAsString());
  }
  writer.close();
}

}  // namespace deepflow::serving
