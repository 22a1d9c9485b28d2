// SPDX-License-Identifier: Apache-2.0
// Ops whose output shape is known only when they run: from input values (tf.range) or
// from the run-time shape of an input (tf.shape). While a graph is built their outputs
// have unknown dims; the executor infers again on the concrete inputs of each run.
// They are registered ops (by name, like custom ops), not primitives: nothing
// differentiates through them, and no pass rewrites them.
#pragma once

#include "deepflow/core/tensor.h"

namespace deepflow {

/// tf.range: start, limit, delta scalars of one numeric dtype -> [ceil((limit - start) /
/// delta)] of that dtype. delta 0 is an error; an empty range has 0 elements.
Tensor range(const Tensor& start, const Tensor& limit, const Tensor& delta);

/// tf.shape: x [d0..dn] -> out_type (int32 or int64) [n+1] holding x's dims when it runs.
Tensor shape_of(const Tensor& x, DType out_type = DType::Int32);

}  // namespace deepflow
