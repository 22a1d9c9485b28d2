// SPDX-License-Identifier: Apache-2.0
// The CPU floor of a REST predict request, in process (issue 7, batching): what the
// server must spend per request whatever the threading, so what bounds the batching
// throughput ratio on a CPU-bound machine.
//
//   batch_cost <saved_model_dir> [body.json] [seconds_per_point]
//
// Prints, for the model's serving_default signature (one float input, batch dim first):
//   - compute CPU per row at batch 1, 2, 4, ..., 64, with an OpenMP team of 1 and of
//     all threads (CPU time of the process / rows, and wall time per batch);
//   - the JSON cost per request: parse_predict_request of body.json (default: a batch-1
//     all-zero request shaped like the input) and write_predict_response of its outputs.
// HTTP and socket costs are not here: a POST of the same body to an unknown model gives
// them (404 before any parsing; ~36 us of server CPU per request on the 2-core machine).
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "deepflow/io/saved_model.h"
#include "deepflow/serving/json_tensor.h"
#include "deepflow/serving/predict.h"

using namespace deepflow;

namespace {

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Runs fn until `seconds` pass (after a warm-up); returns {cpu us, wall us} per call.
template <class F>
std::pair<double, double> per_call(F&& fn, double seconds) {
  for (int i = 0; i < 20; ++i) fn();
  double c0 = cpu_seconds(), w0 = wall_seconds();
  int64_t n = 0;
  do {
    fn();
    ++n;
  } while (wall_seconds() - w0 < seconds);
  return {(cpu_seconds() - c0) * 1e6 / double(n), (wall_seconds() - w0) * 1e6 / double(n)};
}

// One all-zero row of the input as JSON (unknown dims as 1).
std::string zeros_json(const Shape& s, int d) {
  if (d == s.rank()) return "0.0";
  std::string out = "[";
  for (int64_t i = 0; i < std::max<int64_t>(1, s[d]); ++i) out += (i ? "," : "") + zeros_json(s, d + 1);
  return out + "]";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <saved_model_dir> [body.json] [seconds_per_point]\n", argv[0]);
    return 2;
  }
  const double seconds = argc > 3 ? std::stod(argv[3]) : 0.5;
  io::SavedModel model = io::load_saved_model(argv[1]);
  const auto& sig = model.signature(io::kDefaultServingSignatureKey);
  auto types = sig.inputs();
  if (types.size() != 1) {
    std::fprintf(stderr, "batch_cost: the signature needs exactly one input, it has %zu\n", types.size());
    return 1;
  }
  const std::string key = types.begin()->first;
  Shape row = types.begin()->second.shape;
  const int max_threads = omp_get_max_threads();

  std::printf("compute per row (CPU us / wall us per batch), model %s, input '%s' %s\n", argv[1], key.c_str(),
              row.to_string().c_str());
  for (int threads : {1, max_threads}) {
    omp_set_num_threads(threads);
    for (int64_t b = 1; b <= 64; b *= 2) {
      Shape s = row;
      s[0] = b;
      for (int d = 1; d < s.rank(); ++d)
        if (s[d] < 0) s[d] = 1;
      std::map<std::string, Tensor> in{{key, zeros(s, DType::Float32)}};
      auto [cpu, wall] = per_call([&] { sig(in); }, seconds);
      std::printf("  threads %d batch %3lld: %8.1f CPU us/row  %8.1f wall us/batch\n", threads, (long long)b,
                  cpu / double(b), wall);
    }
  }
  omp_set_num_threads(1);

  std::string body;
  if (argc > 2) {
    std::ifstream f(argv[2], std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    body = ss.str();
  } else {
    body = "{\"instances\": [" + zeros_json(row, 1) + "]}";
  }
  auto input_types = [&](const std::string&) { return types; };
  serving::PredictRequestJson parsed = serving::parse_predict_request(body, input_types);
  auto outputs = sig(parsed.inputs);
  auto [parse_cpu, parse_wall] = per_call([&] { serving::parse_predict_request(body, input_types); }, seconds);
  auto [write_cpu, write_wall] = per_call([&] { serving::write_predict_response(outputs, parsed.row_format); }, seconds);
  std::printf("JSON per request: parse %.1f CPU us (%zu bytes), write %.1f CPU us\n", parse_cpu, body.size(), write_cpu);
  return 0;
}
