# SPDX-License-Identifier: Apache-2.0
"""TensorFlow's math, array and comparison ops (tf.*, tf.math.*) over the C++ ops.

Each function has TensorFlow's signature; `name=` is accepted (TensorFlow code passes it)
and not used. Primitives run through raw_op (dispatch() in C++), the composites of
deepflow/ops/ops.h through their bindings.
"""
from collections import namedtuple

import numpy as np

from . import _deepflow
from . import dtypes
from ._op_util import Tensor, _op, _t, _pair, _axes, _ints, convert_to_tensor  # noqa: F401


_TopK = namedtuple("TopKV2", ["values", "indices"])


# --- unary ---
def _unary(op_name, tf_name):
    def f(x, name=None):
        return _op(op_name, [_t(x)])
    f.__name__ = tf_name
    f.__doc__ = f"tf.math.{tf_name}"
    return f


negative = _unary("neg", "negative")
abs = _unary("abs", "abs")  # noqa: A001 - TensorFlow's name
sign = _unary("sign", "sign")
exp = _unary("exp", "exp")
log = _unary("log", "log")
log1p = _unary("log1p", "log1p")
expm1 = _unary("expm1", "expm1")
sqrt = _unary("sqrt", "sqrt")
rsqrt = _unary("rsqrt", "rsqrt")
square = _unary("square", "square")
sin = _unary("sin", "sin")
cos = _unary("cos", "cos")
tanh = _unary("tanh", "tanh")
sigmoid = _unary("sigmoid", "sigmoid")
erf = _unary("erf", "erf")
floor = _unary("floor", "floor")
ceil = _unary("ceil", "ceil")
round = _unary("round", "round")  # noqa: A001
logical_not = _unary("logical_not", "logical_not")
def identity(input, name=None):  # noqa: A002 - TensorFlow's name
    return _op("identity", [_t(input)])


def stop_gradient(input, name=None):  # noqa: A002
    return _op("stop_gradient", [_t(input)])
relu = _unary("relu", "relu")


def reciprocal(x, name=None):
    x = _t(x)
    return divide(_t(1, x), x)


def tan(x, name=None):
    x = _t(x)
    return divide(sin(x), cos(x))


def is_nan(x, name=None):
    x = _t(x)
    return not_equal(x, x)


def is_finite(x, name=None):
    x = _t(x)
    return logical_and(equal(x, x), less(abs(x), _t(np.inf, x)))


def is_inf(x, name=None):
    x = _t(x)
    return equal(abs(x), _t(np.inf, x))


# --- binary ---
def _binary(op_name, tf_name):
    def f(x, y, name=None):
        x, y = _pair(x, y)
        return _op(op_name, [x, y])
    f.__name__ = tf_name
    f.__doc__ = f"tf.math.{tf_name}"
    return f


add = _binary("add", "add")
subtract = _binary("sub", "subtract")
multiply = _binary("mul", "multiply")
pow = _binary("pow", "pow")  # noqa: A001
maximum = _binary("maximum", "maximum")
minimum = _binary("minimum", "minimum")
equal = _binary("equal", "equal")
not_equal = _binary("not_equal", "not_equal")
less = _binary("less", "less")
less_equal = _binary("less_equal", "less_equal")
greater = _binary("greater", "greater")
greater_equal = _binary("greater_equal", "greater_equal")
logical_and = _binary("logical_and", "logical_and")
logical_or = _binary("logical_or", "logical_or")
sub = subtract
mul = multiply


def logical_xor(x, y, name=None):
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)))


def _float_of_int(dtype):
    return dtypes.float64 if dtype in (dtypes.int32, dtypes.int64) else dtypes.float32


def truediv(x, y, name=None):
    """x / y; integers are converted to floats first (int32/int64 to float64)."""
    x, y = _pair(x, y)
    if x.dtype.is_integer:
        if y.dtype != x.dtype:
            raise TypeError(f"`x` and `y` must have the same dtype, got {x.dtype!r} != {y.dtype!r}.")
        to = _float_of_int(x.dtype)
        x, y = cast(x, to), cast(y, to)
    return _op("div", [x, y])


def divide(x, y, name=None):
    return truediv(x, y)


def div_no_nan(x, y, name=None):
    x, y = _pair(x, y)
    zero = zeros_like(y)
    safe = where(equal(y, zero), ones_like(y), y)
    return where(equal(y, zero), zeros_like(_op("div", [x, safe])), _op("div", [x, safe]))


def floordiv(x, y, name=None):
    """Division rounded toward negative infinity (tf.math.floordiv)."""
    x, y = _pair(x, y)
    if x.dtype.is_floating:
        return floor(_op("div", [x, y]))
    q = _op("div", [x, y])  # truncates toward zero for integers
    r = subtract(x, multiply(q, y))
    zero = zeros_like(r)
    adjust = logical_and(not_equal(r, zero), not_equal(less(r, zero), less(y, zeros_like(y))))
    return where(adjust, subtract(q, ones_like(q)), q)


def floormod(x, y, name=None):
    """x - floordiv(x, y) * y: the result has the sign of y (tf.math.floormod)."""
    x, y = _pair(x, y)
    return subtract(x, multiply(floordiv(x, y), y))


mod = floormod


def truncatediv(x, y, name=None):
    """Integer division rounded toward zero (what the C++ div does for integers)."""
    x, y = _pair(x, y)
    return _op("div", [x, y])


def squared_difference(x, y, name=None):
    x, y = _pair(x, y)
    return square(subtract(x, y))


def logical_and_or_bitwise(x, y):
    return logical_and(x, y)


def logical_or_or_bitwise(x, y):
    return logical_or(x, y)


def logical_xor_or_bitwise(x, y):
    return logical_xor(x, y)


def invert(x):
    x = _t(x)
    if x.dtype != dtypes.bool:
        raise TypeError(f"`~` is only supported on bool tensors here, got {x.dtype.name}")
    return logical_not(x)


def add_n(inputs, name=None):
    inputs = [_t(i) for i in inputs]
    out = inputs[0]
    for x in inputs[1:]:
        out = add(out, x)
    return out


def where(condition, x=None, y=None, name=None):
    condition = _t(condition)
    if x is None and y is None:
        return _where_indices(condition)
    x, y = _pair(x, y)
    return _op("where", [condition, x, y])


def _where_indices(condition):
    if condition._is_symbolic:
        raise NotImplementedError("tf.where(condition) with one argument needs a concrete condition here")
    idx = np.argwhere(condition.numpy())
    return constant(idx.astype(np.int64))


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    t = _t(t)
    return _deepflow.clip_by_value(t, _t(clip_value_min, t), _t(clip_value_max, t))


def cast(x, dtype, name=None):
    x = _t(x)
    dtype = dtypes.as_dtype(dtype)
    if x._dtype == dtype._enum:
        return x
    return _op("cast", [x], {"dtype": dtype._enum})


def saturate_cast(value, dtype, name=None):
    value = _t(value)
    dtype = dtypes.as_dtype(dtype)
    if value.dtype.is_floating and not dtype.is_floating and dtype != dtypes.bool:
        value = clip_by_value(value, float(dtype.min), float(dtype.max))
    return cast(value, dtype)


# --- reductions ---
def _reduce(op_name, tf_name):
    def f(input_tensor, axis=None, keepdims=False, name=None):
        return _op(op_name, [_t(input_tensor)], {"axes": _axes(axis), "keepdims": bool(keepdims)})
    f.__name__ = tf_name
    f.__doc__ = f"tf.math.{tf_name}"
    return f


reduce_sum = _reduce("reduce_sum", "reduce_sum")
reduce_max = _reduce("reduce_max", "reduce_max")
reduce_min = _reduce("reduce_min", "reduce_min")
reduce_prod = _reduce("reduce_prod", "reduce_prod")


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    return _deepflow.reduce_mean(_t(input_tensor), _axes(axis), bool(keepdims))


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    return _deepflow.reduce_logsumexp(_t(input_tensor), _axes(axis), bool(keepdims))


def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    x = cast(_t(input_tensor), dtypes.float32)
    return greater(reduce_max(x, axis, keepdims), 0.0)


def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    x = cast(_t(input_tensor), dtypes.float32)
    return greater(reduce_min(x, axis, keepdims), 0.0)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    return sqrt(reduce_variance(input_tensor, axis, keepdims))


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    x = _t(input_tensor)
    mean = reduce_mean(x, axis, keepdims=True)
    return reduce_mean(square(subtract(x, mean)), axis, keepdims)


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    return sqrt(reduce_sum(square(_t(input_tensor)), axis, keepdims))


def argmax(input, axis=None, output_type=dtypes.int64, name=None):  # noqa: A002
    return _op("argmax", [_t(input)], {"axis": 0 if axis is None else int(axis),
                                       "output_type": dtypes.as_dtype(output_type)._enum})


def argmin(input, axis=None, output_type=dtypes.int64, name=None):  # noqa: A002
    return _op("argmin", [_t(input)], {"axis": 0 if axis is None else int(axis),
                                       "output_type": dtypes.as_dtype(output_type)._enum})


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    return _op("cumsum", [_t(x)], {"axis": int(axis), "exclusive": bool(exclusive), "reverse": bool(reverse)})


def top_k(input, k=1, sorted=True, index_type=dtypes.int32, name=None):  # noqa: A002
    values, indices = _deepflow.top_k(_t(input), int(k), bool(sorted))
    if dtypes.as_dtype(index_type) != indices.dtype:
        indices = cast(indices, index_type)
    return _TopK(values, indices)




def count_nonzero(input, axis=None, keepdims=False, dtype=dtypes.int64, name=None):  # noqa: A002
    x = _t(input)
    return cast(reduce_sum(cast(not_equal(x, zeros_like(x)), dtypes.int64), axis, keepdims), dtype)


# --- matrix products ---
def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, grad_a=False, grad_b=False, name=None):
    # a_is_sparse, b_is_sparse, grad_a and grad_b are hints to TensorFlow's kernels; the
    # product is the same without them.
    a, b = _pair(a, b)
    return _op("matmul", [a, b], {"transpose_a": bool(transpose_a or adjoint_a),
                                  "transpose_b": bool(transpose_b or adjoint_b)})


def tensordot(a, b, axes, name=None):
    a, b = _pair(a, b)
    if isinstance(axes, int):
        a_axes = list(range(a.ndim - axes, a.ndim))
        b_axes = list(range(axes))
    else:
        a_axes, b_axes = [_axes(x) for x in axes]
    a_axes = [x % a.ndim for x in a_axes]
    b_axes = [x % b.ndim for x in b_axes]
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [i for i in range(b.ndim) if i not in b_axes]
    sa, sb = a._shape, b._shape
    k = int(np.prod([sa[i] for i in a_axes])) if a_axes else 1
    at = reshape(transpose(a, a_free + a_axes), [-1, k])
    bt = reshape(transpose(b, b_axes + b_free), [k, -1])
    return reshape(matmul(at, bt), [sa[i] for i in a_free] + [sb[i] for i in b_free])


from ._array_ops import *  # noqa: E402,F401,F403 - one namespace for the op modules
from ._array_ops import fill, reshape, transpose, zeros_like, ones_like  # noqa: E402
