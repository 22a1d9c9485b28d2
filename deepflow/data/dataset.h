// SPDX-License-Identifier: Apache-2.0
// Input pipelines (tf.data): a Dataset is an immutable description of a stream of
// elements; an Iterator walks one pass over it.
//
//   using namespace deepflow::data;
//   Dataset ds = Dataset::from_tensor_slices({images, labels})
//                    .shuffle(10000, {.seed = 1})
//                    .map(augment, {.num_parallel_calls = kAutotune})
//                    .batch(128)
//                    .prefetch(kAutotune);
//   for (const Element& batch : ds) train_step(batch[0], batch[1]);
//
// Semantics follow tf.data (../shared/research/specs.md section 4); where C++ makes
// us differ it is said next to the function. Elements are flat: a tuple of tensors,
// optionally named (a dict); there is no deeper nesting.
//
// Datasets are cheap value handles (a shared_ptr to an immutable DatasetBase), so
// they copy freely and a pipeline can be iterated many times, each time by a fresh
// Iterator. An Iterator is used by one thread at a time; datasets may be iterated
// from several threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "deepflow/core/tensor.h"

namespace deepflow::data {

/// tf.data.AUTOTUNE: let the runtime choose (num_parallel_calls, buffer sizes).
inline constexpr int64_t kAutotune = -1;
/// Cardinalities (tf.data.INFINITE_CARDINALITY, tf.data.UNKNOWN_CARDINALITY).
inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;

namespace autotune {
class Model;  // deepflow/data/autotune.h
class Node;
}  // namespace autotune

// --- elements ---

/// One element: a tuple of tensors, or a dict when every component has a name.
class Element {
 public:
  Element() = default;
  Element(Tensor t);                          // NOLINT: a one-component element
  Element(std::initializer_list<Tensor> ts);  // a tuple
  explicit Element(std::vector<Tensor> ts, std::vector<std::string> names = {});
  /// A dict element; components keep the order given.
  static Element dict(std::vector<std::pair<std::string, Tensor>> items);

  size_t size() const { return tensors_.size(); }
  bool empty() const { return tensors_.empty(); }
  Tensor& operator[](size_t i) { return tensors_.at(i); }
  const Tensor& operator[](size_t i) const { return tensors_.at(i); }
  /// Component by name; throws "[Element] no component 'x'; components: a, b".
  const Tensor& operator[](const std::string& name) const;
  const std::vector<Tensor>& tensors() const { return tensors_; }
  std::vector<Tensor>& tensors() { return tensors_; }
  /// Empty for tuples; one name per component for dicts.
  const std::vector<std::string>& names() const { return names_; }
  bool is_dict() const { return !names_.empty(); }

 private:
  std::vector<Tensor> tensors_;
  std::vector<std::string> names_;
};

/// The dtype and shape of each component (-1 for dims that vary between elements),
/// and the names of a dict element (Dataset.element_spec).
struct ElementSpec {
  std::vector<TensorType> components;
  std::vector<std::string> names;
  /// "(float32[-1,28,28], int64[-1])" or "{x: float32[4], y: int64[]}".
  std::string to_string() const;
  /// The spec of one element, with every dim known.
  static ElementSpec of(const Element& e);
  /// Does e fit (same count, names and dtypes; dims equal where known)?
  bool matches(const Element& e) const;
  friend bool operator==(const ElementSpec&, const ElementSpec&) = default;
};

// --- options ---

/// tf.data.Options: pipeline-wide settings (Dataset::with_options).
struct Options {
  /// Default for map / interleave / batch `deterministic` when unset: keep order.
  bool deterministic = true;
  struct Autotune {
    bool enabled = true;
    /// Threads the tuner may use in total; 0: the cores of this machine.
    int64_t cpu_budget = 0;
    /// Bytes of buffered elements the tuner may use; 0: half of the available RAM.
    int64_t ram_budget = 0;
  } autotune;
};

// --- iterator internals (for writers of datasets; users hold Iterator) ---

/// A saved iterator position: keys are paths in the pipeline ("0/shuffle/buffer").
class IteratorStateWriter {
 public:
  void write_int(const std::string& key, int64_t v);
  void write_string(const std::string& key, std::string v);
  void write_tensor(const std::string& key, const Tensor& t);
  /// Versioned, checksummed bytes.
  std::string serialize() const;

 private:
  friend class IteratorStateReader;
  struct Entry;
  std::vector<std::pair<std::string, std::shared_ptr<Entry>>> entries_;
};

class IteratorStateReader {
 public:
  /// Throws "[Iterator.restore] ..." on corrupt bytes or a wrong version.
  explicit IteratorStateReader(const std::string& bytes);
  bool contains(const std::string& key) const;
  /// Each throws "[Iterator.restore] missing key 'k'" or "... 'k' is not an int".
  int64_t read_int(const std::string& key) const;
  std::string read_string(const std::string& key) const;
  Tensor read_tensor(const std::string& key) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

/// What an iterator is created with: options, the autotune model, its place in
/// the pipeline (`prefix` is the key prefix for its saved state).
struct IteratorContext {
  Options options;
  std::shared_ptr<autotune::Model> model;  ///< null when autotuning is off
  std::string prefix;                      ///< "0/map" for the first input of...
  /// The node of the consuming iterator (parent in the autotune tree), or null.
  autotune::Node* parent = nullptr;
  /// The same context for input `index` of an iterator named `name`.
  IteratorContext child(const std::string& name, int index, autotune::Node* node) const;
};

class IteratorBase {
 public:
  virtual ~IteratorBase();
  /// The next element, or nullopt at the end of the pass. After the end, keeps
  /// returning nullopt. Errors throw deepflow::Error; the iterator is then unusable.
  /// Called by one thread at a time.
  std::optional<Element> get_next();
  /// Writes / reads this iterator's position under its prefix (and its inputs').
  /// The default throws "[Iterator.save] <name> cannot save its position".
  virtual void save(IteratorStateWriter& w) const;
  virtual void restore(const IteratorStateReader& r);
  const std::string& prefix() const { return prefix_; }
  /// Autotune node (null when autotuning is off).
  autotune::Node* node() const { return node_.get(); }
  /// True when get_next_rows() can hand out several consecutive elements as one
  /// element with a new leading dim without copying them (from_tensor_slices: views
  /// of the source's rows). batch uses it, so slices are never copied one by one.
  virtual bool has_row_views() const { return false; }
  /// Up to n next elements stacked along a new first dim (fewer only at the end of the
  /// pass; nullopt once it is over). Only when has_row_views().
  std::optional<Element> get_next_rows(int64_t n);

 protected:
  explicit IteratorBase(const IteratorContext& ctx);
  virtual std::optional<Element> next_impl() = 0;
  virtual std::optional<Element> next_rows_impl(int64_t n);
  std::string prefix_;
  std::shared_ptr<autotune::Node> node_;
};

/// A node of the pipeline. Implementations live in deepflow/data/*.cpp; each
/// overrides the virtuals below. Immutable once built.
class DatasetBase : public std::enable_shared_from_this<DatasetBase> {
 public:
  virtual ~DatasetBase();
  /// "range", "map", "shuffle": used in error messages and state keys.
  virtual std::string name() const = 0;
  virtual const ElementSpec& spec() const = 0;
  /// Number of elements, kInfiniteCardinality or kUnknownCardinality.
  virtual int64_t cardinality() const { return kUnknownCardinality; }
  virtual std::vector<std::shared_ptr<const DatasetBase>> inputs() const { return {}; }
  virtual std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const = 0;
};
using DatasetPtr = std::shared_ptr<const DatasetBase>;

// --- the public API ---

class Dataset;
class Iterator;

/// A per-element function (tf.data map functions). May use eager ops or call a
/// traced deepflow::function; errors it throws are reported with the element index.
using MapFn = std::function<Element(const Element&)>;
using PredicateFn = std::function<bool(const Element&)>;
/// interleave / flat_map: one dataset per input element.
using DatasetFn = std::function<Dataset(const Element&)>;
/// from_generator: called once per iteration to start a generator; the generator
/// returns elements until nullopt.
using GeneratorFn = std::function<std::optional<Element>()>;

struct MapOptions {
  /// 1: sequential; n > 1: up to n elements at once; kAutotune: tuned.
  int64_t num_parallel_calls = 1;
  /// Unset: Options::deterministic. false lets results come out of order.
  std::optional<bool> deterministic;
};
struct BatchOptions {
  bool drop_remainder = false;
  int64_t num_parallel_calls = 1;
  std::optional<bool> deterministic;
};
struct PaddedBatchOptions {
  bool drop_remainder = false;
  /// Per component; empty or an entry with -1 dims: pad those dims to the batch maximum.
  std::vector<Shape> padded_shapes;
  /// Per component (or one for all); default 0 (and "" for strings).
  std::vector<Tensor> padding_values;
};
struct ShuffleOptions {
  /// Unset: from the global seed (set_random_seed) as random ops do.
  std::optional<int64_t> seed;
  bool reshuffle_each_iteration = true;
};
struct InterleaveOptions {
  /// Input elements open at once; kAutotune: the cores.
  int64_t cycle_length = kAutotune;
  int64_t block_length = 1;
  int64_t num_parallel_calls = 1;
  std::optional<bool> deterministic;
};
struct TextLineOptions {
  std::string compression_type;  ///< "", "ZLIB" or "GZIP"
  int64_t num_parallel_reads = 1;
};
struct CsvOptions {
  /// One per column: a dtype by its default (float32 / int64 / string tensors as
  /// record defaults, as tf.data.experimental.CsvDataset's record_defaults); an
  /// empty (undefined) Tensor with `column_dtypes` marks a required column.
  std::vector<Tensor> record_defaults;
  std::vector<DType> column_dtypes;
  bool header = false;
  char field_delim = ',';
  std::string na_value;
  std::vector<int> select_cols;
  std::string compression_type;
};
struct TFRecordOptions {
  std::string compression_type;  ///< "", "ZLIB" or "GZIP"
  int64_t buffer_size = 256 << 10;
  /// > 1: read that many files interleaved (cycle 1 record each), in parallel.
  int64_t num_parallel_reads = 1;
  /// Skip corrupt or truncated records instead of failing; count them in
  /// tfrecord_skipped_records().
  bool skip_bad_records = false;
};

/// An immutable pipeline (tf.data.Dataset).
class Dataset {
 public:
  Dataset() = default;
  explicit Dataset(DatasetPtr impl) : impl_(std::move(impl)) {}

  // --- sources ---
  /// Slices every component along its first dimension (all must agree).
  static Dataset from_tensor_slices(const Element& components);
  /// One element: the components as given.
  static Dataset from_tensors(const Element& components);
  /// `make` is called at the start of every iteration; elements must match spec
  /// (dims -1 vary). A throwing generator is an error naming the element index.
  static Dataset from_generator(std::function<GeneratorFn()> make, ElementSpec spec);
  /// int64 scalars start, start+step, ... below stop (tf.data.Dataset.range).
  static Dataset range(int64_t stop);
  static Dataset range(int64_t start, int64_t stop, int64_t step = 1, DType dtype = DType::Int64);
  /// String scalars: the files matching a glob pattern (sorted; shuffled unless
  /// shuffle is false). No match is an error naming the pattern.
  static Dataset list_files(const std::string& pattern, std::optional<bool> shuffle = {},
                            std::optional<int64_t> seed = {});
  /// String scalars, one per line without the newline (tf.data.TextLineDataset).
  static Dataset text_line(std::vector<std::string> files, TextLineOptions options = {});
  /// One element per CSV record: a scalar per column (tf.data.experimental.CsvDataset).
  static Dataset csv(std::vector<std::string> files, CsvOptions options);
  /// String scalars: the records of TFRecord files, as TensorFlow writes them.
  static Dataset tfrecord(std::vector<std::string> files, TFRecordOptions options = {});
  /// Elements of all datasets side by side; ends with the shortest.
  static Dataset zip(const std::vector<Dataset>& datasets);

  // --- transformations ---
  Dataset map(MapFn fn, MapOptions options = {}) const;
  Dataset filter(PredicateFn predicate) const;
  Dataset flat_map(DatasetFn fn) const;
  Dataset interleave(DatasetFn fn, InterleaveOptions options = {}) const;
  /// Stacks batch_size consecutive elements (same shapes required: an error names
  /// the element index and both shapes).
  Dataset batch(int64_t batch_size, BatchOptions options = {}) const;
  Dataset padded_batch(int64_t batch_size, PaddedBatchOptions options = {}) const;
  Dataset unbatch() const;
  Dataset shuffle(int64_t buffer_size, ShuffleOptions options = {}) const;
  /// count < 0: forever.
  Dataset repeat(int64_t count = -1) const;
  Dataset take(int64_t count) const;
  Dataset skip(int64_t count) const;
  /// "" caches in memory; otherwise in files with that prefix, which later runs
  /// read instead of the input. Only a complete first pass writes a usable cache.
  Dataset cache(const std::string& filename = "") const;
  /// A background producer keeps up to buffer_size elements ready (kAutotune: tuned).
  Dataset prefetch(int64_t buffer_size) const;
  Dataset concatenate(const Dataset& other) const;
  /// (int64 index, element components...) pairs, index from start.
  Dataset enumerate(int64_t start = 0) const;
  /// Every num_shards-th element starting at index.
  Dataset shard(int64_t num_shards, int64_t index) const;
  Dataset with_options(Options options) const;
  Dataset apply(const std::function<Dataset(const Dataset&)>& fn) const { return fn(*this); }

  // --- inspection ---
  const ElementSpec& element_spec() const;
  int64_t cardinality() const;
  /// The options in effect (the last with_options on the path to the source).
  Options options() const;
  const DatasetPtr& impl() const { return impl_; }
  bool defined() const { return impl_ != nullptr; }

  /// A fresh iterator over one pass (iter(ds)); starts the autotuner when enabled.
  Iterator iter() const;
  /// Range-for support: `for (const Element& e : ds)`.
  class RangeIterator;
  RangeIterator begin() const;
  static RangeIterator end();

 private:
  DatasetPtr impl_;
};

/// One pass over a dataset (iter(dataset)); movable, not copyable.
class Iterator {
 public:
  Iterator();
  ~Iterator();
  Iterator(Iterator&&) noexcept;
  Iterator& operator=(Iterator&&) noexcept;
  /// The next element, or nullopt at the end.
  std::optional<Element> next();
  /// The spec of the dataset being iterated.
  const ElementSpec& element_spec() const;
  /// The position as bytes (for checkpoints) and back; restore needs an iterator
  /// of the same pipeline. Errors: "[Iterator.save] shuffle cannot ..." etc.
  std::string save() const;
  void restore(const std::string& state);

 private:
  friend class Dataset;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class Dataset::RangeIterator {
 public:
  const Element& operator*() const { return *current_; }
  const Element* operator->() const { return &*current_; }
  RangeIterator& operator++();
  friend bool operator==(const RangeIterator& a, const RangeIterator& b) { return a.done() == b.done(); }

 private:
  friend class Dataset;
  bool done() const { return !current_.has_value(); }
  std::shared_ptr<Iterator> it_;
  std::optional<Element> current_;
};

}  // namespace deepflow::data
