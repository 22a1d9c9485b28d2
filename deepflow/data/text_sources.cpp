// SPDX-License-Identifier: Apache-2.0
// File sources: list_files (glob), text_line (tf.data.TextLineDataset) and csv
// (tf.data.experimental.CsvDataset). Files may be ZLIB or GZIP compressed (the
// whole file is one stream, as TensorFlow writes them).
#include <glob.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "deepflow/data/dataset.h"
#include "deepflow/data/dataset_util.h"

namespace deepflow::data {
namespace {

// --- reading (maybe compressed) bytes ---

// Buffered bytes of one file, inflated when compressed. offset() counts
// uncompressed bytes consumed, which is what iterators save.
class ByteReader {
 public:
  ByteReader(std::string path, const std::string& compression, const char* op) : path_(std::move(path)), op_(op) {
    DF_CHECK(compression.empty() || compression == "ZLIB" || compression == "GZIP", "[", op_,
             "] compression_type must be \"\", \"ZLIB\" or \"GZIP\", got \"", compression, "\"");
    f_ = std::fopen(path_.c_str(), "rb");
    DF_CHECK(f_ != nullptr, "[", op_, "] cannot open ", path_, ": ", std::strerror(errno));
    buf_.resize(kBlock);
    if (!compression.empty()) {
      compressed_ = true;
      in_.resize(kBlock);
      const int bits = compression == "GZIP" ? 15 + 16 : 15;
      DF_CHECK(inflateInit2(&z_, bits) == Z_OK, "[", op_, "] zlib cannot start inflating ", path_);
    }
  }
  ~ByteReader() {
    if (compressed_) inflateEnd(&z_);
    std::fclose(f_);
  }
  ByteReader(const ByteReader&) = delete;
  ByteReader& operator=(const ByteReader&) = delete;

  const std::string& path() const { return path_; }
  int64_t offset() const { return base_ + int64_t(pos_); }

  /// One line without "\n" or "\r\n"; false at the end of the file.
  bool read_line(std::string& out) {
    out.clear();
    bool any = false;
    while (true) {
      if (pos_ == len_ && !fill()) return any;
      any = true;
      const char* s = buf_.data() + pos_;
      if (const void* nl = std::memchr(s, '\n', len_ - pos_)) {
        const size_t n = size_t(static_cast<const char*>(nl) - s);
        out.append(s, n);
        pos_ += n + 1;
        if (!out.empty() && out.back() == '\r') out.pop_back();
        return true;
      }
      out.append(s, len_ - pos_);
      pos_ = len_;
    }
  }

  /// Moves to uncompressed byte `offset` (iterator restore).
  void seek(int64_t offset) {
    DF_CHECK(offset >= this->offset(), "[", op_, "] ", path_, ": cannot seek back to byte ", offset);
    if (!compressed_ && pos_ == len_) {
      DF_CHECK(std::fseek(f_, long(offset), SEEK_SET) == 0, "[", op_, "] ", path_, ": cannot seek to byte ", offset);
      base_ = offset;
      return;
    }
    while (this->offset() < offset) {
      if (pos_ == len_ && !fill()) fail("[", op_, "] ", path_, ": the file is shorter than the saved position ", offset);
      pos_ += size_t(std::min<int64_t>(offset - this->offset(), int64_t(len_ - pos_)));
    }
  }

 private:
  static constexpr size_t kBlock = 256 << 10;

  bool fill() {
    base_ += int64_t(len_);
    pos_ = len_ = 0;
    if (!compressed_) {
      len_ = std::fread(buf_.data(), 1, buf_.size(), f_);
      DF_CHECK(!std::ferror(f_), "[", op_, "] ", path_, ": read error at byte ", base_);
      return len_ > 0;
    }
    while (len_ == 0) {
      if (z_.avail_in == 0) {
        if (stream_end_ && std::feof(f_)) return false;
        z_.avail_in = uInt(std::fread(in_.data(), 1, in_.size(), f_));
        z_.next_in = reinterpret_cast<Bytef*>(in_.data());
        consumed_ += z_.avail_in;
        if (z_.avail_in == 0) {
          DF_CHECK(stream_end_, "[", op_, "] ", path_, ": the compressed data is truncated (", consumed_, " bytes)");
          return false;
        }
        if (stream_end_) {  // another gzip member follows (concatenated .gz files)
          inflateReset(&z_);
          stream_end_ = false;
        }
      }
      z_.next_out = reinterpret_cast<Bytef*>(buf_.data());
      z_.avail_out = uInt(buf_.size());
      const int rc = inflate(&z_, Z_NO_FLUSH);
      DF_CHECK(rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR, "[", op_, "] ", path_,
               ": corrupt compressed data near byte ", consumed_ - z_.avail_in, ": ", z_.msg ? z_.msg : "zlib error");
      len_ = buf_.size() - z_.avail_out;
      if (rc == Z_STREAM_END) stream_end_ = true;
    }
    return true;
  }

  std::string path_;
  const char* op_;
  std::FILE* f_ = nullptr;
  std::vector<char> buf_, in_;
  size_t pos_ = 0, len_ = 0;
  int64_t base_ = 0, consumed_ = 0;
  bool compressed_ = false, stream_end_ = false;
  z_stream z_{};
};

// --- a base for sources that read files one after another ---

class FileSourceIterator : public IteratorBase {
 public:
  FileSourceIterator(const IteratorContext& ctx, const std::vector<std::string>& files, std::string compression,
                     const char* op)
      : IteratorBase(ctx), files_(files), compression_(std::move(compression)), op_(op) {}

  void save(IteratorStateWriter& w) const override {
    w.write_int(prefix_ + "/file", file_);
    w.write_int(prefix_ + "/offset", reader_ ? reader_->offset() : -1);
    w.write_int(prefix_ + "/line", line_);
  }
  void restore(const IteratorStateReader& r) override {
    file_ = r.read_int(prefix_ + "/file");
    DF_CHECK(file_ >= 0 && file_ <= int64_t(files_.size()), "[Iterator.restore] ", op_, ": file index ", file_,
             " out of range");
    const int64_t offset = r.read_int(prefix_ + "/offset");
    reader_.reset();
    line_ = r.read_int(prefix_ + "/line");
    if (offset >= 0 && file_ < int64_t(files_.size())) {
      reader_ = std::make_unique<ByteReader>(files_[size_t(file_)], compression_, op_);
      reader_->seek(offset);
    }
  }

 protected:
  /// The next line of the files (true), with the file's path and the 1-based line number.
  bool next_line(std::string& line, bool skip_header) {
    while (file_ < int64_t(files_.size())) {
      if (!reader_) {
        reader_ = std::make_unique<ByteReader>(files_[size_t(file_)], compression_, op_);
        line_ = 0;
        if (skip_header && reader_->read_line(line)) ++line_;
      }
      if (reader_->read_line(line)) {
        ++line_;
        return true;
      }
      reader_.reset();
      ++file_;
    }
    return false;
  }
  const std::string& path() const { return files_[size_t(file_)]; }

  std::vector<std::string> files_;
  std::string compression_;
  const char* op_;
  std::unique_ptr<ByteReader> reader_;
  int64_t file_ = 0, line_ = 0;
};

// --- text_line ---

class TextLineDataset : public DatasetBase {
 public:
  TextLineDataset(std::vector<std::string> files, TextLineOptions o) : files_(std::move(files)), o_(std::move(o)) {
    spec_.components = {{DType::String, Shape{}}};
  }
  std::string name() const override { return "text_line"; }
  const ElementSpec& spec() const override { return spec_; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;
  std::vector<std::string> files_;
  TextLineOptions o_;
  ElementSpec spec_;
};

class TextLineIterator : public FileSourceIterator {
 public:
  TextLineIterator(const IteratorContext& ctx, const TextLineDataset& d)
      : FileSourceIterator(ctx, d.files_, d.o_.compression_type, "TextLineDataset") {}
  std::optional<Element> next_impl() override {
    std::string line;
    if (!next_line(line, false)) return std::nullopt;
    return Element(string_scalar(std::move(line)));
  }
};

std::unique_ptr<IteratorBase> TextLineDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<TextLineIterator>(ctx, *this);
}

// --- csv ---

class CsvDataset : public DatasetBase {
 public:
  CsvDataset(std::vector<std::string> files, CsvOptions o) : files_(std::move(files)), o_(std::move(o)) {
    const size_t n = std::max(o_.record_defaults.size(), o_.column_dtypes.size());
    DF_CHECK(n > 0, "[CsvDataset] record_defaults (or column_dtypes) must name at least one column");
    DF_CHECK(o_.record_defaults.empty() || o_.record_defaults.size() == n, "[CsvDataset] ", o_.record_defaults.size(),
             " record_defaults but ", o_.column_dtypes.size(), " column_dtypes");
    DF_CHECK(o_.column_dtypes.empty() || o_.column_dtypes.size() == n, "[CsvDataset] ", o_.column_dtypes.size(),
             " column_dtypes but ", o_.record_defaults.size(), " record_defaults");
    DF_CHECK(o_.select_cols.empty() || o_.select_cols.size() == n, "[CsvDataset] ", o_.select_cols.size(),
             " select_cols but ", n, " record_defaults: one default per selected column");
    for (size_t i = 1; i < o_.select_cols.size(); ++i)
      DF_CHECK(o_.select_cols[i] > o_.select_cols[i - 1], "[CsvDataset] select_cols must be increasing");
    if (!o_.select_cols.empty()) DF_CHECK(o_.select_cols[0] >= 0, "[CsvDataset] select_cols must be >= 0");
    for (size_t i = 0; i < n; ++i) {
      const Tensor d = i < o_.record_defaults.size() ? o_.record_defaults[i] : Tensor();
      DType t;
      if (d.defined() && d.size() > 0) {
        DF_CHECK(d.size() == 1, "[CsvDataset] record_defaults[", i, "] must be one value, got ", detail::tensor_string(d));
        t = d.dtype();
      } else {
        DF_CHECK(i < o_.column_dtypes.size(), "[CsvDataset] column ", i,
                 " has no default (required) and no entry in column_dtypes to give its dtype");
        t = o_.column_dtypes[i];
      }
      DF_CHECK(t == DType::Float32 || t == DType::Float64 || t == DType::Int32 || t == DType::Int64 ||
                   t == DType::String,
               "[CsvDataset] column ", i, ": dtype ", dtype_name(t), " is not float32, float64, int32, int64 or string");
      if (i < o_.column_dtypes.size())
        DF_CHECK(o_.column_dtypes[i] == t, "[CsvDataset] column ", i, ": record default is ", dtype_name(t),
                 ", column_dtypes says ", dtype_name(o_.column_dtypes[i]));
      spec_.components.push_back({t, Shape{}});
      defaults_.push_back(d.defined() && d.size() > 0 ? d.view(Shape{}) : Tensor());
    }
  }
  std::string name() const override { return "csv"; }
  const ElementSpec& spec() const override { return spec_; }
  std::unique_ptr<IteratorBase> make_iterator(const IteratorContext& ctx) const override;

  std::vector<std::string> files_;
  CsvOptions o_;
  ElementSpec spec_;
  std::vector<Tensor> defaults_;  // undefined: required column
};

class CsvIterator : public FileSourceIterator {
 public:
  CsvIterator(const IteratorContext& ctx, std::shared_ptr<const CsvDataset> d)
      : FileSourceIterator(ctx, d->files_, d->o_.compression_type, "CsvDataset"), d_(std::move(d)) {}

  std::optional<Element> next_impl() override {
    std::string line;
    if (!next_line(line, d_->o_.header)) return std::nullopt;
    const int64_t first_line = line_;
    std::vector<std::string> fields;
    std::vector<bool> quoted;
    // A quoted field may hold newlines: keep reading lines until the quote closes.
    while (!split(line, fields, quoted)) {
      std::string more;
      DF_CHECK(next_line_same_file(more), "[CsvDataset] ", path(), ":", first_line, ": unterminated quoted field");
      line += '\n';
      line += more;
    }
    const auto& sel = d_->o_.select_cols;
    const size_t ncols = d_->spec_.components.size();
    if (sel.empty())
      DF_CHECK(fields.size() == ncols, "[CsvDataset] ", path(), ":", first_line, ": expected ", ncols,
               " fields, got ", fields.size());
    else
      DF_CHECK(int64_t(fields.size()) > sel.back(), "[CsvDataset] ", path(), ":", first_line, ": select_cols needs ",
               sel.back() + 1, " fields, got ", fields.size());
    std::vector<Tensor> out;
    for (size_t c = 0; c < ncols; ++c) {
      const size_t col = sel.empty() ? c : size_t(sel[c]);
      out.push_back(convert(fields[col], quoted[col], c, col, first_line));
    }
    return Element(std::move(out));
  }

 private:
  bool next_line_same_file(std::string& line) {
    if (!reader_ || !reader_->read_line(line)) return false;
    ++line_;
    return true;
  }

  // Splits on the delimiter with RFC 4180 quotes ("" inside quotes is one ").
  // False when a quoted field is still open at the end of the text.
  bool split(const std::string& s, std::vector<std::string>& fields, std::vector<bool>& quoted) const {
    fields.assign(1, std::string());
    quoted.assign(1, false);
    const char delim = d_->o_.field_delim;
    bool in_quotes = false;
    for (size_t i = 0; i < s.size(); ++i) {
      const char ch = s[i];
      if (in_quotes) {
        if (ch != '"') fields.back() += ch;
        else if (i + 1 < s.size() && s[i + 1] == '"') fields.back() += '"', ++i;
        else in_quotes = false;
      } else if (ch == '"' && fields.back().empty()) {
        in_quotes = true;
        quoted.back() = true;
      } else if (ch == delim) {
        fields.emplace_back();
        quoted.push_back(false);
      } else {
        fields.back() += ch;
      }
    }
    return !in_quotes;
  }

  Tensor convert(const std::string& field, bool was_quoted, size_t c, size_t col, int64_t line) const {
    const DType t = d_->spec_.components[c].dtype;
    const bool missing = (field.empty() && !(was_quoted && t == DType::String)) ||
                         (!d_->o_.na_value.empty() && field == d_->o_.na_value);
    if (missing) {
      DF_CHECK(d_->defaults_[c].defined(), "[CsvDataset] ", path(), ":", line, ": column ", col,
               " is empty and has no default (a required column)");
      return d_->defaults_[c];
    }
    if (t == DType::String) return string_scalar(field);
    const char* begin = field.c_str();
    char* end = nullptr;
    errno = 0;
    Tensor out(Shape{}, t);
    if (t == DType::Float32) *out.data<float>() = std::strtof(begin, &end);
    else if (t == DType::Float64) *out.data<double>() = std::strtod(begin, &end);
    else {
      const long long v = std::strtoll(begin, &end, 10);
      DF_CHECK(t == DType::Int64 || (v >= INT32_MIN && v <= INT32_MAX), "[CsvDataset] ", path(), ":", line,
               ": column ", col, ": '", field, "' does not fit in int32");
      if (t == DType::Int64) *out.data<int64_t>() = v;
      else *out.data<int32_t>() = int32_t(v);
    }
    DF_CHECK(end == begin + field.size() && errno != ERANGE, "[CsvDataset] ", path(), ":", line, ": column ", col,
             ": '", field, "' is not a valid ", dtype_name(t));
    return out;
  }

  std::shared_ptr<const CsvDataset> d_;
};

std::unique_ptr<IteratorBase> CsvDataset::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<CsvIterator>(ctx, std::static_pointer_cast<const CsvDataset>(shared_from_this()));
}

std::vector<std::string> glob_files(const std::string& pattern) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
  std::vector<std::string> out(g.gl_pathv, g.gl_pathv + (rc == 0 ? g.gl_pathc : 0));
  globfree(&g);
  DF_CHECK(rc == 0 || rc == GLOB_NOMATCH, "[Dataset.list_files] cannot read the directories of '", pattern, "'");
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Dataset Dataset::list_files(const std::string& pattern, std::optional<bool> shuffle, std::optional<int64_t> seed) {
  std::vector<std::string> files = glob_files(pattern);
  DF_CHECK(!files.empty(), "[Dataset.list_files] no files match the pattern '", pattern, "'");
  const int64_t n = int64_t(files.size());
  Dataset ds = from_tensor_slices({constant(files)});
  // As tf.data: shuffled unless shuffle is false, the buffer holding every name.
  if (shuffle.value_or(true)) ds = ds.shuffle(n, {.seed = seed});
  return ds;
}

Dataset Dataset::text_line(std::vector<std::string> files, TextLineOptions options) {
  DF_CHECK(!files.empty(), "[TextLineDataset] no files");
  DF_CHECK(options.num_parallel_reads >= 1 || options.num_parallel_reads == kAutotune,
           "[TextLineDataset] num_parallel_reads must be >= 1 or kAutotune");
  if (options.num_parallel_reads == 1 || files.size() == 1)
    return Dataset(std::make_shared<TextLineDataset>(std::move(files), std::move(options)));
  // Several files at once: one line from each in turn, read in parallel (as tf.data).
  const std::string compression = options.compression_type;
  const int64_t n = options.num_parallel_reads;
  return from_tensor_slices({constant(files)})
      .interleave(
          [compression](const Element& e) {
            return text_line({*e[0].data<std::string>()}, {.compression_type = compression});
          },
          {.cycle_length = n == kAutotune ? int64_t(files.size()) : n, .block_length = 1, .num_parallel_calls = n});
}

Dataset Dataset::csv(std::vector<std::string> files, CsvOptions options) {
  DF_CHECK(!files.empty(), "[CsvDataset] no files");
  return Dataset(std::make_shared<CsvDataset>(std::move(files), std::move(options)));
}

}  // namespace deepflow::data
