// SPDX-License-Identifier: Apache-2.0
// Server-side batching (TF Serving's BasicBatchScheduler / SharedBatchScheduler):
// concurrent requests to the same signature of the same servable are concatenated along
// dim 0, run once, and the outputs split back.
//
//   Batcher batcher(parse_batching_parameters_file("batching.config"));
//   SignatureRunner runner = batcher.runner();            // pass to run_predict(...)
//
// A batch closes when it holds max_batch_size rows or batch_timeout_micros after its
// first request arrived, whichever is first; num_batch_threads threads run closed
// batches, each with an OpenMP team of max(1, OpenMP's threads / num_batch_threads), so
// that concurrent batches never ask for more threads than the cores. A request whose
// rows alone exceed max_batch_size is INVALID_ARGUMENT. When max_enqueued_batches
// batches are already waiting, a new request fails at once with
// UNAVAILABLE ("[batching] the batch queue is full (max_enqueued_batches N)"), HTTP 503.
// With allowed_batch_sizes the batch is padded (by repeating its first row) up to the
// smallest allowed size >= its rows, and padded rows are dropped from the outputs.
// Requests are only merged when their inputs agree in every dim but the first; others
// wait for the next batch. A request that cannot be merged along dim 0 (no rows, a
// scalar input, or inputs that disagree on dim 0) runs alone, directly. Every output
// must have dim 0 == the batch's rows, otherwise each request of that batch gets
// INTERNAL naming the output. num_batch_threads 0: one thread per core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "deepflow/serving/predict.h"

namespace deepflow::serving {

/// TF Serving's BatchingParameters (text format; 0 / empty: the default).
/// The defaults are TF Serving's for a field the file leaves out (specs.md 1.13).
struct BatchingOptions {
  int64_t max_batch_size = 1000;
  int64_t batch_timeout_micros = 0;
  int64_t num_batch_threads = 0;             ///< 0: one per core
  int64_t max_enqueued_batches = 10;
  std::vector<int64_t> allowed_batch_sizes;  ///< increasing; the last == max_batch_size
  bool pad_variable_length_inputs = false;   ///< parsed, not supported (error if true)
  bool enable_large_batch_splitting = false; ///< parsed, not supported (error if true)
};

/// Parses `max_batch_size { value: 128 } batch_timeout_micros { value: 0 } ...` (TF
/// Serving's wrapper style, `{ value: N }`) ; errors name the file and field, and check
/// allowed_batch_sizes (increasing, last == max_batch_size).
BatchingOptions parse_batching_parameters_text(const std::string& text, const std::string& source = "<text>");
BatchingOptions parse_batching_parameters_file(const std::string& path);

/// Per-batch figures for metrics: rows run and rows of padding.
struct BatchStats {
  std::string model;
  int64_t version = 0;
  int64_t rows = 0;
  int64_t padded_rows = 0;
  int64_t requests = 0;
};

class Batcher {
 public:
  explicit Batcher(BatchingOptions options);
  /// Finishes every queued batch, then joins the threads.
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  /// Runs the signature within a batch; blocks until its slice of the outputs is ready.
  /// Same contract as SignatureRunner.
  std::map<std::string, Tensor> run(const ServableHandle& servable, const std::string& signature_key,
                                    const std::map<std::string, Tensor>& inputs);
  /// A SignatureRunner bound to this batcher (the batcher must outlive it).
  SignatureRunner runner();
  /// Called after each batch ran (from a batch thread).
  void set_batch_listener(std::function<void(const BatchStats&)> listener);
  const BatchingOptions& options() const;
  /// Requests waiting in a queue for a batch thread (for tests and a queue-depth gauge).
  size_t pending_requests() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace deepflow::serving
