# SPDX-License-Identifier: Apache-2.0
"""Python values to tensors, as tf.convert_to_tensor does (research/python.md section 5).

Tensors, Python numbers and numpy arrays are converted in C++ (python/src/convert.cpp);
this module handles the rest: nested lists and tuples (shape from the nesting, dtype
from the leaves: float -> float32, int -> int32 or int64 when it does not fit, bool ->
bool, str/bytes -> string), strings, objects with __array__, lists of tensors (stacked).
"""
import numpy as np

from . import _deepflow
from . import dtypes

_INT32 = (-2**31, 2**31 - 1)


def _leaves(value, out):
    if isinstance(value, (list, tuple)):
        for v in value:
            _leaves(v, out)
    else:
        out.append(value)
    return out


def _shape_of(value, where="Can't convert non-rectangular Python sequence to Tensor."):
    shape = []
    v = value
    while isinstance(v, (list, tuple)):
        shape.append(len(v))
        if not v:
            break
        v = v[0]
    _check_rect(value, shape, 0, where)
    return shape


def _check_rect(value, shape, depth, where):
    if depth == len(shape):
        if isinstance(value, (list, tuple)):
            raise ValueError(where)
        return
    if not isinstance(value, (list, tuple)) or len(value) != shape[depth]:
        raise ValueError(where)
    for v in value:
        _check_rect(v, shape, depth + 1, where)


def _python_dtype(leaves):
    """TensorFlow's dtype for Python leaves (None when they are not plain Python values)."""
    if not leaves:
        return dtypes.float32
    kinds = set()
    for x in leaves:
        if isinstance(x, bool):
            kinds.add("bool")
        elif isinstance(x, (int, np.integer)):  # numpy ints in a list count as ints (TF's rule)
            kinds.add("int")
        elif isinstance(x, float) and not isinstance(x, np.generic):
            kinds.add("float")
        elif isinstance(x, (str, bytes)):
            kinds.add("string")
        else:
            return None
    if kinds == {"bool"}:
        return dtypes.bool
    if "string" in kinds:
        if kinds != {"string"}:
            raise TypeError("Can't convert Python sequence with mixed types to Tensor.")
        return dtypes.string
    if "float" in kinds:
        return dtypes.float32
    if all(_INT32[0] <= int(x) <= _INT32[1] for x in leaves):
        return dtypes.int32
    return dtypes.int64


def _string_tensor(values, shape):
    flat = [v.encode() if isinstance(v, str) else bytes(v) for v in values]
    return _deepflow.string_tensor(flat, list(shape))


def convert_to_tensor(value, dtype=None):
    """The general conversion; `dtype` is a DType enum number or None."""
    want = dtypes.from_enum(dtype) if dtype is not None else None
    t = _deepflow.try_to_tensor(value, dtype)
    if t is not None:
        return t
    if isinstance(value, (str, bytes)):
        if want is not None and want != dtypes.string:
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {want.name}")
        return _string_tensor([value], [])
    if isinstance(value, np.ndarray) and value.dtype.kind in "OSU":
        return _string_tensor(value.ravel().tolist(), value.shape)
    if isinstance(value, (list, tuple)):
        leaves = _leaves(value, [])
        if leaves and isinstance(leaves[0], (_deepflow.Tensor, _deepflow.Variable)):
            return _stack_nested(value, want)
        shape = _shape_of(value)
        found = _python_dtype(leaves)
        if found is None:  # numpy scalars or other objects: numpy decides, as in TF
            arr = np.asarray(value)
            if arr.dtype.kind in "OSU":
                return _string_tensor(arr.ravel().tolist(), arr.shape)
            return _deepflow.to_tensor(arr if want is None else _cast_np(arr, want), dtype)
        if found == dtypes.string:
            if want is not None and want != dtypes.string:
                raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {want.name}")
            return _string_tensor(leaves, shape)
        target = want if want is not None else found
        if found == dtypes.float32 and (target.is_integer or target.is_bool):
            raise TypeError("Can't convert Python sequence with floating point values to integer Tensor.")
        if target == dtypes.string:
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype string")
        np_type = target.as_numpy_dtype if target != dtypes.bfloat16 else np.float32
        arr = np.asarray(leaves, dtype=np_type).reshape(shape)
        t = _deepflow.to_tensor(arr)
        if target == dtypes.bfloat16:
            from . import _ops
            t = _ops.cast(t, dtypes.bfloat16)
        return t
    if hasattr(value, "__array__"):
        return convert_to_tensor(np.asarray(value), dtype)
    raise TypeError(f"Failed to convert elements of {value!r} to Tensor. "
                    "Consider casting elements to a supported type.")


def _cast_np(arr, want):
    if want == dtypes.bfloat16:
        return arr.astype(np.float32)
    return arr.astype(want.as_numpy_dtype)


def _stack_nested(value, want):
    from . import _ops
    if isinstance(value, (list, tuple)):
        return _ops.stack([_stack_nested(v, want) for v in value])
    return _ops.convert_to_tensor(value, dtype=want)


def try_convert_to_tensor(value, dtype=None):
    """convert_to_tensor, or None when the value is not convertible (binary operators)."""
    try:
        return convert_to_tensor(value, dtype)
    except (TypeError, ValueError):
        return None
