# SPDX-License-Identifier: Apache-2.0
"""What the op modules share: argument conversion by TensorFlow's rules, and the call
into the C++ dispatch()."""
import numpy as np

from . import _deepflow
from . import dtypes
from ._convert import convert_to_tensor as _convert

_raw = _deepflow.raw_op
_ID = {n: _deepflow.op_id(n) for n in _deepflow.op_names()}
Tensor = _deepflow.Tensor


def type_code(types):
    """[(dtype number, dims with -1)] -> the flat int64 list the ops of python/src take as a
    "type code" attribute (types_of_code in bind.h): per entry dtype, rank, dims."""
    code = []
    for dtype, dims in types:
        code += [int(dtype), len(dims)] + [int(d) for d in dims]
    return code


def _op(name, inputs, attrs=None):
    return _raw(_ID[name], inputs, attrs)[0]


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """tf.convert_to_tensor: tensors as they are, Python values and arrays converted."""
    if isinstance(value, Tensor) and dtype is None:
        return value
    if dtype is not None:
        return _deepflow.to_tensor(value, dtypes.as_dtype(dtype)._enum) if not isinstance(
            value, (list, tuple, str, bytes)) else _convert(value, dtypes.as_dtype(dtype)._enum)
    if dtype_hint is not None:
        try:
            return convert_to_tensor(value, dtype=dtype_hint)
        except (TypeError, ValueError):
            pass
    t = _deepflow.try_to_tensor(value)
    return t if t is not None else _convert(value)


def _t(x, like=None):
    if isinstance(x, Tensor):
        return x
    if like is not None:
        return convert_to_tensor(x, dtype=like.dtype)
    return convert_to_tensor(x)


def _pair(x, y):
    """Binary op operands: a non-tensor takes the tensor's dtype (TensorFlow's rule)."""
    if isinstance(x, Tensor):
        return x, _t(y, x)
    if isinstance(y, Tensor):
        return _t(x, y), y
    x = convert_to_tensor(x)
    return x, _t(y, x)


def _axes(axis):
    if axis is None:
        return []
    if isinstance(axis, Tensor):
        axis = axis.numpy()
    if isinstance(axis, (np.ndarray, list, tuple)):
        return [int(a) for a in np.asarray(axis).ravel()]
    return [int(axis)]


def _ints(shape):
    if isinstance(shape, Tensor):
        return [int(d) for d in shape.numpy().ravel()]
    if hasattr(shape, "as_list"):
        return [-1 if d is None else int(d) for d in shape.as_list()]
    if isinstance(shape, (int, np.integer)):
        return [int(shape)]
    return [-1 if d is None else int(d) for d in shape]


