// SPDX-License-Identifier: Apache-2.0
// The table writer (table.h): LevelDB's BlockBuilder and TableBuilder as TensorFlow's
// BundleWriter runs them (no compression, restart interval 16, index interval 1).
#include <algorithm>

#include "deepflow/core/crc32c.h"
#include "deepflow/core/error.h"
#include "deepflow/tf/table.h"

namespace deepflow::tf {

using namespace coding;

namespace {

// The shortest key k with start <= k < limit, when one shorter than start is found by
// bumping one byte (LevelDB's BytewiseComparator::FindShortestSeparator).
void shorten_separator(std::string* start, std::string_view limit) {
  const size_t min_length = std::min(start->size(), limit.size());
  size_t i = 0;
  while (i < min_length && (*start)[i] == limit[i]) ++i;
  if (i >= min_length) return;  // one is a prefix of the other
  const uint8_t byte = uint8_t((*start)[i]);
  if (byte < 0xff && byte + 1 < uint8_t(limit[i])) {
    (*start)[i] = char(byte + 1);
    start->resize(i + 1);
  }
}

// A short key >= key (LevelDB's FindShortSuccessor): the first byte below 0xff, bumped.
void short_successor(std::string* key) {
  for (size_t i = 0; i < key->size(); ++i) {
    const uint8_t byte = uint8_t((*key)[i]);
    if (byte != 0xff) {
      (*key)[i] = char(byte + 1);
      key->resize(i + 1);
      return;
    }
  }
}

}  // namespace

void BlockBuilder::add(std::string_view key, std::string_view value) {
  size_t shared = 0;
  if (counter_ < restart_interval_) {
    const size_t n = std::min(last_key_.size(), key.size());
    while (shared < n && last_key_[shared] == key[shared]) ++shared;
  } else {
    restarts_.push_back(uint32_t(buffer_.size()));
    counter_ = 0;
  }
  put_varint64(&buffer_, shared);
  put_varint64(&buffer_, key.size() - shared);
  put_varint64(&buffer_, value.size());
  buffer_.append(key.substr(shared));
  buffer_.append(value);
  last_key_.assign(key);
  ++counter_;
}

std::string BlockBuilder::finish() {
  for (uint32_t r : restarts_) put_fixed32(&buffer_, r);
  put_fixed32(&buffer_, uint32_t(restarts_.size()));
  std::string out = std::move(buffer_);
  buffer_.clear();
  restarts_.assign(1, 0);
  counter_ = 0;
  last_key_.clear();
  return out;
}

void TableWriter::write_block(BlockBuilder& block, std::string* handle) {
  const std::string contents = block.finish();
  handle->clear();
  put_varint64(handle, file_.size());
  put_varint64(handle, contents.size());
  file_ += contents;
  const char type = char(kNoCompression);
  file_.push_back(type);
  put_fixed32(&file_, crc32c_mask(crc32c_extend(crc32c(contents.data(), contents.size()), &type, 1)));
}

void TableWriter::flush_data_block() {
  if (data_.empty()) return;
  write_block(data_, &pending_handle_);
  pending_index_entry_ = true;
}

void TableWriter::add(std::string_view key, std::string_view value) {
  DF_CHECK(!any_ || key > last_key_, "[tf::TableWriter] keys must be added in increasing order: '", key,
           "' after '", last_key_, "'");
  if (pending_index_entry_) {
    shorten_separator(&last_key_, key);
    index_.add(last_key_, pending_handle_);
    pending_index_entry_ = false;
  }
  last_key_.assign(key);
  any_ = true;
  data_.add(key, value);
  if (data_.size_estimate() >= block_size_) flush_data_block();
}

std::string TableWriter::finish() {
  flush_data_block();
  BlockBuilder metaindex(16);
  std::string meta_handle, index_handle;
  write_block(metaindex, &meta_handle);
  if (pending_index_entry_) {
    short_successor(&last_key_);
    index_.add(last_key_, pending_handle_);
    pending_index_entry_ = false;
  }
  write_block(index_, &index_handle);
  std::string footer = meta_handle + index_handle;
  footer.resize(kTableFooterSize - 8, '\0');
  put_fixed32(&footer, uint32_t(kTableMagic));
  put_fixed32(&footer, uint32_t(kTableMagic >> 32));
  file_ += footer;
  return std::move(file_);
}

}  // namespace deepflow::tf
