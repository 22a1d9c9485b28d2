// SPDX-License-Identifier: Apache-2.0
// Model warmup before a version becomes AVAILABLE, so its first real request is fast.
//
// - With <version dir>/assets.extra/tf_serving_warmup_requests (a TFRecord file of
//   tensorflow.serving.PredictionLog protos, TF Serving's format; only predict_log,
//   classify_log and regress_log entries are replayed, each `num_iterations` times)
//   those requests run, in order; a malformed file or a failing request fails the load,
//   naming the file and the record index.
// - Without it (deepflow's automatic warmup): every signature runs on zeros (empty
//   strings) with each unknown dim set to 1, then again at `batch_sizes` for the batch
//   dim so the kernels' per-shape caches and the allocator are warm. A signature that
//   cannot run on zeros is skipped with a warning (WarmupStats::skipped), not an error.
// - Then (plan_threads) each signature with numeric inputs is timed on one zero row with
//   the caller's OpenMP team and with one thread: where one thread is as fast (within
//   10%) or takes under 50 us, one-row requests run without waking a team
//   (Servable::threads).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "deepflow/serving/model_manager.h"

namespace deepflow::serving {

inline constexpr char kWarmupFile[] = "assets.extra/tf_serving_warmup_requests";

struct WarmupOptions {
  int64_t num_iterations = 1;               ///< --num_request_iterations_for_warmup
  bool automatic = true;                    ///< when there is no warmup file
  std::vector<int64_t> batch_sizes = {1};   ///< the server adds its allowed batch sizes
  /// Time each signature on a one-row zero input with the caller's OpenMP team and with
  /// one thread, and run one-row requests alone where that is not slower or is short
  /// (Servable::threads).
  bool plan_threads = true;
};

/// What warm_up did, for logs and the model_warmup_records_read metric.
struct WarmupStats {
  bool from_file = false;  ///< the warmup file was replayed (else automatic, or nothing)
  int64_t records = 0;     ///< warmup-file records replayed (each num_iterations times)
  int64_t runs = 0;        ///< signature runs in all
  /// Automatic warmup only: "<signature>: <error>" for each signature that cannot run on
  /// zeros (e.g. one that parses its string input). Printed as a warning, not fatal.
  std::vector<std::string> skipped;
  /// The signatures whose one-row requests run on the request's thread alone.
  std::vector<std::string> single_threaded;
};

WarmupStats warm_up(const Servable& servable, const WarmupOptions& options = {});

/// Writes a warmup file for tests and users: one PredictionLog per request (model
/// name/version left empty), atomically.
void write_warmup_file(const std::string& version_dir,
                       const std::vector<std::map<std::string, Tensor>>& predict_requests,
                       const std::string& signature_name = "serving_default");

}  // namespace deepflow::serving
