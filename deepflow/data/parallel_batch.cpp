// SPDX-License-Identifier: Apache-2.0
// batch with num_parallel_calls > 1 or kAutotune: several batches are read (in
// order, under one lock) and stacked at once, on the engine parallel map uses.
#include "deepflow/data/dataset_util.h"
#include "deepflow/data/parallel.h"

namespace deepflow::data {
namespace {

class ParallelBatchDataset : public DatasetBase {
 public:
  ParallelBatchDataset(DatasetPtr input, int64_t batch_size, BatchOptions o)
      : input_(std::move(input)), batch_size_(batch_size), options_(o) {
    DF_CHECK(input_ != nullptr, "[Dataset.batch] the input dataset is undefined");
    DF_CHECK(batch_size > 0, "[Dataset.batch] batch_size must be positive, got ", batch_size);
    DF_CHECK(o.num_parallel_calls >= 1 || o.num_parallel_calls == kAutotune,
             "[Dataset.batch] num_parallel_calls must be >= 1 or kAutotune, got ", o.num_parallel_calls);
    spec_ = input_->spec();
    for (TensorType& t : spec_.components) t.shape.insert(0, o.drop_remainder ? batch_size : kUnknownDim);
  }
  // Not "batch": the sequential batch saves a different state.
  std::string name() const override { return "parallel_batch"; }
  const ElementSpec& spec() const override { return spec_; }
  int64_t cardinality() const override {
    const int64_t c = input_->cardinality();
    if (c < 0) return c;
    return options_.drop_remainder ? c / batch_size_ : (c + batch_size_ - 1) / batch_size_;
  }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  DatasetPtr input_;
  int64_t batch_size_;
  BatchOptions options_;
  ElementSpec spec_;
};

class ParallelBatchIterator : public detail::ParallelCallsIterator {
 public:
  ParallelBatchIterator(const IteratorContext& ctx, std::shared_ptr<const ParallelBatchDataset> d)
      : ParallelCallsIterator(ctx, *d->input_, "parallel_batch", d->options_.num_parallel_calls,
                              d->options_.deterministic.value_or(ctx.options.deterministic)),
        d_(std::move(d)) {}
  ~ParallelBatchIterator() override { stop(); }

 protected:
  int64_t call_size() const override { return d_->batch_size_; }
  std::optional<Element> compute(std::vector<Element>& in, int64_t first) const override {
    if (d_->options_.drop_remainder && int64_t(in.size()) < d_->batch_size_) return std::nullopt;
    return detail::stack_elements(in, first, "Dataset.batch");
  }

 private:
  std::shared_ptr<const ParallelBatchDataset> d_;
};

std::unique_ptr<IteratorBase> ParallelBatchDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<ParallelBatchIterator>(
      ctx, std::static_pointer_cast<const ParallelBatchDataset>(shared_from_this()));
}

}  // namespace

DatasetPtr make_parallel_batch_dataset(DatasetPtr input, int64_t batch_size, BatchOptions options) {
  return std::make_shared<ParallelBatchDataset>(std::move(input), batch_size, options);
}

}  // namespace deepflow::data
