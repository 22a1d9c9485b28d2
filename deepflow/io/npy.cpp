// SPDX-License-Identifier: Apache-2.0
// .npy reading and writing. The header is a Python dict literal; only the three keys
// numpy writes are accepted, parsed by a small recursive reader that never evaluates
// anything.
#include "deepflow/io/npy.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <vector>

#include "deepflow/io/atomic_file.h"
#include "deepflow/ops/ops.h"

namespace deepflow::io {
namespace {

static_assert(std::endian::native == std::endian::little, "npy files are written in host (little-endian) order");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

// What the header's dict says.
struct Header {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view s, const std::string& name) : s_(s), name_(name) {}

  Header parse() {
    Header h;
    bool seen[3] = {false, false, false};
    expect('{');
    while (!peek('}')) {
      const std::string key = string();
      expect(':');
      if (key == "descr") {
        h.descr = string();
        seen[0] = true;
      } else if (key == "fortran_order") {
        h.fortran = boolean();
        seen[1] = true;
      } else if (key == "shape") {
        h.shape = tuple();
        seen[2] = true;
      } else {
        error("unknown header key '", key, "'");
      }
      if (!peek(',')) break;
      expect(',');
    }
    expect('}');
    skip_space();
    if (pos_ != s_.size()) error("unexpected text after the header dict");
    if (!seen[0] || !seen[1] || !seen[2]) error("the header needs 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  std::string_view s_;
  const std::string& name_;
  size_t pos_ = 0;

  template <class... Args>
  [[noreturn]] void error(Args&&... args) const {
    fail("[read_npy] ", name_, ": bad header at byte ", pos_, ": ", std::forward<Args>(args)...);
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) error("expected '", c, "'");
    ++pos_;
  }
  std::string string() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) error("expected a quoted string");
    const char q = s_[pos_++];
    const size_t end = s_.find(q, pos_);
    if (end == std::string_view::npos) error("unterminated string");
    std::string out(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}})
      if (s_.substr(pos_, std::strlen(word)) == word) {
        pos_ += std::strlen(word);
        return value;
      }
    error("expected True or False");
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> dims;
    expect('(');
    while (!peek(')')) {
      skip_space();
      int64_t v = 0;
      size_t start = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) error("dimension too large");
        v = v * 10 + (s_[pos_++] - '0');
      }
      if (pos_ == start) error("expected a dimension");
      if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 longs
      if (dims.size() >= size_t(kMaxRank)) error("rank above ", kMaxRank);
      dims.push_back(v);
      if (!peek(',')) break;
      expect(',');
    }
    expect(')');
    return dims;
  }
};

struct DescrInfo {
  DType dtype;
  size_t itemsize;  // bytes per element in the file
  bool swap;        // big-endian file
};

DescrInfo parse_descr(const std::string& d, const std::string& name) {
  auto bad = [&]() -> DescrInfo {
    fail("[read_npy] ", name, ": unsupported dtype '", d,
         "' (float16/32/64, int8/32/64, uint8, bool and bytes 'S' are)");
  };
  if (d.size() < 3) bad();
  const char order = d[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') bad();
  const std::string kind = d.substr(1);
  if (kind[0] == 'S') {
    if (kind.size() < 2 || kind.size() > 10 || kind.find_first_not_of("0123456789", 1) != std::string::npos) bad();
    return {DType::String, std::stoul(kind.substr(1)), false};
  }
  static const struct {
    const char* kind;
    DType dtype;
  } kKinds[] = {{"f4", DType::Float32}, {"f8", DType::Float64}, {"f2", DType::Float16}, {"i1", DType::Int8},
                {"u1", DType::UInt8},   {"i4", DType::Int32},   {"i8", DType::Int64},   {"b1", DType::Bool}};
  for (const auto& k : kKinds)
    if (kind == k.kind) {
      const size_t size = dtype_size(k.dtype);
      return {k.dtype, size, order == '>' && size > 1};
    }
  return bad();
}

const char* descr_of(DType t) {
  switch (t) {
    case DType::Float32:
      return "<f4";
    case DType::Float64:
      return "<f8";
    case DType::Float16:
      return "<f2";
    case DType::Int8:
      return "|i1";
    case DType::UInt8:
      return "|u1";
    case DType::Int32:
      return "<i4";
    case DType::Int64:
      return "<i8";
    case DType::Bool:
      return "|b1";
    default:
      return nullptr;
  }
}

}  // namespace

Tensor parse_npy(std::string_view bytes, const std::string& name) {
  DF_CHECK(bytes.size() >= kMagicLen + 4 && bytes.substr(0, kMagicLen) == std::string_view(kMagic, kMagicLen),
           "[read_npy] ", name, ": not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  DF_CHECK(major >= 1 && major <= 3, "[read_npy] ", name, ": unsupported .npy format version ", major, ".",
           int(static_cast<unsigned char>(bytes[7])));
  size_t pos = 8, header_len = 0;
  if (major == 1) {
    header_len = size_t(static_cast<unsigned char>(bytes[8])) | size_t(static_cast<unsigned char>(bytes[9])) << 8;
    pos = 10;
  } else {
    DF_CHECK(bytes.size() >= 12, "[read_npy] ", name, ": truncated header");
    for (int i = 0; i < 4; ++i) header_len |= size_t(static_cast<unsigned char>(bytes[8 + size_t(i)])) << (8 * i);
    pos = 12;
  }
  DF_CHECK(header_len <= bytes.size() - pos, "[read_npy] ", name, ": header of ", header_len,
           " bytes runs past the end of the file (", bytes.size(), " bytes)");
  const Header h = HeaderParser(bytes.substr(pos, header_len), name).parse();
  pos += header_len;
  const DescrInfo di = parse_descr(h.descr, name);

  const size_t data_bytes = bytes.size() - pos;
  uint64_t count = 1;
  for (int64_t d : h.shape) {
    // Bounded by the file: every element takes at least one byte, except in empty arrays.
    if (d != 0 && count > data_bytes / uint64_t(d))
      count = std::numeric_limits<uint64_t>::max();
    else
      count *= uint64_t(d);
  }
  // count is at most data_bytes unless it hit the sentinel, so count * itemsize cannot overflow.
  const bool huge = count == std::numeric_limits<uint64_t>::max();
  const uint64_t need = huge ? 0 : count * di.itemsize;
  if (huge || need != data_bytes) {
    std::string dims;
    for (int64_t d : h.shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    fail("[read_npy] ", name, ": shape (", dims, ") of '", h.descr, "' needs ", huge ? "more" : std::to_string(need),
         " data bytes, the file has ", data_bytes);
  }

  Shape shape(h.shape);
  if (h.fortran) std::reverse(shape.begin(), shape.end());
  Tensor t(shape, di.dtype);
  const char* src = bytes.data() + pos;
  if (di.dtype == DType::String) {
    std::string* out = t.data<std::string>();
    for (uint64_t i = 0; i < count; ++i) {
      std::string_view v(src + i * di.itemsize, di.itemsize);
      out[i] = std::string(v.substr(0, v.find_last_not_of('\0') + 1));
    }
  } else {
    char* dst = static_cast<char*>(t.raw_data());
    if (count) std::memcpy(dst, src, data_bytes);
    if (di.swap)
      for (uint64_t i = 0; i < count; ++i) std::reverse(dst + i * di.itemsize, dst + (i + 1) * di.itemsize);
    if (di.dtype == DType::Bool)
      for (uint64_t i = 0; i < count; ++i) dst[i] = dst[i] != 0;  // our bools are exactly 0 or 1
  }
  if (h.fortran && t.rank() > 1) {
    Axes perm;
    for (int i = t.rank() - 1; i >= 0; --i) perm.push_back(i);
    t = transpose(t, perm).clone();
  }
  return t;
}

Tensor read_npy(const std::string& path) {
  const std::string bytes = detail::read_file(path, "[read_npy] ");
  return parse_npy(bytes, path);
}

std::string npy_bytes(const Tensor& tensor) {
  DF_CHECK(tensor.defined() && !tensor.is_symbolic(), "[write_npy] the tensor has no value");
  Tensor t = tensor.dtype() == DType::BFloat16 ? cast(tensor, DType::Float32) : tensor;
  std::string descr;
  size_t width = 1;
  if (t.dtype() == DType::String) {
    for (int64_t i = 0; i < t.size(); ++i) width = std::max(width, t.data<std::string>()[i].size());
    descr = "|S" + std::to_string(width);
  } else {
    descr = descr_of(t.dtype());
  }
  // Python's tuple repr: "()", "(3,)", "(2, 3)".
  std::string shape = "(";
  for (int i = 0; i < t.rank(); ++i) shape += (i ? ", " : "") + std::to_string(t.dim(i));
  shape += t.rank() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // numpy pads with spaces so that the data starts at a multiple of 64, then ends with '\n'.
  const size_t total = kMagicLen + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  DF_CHECK(header.size() <= 0xffff, "[write_npy] header too long (rank ", t.rank(), ")");
  std::string out(kMagic, kMagicLen);
  out += char(1);
  out += char(0);
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  out += header;
  if (t.dtype() == DType::String) {
    for (int64_t i = 0; i < t.size(); ++i) {
      const std::string& s = t.data<std::string>()[i];
      out += s;
      out.append(width - s.size(), '\0');
    }
  } else {
    out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  }
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  detail::write_file_atomic(path, npy_bytes(t), "[write_npy] ");
}

}  // namespace deepflow::io
