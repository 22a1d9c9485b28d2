# SPDX-License-Identifier: Apache-2.0
"""tf.linalg: the matrix ops the core has."""
from ._array_ops import eye  # noqa: F401
from ._ops import matmul, tensordot  # noqa: F401
from ._nn import l2_normalize  # noqa: F401


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    from ._array_ops import transpose
    perm = list(range(a.ndim - 2)) + [a.ndim - 1, a.ndim - 2]
    return transpose(a, perm)


def trace(x, name=None):
    from ._ops import reduce_sum, multiply
    n = x.shape[-1]
    return reduce_sum(multiply(x, eye(n, dtype=x.dtype)), axis=[-2, -1])


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002
    from ._ops import reduce_euclidean_norm, reduce_sum, abs as _abs
    if ord in ("euclidean", "fro", 2):
        return reduce_euclidean_norm(tensor, axis, bool(keepdims))
    if ord == 1:
        return reduce_sum(_abs(tensor), axis, bool(keepdims))
    raise ValueError(f"[tf.linalg.norm] ord={ord!r} is not supported here")
