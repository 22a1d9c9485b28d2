// SPDX-License-Identifier: Apache-2.0
// The tf.data framework: elements, specs, saved iterator state, the iterator
// base, and the Dataset / Iterator handles. Each dataset lives in its own file.
#include "deepflow/data/dataset.h"

#include <cstring>
#include <sstream>
#include <unordered_map>

#include "deepflow/core/crc32c.h"
#include "deepflow/data/autotune.h"
#include "deepflow/data/dataset_util.h"

namespace deepflow::data {

// --- elements ---

Element::Element(Tensor t) : tensors_{std::move(t)} {}
Element::Element(std::initializer_list<Tensor> ts) : tensors_(ts) {}
Element::Element(std::vector<Tensor> ts, std::vector<std::string> names)
    : tensors_(std::move(ts)), names_(std::move(names)) {
  DF_CHECK(names_.empty() || names_.size() == tensors_.size(), "[Element] ", names_.size(),
           " names for ", tensors_.size(), " components");
}

Element Element::dict(std::vector<std::pair<std::string, Tensor>> items) {
  Element e;
  for (auto& [name, t] : items) {
    for (const std::string& n : e.names_) DF_CHECK(n != name, "[Element] duplicate component name '", name, "'");
    e.names_.push_back(std::move(name));
    e.tensors_.push_back(std::move(t));
  }
  return e;
}

const Tensor& Element::operator[](const std::string& name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return tensors_[i];
  std::string all;
  for (const std::string& n : names_) all += (all.empty() ? "" : ", ") + n;
  fail("[Element] no component '", name, "'; components: ", names_.empty() ? "(a tuple, unnamed)" : all);
}

// --- specs ---

std::string ElementSpec::to_string() const {
  if (components.empty()) return "<unknown>";
  std::string s = names.empty() ? "(" : "{";
  for (size_t i = 0; i < components.size(); ++i) {
    if (i) s += ", ";
    if (!names.empty()) s += names[i] + ": ";
    s += detail::type_string(components[i]);
  }
  return s + (names.empty() ? ")" : "}");
}

ElementSpec ElementSpec::of(const Element& e) {
  ElementSpec s;
  for (const Tensor& t : e.tensors()) {
    DF_CHECK(t.defined(), "[ElementSpec] an element component is an undefined tensor");
    s.components.push_back({t.dtype(), t.shape()});
  }
  s.names = e.names();
  return s;
}

bool ElementSpec::matches(const Element& e) const {
  if (components.empty()) return true;  // unknown: anything fits
  if (e.size() != components.size() || e.names() != names) return false;
  for (size_t i = 0; i < components.size(); ++i) {
    const Tensor& t = e[i];
    if (!t.defined() || t.dtype() != components[i].dtype) return false;
    if (!components[i].shape.compatible_with(t.shape())) return false;
  }
  return true;
}

// --- saved state ---
//
// Format, version 1 (little endian, as the machines we run on):
//   "DFIT"  u32 version  u64 entry count
//   per entry: u32 key length, key bytes, u8 kind, then
//     int (0): i64;  string (1): u64 length, bytes;
//     tensor (2): u8 dtype, u8 rank, i64 dims[rank], then the elements: raw bytes for
//                 numbers, u64 length + bytes per element for strings
//   u32 CRC32C of every byte before it.

namespace {

constexpr char kMagic[4] = {'D', 'F', 'I', 'T'};
constexpr uint32_t kStateVersion = 1;
enum Kind : uint8_t { kInt = 0, kString = 1, kTensor = 2 };

template <class T> void put(std::string& out, T v) { out.append(reinterpret_cast<const char*>(&v), sizeof(T)); }
void put_bytes(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

// Bounds-checked reads from the state bytes: a short or corrupt state is an error, never a crash.
class Cursor {
 public:
  Cursor(const std::string& b, size_t end) : b_(b), end_(end) {}
  template <class T> T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string bytes(size_t n, const char* what) {
    need(n, what);
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  const char* raw(size_t n, const char* what) {
    need(n, what);
    const char* p = b_.data() + pos_;
    pos_ += n;
    return p;
  }
  size_t pos() const { return pos_; }
  size_t left() const { return end_ - pos_; }

 private:
  void need(size_t n, const char* what) {
    DF_CHECK(n <= end_ - pos_, "[Iterator.restore] the state is truncated: ", what, " at byte ", pos_,
             " needs ", n, " bytes, ", end_ - pos_, " left");
  }
  const std::string& b_;
  size_t end_;
  size_t pos_ = 0;
};

}  // namespace

struct IteratorStateWriter::Entry {
  Kind kind = kInt;
  int64_t i = 0;
  std::string s;
  Tensor t;
};

void IteratorStateWriter::write_int(const std::string& key, int64_t v) {
  entries_.emplace_back(key, std::make_shared<Entry>(Entry{kInt, v, {}, {}}));
}
void IteratorStateWriter::write_string(const std::string& key, std::string v) {
  entries_.emplace_back(key, std::make_shared<Entry>(Entry{kString, 0, std::move(v), {}}));
}
void IteratorStateWriter::write_tensor(const std::string& key, const Tensor& t) {
  DF_CHECK(t.defined() && !t.is_symbolic(), "[Iterator.save] '", key, "': only concrete tensors can be saved");
  entries_.emplace_back(key, std::make_shared<Entry>(Entry{kTensor, 0, {}, t}));
}

std::string IteratorStateWriter::serialize() const {
  std::string out(kMagic, 4);
  put<uint32_t>(out, kStateVersion);
  put<uint64_t>(out, entries_.size());
  for (const auto& [key, e] : entries_) {
    put<uint32_t>(out, uint32_t(key.size()));
    out += key;
    put<uint8_t>(out, e->kind);
    if (e->kind == kInt) {
      put<int64_t>(out, e->i);
    } else if (e->kind == kString) {
      put_bytes(out, e->s);
    } else {
      const Tensor& t = e->t;
      put<uint8_t>(out, uint8_t(t.dtype()));
      put<uint8_t>(out, uint8_t(t.rank()));
      for (int64_t d : t.shape()) put<int64_t>(out, d);
      if (t.dtype() == DType::String) {
        const std::string* p = t.data<std::string>();
        for (int64_t i = 0; i < t.size(); ++i) put_bytes(out, p[i]);
      } else {
        out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
      }
    }
  }
  put<uint32_t>(out, crc32c(out.data(), out.size()));
  return out;
}

struct IteratorStateReader::Impl {
  std::unordered_map<std::string, IteratorStateWriter::Entry> entries;

  const IteratorStateWriter::Entry& find(const std::string& key, Kind kind) const {
    auto it = entries.find(key);
    DF_CHECK(it != entries.end(), "[Iterator.restore] missing key '", key,
             "' (was the state saved from a different pipeline?)");
    static const char* const kNames[] = {"an int", "a string", "a tensor"};
    DF_CHECK(it->second.kind == kind, "[Iterator.restore] '", key, "' is not ", kNames[kind]);
    return it->second;
  }
};

IteratorStateReader::IteratorStateReader(const std::string& bytes) : impl_(std::make_shared<Impl>()) {
  constexpr size_t kMin = 4 + 4 + 8 + 4;
  DF_CHECK(bytes.size() >= kMin, "[Iterator.restore] the state is ", bytes.size(),
           " bytes, too short to be a saved iterator (at least ", kMin, ")");
  DF_CHECK(std::memcmp(bytes.data(), kMagic, 4) == 0,
           "[Iterator.restore] not a saved iterator state (bad magic bytes)");
  uint32_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 4, 4);
  const uint32_t actual = crc32c(bytes.data(), bytes.size() - 4);
  DF_CHECK(stored == actual, "[Iterator.restore] the state is corrupt: checksum ", std::hex, actual,
           " over ", std::dec, bytes.size() - 4, " bytes, stored ", std::hex, stored);
  Cursor c(bytes, bytes.size() - 4);
  c.raw(4, "magic");
  const uint32_t version = c.get<uint32_t>("the version");
  DF_CHECK(version == kStateVersion, "[Iterator.restore] state version ", version,
           " is not supported (this build reads version ", kStateVersion, ")");
  const uint64_t n = c.get<uint64_t>("the entry count");
  for (uint64_t k = 0; k < n; ++k) {
    const uint32_t key_len = c.get<uint32_t>("a key length");
    std::string key = c.bytes(key_len, "a key");
    IteratorStateWriter::Entry e;
    e.kind = Kind(c.get<uint8_t>("an entry kind"));
    if (e.kind == kInt) {
      e.i = c.get<int64_t>("an int");
    } else if (e.kind == kString) {
      e.s = c.bytes(c.get<uint64_t>("a string length"), "a string");
    } else if (e.kind == kTensor) {
      const uint8_t dt = c.get<uint8_t>("a dtype");
      DF_CHECK(dt < kNumDTypes, "[Iterator.restore] '", key, "': bad dtype number ", int(dt));
      const uint8_t rank = c.get<uint8_t>("a rank");
      DF_CHECK(rank <= kMaxRank, "[Iterator.restore] '", key, "': bad rank ", int(rank));
      Shape shape;
      uint64_t count = 1;
      for (int i = 0; i < rank; ++i) {
        const int64_t d = c.get<int64_t>("a dim");
        // Each element takes at least one byte on disk: a bound before allocating.
        DF_CHECK(d >= 0 && (d == 0 || count <= c.left() / uint64_t(d) + 1), "[Iterator.restore] '", key,
                 "': bad dim ", d);
        count *= uint64_t(d);
        shape.push_back(d);
      }
      const DType dtype = DType(dt);
      if (dtype == DType::String) {
        DF_CHECK(count <= c.left() / 8, "[Iterator.restore] '", key, "': ", count, " strings cannot fit in ",
                 c.left(), " bytes");
        e.t = Tensor(shape, dtype);
        std::string* p = e.t.data<std::string>();
        for (uint64_t i = 0; i < count; ++i) p[i] = c.bytes(c.get<uint64_t>("a string length"), "a string");
      } else {
        const size_t nbytes = size_t(count) * dtype_size(dtype);
        DF_CHECK(count <= c.left() && nbytes <= c.left(), "[Iterator.restore] the state is truncated: '", key,
                 "' needs ", nbytes, " bytes at byte ", c.pos(), ", ", c.left(), " left");
        e.t = Tensor(shape, dtype);
        std::memcpy(e.t.raw_data(), c.raw(nbytes, "tensor data"), nbytes);
      }
    } else {
      fail("[Iterator.restore] '", key, "': bad entry kind ", int(e.kind));
    }
    impl_->entries[key] = std::move(e);
  }
  DF_CHECK(c.left() == 0, "[Iterator.restore] ", c.left(), " unexpected bytes after the last entry");
}

bool IteratorStateReader::contains(const std::string& key) const { return impl_->entries.count(key) != 0; }

int64_t IteratorStateReader::read_int(const std::string& key) const { return impl_->find(key, kInt).i; }
std::string IteratorStateReader::read_string(const std::string& key) const {
  return impl_->find(key, kString).s;
}
Tensor IteratorStateReader::read_tensor(const std::string& key) const {
  return impl_->find(key, kTensor).t;
}

// --- iterators ---

IteratorContext IteratorContext::child(const std::string& name, int index, autotune::Node* node) const {
  IteratorContext c = *this;
  c.prefix = prefix + "/" + name + "." + std::to_string(index);
  c.parent = node;
  return c;
}

IteratorBase::IteratorBase(const IteratorContext& ctx)
    : prefix_(ctx.prefix), node_(ctx.model ? ctx.model->add_node(ctx.prefix, ctx.parent) : nullptr) {}
IteratorBase::~IteratorBase() = default;

std::optional<Element> IteratorBase::get_next() {
  if (!node_) return next_impl();
  autotune::Timer timer(node_.get());  // this node's clock runs, the caller's pauses
  std::optional<Element> e = next_impl();
  if (e) node_->record_output(*e);
  return e;
}

std::optional<Element> IteratorBase::get_next_rows(int64_t n) {
  if (!node_) return next_rows_impl(n);
  autotune::Timer timer(node_.get());
  std::optional<Element> e = next_rows_impl(n);
  if (e) node_->record_output(*e);  // one output per call: the model sees batches here
  return e;
}

std::optional<Element> IteratorBase::next_rows_impl(int64_t) {
  fail("[Iterator] '", prefix_, "' does not hand out row views");
}

void IteratorBase::save(IteratorStateWriter&) const {
  fail("[Iterator.save] the iterator at '", prefix_, "' cannot save its position");
}
void IteratorBase::restore(const IteratorStateReader&) {
  fail("[Iterator.restore] the iterator at '", prefix_, "' cannot restore a position");
}

DatasetBase::~DatasetBase() = default;

std::unique_ptr<IteratorBase> OptionsDataset::make_iterator(const IteratorContext& ctx) const {
  // Options act when the Iterator is made (Dataset::options()); here it is a pass-through.
  return input_->make_iterator(ctx);
}

// --- the Dataset handle ---

namespace {
const DatasetBase& checked(const DatasetPtr& p) {
  DF_CHECK(p != nullptr, "[Dataset] the dataset is undefined (a default-constructed Dataset)");
  return *p;
}

// "batch(map(range))": stored with a saved state so restoring into another pipeline is caught.
std::string pipeline_string(const DatasetBase& d) {
  std::string s = d.name();
  auto in = d.inputs();
  if (in.empty()) return s;
  s += "(";
  for (size_t i = 0; i < in.size(); ++i) s += (i ? ", " : "") + pipeline_string(*in[i]);
  return s + ")";
}

const OptionsDataset* find_options(const DatasetBase& d) {
  if (auto* o = dynamic_cast<const OptionsDataset*>(&d)) return o;
  for (const DatasetPtr& in : d.inputs())
    if (const OptionsDataset* o = find_options(*in)) return o;
  return nullptr;
}

const std::string kRootPrefix = "iter";
}  // namespace

const ElementSpec& Dataset::element_spec() const { return checked(impl_).spec(); }
int64_t Dataset::cardinality() const { return checked(impl_).cardinality(); }

Options Dataset::options() const {
  // The outermost with_options wins whole (tf.data merges option by option; our
  // Options is small enough that the last call setting it is what users mean).
  const OptionsDataset* o = find_options(checked(impl_));
  return o ? o->options() : Options{};
}

struct Iterator::Impl {
  DatasetPtr dataset;
  std::shared_ptr<autotune::Model> model;  // set by autotune when Options::autotune.enabled
  std::unique_ptr<IteratorBase> root;
  std::string failure;  // the message of the error that ended the pass, if any
  // The tuner's thread reads the iterators' nodes and sets their knobs: stop it
  // before the iterators go.
  ~Impl() {
    if (model) model->stop();
  }
};

Iterator Dataset::iter() const {
  checked(impl_);
  Iterator it;
  it.impl_ = std::make_unique<Iterator::Impl>();
  it.impl_->dataset = impl_;
  IteratorContext ctx;
  ctx.options = options();
  ctx.prefix = kRootPrefix;
  ctx.model = autotune::make_model(ctx.options);  // null when autotuning is off
  it.impl_->model = ctx.model;
  it.impl_->root = impl_->make_iterator(ctx);
  if (ctx.model) ctx.model->start();
  return it;
}

Iterator::Iterator() = default;
Iterator::~Iterator() = default;
Iterator::Iterator(Iterator&&) noexcept = default;
Iterator& Iterator::operator=(Iterator&&) noexcept = default;

std::optional<Element> Iterator::next() {
  DF_CHECK(impl_, "[Iterator] the iterator is empty (default-constructed or moved from)");
  // After an error the pipeline's state is unknown: keep reporting the error.
  DF_CHECK(impl_->failure.empty(), "[Iterator] the pass ended with an error: ", impl_->failure);
  try {
    return impl_->root->get_next();
  } catch (const std::exception& e) {
    impl_->failure = e.what();
    throw;
  }
}

const ElementSpec& Iterator::element_spec() const {
  DF_CHECK(impl_, "[Iterator] the iterator is empty (default-constructed or moved from)");
  return impl_->dataset->spec();
}

std::string Iterator::save() const {
  DF_CHECK(impl_, "[Iterator.save] the iterator is empty (default-constructed or moved from)");
  DF_CHECK(impl_->failure.empty(), "[Iterator.save] the pass ended with an error: ", impl_->failure);
  IteratorStateWriter w;
  w.write_string(kRootPrefix + "/pipeline", pipeline_string(*impl_->dataset));
  impl_->root->save(w);
  return w.serialize();
}

void Iterator::restore(const std::string& state) {
  DF_CHECK(impl_, "[Iterator.restore] the iterator is empty (default-constructed or moved from)");
  IteratorStateReader r(state);
  const std::string saved = r.read_string(kRootPrefix + "/pipeline");
  const std::string mine = pipeline_string(*impl_->dataset);
  DF_CHECK(saved == mine, "[Iterator.restore] the state was saved from the pipeline ", saved,
           ", this iterator runs ", mine);
  impl_->root->restore(r);
  impl_->failure.clear();
}

Dataset::RangeIterator Dataset::begin() const {
  RangeIterator r;
  r.it_ = std::make_shared<Iterator>(iter());
  r.current_ = r.it_->next();
  return r;
}

Dataset::RangeIterator Dataset::end() { return RangeIterator(); }

Dataset::RangeIterator& Dataset::RangeIterator::operator++() {
  current_ = it_->next();
  return *this;
}

// --- helpers for the dataset files ---

namespace detail {

std::string type_string(const TensorType& t) {
  std::string s = dtype_name(t.dtype);
  s += "[";
  for (int i = 0; i < t.shape.rank(); ++i) {
    if (i) s += ',';
    s += std::to_string(t.shape[i]);
  }
  return s + "]";
}

std::string tensor_string(const Tensor& t) { return type_string({t.dtype(), t.shape()}); }

std::string element_string(const Element& e) { return ElementSpec::of(e).to_string(); }

void copy_into(Tensor& dst, int64_t offset, const Tensor& src) {
  DF_CHECK(dst.dtype() == src.dtype(), "[Dataset] cannot copy ", dtype_name(src.dtype()), " into ",
           dtype_name(dst.dtype()));
  DF_CHECK(offset >= 0 && offset + src.size() <= dst.size(), "[Dataset] copy of ", src.size(),
           " elements at ", offset, " overflows ", dst.size());
  if (src.dtype() == DType::String) {
    const std::string* s = src.data<std::string>();
    std::string* d = dst.data<std::string>() + offset;
    for (int64_t i = 0; i < src.size(); ++i) d[i] = s[i];
  } else {
    const size_t w = dtype_size(src.dtype());
    std::memcpy(static_cast<char*>(dst.raw_data()) + size_t(offset) * w, src.raw_data(), src.nbytes());
  }
}

Tensor filled_like(const Shape& shape, DType dtype, const Tensor& value) {
  DF_CHECK(value.size() == 1 && value.dtype() == dtype, "[Dataset] a padding value must be one ",
           dtype_name(dtype), " element, got ", tensor_string(value));
  Tensor out(shape, dtype);
  if (dtype == DType::String) {
    const std::string& v = *value.data<std::string>();
    std::string* d = out.data<std::string>();
    for (int64_t i = 0; i < out.size(); ++i) d[i] = v;
  } else {
    const size_t w = dtype_size(dtype);
    char* d = static_cast<char*>(out.raw_data());
    for (int64_t i = 0; i < out.size(); ++i) std::memcpy(d + size_t(i) * w, value.raw_data(), w);
  }
  return out;
}

void write_element(IteratorStateWriter& w, const std::string& key, const Element& e) {
  w.write_int(key + "/n", int64_t(e.size()));
  for (size_t i = 0; i < e.size(); ++i) {
    w.write_tensor(key + "/" + std::to_string(i), e[i]);
    if (e.is_dict()) w.write_string(key + "/name" + std::to_string(i), e.names()[i]);
  }
}

Element read_element(const IteratorStateReader& r, const std::string& key) {
  const int64_t n = r.read_int(key + "/n");
  DF_CHECK(n >= 0 && n < (int64_t(1) << 20), "[Iterator.restore] '", key, "/n' is ", n);
  std::vector<Tensor> ts;
  std::vector<std::string> names;
  for (int64_t i = 0; i < n; ++i) {
    ts.push_back(r.read_tensor(key + "/" + std::to_string(i)));
    const std::string name_key = key + "/name" + std::to_string(i);
    if (r.contains(name_key)) names.push_back(r.read_string(name_key));
  }
  DF_CHECK(names.empty() || names.size() == ts.size(), "[Iterator.restore] '", key, "' names only some components");
  return Element(std::move(ts), std::move(names));
}

int64_t repeat_cardinality(int64_t c, int64_t n) {
  if (n == 0 || c == 0) return 0;
  if (c == kUnknownCardinality) return kUnknownCardinality;
  if (n < 0 || c == kInfiniteCardinality) return kInfiniteCardinality;
  return c * n;
}

const ElementSpec& unknown_spec() {
  static const ElementSpec spec;
  return spec;
}

}  // namespace detail
}  // namespace deepflow::data
