// SPDX-License-Identifier: Apache-2.0
// prefetch: one background producer keeps up to buffer_size elements ready, so the
// input's work overlaps the consumer's. Also the helpers the async iterators share.
#include <omp.h>

#include <deque>
#include <thread>

#include "deepflow/data/autotune.h"
#include "deepflow/data/dataset_util.h"
#include "deepflow/data/parallel.h"

namespace deepflow::data {

namespace detail {

void save_element(IteratorStateWriter& w, const std::string& key, const Element& e) {
  w.write_int(key + "/size", int64_t(e.size()));
  for (size_t i = 0; i < e.size(); ++i) w.write_tensor(key + "/" + std::to_string(i), e[i]);
  for (size_t i = 0; i < e.names().size(); ++i) w.write_string(key + "/name" + std::to_string(i), e.names()[i]);
}

Element restore_element(const IteratorStateReader& r, const std::string& key) {
  const int64_t n = r.read_int(key + "/size");
  std::vector<Tensor> ts;
  std::vector<std::string> names;
  for (int64_t i = 0; i < n; ++i) {
    ts.push_back(r.read_tensor(key + "/" + std::to_string(i)));
    if (r.contains(key + "/name" + std::to_string(i))) names.push_back(r.read_string(key + "/name" + std::to_string(i)));
  }
  return Element(std::move(ts), std::move(names));
}

void save_result(IteratorStateWriter& w, const std::string& key, const AsyncResult& r) {
  if (r.element) {
    w.write_int(key + "/kind", 0);
    save_element(w, key + "/element", *r.element);
  } else if (r.error) {
    std::string message = "unknown error";
    try {
      std::rethrow_exception(r.error);
    } catch (const std::exception& e) {
      message = e.what();
    } catch (...) {
    }
    w.write_int(key + "/kind", 1);
    w.write_string(key + "/error", message);
  } else {
    w.write_int(key + "/kind", 2);
  }
}

AsyncResult restore_result(const IteratorStateReader& r, const std::string& key) {
  AsyncResult out;
  const int64_t kind = r.read_int(key + "/kind");
  DF_CHECK(kind >= 0 && kind <= 2, "[Iterator.restore] '", key, "/kind' is ", kind, ", expected 0, 1 or 2");
  if (kind == 0) out.element = restore_element(r, key + "/element");
  if (kind == 1) out.error = std::make_exception_ptr(Error(r.read_string(key + "/error")));
  return out;
}

void init_pipeline_thread() {
  // Each pipeline thread is one of up to `cores` workers already: an OpenMP team
  // per worker for the kernels in a map function would put cores^2 threads on the
  // cores and make every parallel region wait for descheduled team members.
  omp_set_num_threads(1);
}

int64_t autotune_parallelism(const IteratorContext& ctx) {
  if (ctx.model) return ctx.model->cpu_budget();
  return ctx.options.autotune.cpu_budget > 0 ? ctx.options.autotune.cpu_budget : autotune::cpu_cores();
}

}  // namespace detail

namespace {

using detail::AsyncResult;

class PrefetchDataset : public DatasetBase {
 public:
  PrefetchDataset(DatasetPtr input, int64_t buffer_size) : input_(std::move(input)), buffer_size_(buffer_size) {
    DF_CHECK(input_ != nullptr, "[Dataset.prefetch] the input dataset is undefined");
    DF_CHECK(buffer_size_ >= 0 || buffer_size_ == kAutotune,
             "[Dataset.prefetch] buffer_size must be >= 0 or kAutotune, got ", buffer_size_);
  }
  std::string name() const override { return "prefetch"; }
  const ElementSpec& spec() const override { return input_->spec(); }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  DatasetPtr input_;
  int64_t buffer_size_;
};

class PrefetchIterator : public IteratorBase {
 public:
  PrefetchIterator(const IteratorContext& ctx, std::shared_ptr<const PrefetchDataset> d)
      : IteratorBase(ctx),
        d_(std::move(d)),
        state_(std::make_shared<autotune::SharedState>()),
        input_(d_->input_->make_iterator(ctx.child("prefetch", 0, node()))) {
    const bool tuned = d_->buffer_size_ == kAutotune;
    // Tuned, the buffer starts at 0: inline, no thread until the model finds that
    // overlapping the input with the consumer pays for the hand-offs (a batch of
    // row views costs a microsecond; waking a producer per element costs more).
    if (tuned && node_)
      buffer_ = std::make_shared<autotune::Parameter>(autotune::Parameter::Kind::Buffer, 0, 0, autotune::kMaxBuffer,
                                                      state_);
    legacy_ = tuned && !node_;
    limit_ = tuned ? 1 : d_->buffer_size_;
    if (node_ && limit_ > 0) node_->make_async(nullptr, 1, buffer_, limit_, /*serial_input=*/true);
  }

  ~PrefetchIterator() override {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      cancelled_ = true;
    }
    state_->cv.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  std::optional<Element> next_impl() override {
    if (limit_ == 0) return input_->get_next();  // prefetch(0): a pass-through
    const int64_t entered = node_ ? autotune::now_ns() : 0;
    int64_t waited = 0;
    std::unique_lock<std::mutex> lock(state_->mu);
    if (finished_) return std::nullopt;
    if (legacy_) record_consumption(int64_t(buffer_q_.size()));
    while (buffer_q_.empty()) {
      // Tuned to 0 and the producer idle: read on this thread (what was produced
      // before the switch has left first, so order is kept).
      if (limit() == 0 && !producing_) return next_inline(lock);
      if (!thread_.joinable()) thread_ = std::thread([this] { produce(); });
      autotune::Idle idle;
      const int64_t t0 = node_ ? autotune::now_ns() : 0;
      state_->cv.wait(lock, [&] { return !buffer_q_.empty() || (limit() == 0 && !producing_); });
      if (node_) waited += autotune::now_ns() - t0;
    }
    AsyncResult r = std::move(buffer_q_.front());
    buffer_q_.pop_front();
    if (!r.element) finished_ = true;
    lock.unlock();
    state_->cv.notify_all();
    // What taking it from the producer cost this thread: the model's hand-off.
    if (node_) node_->add_handoff(autotune::now_ns() - entered - waited, r.element ? 1 : 0);
    if (r.element) return std::move(r.element);
    if (r.error) std::rethrow_exception(r.error);
    return std::nullopt;
  }

  void save(IteratorStateWriter& w) const override {
    if (limit_ == 0) return input_->save(w);
    std::unique_lock<std::mutex> lock = quiesce();
    w.write_int(prefix_ + "/finished", finished_);
    w.write_int(prefix_ + "/input_done", input_done_);
    w.write_int(prefix_ + "/limit", limit_);
    w.write_int(prefix_ + "/buffered", int64_t(buffer_q_.size()));
    for (size_t i = 0; i < buffer_q_.size(); ++i)
      detail::save_result(w, prefix_ + "/buffer/" + std::to_string(i), buffer_q_[i]);
    input_->save(w);
    resume(lock);
  }

  void restore(const IteratorStateReader& r) override {
    if (limit_ == 0) return input_->restore(r);
    std::unique_lock<std::mutex> lock = quiesce();
    finished_ = r.read_int(prefix_ + "/finished") != 0;
    input_done_ = r.read_int(prefix_ + "/input_done") != 0;
    if (legacy_) limit_ = std::clamp<int64_t>(r.read_int(prefix_ + "/limit"), 1, autotune::kMaxBuffer);
    buffer_q_.clear();
    const int64_t n = r.read_int(prefix_ + "/buffered");
    for (int64_t i = 0; i < n; ++i) buffer_q_.push_back(detail::restore_result(r, prefix_ + "/buffer/" + std::to_string(i)));
    input_->restore(r);
    resume(lock);
  }

 private:
  int64_t limit() const { return buffer_ ? buffer_->value() : limit_; }

  // Inline (tuned buffer 0): the producer stays off the input while this reads.
  std::optional<Element> next_inline(std::unique_lock<std::mutex>& lock) {
    if (input_done_) {
      finished_ = true;
      return std::nullopt;
    }
    inline_reading_ = true;
    lock.unlock();
    std::optional<Element> e;
    try {
      e = input_->get_next();
    } catch (...) {
      lock.lock();
      inline_reading_ = false;
      input_done_ = finished_ = true;
      throw;
    }
    lock.lock();
    inline_reading_ = false;
    if (!e) input_done_ = finished_ = true;
    const bool wake = thread_.joinable() && limit() > 0;  // tuned up meanwhile
    lock.unlock();
    if (wake) state_->cv.notify_all();
    return e;
  }

  // TensorFlow's PrefetchAutotuner: grow only once the producer has proven it can
  // fill the buffer (upswing ends when full) and the consumer still ran dry.
  void record_consumption(int64_t buffered) {
    if (!downswing_) {
      if (buffered >= limit_) downswing_ = true;
    } else if (buffered == 0) {
      limit_ = std::min(limit_ * 2, autotune::kMaxBuffer);
      downswing_ = false;
    }
  }

  std::unique_lock<std::mutex> quiesce() const {
    std::unique_lock<std::mutex> lock(state_->mu);
    paused_ = true;
    autotune::Idle idle;
    state_->cv.wait(lock, [&] { return !producing_; });
    return lock;
  }
  void resume(std::unique_lock<std::mutex>& lock) const {
    paused_ = false;
    lock.unlock();
    state_->cv.notify_all();
  }

  void produce() {
    detail::init_pipeline_thread();
    autotune::Timer active(node(), /*worker=*/true);
    std::unique_lock<std::mutex> lock(state_->mu);
    while (true) {
      {
        autotune::Idle idle;
        state_->cv.wait(lock, [&] {
          return cancelled_ ||
                 (!paused_ && !input_done_ && !inline_reading_ && int64_t(buffer_q_.size()) < limit());
        });
      }
      if (cancelled_) return;
      const int64_t woke = autotune::now_ns();
      producing_ = true;
      lock.unlock();
      const int64_t start = autotune::now_ns();
      AsyncResult r;
      try {
        r.element = input_->get_next();
      } catch (...) {
        r.error = std::current_exception();
      }
      const int64_t read = autotune::now_ns();
      if (node_) node_->record_work(read - start);
      lock.lock();
      if (!r.element) input_done_ = true;
      buffer_q_.push_back(std::move(r));
      producing_ = false;
      state_->cv.notify_all();
      // All of this round but the input's time is hand-off: locks and wake-ups.
      if (node_) node_->add_worker_handoff(autotune::now_ns() - woke - (read - start));
    }
  }

  std::shared_ptr<const PrefetchDataset> d_;
  std::shared_ptr<autotune::SharedState> state_;  // guards the fields below but input_
  std::unique_ptr<IteratorBase> input_;           // used by the producer only, or quiesced
  std::shared_ptr<autotune::Parameter> buffer_;   // null unless tuned by the model
  bool legacy_ = false, downswing_ = false;
  int64_t limit_ = 1;  // the buffer size when not tuned by the model
  std::thread thread_;
  std::deque<AsyncResult> buffer_q_;
  bool input_done_ = false, cancelled_ = false, finished_ = false, producing_ = false;
  bool inline_reading_ = false;  // the consumer reads the input itself (tuned to 0)
  mutable bool paused_ = false;
};

std::unique_ptr<IteratorBase> PrefetchDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<PrefetchIterator>(ctx, std::static_pointer_cast<const PrefetchDataset>(shared_from_this()));
}

}  // namespace

DatasetPtr make_prefetch_dataset(DatasetPtr input, int64_t buffer_size) {
  return std::make_shared<PrefetchDataset>(std::move(input), buffer_size);
}

}  // namespace deepflow::data
