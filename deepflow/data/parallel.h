// SPDX-License-Identifier: Apache-2.0
// The asynchronous datasets (private to deepflow/data): parallel map, prefetch,
// interleave (sequential and parallel) and parallel batch. The Dataset handle's
// methods call these factories; each iterator runs its own std::threads, which
// call omp_set_num_threads(1) first so N pipeline workers do not each start a full
// OpenMP team for the kernels inside a map function (N x cores threads thrash).
//
// Shared behaviour of every iterator here:
// - A worker's error is delivered to the consumer in element order, after the
//   elements before it ("[Dataset.map] element 12: <message>"); then the
//   iterator is finished: later get_next() calls return nullopt.
// - Destroying an iterator mid-pass stops its threads promptly: workers stop
//   taking new input, calls already running finish, then the threads are joined.
// - kAutotune parameters are tunable knobs of the iterator's autotune node when
//   the context has a model; without one (Options::autotune.enabled = false)
//   parallelism is the CPU budget (the cores) and a prefetch buffer follows
//   TensorFlow's legacy PrefetchAutotuner rule (autotune.h).
// - Save waits for the calls in flight to finish and writes the buffered results
//   (elements, or an error's message) with the input's position.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "deepflow/data/dataset.h"

namespace deepflow::data {

namespace autotune {
struct SharedState;
class Parameter;
}  // namespace autotune

/// map(fn, num_parallel_calls = n > 1 or kAutotune, deterministic): up to n calls of
/// fn at once on a pool of n threads. deterministic (unset: Options::deterministic)
/// keeps input order; false emits results as they complete.
DatasetPtr make_parallel_map_dataset(DatasetPtr input, MapFn fn, int64_t num_parallel_calls,
                                     std::optional<bool> deterministic);

/// prefetch(buffer_size >= 0 or kAutotune): a background thread keeps up to
/// buffer_size elements ready. 0 is a pass-through (as in tf.data).
DatasetPtr make_prefetch_dataset(DatasetPtr input, int64_t buffer_size);

/// interleave(fn, {cycle_length, block_length, num_parallel_calls, deterministic}):
/// num_parallel_calls == 1 is the sequential round robin; otherwise up to
/// num_parallel_calls threads prefetch from the open cycle elements.
DatasetPtr make_interleave_dataset(DatasetPtr input, DatasetFn fn, InterleaveOptions options);

/// batch(batch_size, {drop_remainder, num_parallel_calls > 1 or kAutotune,
/// deterministic}): several batches are gathered and stacked at once on a pool.
DatasetPtr make_parallel_batch_dataset(DatasetPtr input, int64_t batch_size, BatchOptions options);

namespace detail {

/// What a worker hands to the consumer: an element, an error or the end of input.
struct AsyncResult {
  std::optional<Element> element;
  std::exception_ptr error;
  bool ready = true;  ///< false while a call is still running (parallel map and batch)
  bool is_end() const { return ready && !element && !error; }
};

/// Saves a ready result under `key` (an error as its message; restore rethrows it
/// as deepflow::Error) and reads it back.
void save_result(IteratorStateWriter& w, const std::string& key, const AsyncResult& r);
AsyncResult restore_result(const IteratorStateReader& r, const std::string& key);
void save_element(IteratorStateWriter& w, const std::string& key, const Element& e);
Element restore_element(const IteratorStateReader& r, const std::string& key);

/// First call of every pipeline thread: one OpenMP thread for the kernels a map
/// function runs, since the pipeline's own threads already use the cores.
void init_pipeline_thread();

/// The threads kAutotune may use: Options::autotune.cpu_budget, else the cores.
int64_t autotune_parallelism(const IteratorContext& ctx);

/// The engine of parallel map and parallel batch (parallel_map.cpp): up to p
/// worker threads each read the input elements of a chunk of calls (in input
/// order, under one lock; result slots are queued before the read, so slots are in
/// input order) and compute them outside any lock. At most p x chunk results,
/// running or ready, exist at once (tf.data allows p; the chunk is 1 for batch and
/// for map functions over ~50 us, and grows up to 64 for cheaper ones so thread
/// hand-offs do not dominate). Deterministic: results leave in input order;
/// otherwise any ready element leaves first, errors and the end still in order.
/// Threads are woken only when one waits (workers: once half the room is free).
/// Save drains the running calls and writes the ready results with the input.
/// Tuned (kAutotune with a model), the parallelism may be 0: inline. Once the
/// results of the calls already running have left (so order, count and errors are
/// as with workers), the workers are joined and the consumer's get_next() reads
/// and computes one call itself, without locks; workers start again when the
/// parallelism rises.
class ParallelCallsIterator : public IteratorBase {
 public:
  ~ParallelCallsIterator() override;

 protected:
  /// `name` names the input's context; num_parallel_calls >= 1 or kAutotune.
  ParallelCallsIterator(const IteratorContext& ctx, const DatasetBase& input, const std::string& name,
                        int64_t num_parallel_calls, bool deterministic);
  /// Stops and joins the workers; derived destructors call it first, since the
  /// workers call compute().
  void stop();
  /// Input elements per call (1 for map, batch_size for batch).
  virtual int64_t call_size() const = 0;
  /// The output of one call; `in` holds 1..call_size() elements (fewer only at the
  /// end of the input), `first` is the input index of in[0]. nullopt: the end.
  virtual std::optional<Element> compute(std::vector<Element>& in, int64_t first) const = 0;

  std::optional<Element> next_impl() final;
  /// Inline (parallelism 0, no workers, nothing buffered): one call on this thread.
  std::optional<Element> next_inline();
  // Appends up to call_size() input elements to `in` (advancing read_index_); true when
  // the input ended. The caller holds input_mu_ or is the only reader (inline).
  bool read_call(std::vector<Element>& in);
  void save(IteratorStateWriter& w) const final;
  void restore(const IteratorStateReader& r) final;

  std::unique_ptr<IteratorBase> input_;  ///< read under input_mu_ by the workers

 private:
  int64_t cap() const;
  int64_t bound() const;  // results, running or ready, allowed at once
  std::list<AsyncResult>::iterator pick();
  void publish(std::list<AsyncResult>::iterator slot, AsyncResult r, bool last);
  std::unique_lock<std::mutex> quiesce() const;
  void resume(std::unique_lock<std::mutex>& lock) const;
  void worker();

  // state_->mu guards the fields below but read_index_; workers wait on state_->cv
  // (which the tuned knob also signals), the consumer on consumer_cv_, so a ready
  // result wakes one thread, not all.
  std::shared_ptr<autotune::SharedState> state_;
  mutable std::condition_variable consumer_cv_;
  const bool deterministic_;
  int64_t fixed_ = 1;
  std::shared_ptr<autotune::Parameter> parallelism_;  // null unless tuned
  std::mutex input_mu_;
  std::vector<std::thread> threads_;
  std::list<AsyncResult> results_;  // in input order; a list keeps a worker's slot valid
  int64_t read_index_ = 0;          // input index of the next element read (input_mu_)
  int64_t in_flight_ = 0;
  int64_t chunk_ = 1;    // calls a worker takes at once (map adapts it to the cost)
  double call_ns_ = 0;   // moving average of one call's compute time
  bool input_done_ = false, cancelled_ = false, finished_ = false;
  bool consumer_waiting_ = false, worker_waiting_ = false;
  bool retiring_ = false;  // workers exit: the consumer goes inline
  std::vector<Element> inline_in_;  // the inline call's input (consumer only)
  mutable bool paused_ = false;
};

}  // namespace detail
}  // namespace deepflow::data
