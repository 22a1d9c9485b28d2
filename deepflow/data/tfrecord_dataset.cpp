// SPDX-License-Identifier: Apache-2.0
// Dataset::tfrecord (tf.data.TFRecordDataset): the records of TFRecord files as string
// scalars, file after file. With num_parallel_reads > 1 it is an interleave over the
// file names (one record from each open file in turn, the files read by the
// interleave's worker threads), as tf.data builds it.
#include "deepflow/data/dataset.h"
#include "deepflow/data/tfrecord.h"

namespace deepflow::data {
namespace {

class TFRecordDataset : public DatasetBase {
 public:
  TFRecordDataset(std::vector<std::string> files, TFRecordOptions o)
      : files_(std::move(files)), options_(std::move(o)) {
    spec_.components = {{DType::String, Shape{}}};
  }
  std::string name() const override { return "tfrecord"; }
  const ElementSpec& spec() const override { return spec_; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  std::vector<std::string> files_;
  TFRecordOptions options_;
  ElementSpec spec_;
};

// The position is (file index, byte offset of the next record in that file); a reader
// is opened lazily, so a restored iterator opens only the file it resumes in.
class TFRecordIterator : public IteratorBase {
 public:
  TFRecordIterator(const IteratorContext& ctx, std::shared_ptr<const TFRecordDataset> d)
      : IteratorBase(ctx), d_(std::move(d)) {}

  std::optional<Element> next_impl() override {
    while (file_ < int64_t(d_->files_.size())) {
      if (!reader_) open(0);
      if (auto rec = reader_->read()) return Element(string_scalar(std::string(*rec)));
      reader_.reset();
      ++file_;
    }
    return std::nullopt;
  }

  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/file", file_);
    w.write_int(prefix_ + "/offset", reader_ ? int64_t(reader_->offset()) : 0);
  }

  void restore(const IteratorStateReader& r) override {
    const int64_t file = r.read_int(prefix_ + "/file");
    const int64_t offset = r.read_int(prefix_ + "/offset");
    const int64_t n = int64_t(d_->files_.size());
    DF_CHECK(file >= 0 && file <= n, "[Iterator.restore] TFRecordDataset: file index ", file, " out of range for ", n,
             " files");
    DF_CHECK(offset >= 0, "[Iterator.restore] TFRecordDataset: negative offset ", offset);
    reader_.reset();
    file_ = file;
    if (file_ < n && offset > 0) open(uint64_t(offset));
  }

 private:
  void open(uint64_t offset) {
    const TFRecordOptions& o = d_->options_;
    reader_.emplace(d_->files_[size_t(file_)], RecordReaderOptions{.compression_type = o.compression_type,
                                                                   .buffer_size = o.buffer_size,
                                                                   .skip_bad_records = o.skip_bad_records});
    if (offset > 0) reader_->seek(offset);
  }

  std::shared_ptr<const TFRecordDataset> d_;
  std::optional<RecordReader> reader_;
  int64_t file_ = 0;
};

std::unique_ptr<IteratorBase> TFRecordDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<TFRecordIterator>(ctx, std::static_pointer_cast<const TFRecordDataset>(shared_from_this()));
}

}  // namespace

Dataset Dataset::tfrecord(std::vector<std::string> files, TFRecordOptions options) {
  parse_compression(options.compression_type, "TFRecordDataset");
  DF_CHECK(options.buffer_size > 0, "[TFRecordDataset] buffer_size must be positive, got ", options.buffer_size);
  DF_CHECK(options.num_parallel_reads >= 1 || options.num_parallel_reads == kAutotune,
           "[TFRecordDataset] num_parallel_reads must be >= 1 or kAutotune, got ", options.num_parallel_reads);
  // An empty list is an empty dataset, as tf.data.TFRecordDataset([]).
  if (options.num_parallel_reads == 1 || files.size() <= 1)
    return Dataset(std::make_shared<TFRecordDataset>(std::move(files), std::move(options)));
  const int64_t n = options.num_parallel_reads;
  TFRecordOptions one = options;
  one.num_parallel_reads = 1;
  return from_tensor_slices({constant(files)})
      .interleave(
          [one](const Element& e) { return tfrecord({*e[0].data<std::string>()}, one); },
          {.cycle_length = n == kAutotune ? int64_t(files.size()) : n, .block_length = 1, .num_parallel_calls = n});
}

}  // namespace deepflow::data
