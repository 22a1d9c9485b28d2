// SPDX-License-Identifier: Apache-2.0
// Shape-family helpers shared by the op definitions and their kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "deepflow/ops/op.h"

namespace deepflow::detail {

/// TensorFlow's strided-slice canonicalization of a strided_slice(_grad) call: for
/// each dim of the input shape `in`, the first index, the step and the count.
void strided_slice_dense(const OpCall& c, const Shape& in, std::vector<int64_t>& begin,
                         std::vector<int64_t>& stride, std::vector<int64_t>& count);

}  // namespace deepflow::detail
