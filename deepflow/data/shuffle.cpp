// SPDX-License-Identifier: Apache-2.0
// shuffle(buffer_size, {seed, reshuffle_each_iteration}) with tf.data's semantics
// (specs.md 4.1): fill a buffer of buffer_size elements, then output a uniformly
// random element of it and put the next input element in its slot; at the end of
// the input drain the buffer in random order.
//
// Randomness: the seeds (seed, seed2) come from the global and op seeds when the
// dataset is built, as for random ops. Each iterator made from the dataset takes
// the next number k of a counter kept by the dataset (TensorFlow's seed generator
// resource does the same), so every epoch — a repeat() pass or a fresh iter() —
// gets a fresh order, reproducible from run to run; reshuffle_each_iteration =
// false uses k = 0 every time. Draw j of iterator k is Philox(counter = (j, k),
// key = mix(seed, seed2)), so a saved iterator restores exactly from (k, j) and
// its buffer. As TensorFlow's saved seed generator, the state also holds the
// dataset's counter, and restoring sets it back: the epochs after the restored one
// get the orders they would have had.
#include <atomic>

#include "deepflow/core/random.h"
#include "deepflow/data/dataset.h"
#include "deepflow/data/dataset_util.h"

namespace deepflow::data {
namespace {

class ShuffleDataset : public DatasetBase {
 public:
  ShuffleDataset(DatasetPtr input, int64_t buffer_size, ShuffleOptions o)
      : input_(std::move(input)), buffer_size_(buffer_size), reshuffle_(o.reshuffle_each_iteration) {
    DF_CHECK(input_ != nullptr, "[Dataset.shuffle] the input dataset is undefined");
    DF_CHECK(buffer_size > 0, "[Dataset.shuffle] buffer_size must be positive, got ", buffer_size);
    auto [seed, seed2] = deepflow::detail::resolve_seeds(o.seed);
    key_ = uint64_t(seed) * 0x9E3779B97F4A7C15ull ^ uint64_t(seed2);
  }
  std::string name() const override { return "shuffle"; }
  const ElementSpec& spec() const override { return input_->spec(); }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  DatasetPtr input_;
  int64_t buffer_size_;
  bool reshuffle_;
  uint64_t key_ = 0;
  mutable std::atomic<int64_t> iterations_{0};
};

class ShuffleIterator : public IteratorBase {
 public:
  ShuffleIterator(const IteratorContext& ctx, std::shared_ptr<const ShuffleDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), input_(d_->input_->make_iterator(ctx.child("shuffle", 0, node()))),
        k_(d_->reshuffle_ ? d_->iterations_.fetch_add(1) : 0) {}

  std::optional<Element> next_impl() override {
    while (!input_done_ && int64_t(buffer_.size()) < d_->buffer_size_) {
      std::optional<Element> e = input_->get_next();
      if (!e) {
        input_done_ = true;
        break;
      }
      buffer_.push_back(std::move(*e));
    }
    if (buffer_.empty()) return std::nullopt;
    const std::array<uint32_t, 4> r = deepflow::detail::philox(uint64_t(draws_++), uint64_t(k_), d_->key_);
    const size_t i = size_t(((uint64_t(r[0]) << 32) | r[1]) % buffer_.size());
    Element out = std::move(buffer_[i]);
    // The next input element takes the slot on the next call (the same as refilling now).
    if (i + 1 != buffer_.size()) buffer_[i] = std::move(buffer_.back());
    buffer_.pop_back();
    return out;
  }

  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/k", k_);
    w.write_int(prefix_ + "/next_k", d_->iterations_.load());
    w.write_int(prefix_ + "/draws", draws_);
    w.write_int(prefix_ + "/input_done", input_done_);
    w.write_int(prefix_ + "/buffer_size", int64_t(buffer_.size()));
    for (size_t i = 0; i < buffer_.size(); ++i) detail::write_element(w, prefix_ + "/buffer/" + std::to_string(i), buffer_[i]);
    input_->save(w);
  }
  void restore(const IteratorStateReader& r) override {
    k_ = r.read_int(prefix_ + "/k");
    // Later epochs (repeat's next passes) continue the dataset's sequence from here.
    d_->iterations_.store(r.read_int(prefix_ + "/next_k"));
    draws_ = r.read_int(prefix_ + "/draws");
    input_done_ = r.read_int(prefix_ + "/input_done") != 0;
    const int64_t n = r.read_int(prefix_ + "/buffer_size");
    DF_CHECK(n >= 0 && n <= d_->buffer_size_, "[Iterator.restore] shuffle: ", n,
             " buffered elements for a buffer of ", d_->buffer_size_);
    buffer_.clear();
    for (int64_t i = 0; i < n; ++i) buffer_.push_back(detail::read_element(r, prefix_ + "/buffer/" + std::to_string(i)));
    input_->restore(r);
  }

 private:
  std::shared_ptr<const ShuffleDataset> d_;
  std::unique_ptr<IteratorBase> input_;
  std::vector<Element> buffer_;
  int64_t k_;
  int64_t draws_ = 0;
  bool input_done_ = false;
};

std::unique_ptr<IteratorBase> ShuffleDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<ShuffleIterator>(ctx, std::static_pointer_cast<const ShuffleDataset>(shared_from_this()));
}

}  // namespace

Dataset Dataset::shuffle(int64_t buffer_size, ShuffleOptions options) const {
  return Dataset(std::make_shared<ShuffleDataset>(impl_, buffer_size, options));
}

}  // namespace deepflow::data
