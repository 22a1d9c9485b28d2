// SPDX-License-Identifier: Apache-2.0
// Shape: the dimensions of a tensor, stored inline (no heap) up to kMaxRank.
//
// A dimension of -1 means "unknown" and appears only in symbolic tensors
// (placeholders, traced functions); concrete tensors always have known dims.
//
//   Shape s{2, 3};        // [2,3]
//   s.num_elements();     // 6
//   broadcast_shapes("add", {2, 1}, {3});   // [2,3]
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

namespace deepflow {

/// Highest rank a tensor may have (oneDNN's DNNL_MAX_NDIMS).
inline constexpr int kMaxRank = 12;
/// The value of an unknown dimension.
inline constexpr int64_t kUnknownDim = -1;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);
  template <class It>
  Shape(It first, It last) {
    for (; first != last; ++first) push_back(int64_t(*first));
  }

  int rank() const { return rank_; }
  /// Dimension i; negative i counts from the end. Throws when out of range.
  int64_t dim(int i) const;
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + rank_; }
  int64_t* begin() { return dims_.data(); }
  int64_t* end() { return dims_.data() + rank_; }
  void push_back(int64_t d);
  void insert(int pos, int64_t d);
  void erase(int pos);
  void resize(int rank, int64_t fill = 1);

  /// Product of the dims (1 for a scalar); -1 when any dim is unknown.
  int64_t num_elements() const;
  bool is_fully_defined() const;
  bool is_scalar() const { return rank_ == 0; }
  std::vector<int64_t> to_vector() const { return {begin(), end()}; }
  /// "[2,3]", with "?" for unknown dims.
  std::string to_string() const;

  /// Same rank and every pair of dims equal or unknown on either side.
  bool compatible_with(const Shape& o) const;

  friend bool operator==(const Shape& a, const Shape& b);
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

/// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& s);

/// numpy/TensorFlow broadcasting of two shapes; unknown dims stay unknown unless
/// the other side fixes them. Throws "[op] shapes [..] and [..] are not broadcastable".
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);

/// Normalizes a possibly negative axis into [0, rank); throws "[op] axis a out of range".
int normalize_axis(const char* op, int64_t axis, int rank);

}  // namespace deepflow
