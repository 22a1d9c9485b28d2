// SPDX-License-Identifier: Apache-2.0
// In-memory sources: range, from_tensor_slices, from_tensors, from_generator, zip.
#include <algorithm>
#include <limits>

#include "deepflow/data/dataset.h"
#include "deepflow/data/dataset_util.h"

namespace deepflow::data {
namespace {

// --- range ---

class RangeDataset : public DatasetBase {
 public:
  RangeDataset(int64_t start, int64_t stop, int64_t step, DType dtype)
      : start_(start), stop_(stop), step_(step), dtype_(dtype) {
    DF_CHECK(step != 0, "[Dataset.range] step must not be 0");
    DF_CHECK(dtype != DType::String && dtype != DType::Bool, "[Dataset.range] dtype must be numeric, got ",
             dtype_name(dtype));
    spec_.components = {{dtype, Shape{}}};
  }
  std::string name() const override { return "range"; }
  const ElementSpec& spec() const override { return spec_; }
  int64_t cardinality() const override {
    if (step_ > 0) return start_ >= stop_ ? 0 : (stop_ - start_ - 1) / step_ + 1;
    return start_ <= stop_ ? 0 : (start_ - stop_ - 1) / -step_ + 1;
  }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  int64_t start_, stop_, step_;
  DType dtype_;
  ElementSpec spec_;
};

class RangeIterator : public IteratorBase {
 public:
  RangeIterator(const IteratorContext& ctx, std::shared_ptr<const RangeDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), n_(d_->cardinality()) {}

  std::optional<Element> next_impl() override {
    if (i_ >= n_) return std::nullopt;
    const int64_t v = d_->start_ + i_++ * d_->step_;
    if (d_->dtype_ == DType::Int64) {  // exact beyond 2^53, which a double is not
      Tensor t(Shape{}, DType::Int64);
      *t.data<int64_t>() = v;
      return Element(t);
    }
    return Element(scalar(double(v), d_->dtype_));
  }
  void save(IteratorStateWriter& w) const override { w.write_int(prefix_ + "/i", i_); }
  void restore(const IteratorStateReader& r) override { i_ = r.read_int(prefix_ + "/i"); }

 private:
  std::shared_ptr<const RangeDataset> d_;
  int64_t n_, i_ = 0;
};

std::unique_ptr<IteratorBase> RangeDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<RangeIterator>(ctx, std::static_pointer_cast<const RangeDataset>(shared_from_this()));
}

// --- from_tensor_slices ---

class SlicesDataset : public DatasetBase {
 public:
  explicit SlicesDataset(const Element& components) : components_(components) {
    DF_CHECK(!components.empty(), "[Dataset.from_tensor_slices] no components");
    for (size_t i = 0; i < components.size(); ++i) {
      const Tensor& t = components[i];
      DF_CHECK(t.defined() && !t.is_symbolic(), "[Dataset.from_tensor_slices] component ", i,
               " is not a concrete tensor");
      DF_CHECK(t.rank() >= 1, "[Dataset.from_tensor_slices] component ", i, " is a scalar (",
               detail::tensor_string(t), "): it has no first dimension to slice");
      DF_CHECK(t.dim(0) == components[0].dim(0), "[Dataset.from_tensor_slices] components differ in their "
               "first dimension: component 0 is ", detail::tensor_string(components[0]), ", component ", i,
               " is ", detail::tensor_string(t));
      Shape s = t.shape();
      s.erase(0);
      spec_.components.push_back({t.dtype(), s});
    }
    spec_.names = components.names();
  }
  std::string name() const override { return "from_tensor_slices"; }
  const ElementSpec& spec() const override { return spec_; }
  int64_t cardinality() const override { return components_[0].dim(0); }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  Element slice(int64_t i) const {
    // Views of the source (as TensorFlow's slices): cheap, and they keep it alive.
    std::vector<Tensor> out;
    out.reserve(components_.size());
    for (size_t c = 0; c < components_.size(); ++c)
      out.push_back(components_[c].slice0(i, i + 1).view(spec_.components[c].shape));
    return Element(std::move(out), components_.names());
  }
  /// Rows [begin, end) of every component: views, no copy.
  Element rows(int64_t begin, int64_t end) const {
    std::vector<Tensor> out;
    out.reserve(components_.size());
    for (size_t c = 0; c < components_.size(); ++c) out.push_back(components_[c].slice0(begin, end));
    return Element(std::move(out), components_.names());
  }

 private:
  Element components_;
  ElementSpec spec_;
};

class SlicesIterator : public IteratorBase {
 public:
  SlicesIterator(const IteratorContext& ctx, std::shared_ptr<const SlicesDataset> d)
      : IteratorBase(ctx), d_(std::move(d)) {}
  std::optional<Element> next_impl() override {
    if (i_ >= d_->cardinality()) return std::nullopt;
    return d_->slice(i_++);
  }
  bool has_row_views() const override { return true; }
  std::optional<Element> next_rows_impl(int64_t n) override {
    const int64_t end = std::min(i_ + n, d_->cardinality());
    if (i_ >= end) return std::nullopt;
    Element e = d_->rows(i_, end);
    i_ = end;
    return e;
  }
  void save(IteratorStateWriter& w) const override { w.write_int(prefix_ + "/i", i_); }
  void restore(const IteratorStateReader& r) override { i_ = r.read_int(prefix_ + "/i"); }

 private:
  std::shared_ptr<const SlicesDataset> d_;
  int64_t i_ = 0;
};

std::unique_ptr<IteratorBase> SlicesDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<SlicesIterator>(ctx, std::static_pointer_cast<const SlicesDataset>(shared_from_this()));
}

// --- from_tensors ---

class TensorsDataset : public DatasetBase {
 public:
  explicit TensorsDataset(const Element& e) : element_(e), spec_(ElementSpec::of(e)) {
    for (const Tensor& t : e.tensors())
      DF_CHECK(!t.is_symbolic(), "[Dataset.from_tensors] components must be concrete tensors");
  }
  std::string name() const override { return "from_tensors"; }
  const ElementSpec& spec() const override { return spec_; }
  int64_t cardinality() const override { return 1; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  Element element_;
  ElementSpec spec_;
};

class TensorsIterator : public IteratorBase {
 public:
  TensorsIterator(const IteratorContext& ctx, std::shared_ptr<const TensorsDataset> d)
      : IteratorBase(ctx), d_(std::move(d)) {}
  std::optional<Element> next_impl() override {
    if (done_) return std::nullopt;
    done_ = true;
    return d_->element_;
  }
  void save(IteratorStateWriter& w) const override { w.write_int(prefix_ + "/done", done_); }
  void restore(const IteratorStateReader& r) override { done_ = r.read_int(prefix_ + "/done") != 0; }

 private:
  std::shared_ptr<const TensorsDataset> d_;
  bool done_ = false;
};

std::unique_ptr<IteratorBase> TensorsDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<TensorsIterator>(ctx, std::static_pointer_cast<const TensorsDataset>(shared_from_this()));
}

// --- from_generator ---

class GeneratorDataset : public DatasetBase {
 public:
  GeneratorDataset(std::function<GeneratorFn()> make, ElementSpec spec) : make_(std::move(make)), spec_(std::move(spec)) {
    DF_CHECK(make_ != nullptr, "[Dataset.from_generator] the generator factory is empty");
    DF_CHECK(!spec_.components.empty(), "[Dataset.from_generator] the spec has no components");
  }
  std::string name() const override { return "from_generator"; }
  const ElementSpec& spec() const override { return spec_; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  std::function<GeneratorFn()> make_;
  ElementSpec spec_;
};

class GeneratorIterator : public IteratorBase {
 public:
  GeneratorIterator(const IteratorContext& ctx, std::shared_ptr<const GeneratorDataset> d)
      : IteratorBase(ctx), d_(std::move(d)) {}
  std::optional<Element> next_impl() override {
    if (done_) return std::nullopt;
    // The generator starts with the first element asked for, so that making an
    // iterator (e.g. repeat's next pass) is cheap and never throws.
    if (!gen_) {
      gen_ = detail::with_element_context("Dataset.from_generator", index_, [&] { return d_->make_(); });
      DF_CHECK(gen_ != nullptr, "[Dataset.from_generator] the factory returned an empty generator");
    }
    std::optional<Element> e = detail::with_element_context("Dataset.from_generator", index_, [&] { return gen_(); });
    if (!e) {
      done_ = true;
      gen_ = nullptr;
      return std::nullopt;
    }
    DF_CHECK(d_->spec_.matches(*e), "[Dataset.from_generator] element ", index_, " is ",
             detail::element_string(*e), ", which does not match the spec ", d_->spec_.to_string());
    ++index_;
    return e;
  }
  void save(IteratorStateWriter&) const override {
    fail("[Iterator.save] from_generator cannot save its position: a generator's state is opaque "
         "(TensorFlow cannot either); checkpoint before it or use a source that can");
  }

 private:
  std::shared_ptr<const GeneratorDataset> d_;
  GeneratorFn gen_;
  int64_t index_ = 0;
  bool done_ = false;
};

std::unique_ptr<IteratorBase> GeneratorDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<GeneratorIterator>(ctx,
                                             std::static_pointer_cast<const GeneratorDataset>(shared_from_this()));
}

// --- zip ---

class ZipDataset : public DatasetBase {
 public:
  explicit ZipDataset(std::vector<DatasetPtr> inputs) : inputs_(std::move(inputs)) {
    DF_CHECK(!inputs_.empty(), "[Dataset.zip] no datasets");
    bool all_dicts = true, known = true;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      DF_CHECK(inputs_[i] != nullptr, "[Dataset.zip] dataset ", i, " is undefined");
      const ElementSpec& s = inputs_[i]->spec();
      known = known && !s.components.empty();
      all_dicts = all_dicts && !s.names.empty();
      spec_.components.insert(spec_.components.end(), s.components.begin(), s.components.end());
      spec_.names.insert(spec_.names.end(), s.names.begin(), s.names.end());
    }
    // Flat elements: zipped dicts merge into one dict; anything else is a tuple.
    if (!all_dicts) spec_.names.clear();
    if (!known) spec_ = ElementSpec{};
    for (size_t i = 0; i < spec_.names.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        DF_CHECK(spec_.names[i] != spec_.names[j], "[Dataset.zip] two datasets have a component named '",
                 spec_.names[i], "'");
  }
  std::string name() const override { return "zip"; }
  const ElementSpec& spec() const override { return spec_; }
  int64_t cardinality() const override {
    int64_t c = kInfiniteCardinality;
    bool unknown = false;
    for (const DatasetPtr& d : inputs_) {
      const int64_t n = d->cardinality();
      if (n == kUnknownCardinality) unknown = true;
      else if (n != kInfiniteCardinality) c = c == kInfiniteCardinality ? n : std::min(c, n);
    }
    if (c == 0) return 0;
    return unknown ? kUnknownCardinality : c;
  }
  std::vector<DatasetPtr> inputs() const override { return inputs_; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  std::vector<DatasetPtr> inputs_;
  ElementSpec spec_;
};

class ZipIterator : public IteratorBase {
 public:
  ZipIterator(const IteratorContext& ctx, std::shared_ptr<const ZipDataset> d) : IteratorBase(ctx), d_(std::move(d)) {
    for (size_t i = 0; i < d_->inputs_.size(); ++i)
      inputs_.push_back(d_->inputs_[i]->make_iterator(ctx.child("zip", int(i), node())));
  }
  std::optional<Element> next_impl() override {
    if (done_) return std::nullopt;
    std::vector<Tensor> ts;
    std::vector<std::string> names;
    for (auto& in : inputs_) {
      std::optional<Element> e = in->get_next();
      if (!e) {
        done_ = true;
        return std::nullopt;
      }
      ts.insert(ts.end(), e->tensors().begin(), e->tensors().end());
      names.insert(names.end(), e->names().begin(), e->names().end());
    }
    if (names.size() != ts.size()) names.clear();
    return Element(std::move(ts), std::move(names));
  }
  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/done", done_);
    for (auto& in : inputs_) in->save(w);
  }
  void restore(const IteratorStateReader& r) override {
    done_ = r.read_int(prefix_ + "/done") != 0;
    for (auto& in : inputs_) in->restore(r);
  }

 private:
  std::shared_ptr<const ZipDataset> d_;
  std::vector<std::unique_ptr<IteratorBase>> inputs_;
  bool done_ = false;
};

std::unique_ptr<IteratorBase> ZipDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<ZipIterator>(ctx, std::static_pointer_cast<const ZipDataset>(shared_from_this()));
}

}  // namespace

Dataset Dataset::range(int64_t stop) { return range(0, stop); }
Dataset Dataset::range(int64_t start, int64_t stop, int64_t step, DType dtype) {
  return Dataset(std::make_shared<RangeDataset>(start, stop, step, dtype));
}
Dataset Dataset::from_tensor_slices(const Element& components) {
  return Dataset(std::make_shared<SlicesDataset>(components));
}
Dataset Dataset::from_tensors(const Element& components) {
  return Dataset(std::make_shared<TensorsDataset>(components));
}
Dataset Dataset::from_generator(std::function<GeneratorFn()> make, ElementSpec spec) {
  return Dataset(std::make_shared<GeneratorDataset>(std::move(make), std::move(spec)));
}
Dataset Dataset::zip(const std::vector<Dataset>& datasets) {
  std::vector<DatasetPtr> in;
  for (const Dataset& d : datasets) in.push_back(d.impl());
  return Dataset(std::make_shared<ZipDataset>(std::move(in)));
}

}  // namespace deepflow::data
