// SPDX-License-Identifier: Apache-2.0
// Helpers the losses and the metrics share (internal to the keras component).
#pragma once

#include <string>
#include <utility>

#include "deepflow/core/tensor.h"

namespace deepflow::keras::detail {

/// x in dtype t (x itself when it already is).
Tensor cast_to(const Tensor& x, DType t);
/// Keras's squeeze_or_expand_to_same_rank: fixes a rank difference of one caused by a
/// trailing dim of 1 ([B] against [B,1]).
std::pair<Tensor, Tensor> squeeze_or_expand(Tensor a, Tensor b);
/// Same rank and each pair of dims equal, 1 on either side, or unknown.
bool fits(const Shape& a, const Shape& b);
/// Throws "[<what>] labels [..] do not fit predictions [..]".
[[noreturn]] void shapes_do_not_fit(const std::string& what, const Tensor& y_true, const Tensor& y_pred);

}  // namespace deepflow::keras::detail
