// SPDX-License-Identifier: Apache-2.0
// Internal to json_tensor.cpp and json_examples.cpp: a recursive-descent JSON reader
// over a request body (no DOM, no copies of unescaped strings), with TF Serving's
// number tokens (NaN, Infinity, -Infinity) and its parse-error wording.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "deepflow/core/dtype.h"
#include "deepflow/serving/status.h"

namespace deepflow::serving::json_detail {

// Any deeper JSON is rejected rather than recursed into (the reader is recursive).
constexpr int kMaxDepth = 64;

[[noreturn]] inline void invalid(const std::string& message) { throw ServingError(Code::InvalidArgument, message); }

// TensorFlow's DataTypeString, which TF Serving's type errors print.
inline const char* tf_type_string(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Float16: return "half";
    case DType::BFloat16: return "bfloat16";
    default: return dtype_name(dtype);
  }
}

struct Number {
  std::string_view text;
  bool integer = false;  // no fraction, no exponent, not NaN/Infinity
  bool special = false;  // NaN, Infinity, Inf (with an optional '-')
};

class Reader {
 public:
  explicit Reader(std::string_view s) : begin_(s.data()), p_(s.data()), end_(s.data() + s.size()) {}

  char peek() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
    return p_ < end_ ? *p_ : '\0';
  }
  void advance() { ++p_; }
  const char* pos() const { return p_; }
  void seek(const char* p) { p_ = p; }
  void expect(char c, const char* what) {
    if (peek() != c) syntax(what);
    ++p_;
  }

  bool at_end() const { return p_ >= end_; }
  size_t remaining() const { return size_t(end_ - p_); }
  [[noreturn]] void syntax(const char* what) const {
    invalid("JSON Parse error: " + std::string(what) + " at offset: " + std::to_string(p_ - begin_));
  }

  // A string at the current position; the view points into the body, or into `scratch`
  // when the string has escapes.
  std::string_view string(std::string& scratch) {
    if (peek() != '"') syntax("Missing a string");
    const char* start = ++p_;
    while (p_ < end_) {
      unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') return {start, size_t(p_++ - start)};
      if (c == '\\') break;
      if (c < 0x20) syntax("Invalid encoding in string");
      ++p_;
    }
    scratch.assign(start, p_);
    for (;;) {
      if (p_ >= end_) syntax("Missing a closing quotation mark in string");
      unsigned char c = static_cast<unsigned char>(*p_++);
      if (c == '"') return scratch;
      if (c < 0x20) syntax("Invalid encoding in string");
      if (c != '\\') {
        scratch.push_back(char(c));
        continue;
      }
      if (p_ >= end_) syntax("Missing a closing quotation mark in string");
      switch (*p_++) {
        case '"': scratch.push_back('"'); break;
        case '\\': scratch.push_back('\\'); break;
        case '/': scratch.push_back('/'); break;
        case 'b': scratch.push_back('\b'); break;
        case 'f': scratch.push_back('\f'); break;
        case 'n': scratch.push_back('\n'); break;
        case 'r': scratch.push_back('\r'); break;
        case 't': scratch.push_back('\t'); break;
        case 'u': append_utf8(scratch, code_point()); break;
        default: --p_; syntax("Invalid escape character in string");
      }
    }
  }

  Number number() {
    const char* s = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ < end_ && (*p_ == 'N' || *p_ == 'I')) {
      if (match("NaN") || match("Infinity") || match("Inf")) return {{s, size_t(p_ - s)}, false, true};
      syntax("Invalid value");
    }
    if (p_ >= end_ || !digit(*p_)) syntax("Invalid value");
    if (*p_ == '0') ++p_;
    else while (p_ < end_ && digit(*p_)) ++p_;
    bool integer = true;
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      integer = false;
      if (p_ >= end_ || !digit(*p_)) syntax("Missing fraction part in number");
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      integer = false;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ >= end_ || !digit(*p_)) syntax("Missing exponent in number");
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    return {{s, size_t(p_ - s)}, integer, false};
  }

  // Reads true / false / null (peek() already saw its first letter).
  void literal(const char* word) {
    if (!match(word)) syntax("Invalid value");
  }

  void skip(int depth) {
    if (depth > kMaxDepth) syntax("Nesting deeper than 64 levels");
    switch (peek()) {
      case '{':
        ++p_;
        if (peek() == '}') return advance();
        for (;;) {
          skip_string();
          expect(':', "Missing a colon after a name of object member");
          skip(depth + 1);
          char c = peek();
          ++p_;
          if (c == '}') return;
          if (c != ',') --p_, syntax("Missing a comma or '}' after an object member");
        }
      case '[':
        ++p_;
        if (peek() == ']') return advance();
        for (;;) {
          skip(depth + 1);
          char c = peek();
          ++p_;
          if (c == ']') return;
          if (c != ',') --p_, syntax("Missing a comma or ']' after an array element");
        }
      case '"': return skip_string();
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: number();
    }
  }

  // The body from `from` to the end of the value there, cut to a readable length.
  std::string excerpt(const char* from) {
    const char* save = p_;
    p_ = from;
    try {
      skip(0);
    } catch (const ServingError&) {
      p_ = std::min(end_, from + 64);
    }
    std::string text(from, p_);
    p_ = save;
    if (text.size() > 64) text = text.substr(0, 60) + " ...";
    return text;
  }

  // Whether a {"b64": "<string>"} object starts here; never moves.
  bool at_b64_object() {
    const char* save = p_;
    bool yes = false;
    if (peek() == '{') {
      ++p_;
      if (peek() == '"' && end_ - p_ >= 5 && std::memcmp(p_, "\"b64\"", 5) == 0) {
        p_ += 5;
        if (peek() == ':') {
          ++p_;
          if (peek() == '"') {
            try {
              skip_string();
              yes = peek() == '}';
            } catch (const ServingError&) {
            }
          }
        }
      }
    }
    p_ = save;
    return yes;
  }

 private:
  static bool digit(char c) { return c >= '0' && c <= '9'; }
  bool match(const char* word) {
    size_t n = std::strlen(word);
    if (size_t(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return false;
    p_ += n;
    return true;
  }
  void skip_string() {
    if (peek() != '"') syntax("Missing a name for object member");
    std::string scratch;
    string(scratch);
  }
  uint32_t hex4() {
    if (end_ - p_ < 4) syntax("Incorrect hex digit after \\u escape in string");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = *p_++;
      v <<= 4;
      if (c >= '0' && c <= '9') v |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f') v |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= uint32_t(c - 'A' + 10);
      else syntax("Incorrect hex digit after \\u escape in string");
    }
    return v;
  }
  uint32_t code_point() {
    uint32_t cp = hex4();
    if (cp >= 0xDC00 && cp <= 0xDFFF) syntax("The surrogate pair in string is invalid");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') syntax("The surrogate pair in string is invalid");
      p_ += 2;
      uint32_t low = hex4();
      if (low < 0xDC00 || low > 0xDFFF) syntax("The surrogate pair in string is invalid");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    return cp;
  }
  static void append_utf8(std::string& s, uint32_t cp) {
    if (cp < 0x80) {
      s.push_back(char(cp));
    } else if (cp < 0x800) {
      s.push_back(char(0xC0 | (cp >> 6)));
      s.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s.push_back(char(0xE0 | (cp >> 12)));
      s.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(char(0x80 | (cp & 0x3F)));
    } else {
      s.push_back(char(0xF0 | (cp >> 18)));
      s.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
      s.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(char(0x80 | (cp & 0x3F)));
    }
  }

  const char* begin_;
  const char* p_;
  const char* end_;
};

inline const char* json_type(char c) {
  switch (c) {
    case '"': return "String";
    case '{': return "Object";
    case '[': return "Array";
    case 't': return "True";
    case 'f': return "False";
    case 'n': return "Null";
    default: return "Number";
  }
}

inline bool number_start(char c) { return c == '-' || (c >= '0' && c <= '9') || c == 'N' || c == 'I'; }

// An integer token as int64 (false when it does not fit).
inline bool as_int64(const Number& n, int64_t* out) {
  auto [end, ec] = std::from_chars(n.text.data(), n.text.data() + n.text.size(), *out);
  return ec == std::errc() && end == n.text.data() + n.text.size();
}

// TF Serving's rule (IsLosslessDecimal): integers that fit int64/uint64 must be exact in
// T; other finite numbers must be within T's range; NaN and infinities always pass.
template <class T> inline bool as_float(const Number& n, T* out) {
  const char* b = n.text.data();
  const char* e = b + n.text.size();
  if (n.special) {
    bool neg = *b == '-';
    T v = b[neg] == 'N' ? std::numeric_limits<T>::quiet_NaN() : std::numeric_limits<T>::infinity();
    *out = neg ? -v : v;
    return true;
  }
  constexpr uint64_t kMaxExact = (uint64_t(1) << std::numeric_limits<T>::digits) - 1;
  if (n.integer) {
    int64_t i;
    if (as_int64(n, &i)) {
      *out = T(i);
      uint64_t magnitude = i < 0 ? uint64_t(-(i + 1)) + 1 : uint64_t(i);
      return magnitude <= kMaxExact;
    }
    uint64_t u;
    auto [end, ec] = std::from_chars(b, e, u);
    if (ec == std::errc() && end == e) {
      *out = T(u);
      return u <= kMaxExact;
    }
  }
  auto [end, ec] = std::from_chars(b, e, *out);
  if (ec == std::errc()) return true;
  double d = std::strtod(std::string(n.text).c_str(), nullptr);  // out of range: huge or tiny
  if (std::isinf(d) || std::fabs(d) > double(std::numeric_limits<T>::max())) return false;
  *out = T(d);
  return true;
}

}  // namespace deepflow::serving::json_detail
