// SPDX-License-Identifier: Apache-2.0
// The hook by which a variable read reaches the gradient tapes of its thread, so that
// GradientTape::watched_variables() lists the trainable variables a computation read
// (eagerly, inside a trace, or in a graph run while the tape records). Declared at the
// ops layer, defined by autodiff/tape.cpp, like detail::record_on_tapes in op.h.
#pragma once

#include "deepflow/ops/variable.h"

namespace deepflow::detail {

/// Records a read of `v` on every recording tape of this thread that watches accessed
/// variables (a no-op for a non-trainable variable).
void note_variable_read(const Variable& v);

}  // namespace deepflow::detail
