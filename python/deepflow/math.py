# SPDX-License-Identifier: Apache-2.0
"""tf.math."""
from ._ops import (abs, add, add_n, argmax, argmin, ceil, cos, count_nonzero, cumsum, divide,  # noqa: F401
                   equal, erf, exp, expm1, floor, floordiv, floormod, greater, greater_equal,
                   is_finite, is_inf, is_nan, less, less_equal, log, log1p, logical_and, logical_not,
                   logical_or, logical_xor, maximum, minimum, mod, multiply, negative, not_equal, pow,
                   reciprocal, reduce_all, reduce_any, reduce_euclidean_norm, reduce_logsumexp, reduce_max,
                   reduce_mean, reduce_min, reduce_prod, reduce_std, reduce_sum, reduce_variance, round,
                   rsqrt, sigmoid, sign, sin, sqrt, square, squared_difference, subtract, tan, tanh, top_k,
                   truediv)
from ._nn import log_softmax, softmax, softplus  # noqa: F401
from ._ops import div_no_nan as divide_no_nan  # noqa: F401

def multiply_no_nan(x, y, name=None):
    from ._ops import _pair, where, zeros_like, equal as _eq
    x, y = _pair(x, y)
    return where(_eq(y, zeros_like(y)), zeros_like(x), x * y)
