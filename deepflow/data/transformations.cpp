// SPDX-License-Identifier: Apache-2.0
// Element-wise and stream transformations: map (sequential), filter, flat_map,
// take, skip, repeat, concatenate, enumerate, shard, with_options; and the
// handle methods of the asynchronous ones, which live in parallel_*.cpp.
#include <algorithm>

#include "deepflow/data/dataset.h"
#include "deepflow/data/dataset_util.h"
#include "deepflow/data/parallel.h"

namespace deepflow::data {
namespace {

// A dataset with one input whose iterator keeps its own context (to make inputs later).
template <class Self>
class UnaryDataset : public DatasetBase {
 public:
  explicit UnaryDataset(DatasetPtr input, const char* op) : input_(std::move(input)) {
    DF_CHECK(input_ != nullptr, "[", op, "] the input dataset is undefined");
  }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  std::shared_ptr<const Self> self() const { return std::static_pointer_cast<const Self>(shared_from_this()); }
  DatasetPtr input_;
};

// --- map (num_parallel_calls == 1; parallel_map.cpp has the rest) ---

class MapDataset : public UnaryDataset<MapDataset> {
 public:
  MapDataset(DatasetPtr input, MapFn fn) : UnaryDataset(std::move(input), "Dataset.map"), fn_(std::move(fn)) {
    DF_CHECK(fn_ != nullptr, "[Dataset.map] the function is empty");
  }
  std::string name() const override { return "map"; }
  const ElementSpec& spec() const override { return detail::unknown_spec(); }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;
  MapFn fn_;
};

class MapIterator : public IteratorBase {
 public:
  MapIterator(const IteratorContext& ctx, std::shared_ptr<const MapDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), input_(d_->input_->make_iterator(ctx.child("map", 0, node()))) {}
  std::optional<Element> next_impl() override {
    std::optional<Element> in = input_->get_next();
    if (!in) return std::nullopt;
    const int64_t i = index_++;
    return detail::with_element_context("Dataset.map", i, [&] { return d_->fn_(*in); });
  }
  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/index", index_);
    input_->save(w);
  }
  void restore(const IteratorStateReader& r) override {
    index_ = r.read_int(prefix_ + "/index");
    input_->restore(r);
  }

 private:
  std::shared_ptr<const MapDataset> d_;
  std::unique_ptr<IteratorBase> input_;
  int64_t index_ = 0;
};

std::unique_ptr<IteratorBase> MapDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<MapIterator>(ctx, self());
}

// --- filter ---

class FilterDataset : public UnaryDataset<FilterDataset> {
 public:
  FilterDataset(DatasetPtr input, PredicateFn p)
      : UnaryDataset(std::move(input), "Dataset.filter"), predicate_(std::move(p)) {
    DF_CHECK(predicate_ != nullptr, "[Dataset.filter] the predicate is empty");
  }
  std::string name() const override { return "filter"; }
  const ElementSpec& spec() const override { return input_->spec(); }
  int64_t cardinality() const override {
    const int64_t c = input_->cardinality();
    return c == 0 || c == kInfiniteCardinality ? c : kUnknownCardinality;
  }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;
  PredicateFn predicate_;
};

class FilterIterator : public IteratorBase {
 public:
  FilterIterator(const IteratorContext& ctx, std::shared_ptr<const FilterDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), input_(d_->input_->make_iterator(ctx.child("filter", 0, node()))) {}
  std::optional<Element> next_impl() override {
    while (std::optional<Element> in = input_->get_next()) {
      const int64_t i = index_++;
      if (detail::with_element_context("Dataset.filter", i, [&] { return d_->predicate_(*in); })) return in;
    }
    return std::nullopt;
  }
  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/index", index_);
    input_->save(w);
  }
  void restore(const IteratorStateReader& r) override {
    index_ = r.read_int(prefix_ + "/index");
    input_->restore(r);
  }

 private:
  std::shared_ptr<const FilterDataset> d_;
  std::unique_ptr<IteratorBase> input_;
  int64_t index_ = 0;
};

std::unique_ptr<IteratorBase> FilterDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<FilterIterator>(ctx, self());
}

// --- flat_map ---

class FlatMapDataset : public UnaryDataset<FlatMapDataset> {
 public:
  FlatMapDataset(DatasetPtr input, DatasetFn fn)
      : UnaryDataset(std::move(input), "Dataset.flat_map"), fn_(std::move(fn)) {
    DF_CHECK(fn_ != nullptr, "[Dataset.flat_map] the function is empty");
  }
  std::string name() const override { return "flat_map"; }
  const ElementSpec& spec() const override { return detail::unknown_spec(); }
  int64_t cardinality() const override {
    return input_->cardinality() == 0 ? 0 : kUnknownCardinality;
  }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;
  DatasetFn fn_;
};

class FlatMapIterator : public IteratorBase {
 public:
  FlatMapIterator(const IteratorContext& ctx, std::shared_ptr<const FlatMapDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), ctx_(ctx),
        input_(d_->input_->make_iterator(ctx.child("flat_map", 0, node()))) {}

  std::optional<Element> next_impl() override {
    while (true) {
      if (inner_) {
        if (std::optional<Element> e = inner_->get_next()) return e;
        inner_.reset();
      }
      std::optional<Element> in = input_->get_next();
      if (!in) return std::nullopt;
      current_ = *in;
      open_inner(index_++);
    }
  }
  // The element that made the current inner dataset is saved with the inner
  // iterator's position; restore calls the function on it again.
  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/index", index_);
    w.write_int(prefix_ + "/has_inner", inner_ != nullptr);
    input_->save(w);
    if (!inner_) return;
    detail::write_element(w, prefix_ + "/current", current_);
    inner_->save(w);
  }
  void restore(const IteratorStateReader& r) override {
    index_ = r.read_int(prefix_ + "/index");
    input_->restore(r);
    inner_.reset();
    if (!r.read_int(prefix_ + "/has_inner")) return;
    current_ = detail::read_element(r, prefix_ + "/current");
    open_inner(index_ - 1);
    inner_->restore(r);
  }

 private:
  void open_inner(int64_t i) {
    Dataset inner = detail::with_element_context("Dataset.flat_map", i, [&] { return d_->fn_(current_); });
    DF_CHECK(inner.defined(), "[Dataset.flat_map] element ", i, ": the function returned an undefined dataset");
    inner_ = inner.impl()->make_iterator(ctx_.child("flat_map", 1, node()));
  }

  std::shared_ptr<const FlatMapDataset> d_;
  IteratorContext ctx_;
  std::unique_ptr<IteratorBase> input_, inner_;
  Element current_;
  int64_t index_ = 0;
};

std::unique_ptr<IteratorBase> FlatMapDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<FlatMapIterator>(ctx, self());
}

// --- take / skip ---

class TakeDataset : public UnaryDataset<TakeDataset> {
 public:
  TakeDataset(DatasetPtr input, int64_t count) : UnaryDataset(std::move(input), "Dataset.take"), count_(count) {}
  std::string name() const override { return "take"; }
  const ElementSpec& spec() const override { return input_->spec(); }
  int64_t cardinality() const override {
    const int64_t c = input_->cardinality();
    if (count_ < 0) return c;
    if (c == kInfiniteCardinality) return count_;
    if (c == kUnknownCardinality) return count_ == 0 ? 0 : kUnknownCardinality;
    return std::min(c, count_);
  }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;
  int64_t count_;
};

class TakeIterator : public IteratorBase {
 public:
  TakeIterator(const IteratorContext& ctx, std::shared_ptr<const TakeDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), input_(d_->input_->make_iterator(ctx.child("take", 0, node()))) {}
  std::optional<Element> next_impl() override {
    if (d_->count_ >= 0 && taken_ >= d_->count_) return std::nullopt;
    std::optional<Element> e = input_->get_next();
    if (e) ++taken_;
    return e;
  }
  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/taken", taken_);
    input_->save(w);
  }
  void restore(const IteratorStateReader& r) override {
    taken_ = r.read_int(prefix_ + "/taken");
    input_->restore(r);
  }

 private:
  std::shared_ptr<const TakeDataset> d_;
  std::unique_ptr<IteratorBase> input_;
  int64_t taken_ = 0;
};

std::unique_ptr<IteratorBase> TakeDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<TakeIterator>(ctx, self());
}

class SkipDataset : public UnaryDataset<SkipDataset> {
 public:
  SkipDataset(DatasetPtr input, int64_t count) : UnaryDataset(std::move(input), "Dataset.skip"), count_(count) {}
  std::string name() const override { return "skip"; }
  const ElementSpec& spec() const override { return input_->spec(); }
  int64_t cardinality() const override {
    const int64_t c = input_->cardinality();
    if (c == kInfiniteCardinality) return count_ < 0 ? 0 : c;
    if (c == kUnknownCardinality) return c;
    return count_ < 0 ? 0 : std::max<int64_t>(0, c - count_);
  }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;
  int64_t count_;
};

class SkipIterator : public IteratorBase {
 public:
  SkipIterator(const IteratorContext& ctx, std::shared_ptr<const SkipDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), input_(d_->input_->make_iterator(ctx.child("skip", 0, node()))) {}
  std::optional<Element> next_impl() override {
    // count < 0 skips everything (tf.data), which still reads the whole input.
    while (d_->count_ < 0 || skipped_ < d_->count_) {
      if (!input_->get_next()) return std::nullopt;
      ++skipped_;
    }
    return input_->get_next();
  }
  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/skipped", skipped_);
    input_->save(w);
  }
  void restore(const IteratorStateReader& r) override {
    skipped_ = r.read_int(prefix_ + "/skipped");
    input_->restore(r);
  }

 private:
  std::shared_ptr<const SkipDataset> d_;
  std::unique_ptr<IteratorBase> input_;
  int64_t skipped_ = 0;
};

std::unique_ptr<IteratorBase> SkipDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<SkipIterator>(ctx, self());
}

// --- repeat ---

class RepeatDataset : public UnaryDataset<RepeatDataset> {
 public:
  RepeatDataset(DatasetPtr input, int64_t count) : UnaryDataset(std::move(input), "Dataset.repeat"), count_(count) {}
  std::string name() const override { return "repeat"; }
  const ElementSpec& spec() const override { return input_->spec(); }
  int64_t cardinality() const override { return detail::repeat_cardinality(input_->cardinality(), count_); }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;
  int64_t count_;
};

class RepeatIterator : public IteratorBase {
 public:
  RepeatIterator(const IteratorContext& ctx, std::shared_ptr<const RepeatDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), ctx_(ctx) {
    if (d_->count_ != 0) open();
  }
  std::optional<Element> next_impl() override {
    while (input_) {
      if (std::optional<Element> e = input_->get_next()) {
        produced_in_pass_ = true;
        return e;
      }
      // An empty pass ends the repeat, or repeat() of an empty dataset would spin forever.
      const bool empty_pass = !produced_in_pass_;
      input_.reset();
      ++pass_;
      if (empty_pass || (d_->count_ >= 0 && pass_ >= d_->count_)) return std::nullopt;
      open();
    }
    return std::nullopt;
  }
  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/pass", pass_);
    w.write_int(prefix_ + "/produced", produced_in_pass_);
    w.write_int(prefix_ + "/has_input", input_ != nullptr);
    if (input_) input_->save(w);
  }
  void restore(const IteratorStateReader& r) override {
    pass_ = r.read_int(prefix_ + "/pass");
    input_.reset();
    if (r.read_int(prefix_ + "/has_input")) {
      open();
      input_->restore(r);
    }
    produced_in_pass_ = r.read_int(prefix_ + "/produced") != 0;
  }

 private:
  // Each pass makes a fresh input iterator, so random upstream ops see a new iteration.
  void open() {
    input_ = d_->input_->make_iterator(ctx_.child("repeat", 0, node()));
    produced_in_pass_ = false;
  }
  std::shared_ptr<const RepeatDataset> d_;
  IteratorContext ctx_;
  std::unique_ptr<IteratorBase> input_;
  int64_t pass_ = 0;
  bool produced_in_pass_ = false;
};

std::unique_ptr<IteratorBase> RepeatDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<RepeatIterator>(ctx, self());
}

// --- concatenate ---

class ConcatenateDataset : public DatasetBase {
 public:
  ConcatenateDataset(DatasetPtr a, DatasetPtr b) : a_(std::move(a)), b_(std::move(b)) {
    DF_CHECK(a_ && b_, "[Dataset.concatenate] a dataset is undefined");
    const ElementSpec &sa = a_->spec(), &sb = b_->spec();
    if (sa.components.empty() || sb.components.empty()) return;  // unknown: checked per element
    DF_CHECK(sa.components.size() == sb.components.size() && sa.names == sb.names,
             "[Dataset.concatenate] the datasets' elements differ: ", sa.to_string(), " and ", sb.to_string());
    spec_.names = sa.names;
    for (size_t i = 0; i < sa.components.size(); ++i) {
      const TensorType &ta = sa.components[i], &tb = sb.components[i];
      DF_CHECK(ta.dtype == tb.dtype && ta.shape.rank() == tb.shape.rank(), "[Dataset.concatenate] component ", i,
               " differs: ", sa.to_string(), " and ", sb.to_string());
      TensorType t = ta;
      for (int k = 0; k < t.shape.rank(); ++k)
        if (ta.shape[k] != tb.shape[k]) t.shape[k] = kUnknownDim;
      spec_.components.push_back(t);
    }
  }
  std::string name() const override { return "concatenate"; }
  const ElementSpec& spec() const override { return spec_; }
  int64_t cardinality() const override {
    const int64_t a = a_->cardinality(), b = b_->cardinality();
    if (a == kInfiniteCardinality || b == kInfiniteCardinality) return kInfiniteCardinality;
    if (a == kUnknownCardinality || b == kUnknownCardinality) return kUnknownCardinality;
    return a + b;
  }
  std::vector<DatasetPtr> inputs() const override { return {a_, b_}; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;
  DatasetPtr a_, b_;
  ElementSpec spec_;
};

class ConcatenateIterator : public IteratorBase {
 public:
  ConcatenateIterator(const IteratorContext& ctx, std::shared_ptr<const ConcatenateDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), ctx_(ctx) {
    input_ = d_->a_->make_iterator(ctx.child("concatenate", 0, node()));
  }
  std::optional<Element> next_impl() override {
    while (input_) {
      if (std::optional<Element> e = input_->get_next()) {
        DF_CHECK(which_ == 0 || d_->spec_.matches(*e), "[Dataset.concatenate] an element of the second dataset, ",
                 detail::element_string(*e), ", does not match ", d_->spec_.to_string());
        return e;
      }
      input_.reset();
      if (++which_ == 1) input_ = d_->b_->make_iterator(ctx_.child("concatenate", 1, node()));
    }
    return std::nullopt;
  }
  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/which", which_);
    if (input_) input_->save(w);
  }
  void restore(const IteratorStateReader& r) override {
    which_ = r.read_int(prefix_ + "/which");
    input_.reset();
    if (which_ == 0) input_ = d_->a_->make_iterator(ctx_.child("concatenate", 0, node()));
    if (which_ == 1) input_ = d_->b_->make_iterator(ctx_.child("concatenate", 1, node()));
    if (input_) input_->restore(r);
  }

 private:
  std::shared_ptr<const ConcatenateDataset> d_;
  IteratorContext ctx_;
  std::unique_ptr<IteratorBase> input_;
  int64_t which_ = 0;
};

std::unique_ptr<IteratorBase> ConcatenateDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<ConcatenateIterator>(ctx,
                                               std::static_pointer_cast<const ConcatenateDataset>(shared_from_this()));
}

// --- enumerate / shard ---

class EnumerateDataset : public UnaryDataset<EnumerateDataset> {
 public:
  EnumerateDataset(DatasetPtr input, int64_t start)
      : UnaryDataset(std::move(input), "Dataset.enumerate"), start_(start) {
    const ElementSpec& s = input_->spec();
    if (s.components.empty()) return;
    spec_.components.push_back({DType::Int64, Shape{}});
    spec_.components.insert(spec_.components.end(), s.components.begin(), s.components.end());
  }
  std::string name() const override { return "enumerate"; }
  const ElementSpec& spec() const override { return spec_; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;
  int64_t start_;
  ElementSpec spec_;
};

class EnumerateIterator : public IteratorBase {
 public:
  EnumerateIterator(const IteratorContext& ctx, std::shared_ptr<const EnumerateDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), input_(d_->input_->make_iterator(ctx.child("enumerate", 0, node()))) {}
  std::optional<Element> next_impl() override {
    std::optional<Element> e = input_->get_next();
    if (!e) return std::nullopt;
    Tensor index(Shape{}, DType::Int64);
    *index.data<int64_t>() = d_->start_ + count_++;
    // Flat elements: (index, components...); a dict's names are dropped (a tuple).
    std::vector<Tensor> ts{index};
    ts.insert(ts.end(), e->tensors().begin(), e->tensors().end());
    return Element(std::move(ts));
  }
  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/count", count_);
    input_->save(w);
  }
  void restore(const IteratorStateReader& r) override {
    count_ = r.read_int(prefix_ + "/count");
    input_->restore(r);
  }

 private:
  std::shared_ptr<const EnumerateDataset> d_;
  std::unique_ptr<IteratorBase> input_;
  int64_t count_ = 0;
};

std::unique_ptr<IteratorBase> EnumerateDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<EnumerateIterator>(ctx, self());
}

class ShardDataset : public UnaryDataset<ShardDataset> {
 public:
  ShardDataset(DatasetPtr input, int64_t n, int64_t index)
      : UnaryDataset(std::move(input), "Dataset.shard"), n_(n), index_(index) {
    DF_CHECK(n > 0, "[Dataset.shard] num_shards must be positive, got ", n);
    DF_CHECK(index >= 0 && index < n, "[Dataset.shard] index must be in [0, ", n, "), got ", index);
  }
  std::string name() const override { return "shard"; }
  const ElementSpec& spec() const override { return input_->spec(); }
  int64_t cardinality() const override {
    const int64_t c = input_->cardinality();
    if (c < 0) return c;
    return c / n_ + (index_ < c % n_ ? 1 : 0);
  }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;
  int64_t n_, index_;
};

class ShardIterator : public IteratorBase {
 public:
  ShardIterator(const IteratorContext& ctx, std::shared_ptr<const ShardDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), input_(d_->input_->make_iterator(ctx.child("shard", 0, node()))) {}
  std::optional<Element> next_impl() override {
    while (std::optional<Element> e = input_->get_next()) {
      if (seen_++ % d_->n_ == d_->index_) return e;
    }
    return std::nullopt;
  }
  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/seen", seen_);
    input_->save(w);
  }
  void restore(const IteratorStateReader& r) override {
    seen_ = r.read_int(prefix_ + "/seen");
    input_->restore(r);
  }

 private:
  std::shared_ptr<const ShardDataset> d_;
  std::unique_ptr<IteratorBase> input_;
  int64_t seen_ = 0;
};

std::unique_ptr<IteratorBase> ShardDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<ShardIterator>(ctx, self());
}

void check_parallelism(const char* op, int64_t n) {
  DF_CHECK(n >= 1 || n == kAutotune, "[", op, "] num_parallel_calls must be >= 1 or kAutotune, got ", n);
}

}  // namespace

Dataset Dataset::map(MapFn fn, MapOptions options) const {
  check_parallelism("Dataset.map", options.num_parallel_calls);
  if (options.num_parallel_calls != 1)
    return Dataset(make_parallel_map_dataset(impl_, std::move(fn), options.num_parallel_calls, options.deterministic));
  return Dataset(std::make_shared<MapDataset>(impl_, std::move(fn)));
}
Dataset Dataset::filter(PredicateFn predicate) const {
  return Dataset(std::make_shared<FilterDataset>(impl_, std::move(predicate)));
}
Dataset Dataset::flat_map(DatasetFn fn) const { return Dataset(std::make_shared<FlatMapDataset>(impl_, std::move(fn))); }
Dataset Dataset::interleave(DatasetFn fn, InterleaveOptions options) const {
  DF_CHECK(impl_ != nullptr, "[Dataset.interleave] the input dataset is undefined");
  return Dataset(make_interleave_dataset(impl_, std::move(fn), options));
}
Dataset Dataset::prefetch(int64_t buffer_size) const {
  DF_CHECK(impl_ != nullptr, "[Dataset.prefetch] the input dataset is undefined");
  return Dataset(make_prefetch_dataset(impl_, buffer_size));
}
Dataset Dataset::take(int64_t count) const { return Dataset(std::make_shared<TakeDataset>(impl_, count)); }
Dataset Dataset::skip(int64_t count) const { return Dataset(std::make_shared<SkipDataset>(impl_, count)); }
Dataset Dataset::repeat(int64_t count) const { return Dataset(std::make_shared<RepeatDataset>(impl_, count)); }
Dataset Dataset::concatenate(const Dataset& other) const {
  return Dataset(std::make_shared<ConcatenateDataset>(impl_, other.impl_));
}
Dataset Dataset::enumerate(int64_t start) const { return Dataset(std::make_shared<EnumerateDataset>(impl_, start)); }
Dataset Dataset::shard(int64_t num_shards, int64_t index) const {
  return Dataset(std::make_shared<ShardDataset>(impl_, num_shards, index));
}
Dataset Dataset::with_options(Options options) const {
  DF_CHECK(impl_ != nullptr, "[Dataset.with_options] the input dataset is undefined");
  return Dataset(std::make_shared<OptionsDataset>(impl_, options));
}

}  // namespace deepflow::data
