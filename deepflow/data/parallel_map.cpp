// SPDX-License-Identifier: Apache-2.0
// map with num_parallel_calls > 1 or kAutotune (tf.data's ParallelMapDataset), and
// ParallelCallsIterator, the engine it shares with parallel batch (parallel.h).
#include "deepflow/data/autotune.h"
#include "deepflow/data/dataset_util.h"
#include "deepflow/data/parallel.h"

namespace deepflow::data {

namespace detail {

ParallelCallsIterator::ParallelCallsIterator(const IteratorContext& ctx, const DatasetBase& input,
                                             const std::string& name, int64_t num_parallel_calls,
                                             bool deterministic)
    : IteratorBase(ctx),
      input_(input.make_iterator(ctx.child(name, 0, node()))),
      state_(std::make_shared<autotune::SharedState>()),
      deterministic_(deterministic) {
  fixed_ = num_parallel_calls == kAutotune ? autotune_parallelism(ctx) : num_parallel_calls;
  // Tuned, it starts inline (0): the function's time is then measured without
  // threads competing for the cores, and the optimizer starts workers only where
  // they pay for their hand-offs.
  if (num_parallel_calls == kAutotune && node_)
    parallelism_ = std::make_shared<autotune::Parameter>(autotune::Parameter::Kind::Parallelism, 0, 0, fixed_,
                                                         state_);
  if (node_) node_->make_async(parallelism_, fixed_, nullptr, 1, /*serial_input=*/true);
}

ParallelCallsIterator::~ParallelCallsIterator() { stop(); }

void ParallelCallsIterator::stop() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    cancelled_ = true;
  }
  state_->cv.notify_all();
  consumer_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

int64_t ParallelCallsIterator::cap() const { return parallelism_ ? parallelism_->value() : fixed_; }

std::list<AsyncResult>::iterator ParallelCallsIterator::pick() {
  if (results_.empty()) return results_.end();
  if (!deterministic_)
    for (auto it = results_.begin(); it != results_.end(); ++it)
      if (it->ready && it->element) return it;
  return results_.front().ready ? results_.begin() : results_.end();
}

std::optional<Element> ParallelCallsIterator::next_impl() {
  // Inline with no workers: nothing else touches the fields, so no locks at all
  // (a map of a few microseconds costs about what the sequential map does).
  if (threads_.empty() && cap() == 0 && results_.empty()) return next_inline();
  // The model counts what taking a result from the workers costs this thread (the
  // lock, the wake-ups; not the waits) as hand-off, to weigh against inline.
  const int64_t entered = node_ ? autotune::now_ns() : 0;
  int64_t waited = 0;
  std::unique_lock<std::mutex> lock(state_->mu);
  if (finished_) return std::nullopt;
  AsyncResult r;
  while (true) {
    // Threads start on first use (so restore() sees an untouched input) and grow
    // with the tuned parallelism.
    while (int64_t(threads_.size()) < cap()) threads_.emplace_back([this] { worker(); });
    auto it = pick();
    if (it != results_.end()) {
      r = std::move(*it);
      results_.erase(it);
      break;
    }
    if (results_.empty() && input_done_) break;  // the last call was a partial batch
    if (results_.empty() && cap() == 0) {
      // Tuned to inline, and every call the workers started has left (each one
      // running holds a slot in results_): retire them; none is in a round.
      retiring_ = true;
      lock.unlock();
      state_->cv.notify_all();
      {
        autotune::Idle idle;
        for (std::thread& t : threads_) t.join();
      }
      threads_.clear();
      retiring_ = false;
      return next_inline();
    }
    autotune::Idle idle;
    const int64_t t0 = node_ ? autotune::now_ns() : 0;
    consumer_waiting_ = true;
    consumer_cv_.wait(lock);
    consumer_waiting_ = false;
    if (node_) waited += autotune::now_ns() - t0;
  }
  if (!r.element) finished_ = true;
  // Wake the worker holding input_mu_ once half the room is free, not per element.
  const bool wake = worker_waiting_ && int64_t(results_.size()) <= bound() / 2;
  lock.unlock();
  if (wake) state_->cv.notify_one();
  if (node_) node_->add_handoff(autotune::now_ns() - entered - waited, r.element ? 1 : 0);
  if (r.element) return std::move(r.element);
  if (r.error) std::rethrow_exception(r.error);
  return std::nullopt;
}

bool ParallelCallsIterator::read_call(std::vector<Element>& in) {
  while (int64_t(in.size()) < call_size()) {
    std::optional<Element> e = input_->get_next();
    if (!e) return true;
    in.push_back(std::move(*e));
    ++read_index_;
  }
  return false;
}

std::optional<Element> ParallelCallsIterator::next_inline() {
  // An error ends the pass as a worker's would (the elements before it have left).
  if (finished_) return std::nullopt;
  if (input_done_) {
    finished_ = true;
    return std::nullopt;
  }
  const int64_t first = read_index_;
  std::vector<Element>& in = inline_in_;  // kept: no allocation per call
  in.clear();
  bool ended = false;
  std::optional<Element> out;
  try {
    ended = read_call(in);
    if (!in.empty()) out = compute(in, first);
  } catch (...) {
    in.clear();
    input_done_ = finished_ = true;
    throw;
  }
  in.clear();
  if (ended) input_done_ = true;
  if (!out) input_done_ = finished_ = true;  // the end, or batch's dropped remainder
  return out;
}

std::unique_lock<std::mutex> ParallelCallsIterator::quiesce() const {
  std::unique_lock<std::mutex> lock(state_->mu);
  paused_ = true;
  autotune::Idle idle;
  consumer_cv_.wait(lock, [&] { return in_flight_ == 0; });
  return lock;
}

void ParallelCallsIterator::resume(std::unique_lock<std::mutex>& lock) const {
  paused_ = false;
  lock.unlock();
  state_->cv.notify_all();
  consumer_cv_.notify_all();
}

void ParallelCallsIterator::save(IteratorStateWriter& w) const {
  std::unique_lock<std::mutex> lock = quiesce();
  w.write_int(prefix_ + "/next_index", read_index_);
  w.write_int(prefix_ + "/finished", finished_);
  w.write_int(prefix_ + "/input_done", input_done_);
  w.write_int(prefix_ + "/buffered", int64_t(results_.size()));
  int64_t i = 0;
  for (const AsyncResult& r : results_) save_result(w, prefix_ + "/buffer/" + std::to_string(i++), r);
  input_->save(w);  // no worker reads it while paused
  resume(lock);
}

void ParallelCallsIterator::restore(const IteratorStateReader& r) {
  std::unique_lock<std::mutex> lock = quiesce();
  read_index_ = r.read_int(prefix_ + "/next_index");
  finished_ = r.read_int(prefix_ + "/finished") != 0;
  input_done_ = r.read_int(prefix_ + "/input_done") != 0;
  results_.clear();
  const int64_t n = r.read_int(prefix_ + "/buffered");
  for (int64_t i = 0; i < n; ++i) results_.push_back(restore_result(r, prefix_ + "/buffer/" + std::to_string(i)));
  input_->restore(r);
  resume(lock);
}

int64_t ParallelCallsIterator::bound() const { return cap() * chunk_; }

void ParallelCallsIterator::worker() {
  init_pipeline_thread();
  autotune::Timer active(node(), /*worker=*/true);  // this thread works in this node
  while (true) {
    // input_mu_ is taken first and held through the read, so the slots queued
    // under mu get the elements read next: slot order is input order.
    std::unique_lock<std::mutex> in_lock(input_mu_, std::defer_lock);
    std::unique_lock<std::mutex> lock(state_->mu, std::defer_lock);
    {
      autotune::Idle idle;
      in_lock.lock();
      lock.lock();
      worker_waiting_ = true;
      state_->cv.wait(lock, [&] {
        return cancelled_ || retiring_ ||
               (!paused_ && !input_done_ && (cap() == 0 || int64_t(results_.size()) < bound()));
      });
      worker_waiting_ = false;
      if (!cancelled_ && !retiring_ && cap() == 0) {
        // Tuned to inline: the knob wakes only the workers, and the consumer may be
        // waiting for one of them to start a call: wake it, to retire us.
        in_lock.unlock();
        if (consumer_waiting_) consumer_cv_.notify_one();
        state_->cv.wait(lock, [&] { return cancelled_ || retiring_ || cap() > 0; });
        if (!cancelled_ && !retiring_) continue;
      }
    }
    if (cancelled_ || retiring_) return;
    const int64_t start = autotune::now_ns();
    const int64_t k = std::min(chunk_, bound() - int64_t(results_.size()));
    std::vector<std::list<AsyncResult>::iterator> slots;
    for (int64_t j = 0; j < k; ++j) {
      slots.push_back(results_.emplace(results_.end()));
      slots.back()->ready = false;
    }
    in_flight_ += k;
    lock.unlock();

    // Read up to k calls' elements; a failed read drops its call's elements and
    // puts the error in its slot.
    std::vector<std::vector<Element>> calls;
    std::exception_ptr read_error;
    const int64_t first = read_index_;
    bool ended = false;
    const int64_t read_start = autotune::now_ns();
    try {
      while (int64_t(calls.size()) < k && !ended) {
        std::vector<Element>& in = calls.emplace_back();
        ended = read_call(in);
        if (in.empty()) calls.pop_back();
      }
    } catch (...) {
      read_error = std::current_exception();
      if (!calls.empty()) {
        read_index_ -= int64_t(calls.back().size());
        calls.pop_back();
      }
    }
    in_lock.unlock();

    // Compute call by call, publishing each as it is done so the consumer can start
    // on the chunk's first elements.
    const int64_t compute_start = autotune::now_ns();
    int64_t compute_ns = 0;  // the calls alone: the rest of this round is hand-off
    size_t used = 0;
    bool stop = false;
    for (size_t j = 0; j < calls.size() && !stop; ++j) {
      AsyncResult r;
      const int64_t t0 = node_ ? autotune::now_ns() : 0;
      try {
        r.element = compute(calls[j], first + int64_t(j) * call_size());
      } catch (...) {
        r.error = std::current_exception();
      }
      if (node_) compute_ns += autotune::now_ns() - t0;
      stop = !r.element;  // an error, or batch's dropped remainder: nothing follows
      publish(slots[used++], std::move(r), stop);
    }
    const int64_t computed = int64_t(used);
    if (!stop && (read_error || ended) && used < slots.size()) {
      AsyncResult r;  // the end of input, or the read's error
      r.error = read_error;
      publish(slots[used++], std::move(r), true);
    }
    lock.lock();
    if (ended || read_error) input_done_ = true;
    for (size_t j = used; j < slots.size(); ++j) results_.erase(slots[j]);  // not needed
    in_flight_ -= int64_t(slots.size() - used);
    if (computed > 0 && call_size() == 1) {
      // Adapt the chunk so one costs ~50 us: a hand-off between threads costs a few
      // microseconds, which must not dominate cheap functions.
      const double ns = double(autotune::now_ns() - compute_start) / double(computed);
      call_ns_ = call_ns_ <= 0 ? ns : 0.8 * call_ns_ + 0.2 * ns;
      chunk_ = std::clamp<int64_t>(int64_t(50000.0 / std::max(call_ns_, 1.0)), 1, 64);
    }
    const bool wake = consumer_waiting_ || paused_;
    lock.unlock();
    if (wake) consumer_cv_.notify_one();
    if (node_) {
      const int64_t end = autotune::now_ns();
      node_->record_work(end - start);
      node_->add_worker_handoff(std::max<int64_t>(0, (end - start) - (compute_start - read_start) - compute_ns));
    }
  }
}

void ParallelCallsIterator::publish(std::list<AsyncResult>::iterator slot, AsyncResult r, bool last) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (last) input_done_ = true;  // the end or an error: read no further
    *slot = std::move(r);
    slot->ready = true;
    --in_flight_;
    wake = consumer_waiting_ || paused_;
  }
  if (wake) consumer_cv_.notify_one();
}

}  // namespace detail

namespace {

class ParallelMapDataset : public DatasetBase {
 public:
  ParallelMapDataset(DatasetPtr input, MapFn fn, int64_t n, std::optional<bool> deterministic)
      : input_(std::move(input)), fn_(std::move(fn)), n_(n), deterministic_(deterministic) {
    DF_CHECK(input_ != nullptr, "[Dataset.map] the input dataset is undefined");
    DF_CHECK(fn_ != nullptr, "[Dataset.map] the function is empty");
    DF_CHECK(n_ >= 1 || n_ == kAutotune, "[Dataset.map] num_parallel_calls must be >= 1 or kAutotune, got ", n_);
  }
  // Not "map": the sequential map saves a different state.
  std::string name() const override { return "parallel_map"; }
  const ElementSpec& spec() const override { return detail::unknown_spec(); }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  DatasetPtr input_;
  MapFn fn_;
  int64_t n_;
  std::optional<bool> deterministic_;
};

class ParallelMapIterator : public detail::ParallelCallsIterator {
 public:
  ParallelMapIterator(const IteratorContext& ctx, std::shared_ptr<const ParallelMapDataset> d)
      : ParallelCallsIterator(ctx, *d->input_, "parallel_map", d->n_,
                              d->deterministic_.value_or(ctx.options.deterministic)),
        d_(std::move(d)) {}
  ~ParallelMapIterator() override { stop(); }

 protected:
  int64_t call_size() const override { return 1; }
  std::optional<Element> compute(std::vector<Element>& in, int64_t first) const override {
    return detail::with_element_context("Dataset.map", first, [&] { return d_->fn_(in[0]); });
  }

 private:
  std::shared_ptr<const ParallelMapDataset> d_;
};

std::unique_ptr<IteratorBase> ParallelMapDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<ParallelMapIterator>(ctx,
                                               std::static_pointer_cast<const ParallelMapDataset>(shared_from_this()));
}

}  // namespace

DatasetPtr make_parallel_map_dataset(DatasetPtr input, MapFn fn, int64_t num_parallel_calls,
                                     std::optional<bool> deterministic) {
  return std::make_shared<ParallelMapDataset>(std::move(input), std::move(fn), num_parallel_calls, deterministic);
}

}  // namespace deepflow::data
