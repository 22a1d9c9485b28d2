// SPDX-License-Identifier: Apache-2.0
#include "deepflow/core/shape.h"

#include <ostream>
#include <sstream>

#include "deepflow/core/error.h"

namespace deepflow {

Shape::Shape(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) push_back(d);
}
Shape::Shape(const std::vector<int64_t>& dims) {
  for (int64_t d : dims) push_back(d);
}

int64_t Shape::dim(int i) const {
  int j = i < 0 ? i + rank_ : i;
  DF_CHECK(j >= 0 && j < rank_, "[shape] dimension ", i, " out of range for shape ", *this);
  return dims_[j];
}

void Shape::push_back(int64_t d) {
  DF_CHECK(rank_ < kMaxRank, "[shape] rank above ", kMaxRank, " is not supported");
  DF_CHECK(d >= -1, "[shape] dimension ", d, " is negative");
  dims_[rank_++] = d;
}

void Shape::insert(int pos, int64_t d) {
  DF_CHECK(rank_ < kMaxRank, "[shape] rank above ", kMaxRank, " is not supported");
  for (int i = rank_; i > pos; --i) dims_[i] = dims_[i - 1];
  dims_[pos] = d;
  ++rank_;
}

void Shape::erase(int pos) {
  for (int i = pos; i + 1 < rank_; ++i) dims_[i] = dims_[i + 1];
  --rank_;
}

void Shape::resize(int rank, int64_t fill) {
  DF_CHECK(rank >= 0 && rank <= kMaxRank, "[shape] rank ", rank, " is not supported");
  for (int i = rank_; i < rank; ++i) dims_[i] = fill;
  rank_ = rank;
}

int64_t Shape::num_elements() const {
  // A zero dim makes the count 0 whatever the others are; check it before multiplying,
  // so that huge dims next to a 0 (from a parsed file) cannot overflow.
  bool zero = false;
  for (int i = 0; i < rank_; ++i) {
    if (dims_[i] < 0) return -1;
    zero = zero || dims_[i] == 0;
  }
  if (zero) return 0;
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i)
    DF_CHECK(!__builtin_mul_overflow(n, dims_[i], &n), "[Shape] ", to_string(), " has more than 2^63 elements");
  return n;
}

bool Shape::is_fully_defined() const {
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] < 0) return false;
  return true;
}

std::string Shape::to_string() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

bool Shape::compatible_with(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] >= 0 && o.dims_[i] >= 0 && dims_[i] != o.dims_[i]) return false;
  return true;
}

bool operator==(const Shape& a, const Shape& b) {
  if (a.rank_ != b.rank_) return false;
  for (int i = 0; i < a.rank_; ++i)
    if (a.dims_[i] != b.dims_[i]) return false;
  return true;
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  os << '[';
  for (int i = 0; i < s.rank(); ++i) {
    if (i) os << ',';
    if (s[i] < 0) os << '?';
    else os << s[i];
  }
  return os << ']';
}

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.rank());
  int64_t acc = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  if (a == b) return a;
  int r = std::max(a.rank(), b.rank());
  Shape out;
  out.resize(r);
  for (int i = 0; i < r; ++i) {
    int ia = i - (r - a.rank()), ib = i - (r - b.rank());
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    int64_t d;
    if (da == db) d = da;
    else if (da == 1) d = db;
    else if (db == 1) d = da;
    else if (da == kUnknownDim) d = db;  // the known side fixes it (or the run fails)
    else if (db == kUnknownDim) d = da;
    else fail("[", op, "] shapes ", a, " and ", b, " are not broadcastable");
    out[i] = d;
  }
  return out;
}

int normalize_axis(const char* op, int64_t axis, int rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  DF_CHECK(a >= 0 && a < rank, "[", op, "] axis ", axis, " out of range for rank ", rank);
  return int(a);
}

}  // namespace deepflow
