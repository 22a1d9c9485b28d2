// SPDX-License-Identifier: Apache-2.0
// interleave: cycle_length input elements are open at once, each as the dataset
// the function makes of it; block_length elements are taken from each in turn, and
// an exhausted one is replaced by the next input element. One iterator serves the
// sequential case (num_parallel_calls == 1: the consumer pulls) and the parallel
// one (worker threads pull ahead from the open cycle elements into small per-slot
// buffers, preferring the slots the consumer needs soonest).
//
// Empty slots are filled eagerly, in cycle order from the cursor. That gives every
// slot the same input element tf.data's lazy filling does: only the consumer
// empties a slot, and the cursor visits every other slot before it returns to it.
#include <deque>
#include <thread>

#include "deepflow/data/autotune.h"
#include "deepflow/data/dataset_util.h"
#include "deepflow/data/parallel.h"

namespace deepflow::data {
namespace {

using detail::AsyncResult;

class InterleaveDataset : public DatasetBase {
 public:
  InterleaveDataset(DatasetPtr input, DatasetFn fn, InterleaveOptions o)
      : input_(std::move(input)), fn_(std::move(fn)), options_(o) {
    DF_CHECK(input_ != nullptr, "[Dataset.interleave] the input dataset is undefined");
    DF_CHECK(fn_ != nullptr, "[Dataset.interleave] the function is empty");
    DF_CHECK(o.cycle_length >= 1 || o.cycle_length == kAutotune,
             "[Dataset.interleave] cycle_length must be >= 1 or kAutotune, got ", o.cycle_length);
    DF_CHECK(o.block_length >= 1, "[Dataset.interleave] block_length must be >= 1, got ", o.block_length);
    DF_CHECK(o.num_parallel_calls >= 1 || o.num_parallel_calls == kAutotune,
             "[Dataset.interleave] num_parallel_calls must be >= 1 or kAutotune, got ", o.num_parallel_calls);
  }
  std::string name() const override { return "interleave"; }
  const ElementSpec& spec() const override { return detail::unknown_spec(); }
  int64_t cardinality() const override { return input_->cardinality() == 0 ? 0 : kUnknownCardinality; }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  DatasetPtr input_;
  DatasetFn fn_;
  InterleaveOptions options_;
};

class InterleaveIterator : public IteratorBase {
 public:
  InterleaveIterator(const IteratorContext& ctx, std::shared_ptr<const InterleaveDataset> d)
      : IteratorBase(ctx),
        d_(std::move(d)),
        ctx_(ctx),
        state_(std::make_shared<autotune::SharedState>()),
        input_(d_->input_->make_iterator(ctx.child("interleave", 0, node()))),
        deterministic_(d_->options_.deterministic.value_or(ctx.options.deterministic)) {
    const InterleaveOptions& o = d_->options_;
    const int64_t cycle = o.cycle_length == kAutotune ? detail::autotune_parallelism(ctx) : o.cycle_length;
    cycle_ = std::vector<Slot>(size_t(cycle));
    parallel_ = o.num_parallel_calls != 1;
    fixed_ = std::min(cycle, o.num_parallel_calls == kAutotune ? cycle : o.num_parallel_calls);
    slot_cap_ = parallel_ ? 2 * o.block_length : 1;
    if (o.num_parallel_calls == kAutotune && node_)
      parallelism_ = std::make_shared<autotune::Parameter>(autotune::Parameter::Kind::Parallelism, fixed_, 1,
                                                           fixed_, state_);
    if (node_ && parallel_) {
      node_->make_async(parallelism_, fixed_, nullptr, slot_cap_, /*serial_input=*/false);
      node_->set_parallel_group("cycle");
    }
  }

  ~InterleaveIterator() override {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      cancelled_ = true;
    }
    state_->cv.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  std::optional<Element> next_impl() override {
    std::unique_lock<std::mutex> lock(state_->mu);
    if (finished_) return std::nullopt;
    while (parallel_ && int64_t(threads_.size()) < fixed_) threads_.emplace_back([this] { worker(); });
    while (true) {
      fill_empty_slots(lock);
      bool any = false;
      for (const Slot& s : cycle_) any = any || s.open();
      if (!any && input_done_) {
        finished_ = true;
        return std::nullopt;
      }
      if (!cycle_[size_t(cur_)].open()) {
        advance();
        continue;
      }
      if (!deterministic_ && cycle_[size_t(cur_)].buffer.empty()) {
        for (size_t k = 1; k < cycle_.size(); ++k) {
          const int64_t j = (cur_ + int64_t(k)) % int64_t(cycle_.size());
          if (!cycle_[size_t(j)].buffer.empty()) {
            cur_ = j, block_ = 0;
            break;
          }
        }
      }
      Slot& s = cycle_[size_t(cur_)];
      if (s.buffer.empty()) {
        if (!parallel_ && !s.busy && !s.exhausted) {
          pull(s, lock);
        } else {
          autotune::Idle idle;
          state_->cv.wait(lock);
        }
        continue;
      }
      AsyncResult r = std::move(s.buffer.front());
      s.buffer.pop_front();
      if (r.element) {
        if (++block_ == d_->options_.block_length) advance();
        lock.unlock();
        state_->cv.notify_all();  // the slot has room again
        return std::move(r.element);
      }
      if (r.error) {
        finished_ = true;
        std::rethrow_exception(r.error);
      }
      // This cycle element is exhausted: close it (its destructor may join
      // threads, so not under the lock) and go on with the next slot.
      std::unique_ptr<IteratorBase> done = std::move(s.it);
      s = Slot();
      advance();
      lock.unlock();
      done.reset();
      lock.lock();
    }
  }

  void save(IteratorStateWriter& w) const override {
    std::unique_lock<std::mutex> lock = quiesce();
    w.write_int(prefix_ + "/cur", cur_);
    w.write_int(prefix_ + "/block", block_);
    w.write_int(prefix_ + "/next_index", next_index_);
    w.write_int(prefix_ + "/input_done", input_done_);
    w.write_int(prefix_ + "/finished", finished_);
    input_->save(w);
    for (size_t j = 0; j < cycle_.size(); ++j) {
      const Slot& s = cycle_[j];
      const std::string key = prefix_ + "/slot" + std::to_string(j);
      w.write_int(key + "/open", s.open());
      if (!s.open()) continue;
      w.write_int(key + "/index", s.index);
      w.write_int(key + "/exhausted", s.exhausted);
      w.write_int(key + "/has_iterator", s.it != nullptr);
      if (s.it) {
        detail::save_element(w, key + "/input", s.input);
        s.it->save(w);
      }
      w.write_int(key + "/buffered", int64_t(s.buffer.size()));
      for (size_t i = 0; i < s.buffer.size(); ++i) detail::save_result(w, key + "/buffer/" + std::to_string(i), s.buffer[i]);
    }
    resume(lock);
  }

  void restore(const IteratorStateReader& r) override {
    std::unique_lock<std::mutex> lock = quiesce();
    cur_ = r.read_int(prefix_ + "/cur");
    block_ = r.read_int(prefix_ + "/block");
    next_index_ = r.read_int(prefix_ + "/next_index");
    input_done_ = r.read_int(prefix_ + "/input_done") != 0;
    finished_ = r.read_int(prefix_ + "/finished") != 0;
    DF_CHECK(cur_ >= 0 && cur_ < int64_t(cycle_.size()), "[Iterator.restore] interleave cursor ", cur_,
             " is outside the cycle of ", cycle_.size());
    input_->restore(r);
    for (size_t j = 0; j < cycle_.size(); ++j) {
      Slot& s = cycle_[j];
      s = Slot();
      const std::string key = prefix_ + "/slot" + std::to_string(j);
      if (!r.read_int(key + "/open")) continue;
      s.index = r.read_int(key + "/index");
      s.exhausted = r.read_int(key + "/exhausted") != 0;
      if (r.read_int(key + "/has_iterator")) {
        s.input = detail::restore_element(r, key + "/input");
        s.it = open(s.input, s.index, j);
        s.it->restore(r);
      }
      const int64_t n = r.read_int(key + "/buffered");
      for (int64_t i = 0; i < n; ++i) s.buffer.push_back(detail::restore_result(r, key + "/buffer/" + std::to_string(i)));
    }
    resume(lock);
  }

 private:
  struct Slot {
    std::unique_ptr<IteratorBase> it;  // null when empty or when opening it failed
    Element input;                     // the input element it was made from
    int64_t index = -1;                // that element's index; -1: the slot is empty
    std::deque<AsyncResult> buffer;
    bool busy = false;       // a thread is pulling from it (or opening it)
    bool exhausted = false;  // its end or error is in the buffer: pull no more
    bool open() const { return index >= 0; }
  };

  int64_t cap() const { return parallelism_ ? parallelism_->value() : fixed_; }
  void advance() {
    cur_ = (cur_ + 1) % int64_t(cycle_.size());
    block_ = 0;
  }

  std::unique_ptr<IteratorBase> open(const Element& e, int64_t index, size_t slot) {
    return detail::with_element_context("Dataset.interleave", index, [&] {
      Dataset ds = d_->fn_(e);
      DF_CHECK(ds.defined(), "the function returned an undefined dataset");
      std::unique_ptr<IteratorBase> it = ds.impl()->make_iterator(ctx_.child("interleave", int(slot) + 1, node()));
      if (it->node()) it->node()->set_group("cycle");
      return it;
    });
  }

  // Opens every empty slot, in cycle order from the cursor, from the next input
  // elements. An error opening one becomes that slot's only result, so it is
  // raised when the cursor reaches the slot, as a lazy fill would raise it.
  void fill_empty_slots(std::unique_lock<std::mutex>& lock) {
    for (size_t k = 0; k < cycle_.size() && !input_done_; ++k) {
      Slot& s = cycle_[size_t((cur_ + int64_t(k)) % int64_t(cycle_.size()))];
      if (s.open()) continue;
      s.index = next_index_++;
      s.busy = true;
      ++opening_;
      lock.unlock();
      AsyncResult failure;
      std::optional<Element> in;
      std::unique_ptr<IteratorBase> it;
      try {
        in = input_->get_next();
        if (in) it = open(*in, s.index, size_t(&s - cycle_.data()));
      } catch (...) {
        failure.error = std::current_exception();
      }
      lock.lock();
      --opening_;
      s.busy = false;
      if (in && it) {
        s.input = std::move(*in);
        s.it = std::move(it);
      } else {
        input_done_ = true;  // the end of input, or an error: open no more
        if (failure.error) {
          s.buffer.push_back(std::move(failure));
          s.exhausted = true;
        } else {
          s = Slot();
          --next_index_;
        }
      }
      state_->cv.notify_all();
    }
  }

  // Pulls one element from slot s into its buffer (the caller holds the lock).
  void pull(Slot& s, std::unique_lock<std::mutex>& lock) {
    s.busy = true;
    ++pulling_;
    IteratorBase* it = s.it.get();
    lock.unlock();
    const int64_t start = autotune::now_ns();
    AsyncResult r;
    try {
      r.element = it->get_next();
    } catch (...) {
      r.error = std::current_exception();
    }
    if (node_ && parallel_) node_->record_work(autotune::now_ns() - start);
    lock.lock();
    if (!r.element) s.exhausted = true;
    s.buffer.push_back(std::move(r));
    s.busy = false;
    --pulling_;
    state_->cv.notify_all();
  }

  // The slot a worker should pull from next, or null.
  Slot* find_work() {
    if (paused_ || pulling_ >= cap()) return nullptr;
    for (size_t k = 0; k < cycle_.size(); ++k) {
      Slot& s = cycle_[size_t((cur_ + int64_t(k)) % int64_t(cycle_.size()))];
      if (s.it && !s.busy && !s.exhausted && int64_t(s.buffer.size()) < slot_cap_) return &s;
    }
    return nullptr;
  }

  void worker() {
    detail::init_pipeline_thread();
    autotune::Timer active(node(), /*worker=*/true);
    std::unique_lock<std::mutex> lock(state_->mu);
    while (true) {
      Slot* s = nullptr;
      {
        autotune::Idle idle;
        state_->cv.wait(lock, [&] { return cancelled_ || (s = find_work()) != nullptr; });
      }
      if (cancelled_) return;
      pull(*s, lock);
    }
  }

  std::unique_lock<std::mutex> quiesce() const {
    std::unique_lock<std::mutex> lock(state_->mu);
    paused_ = true;
    autotune::Idle idle;
    state_->cv.wait(lock, [&] { return pulling_ == 0 && opening_ == 0; });
    return lock;
  }
  void resume(std::unique_lock<std::mutex>& lock) const {
    paused_ = false;
    lock.unlock();
    state_->cv.notify_all();
  }

  std::shared_ptr<const InterleaveDataset> d_;
  IteratorContext ctx_;
  std::shared_ptr<autotune::SharedState> state_;  // guards the fields below but input_
  std::unique_ptr<IteratorBase> input_;           // read by the consumer only
  const bool deterministic_;
  bool parallel_ = false;
  int64_t fixed_ = 1, slot_cap_ = 1;
  std::shared_ptr<autotune::Parameter> parallelism_;  // null unless tuned
  std::vector<Slot> cycle_;                            // never resized: workers hold Slot&
  std::vector<std::thread> threads_;
  int64_t cur_ = 0, block_ = 0, next_index_ = 0, pulling_ = 0, opening_ = 0;
  bool input_done_ = false, finished_ = false, cancelled_ = false;
  mutable bool paused_ = false;
};

std::unique_ptr<IteratorBase> InterleaveDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<InterleaveIterator>(ctx, std::static_pointer_cast<const InterleaveDataset>(shared_from_this()));
}

}  // namespace

DatasetPtr make_interleave_dataset(DatasetPtr input, DatasetFn fn, InterleaveOptions options) {
  return std::make_shared<InterleaveDataset>(std::move(input), std::move(fn), options);
}

}  // namespace deepflow::data
