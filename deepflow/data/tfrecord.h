// SPDX-License-Identifier: Apache-2.0
// TFRecord files at the byte level: the framing TensorFlow's tf.io.TFRecordWriter and
// tf.data.TFRecordDataset use, plain or inside one ZLIB / GZIP stream. No tensors here
// (Dataset::tfrecord in dataset.h yields the records as string scalars).
//
// A file is a concatenation of records, each
//
//   uint64 length (little-endian) | uint32 masked crc32c(length bytes) |
//   length payload bytes          | uint32 masked crc32c(payload)
//
// with no header, footer or index (../shared/research/specs.md section 2.1). With
// compression the whole framed stream is compressed (not each record), so offsets are
// positions in the uncompressed stream.
//
//   RecordWriter w("/tmp/a.tfrecord");
//   w.write("hello");
//   w.close();                        // the file appears now, complete
//   RecordReader r("/tmp/a.tfrecord");
//   while (auto rec = r.read()) use(*rec);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace deepflow::data {

/// The compression_type strings: "" (or "NONE"), "ZLIB" (zlib wrapper), "GZIP".
enum class Compression { None, Zlib, Gzip };
/// Parses a compression_type; anything else throws "[<where>] unknown compression_type 'x' ...".
Compression parse_compression(const std::string& type, const char* where);

struct RecordWriterOptions {
  std::string compression_type;  ///< "", "ZLIB" or "GZIP"
  int compression_level = -1;    ///< zlib's 0-9; -1: zlib's default (6)
};

/// Writes a TFRecord file (tf.io.TFRecordWriter), atomically: records go to a
/// temporary file next to the target ("<path>.tmp-<pid>-<n>"), which close() fsyncs
/// and renames over `path`. Readers of `path` therefore see the old file (or none)
/// until close() returns, and then the whole new one: never half a file.
///
/// Destroying a writer without close() (an exception unwinding past it, a forgotten
/// close) discards the temporary file and leaves `path` untouched: close() is the
/// commit. This differs from TensorFlow, whose writer finalizes in its destructor;
/// we choose it because a destructor cannot report a failed final write, and an
/// error path must not publish a partial file under the real name.
/// Errors throw "[TFRecordWriter] <path>: ...". Used by one thread at a time.
class RecordWriter {
 public:
  explicit RecordWriter(std::string path, RecordWriterOptions options = {});
  ~RecordWriter();
  RecordWriter(RecordWriter&&) noexcept;
  RecordWriter& operator=(RecordWriter&&) noexcept;

  /// Appends one record (any bytes, empty included).
  void write(std::string_view record);
  /// Hands buffered bytes to the OS (with compression, a zlib sync flush). The records
  /// are still only in the temporary file: `path` changes at close().
  void flush();
  /// Finishes the stream, fsyncs, renames over `path`. Further writes are errors;
  /// calling close() again does nothing.
  void close();

  const std::string& path() const;
  int64_t records_written() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct RecordReaderOptions {
  std::string compression_type;     ///< must match the writer's; not auto-detected
  int64_t buffer_size = 256 << 10;  ///< bytes read (or inflated) at a time
  /// Resynchronise after a corrupt or truncated record instead of throwing (below).
  bool skip_bad_records = false;
};

/// Reads a TFRecord file sequentially (TensorFlow's io::RecordReader), checking both
/// CRCs of every record. Errors throw deepflow::Error naming the file and the byte
/// offset of the record (in the uncompressed stream):
///   "[TFRecordDataset] f: truncated record at byte 40 (the header needs 12 bytes, 5 are left)"
///   "[TFRecordDataset] f: corrupted record at byte 40: the header's length checksum does not match"
///   "[TFRecordDataset] f: corrupted record at byte 40: the data checksum does not match"
///   "[TFRecordDataset] f: record size too large at byte 40: 18446744073709551615 bytes"
///   "[TFRecordDataset] f: truncated GZIP stream ..." / "corrupted ZLIB stream ..."
/// A clean end of file at a record boundary is the end of the data.
///
/// With skip_bad_records: a record whose header checks but whose data does not is
/// skipped whole (the verified length says where the next one starts); after a bad
/// header the reader scans forward byte by byte for the next header whose length
/// checksum matches; a truncated tail or a damaged compressed stream ends the file.
/// Each such event counts once in skipped_records() and tfrecord_skipped_records().
class RecordReader {
 public:
  /// Opens the file; "[TFRecordDataset] cannot open f: <reason>" when it cannot.
  explicit RecordReader(std::string path, RecordReaderOptions options = {});
  ~RecordReader();
  RecordReader(RecordReader&&) noexcept;
  RecordReader& operator=(RecordReader&&) noexcept;

  /// The next record's payload, or nullopt at the end. The view points into the
  /// reader's buffer (no allocation per record) and is valid until the next read()
  /// or seek().
  std::optional<std::string_view> read();
  /// Where the next record starts (bytes of the uncompressed stream): what an
  /// iterator saves.
  uint64_t offset() const;
  /// Continues reading at `offset`, a value offset() returned for this file. Cheap
  /// for plain files; a compressed stream is re-inflated from its start when going
  /// backwards. Past the end: "[TFRecordDataset] f: cannot seek to byte ...".
  void seek(uint64_t offset);
  /// Bad stretches this reader skipped (skip_bad_records).
  int64_t skipped_records() const;
  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Bad records skipped by every RecordReader (and so every Dataset::tfrecord) of this
/// process since it started: a process-wide counter, as TensorFlow reports skipped
/// records in its logs rather than per dataset. Take a difference around a pass to
/// count one pipeline's.
int64_t tfrecord_skipped_records();

/// The framed bytes of one record, exactly as RecordWriter writes it uncompressed.
std::string tfrecord_encode(std::string_view payload);

}  // namespace deepflow::data
