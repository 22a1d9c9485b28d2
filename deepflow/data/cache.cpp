// SPDX-License-Identifier: Apache-2.0
// cache(filename): the first complete pass records the elements; later passes
// replay them instead of running the input.
//
// In memory (filename ""): the dataset holds the elements once a pass completes.
//
// In files: the first pass writes `<filename>.tmp` and renames it to
// `<filename>.cache` when the input ends, so a crash or an abandoned pass never
// leaves a file that looks complete. Any later iterator — in this process or a new
// one — reads `<filename>.cache` and never touches the input (as TensorFlow: a
// changed upstream pipeline has no effect until the file is deleted). A leftover
// `.tmp` from an interrupted run is ignored with a warning and overwritten.
// While one iterator writes the cache, other iterators read the input uncached.
//
// File format (version 1): the 8 bytes "DFCACHE1", then one record per element:
// u64 length + the element as an IteratorStateWriter blob (which carries its own
// CRC32C; components under "e/0", "e/1", names under "e/name0"...), then a u64 0
// that marks the end. Elements of every dtype, strings included.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>

#include "deepflow/data/dataset.h"
#include "deepflow/data/dataset_util.h"

namespace deepflow::data {
namespace {

constexpr char kCacheMagic[8] = {'D', 'F', 'C', 'A', 'C', 'H', 'E', '1'};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

class CacheDataset : public DatasetBase {
 public:
  CacheDataset(DatasetPtr input, std::string filename) : input_(std::move(input)), filename_(std::move(filename)) {
    DF_CHECK(input_ != nullptr, "[Dataset.cache] the input dataset is undefined");
  }
  std::string name() const override { return "cache"; }
  const ElementSpec& spec() const override { return input_->spec(); }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  std::string final_path() const { return filename_ + ".cache"; }
  std::string temp_path() const { return filename_ + ".tmp"; }
  bool in_memory() const { return filename_.empty(); }

  DatasetPtr input_;
  std::string filename_;
  // Shared by the iterators of this dataset.
  mutable std::mutex mu_;
  mutable std::shared_ptr<const std::vector<Element>> memory_;  // set once a pass completes
  mutable bool writing_ = false;                                // an iterator is writing
};

// Modes: replaying (memory or file) or reading the input (and maybe recording it).
class CacheIterator : public IteratorBase {
 public:
  CacheIterator(const IteratorContext& ctx, std::shared_ptr<const CacheDataset> d)
      : IteratorBase(ctx), d_(std::move(d)), ctx_(ctx) {
    std::lock_guard<std::mutex> lock(d_->mu_);
    if (d_->in_memory() && d_->memory_) {
      replay_ = d_->memory_;
    } else if (!d_->in_memory() && std::filesystem::exists(d_->final_path())) {
      open_file(sizeof(kCacheMagic));
    } else {
      record_ = !d_->writing_;
      d_->writing_ = d_->writing_ || record_;
      input_ = d_->input_->make_iterator(ctx_.child("cache", 0, node()));
    }
  }
  ~CacheIterator() override { stop_recording(); }

  std::optional<Element> next_impl() override {
    if (replay_) {
      if (pos_ >= int64_t(replay_->size())) return std::nullopt;
      return (*replay_)[size_t(pos_++)];
    }
    if (in_) return read_record();
    if (!input_) return std::nullopt;
    std::optional<Element> e = input_->get_next();
    if (!e) {
      input_.reset();
      if (record_) finish();
      return std::nullopt;
    }
    ++pos_;
    if (record_) add(*e);
    return e;
  }

  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/pos", pos_);
    w.write_int(prefix_ + "/mode", replay_ ? 0 : in_ ? 1 : 2);
    if (in_) w.write_int(prefix_ + "/offset", int64_t(std::ftell(in_.get())));
    w.write_int(prefix_ + "/has_input", input_ != nullptr);
    if (input_) input_->save(w);
    // A memory cache in progress keeps what it recorded, so the restored pass completes it.
    w.write_int(prefix_ + "/recording", record_);
    w.write_int(prefix_ + "/recorded", record_ && d_->in_memory() ? int64_t(recorded_.size()) : -1);
    if (record_ && d_->in_memory())
      for (size_t i = 0; i < recorded_.size(); ++i) detail::write_element(w, prefix_ + "/rec/" + std::to_string(i), recorded_[i]);
  }

  void restore(const IteratorStateReader& r) override {
    pos_ = r.read_int(prefix_ + "/pos");
    const int64_t mode = r.read_int(prefix_ + "/mode");
    DF_CHECK(mode >= 0 && mode <= 2, "[Iterator.restore] cache: bad mode ", mode);
    stop_recording();
    replay_.reset();
    in_.reset();
    input_.reset();
    if (mode == 1) {  // reading the file
      open_file(r.read_int(prefix_ + "/offset"));
      return;
    }
    if (mode == 0) {  // replaying memory: rebuilt from the input if this process has none
      std::shared_ptr<const std::vector<Element>> m;
      {
        std::lock_guard<std::mutex> lock(d_->mu_);
        m = d_->memory_;
      }
      replay_ = m ? m : fill_memory();
      return;
    }
    // Reading the input. A memory cache in progress continues recording; a file
    // cache in progress cannot resume its temp file, so the pass reads uncached.
    const int64_t recorded = r.read_int(prefix_ + "/recorded");
    if (recorded >= 0) {
      for (int64_t i = 0; i < recorded; ++i)
        recorded_.push_back(detail::read_element(r, prefix_ + "/rec/" + std::to_string(i)));
      record_ = true;
      std::lock_guard<std::mutex> lock(d_->mu_);
      d_->writing_ = true;
    } else if (r.read_int(prefix_ + "/recording")) {
      std::cerr << "deepflow: [Dataset.cache] a restored first pass does not write " << d_->final_path() << "\n";
    }
    if (r.read_int(prefix_ + "/has_input")) {
      input_ = d_->input_->make_iterator(ctx_.child("cache", 0, node()));
      input_->restore(r);
    }
  }

 private:
  // An abandoned first pass leaves no usable cache (and no temp file).
  void stop_recording() {
    if (!record_) return;
    if (out_) {
      out_.reset();
      std::error_code ec;
      std::filesystem::remove(d_->temp_path(), ec);
    }
    recorded_.clear();
    record_ = false;
    std::lock_guard<std::mutex> lock(d_->mu_);
    d_->writing_ = false;
  }

  void add(const Element& e) {
    if (d_->in_memory()) {
      recorded_.push_back(e);
      return;
    }
    if (!out_) {
      if (std::filesystem::exists(d_->temp_path()))
        std::cerr << "deepflow: [Dataset.cache] ignoring the incomplete cache file " << d_->temp_path()
                  << " (left by an interrupted pass); writing a new one\n";
      out_.reset(std::fopen(d_->temp_path().c_str(), "wb"));
      DF_CHECK(out_ != nullptr, "[Dataset.cache] cannot create ", d_->temp_path());
      write(kCacheMagic, sizeof(kCacheMagic));
    }
    IteratorStateWriter w;
    detail::write_element(w, "e", e);
    const std::string blob = w.serialize();
    const uint64_t n = blob.size();
    write(&n, sizeof(n));
    write(blob.data(), blob.size());
  }

  void finish() {
    if (d_->in_memory()) {
      auto m = std::make_shared<const std::vector<Element>>(std::move(recorded_));
      std::lock_guard<std::mutex> lock(d_->mu_);
      if (!d_->memory_) d_->memory_ = m;
      d_->writing_ = false;
      record_ = false;
      return;
    }
    if (!out_) {  // an empty input: still a complete (empty) cache
      out_.reset(std::fopen(d_->temp_path().c_str(), "wb"));
      DF_CHECK(out_ != nullptr, "[Dataset.cache] cannot create ", d_->temp_path());
      write(kCacheMagic, sizeof(kCacheMagic));
    }
    const uint64_t end = 0;
    write(&end, sizeof(end));
    const bool ok = std::fflush(out_.get()) == 0;
    out_.reset();
    DF_CHECK(ok, "[Dataset.cache] cannot write ", d_->temp_path());
    std::filesystem::rename(d_->temp_path(), d_->final_path());
    std::lock_guard<std::mutex> lock(d_->mu_);
    d_->writing_ = false;
    record_ = false;
  }

  void write(const void* p, size_t n) {
    DF_CHECK(std::fwrite(p, 1, n, out_.get()) == n, "[Dataset.cache] cannot write ", d_->temp_path(),
             " (disk full?)");
  }

  void open_file(int64_t offset) {
    const std::string path = d_->final_path();
    in_.reset(std::fopen(path.c_str(), "rb"));
    DF_CHECK(in_ != nullptr, "[Dataset.cache] cannot open ", path);
    char magic[sizeof(kCacheMagic)];
    DF_CHECK(std::fread(magic, 1, sizeof(magic), in_.get()) == sizeof(magic) &&
                 std::equal(magic, magic + sizeof(magic), kCacheMagic),
             "[Dataset.cache] ", path, " is not a deepflow cache file (bad magic bytes)");
    DF_CHECK(offset >= int64_t(sizeof(kCacheMagic)) && std::fseek(in_.get(), long(offset), SEEK_SET) == 0,
             "[Dataset.cache] ", path, ": cannot seek to byte ", offset);
  }

  std::optional<Element> read_record() {
    const std::string path = d_->final_path();
    const long at = std::ftell(in_.get());
    uint64_t n = 0;
    DF_CHECK(std::fread(&n, sizeof(n), 1, in_.get()) == 1, "[Dataset.cache] ", path,
             ": truncated at byte ", at, " (element ", pos_, ")");
    if (n == 0) {
      in_.reset();
      return std::nullopt;
    }
    DF_CHECK(n < (uint64_t(1) << 40), "[Dataset.cache] ", path, ": corrupt record length ", n, " at byte ", at);
    std::string blob(size_t(n), '\0');
    DF_CHECK(std::fread(blob.data(), 1, blob.size(), in_.get()) == blob.size(), "[Dataset.cache] ", path,
             ": truncated at byte ", at, " (element ", pos_, ")");
    Element e;
    try {
      e = detail::read_element(IteratorStateReader(blob), "e");
    } catch (const Error& err) {
      fail("[Dataset.cache] ", path, ": element ", pos_, " at byte ", at, " is corrupt: ", err.what());
    }
    ++pos_;
    return e;
  }

  std::shared_ptr<const std::vector<Element>> fill_memory() {
    auto in = d_->input_->make_iterator(ctx_.child("cache", 0, node()));
    std::vector<Element> all;
    while (std::optional<Element> e = in->get_next()) all.push_back(std::move(*e));
    auto m = std::make_shared<const std::vector<Element>>(std::move(all));
    std::lock_guard<std::mutex> lock(d_->mu_);
    if (!d_->memory_) d_->memory_ = m;
    return d_->memory_;
  }

  std::shared_ptr<const CacheDataset> d_;
  IteratorContext ctx_;
  std::shared_ptr<const std::vector<Element>> replay_;
  File in_, out_;
  std::unique_ptr<IteratorBase> input_;
  std::vector<Element> recorded_;
  bool record_ = false;
  int64_t pos_ = 0;
};

std::unique_ptr<IteratorBase> CacheDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<CacheIterator>(ctx, std::static_pointer_cast<const CacheDataset>(shared_from_this()));
}

}  // namespace

Dataset Dataset::cache(const std::string& filename) const {
  return Dataset(std::make_shared<CacheDataset>(impl_, filename));
}

}  // namespace deepflow::data
