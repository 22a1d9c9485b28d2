// SPDX-License-Identifier: Apache-2.0
// Broadcast iteration for elementwise kernels with up to 3 inputs.
//
// The output is walked in rows of the innermost (coalesced) dimension; for each
// row the kernel gets the offset of every input and each input's inner stride
// (1, or 0 when it broadcasts along that dimension), so inner loops are flat
// and vectorize.
//
//   BroadcastPlan plan(out.shape(), {&a.shape(), &b.shape()});
//   plan.for_each_row([&](int64_t o, const int64_t* in, const int64_t* st, int64_t n) {...});
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>

#include "deepflow/core/parallel.h"
#include "deepflow/core/shape.h"

namespace deepflow {

class BroadcastPlan {
 public:
  static constexpr int kMaxInputs = 3;

  BroadcastPlan(const Shape& out, std::initializer_list<const Shape*> inputs) : n_in_(int(inputs.size())) {
    const int r = out.rank();
    // Per input strides over the output's dims, 0 where the input broadcasts.
    std::array<std::array<int64_t, kMaxRank>, kMaxInputs> st{};
    int k = 0;
    for (const Shape* s : inputs) {
      int64_t acc = 1;
      for (int i = r - 1; i >= 0; --i) {
        int j = i - (r - s->rank());
        int64_t d = j >= 0 ? (*s)[j] : 1;
        st[k][i] = (d == 1 && out[i] != 1) ? 0 : acc;
        acc *= d;
      }
      ++k;
    }
    // Coalesce dim i into i+1 when every input is contiguous across them.
    rank_ = 0;
    for (int i = 0; i < r; ++i) {
      if (out[i] == 1) continue;
      if (rank_ > 0) {
        bool merge = true;
        for (int q = 0; q < n_in_; ++q)
          merge &= strides_[q][rank_ - 1] == st[q][i] * out[i];
        if (merge) {
          dims_[rank_ - 1] *= out[i];
          for (int q = 0; q < n_in_; ++q) strides_[q][rank_ - 1] = st[q][i];
          continue;
        }
      }
      dims_[rank_] = out[i];
      for (int q = 0; q < n_in_; ++q) strides_[q][rank_] = st[q][i];
      ++rank_;
    }
    if (rank_ == 0) {
      dims_[0] = 1;
      for (int q = 0; q < n_in_; ++q) strides_[q][0] = 0;
      rank_ = 1;
    }
    inner_ = dims_[rank_ - 1];
    rows_ = 1;
    for (int i = 0; i + 1 < rank_; ++i) rows_ *= dims_[i];
  }

  int64_t inner() const { return inner_; }
  int64_t rows() const { return rows_; }
  /// True when no input broadcasts: one flat loop over the whole output.
  bool is_flat() const {
    if (rank_ != 1) return false;
    for (int q = 0; q < n_in_; ++q)
      if (strides_[q][0] != 1) return false;
    return true;
  }

  /// Calls f(out_offset, in_offsets, in_inner_strides, n) for every output row, in parallel.
  /// With fewer rows than threads (a flat add of two same-shape tensors is one row), the
  /// rows are split into column chunks instead, so long rows use every core too.
  template <class F>
  void for_each_row(F&& f) const {
    std::array<int64_t, kMaxInputs> inner_st{};
    for (int q = 0; q < n_in_; ++q) inner_st[q] = strides_[q][rank_ - 1];
    auto row_offsets = [&](int64_t row, std::array<int64_t, kMaxInputs>& off) {
      int64_t rem = row;
      off.fill(0);
      for (int i = rank_ - 2; i >= 0; --i) {
        int64_t idx = rem % dims_[i];
        rem /= dims_[i];
        for (int q = 0; q < n_in_; ++q) off[q] += idx * strides_[q][i];
      }
    };
    if (rows_ < intra_op_threads() && inner_ > kParallelGrain) {
      for (int64_t row = 0; row < rows_; ++row) {
        std::array<int64_t, kMaxInputs> base{};
        row_offsets(row, base);
        parallel_for(inner_, kParallelGrain, [&](int64_t cb, int64_t ce) {
          std::array<int64_t, kMaxInputs> off = base;
          for (int q = 0; q < n_in_; ++q) off[q] += cb * inner_st[q];
          f(row * inner_ + cb, off.data(), inner_st.data(), ce - cb);
        });
      }
      return;
    }
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(inner_, 1));
    parallel_for(rows_, grain, [&](int64_t rb, int64_t re) {
      std::array<int64_t, kMaxInputs> off{};
      for (int64_t row = rb; row < re; ++row) {
        row_offsets(row, off);
        f(row * inner_, off.data(), inner_st.data(), inner_);
      }
    });
  }

 private:
  int n_in_;
  int rank_ = 0;
  int64_t inner_ = 1, rows_ = 1;
  std::array<int64_t, kMaxRank> dims_{};
  std::array<std::array<int64_t, kMaxRank>, kMaxInputs> strides_{};
};

}  // namespace deepflow
