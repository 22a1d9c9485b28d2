// SPDX-License-Identifier: Apache-2.0
// Shared pieces of `infer` rules: dtype checks and common output shapes.
#pragma once

#include "deepflow/ops/op.h"

namespace deepflow::detail {

/// Throws "[op] expects a floating dtype for x, got int32" unless t is a float type.
inline void check_float(const OpCall& c, const Tensor& t, const char* what) {
  DF_CHECK(is_floating(t.dtype()), "[", c.name(), "] expects a floating dtype for ", what, ", got ",
           dtype_name(t.dtype()));
}
/// Throws unless a and b share a dtype (TensorFlow does not promote).
inline void check_same_dtype(const OpCall& c, const Tensor& a, const Tensor& b) {
  DF_CHECK(a.dtype() == b.dtype(), "[", c.name(), "] dtypes differ: ", dtype_name(a.dtype()), a.shape(),
           " and ", dtype_name(b.dtype()), b.shape());
}
/// Throws unless t is bool.
inline void check_bool(const OpCall& c, const Tensor& t, const char* what) {
  DF_CHECK(t.dtype() == DType::Bool, "[", c.name(), "] expects bool for ", what, ", got ", dtype_name(t.dtype()));
}
/// Throws unless t is int32 or int64.
inline void check_index(const OpCall& c, const Tensor& t, const char* what) {
  DF_CHECK(t.dtype() == DType::Int32 || t.dtype() == DType::Int64, "[", c.name(), "] expects int32 or int64 ",
           what, ", got ", dtype_name(t.dtype()));
}

/// The usual unary rule: same dtype and shape as input 0.
inline void infer_same(const OpCall& c, TypeList& out) { out.push_back({c.in(0).dtype(), c.in(0).shape()}); }

}  // namespace deepflow::detail
