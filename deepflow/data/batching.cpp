// SPDX-License-Identifier: Apache-2.0
// batch (sequential; parallel_batch.cpp has num_parallel_calls != 1), padded_batch, unbatch.
// Batches are built by copying each element into the output buffer: one pass over
// the bytes, strings assigned one by one.
#include <algorithm>

#include "deepflow/data/dataset.h"
#include "deepflow/data/dataset_util.h"
#include "deepflow/data/parallel.h"

namespace deepflow::data {
namespace {

int64_t batch_cardinality(int64_t c, int64_t batch_size, bool drop_remainder) {
  if (c < 0) return c;
  return drop_remainder ? c / batch_size : (c + batch_size - 1) / batch_size;
}

// The spec of a batch: a leading dim of batch_size when every batch has it, else -1.
ElementSpec batched_spec(const ElementSpec& in, int64_t batch_size, bool drop_remainder) {
  ElementSpec s = in;
  for (TensorType& t : s.components) t.shape.insert(0, drop_remainder ? batch_size : kUnknownDim);
  return s;
}

// Reads up to n elements; fewer only at the end of the input.
std::vector<Element> read_elements(IteratorBase& input, int64_t n) {
  std::vector<Element> out;
  out.reserve(size_t(n));
  while (int64_t(out.size()) < n) {
    std::optional<Element> e = input.get_next();
    if (!e) break;
    out.push_back(std::move(*e));
  }
  return out;
}

// --- batch ---

class BatchDataset : public DatasetBase {
 public:
  BatchDataset(DatasetPtr input, int64_t batch_size, bool drop_remainder)
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {
    DF_CHECK(input_ != nullptr, "[Dataset.batch] the input dataset is undefined");
    DF_CHECK(batch_size > 0, "[Dataset.batch] batch_size must be positive, got ", batch_size);
    spec_ = batched_spec(input_->spec(), batch_size, drop_remainder);
  }
  std::string name() const override { return "batch"; }
  const ElementSpec& spec() const override { return spec_; }
  int64_t cardinality() const override { return batch_cardinality(input_->cardinality(), batch_size_, drop_remainder_); }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  DatasetPtr input_;
  int64_t batch_size_;
  bool drop_remainder_;
  ElementSpec spec_;
};

class BatchIterator : public IteratorBase {
 public:
  BatchIterator(const IteratorContext& ctx, std::shared_ptr<const BatchDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), input_(d_->input_->make_iterator(ctx.child("batch", 0, node()))) {}
  std::optional<Element> next_impl() override {
    if (input_->has_row_views()) {
      // Consecutive rows of one source: the batch is a view of them, nothing to stack.
      std::optional<Element> rows = input_->get_next_rows(d_->batch_size_);
      const int64_t n = rows ? (*rows)[0].dim(0) : 0;
      seen_ += n;
      if (!rows || (d_->drop_remainder_ && n < d_->batch_size_)) return std::nullopt;
      return rows;
    }
    std::vector<Element> elems = read_elements(*input_, d_->batch_size_);
    const int64_t first = seen_;
    seen_ += int64_t(elems.size());
    if (elems.empty() || (d_->drop_remainder_ && int64_t(elems.size()) < d_->batch_size_)) return std::nullopt;
    return detail::stack_elements(elems, first, "Dataset.batch");
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
  std::shared_ptr<const BatchDataset> d_;
  std::unique_ptr<IteratorBase> input_;
  int64_t seen_ = 0;
};

std::unique_ptr<IteratorBase> BatchDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<BatchIterator>(ctx, std::static_pointer_cast<const BatchDataset>(shared_from_this()));
}

// --- padded_batch ---

// Copies src into dst (shape `dshape`, starting at flat element `base`), each dim of
// src at the low end of dst's: one contiguous run per innermost row.
void copy_padded(Tensor& dst, int64_t base, const Shape& dshape, const Tensor& src) {
  const int r = src.rank();
  if (r == 0 || src.size() == 0) {
    if (src.size() == 1) detail::copy_into(dst, base, src);
    return;
  }
  const int64_t row = src.shape()[r - 1];
  const int64_t rows = src.size() / row;
  const Shape row_shape{row};
  std::vector<int64_t> idx(size_t(r - 1), 0);
  for (int64_t k = 0; k < rows; ++k) {
    int64_t off = 0;
    for (int d = 0; d < r - 1; ++d) off = off * dshape[d] + idx[size_t(d)];
    detail::copy_into(dst, base + off * dshape[r - 1], src.view(Shape{src.size()}).slice0(k * row, (k + 1) * row));
    for (int d = r - 2; d >= 0; --d) {
      if (++idx[size_t(d)] < src.shape()[d]) break;
      idx[size_t(d)] = 0;
    }
  }
}

class PaddedBatchDataset : public DatasetBase {
 public:
  PaddedBatchDataset(DatasetPtr input, int64_t batch_size, PaddedBatchOptions o)
      : input_(std::move(input)), batch_size_(batch_size), o_(std::move(o)) {
    DF_CHECK(input_ != nullptr, "[Dataset.padded_batch] the input dataset is undefined");
    DF_CHECK(batch_size > 0, "[Dataset.padded_batch] batch_size must be positive, got ", batch_size);
    const ElementSpec& in = input_->spec();
    const size_t n = in.components.size();
    DF_CHECK(o_.padded_shapes.empty() || n == 0 || o_.padded_shapes.size() == n, "[Dataset.padded_batch] ",
             o_.padded_shapes.size(), " padded_shapes for ", n, " components ", in.to_string());
    DF_CHECK(o_.padding_values.size() <= 1 || n == 0 || o_.padding_values.size() == n, "[Dataset.padded_batch] ",
             o_.padding_values.size(), " padding_values for ", n, " components ", in.to_string());
    for (const Tensor& v : o_.padding_values)
      DF_CHECK(v.defined() && v.size() == 1, "[Dataset.padded_batch] a padding value must hold one element");
    spec_ = in;
    for (size_t c = 0; c < spec_.components.size(); ++c) {
      Shape& s = spec_.components[c].shape;
      if (!o_.padded_shapes.empty()) {
        const Shape& p = o_.padded_shapes[c];
        DF_CHECK(p.rank() == s.rank(), "[Dataset.padded_batch] padded_shapes[", c, "] ", p,
                 " has another rank than the component, ", detail::type_string(spec_.components[c]));
        for (int k = 0; k < s.rank(); ++k) s[k] = p[k];
      } else {
        for (int k = 0; k < s.rank(); ++k) s[k] = kUnknownDim;
      }
      s.insert(0, o_.drop_remainder ? batch_size : kUnknownDim);
    }
  }
  std::string name() const override { return "padded_batch"; }
  const ElementSpec& spec() const override { return spec_; }
  int64_t cardinality() const override {
    return batch_cardinality(input_->cardinality(), batch_size_, o_.drop_remainder);
  }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  Tensor padding_value(size_t c, DType dtype) const {
    if (o_.padding_values.empty()) return dtype == DType::String ? Tensor(Shape{}, dtype) : scalar(0, dtype);
    const Tensor& v = o_.padding_values[o_.padding_values.size() == 1 ? 0 : c];
    if (v.dtype() == dtype) return v;
    DF_CHECK(v.dtype() != DType::String && dtype != DType::String, "[Dataset.padded_batch] component ", c,
             " is ", dtype_name(dtype), ", its padding value ", dtype_name(v.dtype()));
    return scalar(v.flat(0), dtype);
  }

  Element pad(const std::vector<Element>& elems, int64_t first) const {
    const Element& e0 = elems[0];
    std::vector<Tensor> out;
    for (size_t c = 0; c < e0.size(); ++c) {
      const Tensor& t0 = e0[c];
      Shape s = o_.padded_shapes.empty() ? Shape() : o_.padded_shapes[c];
      if (o_.padded_shapes.empty()) s.resize(t0.rank(), kUnknownDim);
      DF_CHECK(s.rank() == t0.rank(), "[Dataset.padded_batch] input element ", first, " has component ", c, " of ",
               detail::tensor_string(t0), ", padded_shapes says rank ", s.rank());
      std::vector<int64_t> max(size_t(s.rank()), 0);
      for (size_t i = 0; i < elems.size(); ++i) {
        DF_CHECK(elems[i].size() == e0.size(), "[Dataset.padded_batch] element ", i, " of the batch has ",
                 elems[i].size(), " components, element 0 has ", e0.size());
        const Tensor& t = elems[i][c];
        DF_CHECK(t.dtype() == t0.dtype() && t.rank() == t0.rank(), "[Dataset.padded_batch] element ", i,
                 " of the batch (input element ", first + int64_t(i), ") has component ", c, " of ",
                 detail::tensor_string(t), ", element 0 has ", detail::tensor_string(t0));
        for (int k = 0; k < s.rank(); ++k) {
          DF_CHECK(s[k] < 0 || t.shape()[k] <= s[k], "[Dataset.padded_batch] element ", i,
                   " of the batch (input element ", first + int64_t(i), ") has component ", c, " of ",
                   detail::tensor_string(t), ", larger than its padded shape ", s);
          max[size_t(k)] = std::max(max[size_t(k)], t.shape()[k]);
        }
      }
      for (int k = 0; k < s.rank(); ++k)
        if (s[k] < 0) s[k] = max[size_t(k)];
      Shape bs = s;
      bs.insert(0, int64_t(elems.size()));
      Tensor b = detail::filled_like(bs, t0.dtype(), padding_value(c, t0.dtype()));
      for (size_t i = 0; i < elems.size(); ++i) copy_padded(b, int64_t(i) * s.num_elements(), s, elems[i][c]);
      out.push_back(std::move(b));
    }
    return Element(std::move(out), e0.names());
  }

  DatasetPtr input_;
  int64_t batch_size_;
  PaddedBatchOptions o_;
  ElementSpec spec_;
};

class PaddedBatchIterator : public IteratorBase {
 public:
  PaddedBatchIterator(const IteratorContext& ctx, std::shared_ptr<const PaddedBatchDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), input_(d_->input_->make_iterator(ctx.child("padded_batch", 0, node()))) {}
  std::optional<Element> next_impl() override {
    std::vector<Element> elems = read_elements(*input_, d_->batch_size_);
    const int64_t first = seen_;
    seen_ += int64_t(elems.size());
    if (elems.empty() || (d_->o_.drop_remainder && int64_t(elems.size()) < d_->batch_size_)) return std::nullopt;
    return d_->pad(elems, first);
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
  std::shared_ptr<const PaddedBatchDataset> d_;
  std::unique_ptr<IteratorBase> input_;
  int64_t seen_ = 0;
};

std::unique_ptr<IteratorBase> PaddedBatchDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<PaddedBatchIterator>(ctx,
                                               std::static_pointer_cast<const PaddedBatchDataset>(shared_from_this()));
}

// --- unbatch ---

class UnbatchDataset : public DatasetBase {
 public:
  explicit UnbatchDataset(DatasetPtr input) : input_(std::move(input)) {
    DF_CHECK(input_ != nullptr, "[Dataset.unbatch] the input dataset is undefined");
    spec_ = input_->spec();
    for (TensorType& t : spec_.components) {
      DF_CHECK(t.shape.rank() >= 1, "[Dataset.unbatch] the input's elements ", input_->spec().to_string(),
               " have a scalar component: nothing to unbatch");
      t.shape.erase(0);
    }
  }
  std::string name() const override { return "unbatch"; }
  const ElementSpec& spec() const override { return spec_; }
  int64_t cardinality() const override {
    const int64_t c = input_->cardinality();
    return c == 0 || c == kInfiniteCardinality ? c : kUnknownCardinality;
  }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;
  DatasetPtr input_;
  ElementSpec spec_;
};

class UnbatchIterator : public IteratorBase {
 public:
  UnbatchIterator(const IteratorContext& ctx, std::shared_ptr<const UnbatchDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), input_(d_->input_->make_iterator(ctx.child("unbatch", 0, node()))) {}
  std::optional<Element> next_impl() override {
    while (pos_ >= rows_) {
      std::optional<Element> e = input_->get_next();
      if (!e) return std::nullopt;
      set_current(std::move(*e), index_++);
    }
    std::vector<Tensor> out;
    for (const Tensor& t : current_.tensors()) {
      Shape s = t.shape();
      s.erase(0);
      out.push_back(t.slice0(pos_, pos_ + 1).view(s));
    }
    ++pos_;
    return Element(std::move(out), current_.names());
  }
  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/index", index_);
    w.write_int(prefix_ + "/pos", pos_);
    w.write_int(prefix_ + "/rows", rows_);
    detail::write_element(w, prefix_ + "/current", current_);
    input_->save(w);
  }
  void restore(const IteratorStateReader& r) override {
    index_ = r.read_int(prefix_ + "/index");
    pos_ = r.read_int(prefix_ + "/pos");
    rows_ = r.read_int(prefix_ + "/rows");
    current_ = detail::read_element(r, prefix_ + "/current");
    input_->restore(r);
  }

 private:
  void set_current(Element e, int64_t index) {
    DF_CHECK(!e.empty(), "[Dataset.unbatch] input element ", index, " has no components");
    for (size_t c = 0; c < e.size(); ++c)
      DF_CHECK(e[c].rank() >= 1 && e[c].dim(0) == e[0].dim(0), "[Dataset.unbatch] input element ", index,
               " is ", detail::element_string(e), ": every component needs the same first dimension");
    rows_ = e[0].dim(0);
    pos_ = 0;
    current_ = std::move(e);
  }
  std::shared_ptr<const UnbatchDataset> d_;
  std::unique_ptr<IteratorBase> input_;
  Element current_;
  int64_t index_ = 0, pos_ = 0, rows_ = 0;
};

std::unique_ptr<IteratorBase> UnbatchDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<UnbatchIterator>(ctx, std::static_pointer_cast<const UnbatchDataset>(shared_from_this()));
}

}  // namespace

namespace detail {

Element stack_elements(const std::vector<Element>& elems, int64_t first, const char* op) {
  const Element& e0 = elems[0];
  std::vector<Tensor> out;
  for (size_t c = 0; c < e0.size(); ++c) {
    const Tensor& t0 = e0[c];
    for (size_t i = 1; i < elems.size(); ++i) {
      DF_CHECK(elems[i].size() == e0.size(), "[", op, "] element ", i, " of the batch (input element ",
               first + int64_t(i), ") has ", elems[i].size(), " components, element 0 has ", e0.size());
      const Tensor& t = elems[i][c];
      DF_CHECK(t.dtype() == t0.dtype() && t.shape() == t0.shape(), "[", op, "] element ", i,
               " of the batch (input element ", first + int64_t(i), ") has component ", c, " of ",
               detail::tensor_string(t), ", element 0 has ", detail::tensor_string(t0),
               ": batch needs equal shapes (padded_batch pads them)");
    }
    Shape s = t0.shape();
    s.insert(0, int64_t(elems.size()));
    Tensor b(s, t0.dtype());
    for (size_t i = 0; i < elems.size(); ++i) detail::copy_into(b, int64_t(i) * t0.size(), elems[i][c]);
    out.push_back(std::move(b));
  }
  return Element(std::move(out), e0.names());
}

}  // namespace detail

Dataset Dataset::batch(int64_t batch_size, BatchOptions options) const {
  DF_CHECK(options.num_parallel_calls >= 1 || options.num_parallel_calls == kAutotune,
           "[Dataset.batch] num_parallel_calls must be >= 1 or kAutotune, got ", options.num_parallel_calls);
  if (options.num_parallel_calls != 1) return Dataset(make_parallel_batch_dataset(impl_, batch_size, options));
  return Dataset(std::make_shared<BatchDataset>(impl_, batch_size, options.drop_remainder));
}
Dataset Dataset::padded_batch(int64_t batch_size, PaddedBatchOptions options) const {
  return Dataset(std::make_shared<PaddedBatchDataset>(impl_, batch_size, std::move(options)));
}
Dataset Dataset::unbatch() const { return Dataset(std::make_shared<UnbatchDataset>(impl_)); }

}  // namespace deepflow::data
