# SPDX-License-Identifier: Apache-2.0
"""t[key] with TensorFlow's semantics (tensor_getitem_override in TF): integers, slices with
negative bounds and steps, `...`, tf.newaxis (None) and scalar integer tensors become one
strided_slice with begin/end/ellipsis/new-axis/shrink masks; a boolean tensor or array
is a boolean_mask. An index that is a symbolic scalar tensor (a loop counter inside
tf.function) is a gather on its axis after the slice."""
import numpy as np

from . import _deepflow
from . import dtypes

_BAD_INDEX = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
              "tf.int32/tf.int64 tensors are valid indices, got {!r}")


def _is_bool_mask(key):
    if isinstance(key, _deepflow.Tensor):
        return key._dtype == dtypes.bool._enum
    if isinstance(key, np.ndarray):
        return key.dtype == np.bool_
    if isinstance(key, list) and key and all(isinstance(k, (bool, np.bool_)) for k in key):
        return True
    return isinstance(key, bool)


def _scalar_int(item):
    """An int for a concrete integer index, a Tensor for a symbolic one, else None."""
    if isinstance(item, (bool, np.bool_)):
        return None
    if isinstance(item, (int, np.integer)):
        return int(item)
    if isinstance(item, _deepflow.Tensor) and item.ndim == 0 and dtypes.from_enum(item._dtype).is_integer:
        return item if item._is_symbolic else int(item.numpy())
    if isinstance(item, _deepflow.Variable) and item._dtype in (dtypes.int32._enum, dtypes.int64._enum):
        return _scalar_int(item.value())
    return None


def _bound(v):
    if v is None:
        return None
    b = _scalar_int(v)
    if b is None or isinstance(b, _deepflow.Tensor):
        raise TypeError(_BAD_INDEX.format(v))
    return b


def getitem(t, key):
    from . import _ops
    if _is_bool_mask(key):
        return _ops.boolean_mask(t, key)
    items = key if isinstance(key, tuple) else (key,)
    begin, end, strides = [], [], []
    begin_mask = end_mask = ellipsis_mask = new_axis_mask = shrink_mask = 0
    gathers = []  # (position in the slice spec, index tensor)
    for i, item in enumerate(items):
        bit = 1 << i
        if item is Ellipsis:
            ellipsis_mask |= bit
            begin.append(0), end.append(0), strides.append(1)
        elif item is None:
            new_axis_mask |= bit
            begin.append(0), end.append(0), strides.append(1)
        elif isinstance(item, slice):
            start, stop, step = _bound(item.start), _bound(item.stop), _bound(item.step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            begin.append(0 if start is None else start)
            end.append(0 if stop is None else stop)
            strides.append(1 if step is None else step)
            if start is None:
                begin_mask |= bit
            if stop is None:
                end_mask |= bit
        else:
            idx = _scalar_int(item)
            if idx is None:
                raise TypeError(_BAD_INDEX.format(item))
            if isinstance(idx, _deepflow.Tensor):
                gathers.append((i, idx))
                begin.append(0), end.append(0), strides.append(1)
                begin_mask |= bit
                end_mask |= bit
            else:
                begin.append(idx), end.append(idx + 1), strides.append(1)
                shrink_mask |= bit
    out = _deepflow.raw_op("strided_slice", [t], {
        "begin": begin, "end": end, "strides": strides, "begin_mask": begin_mask,
        "end_mask": end_mask, "ellipsis_mask": ellipsis_mask, "new_axis_mask": new_axis_mask,
        "shrink_axis_mask": shrink_mask})[0]
    if gathers:
        out = _gather_symbolic(out, items, gathers, t.ndim)
    return out


def _gather_symbolic(out, items, gathers, rank):
    """Applies the symbolic scalar indices, from the last axis to the first."""
    from . import _ops
    # The output axis of each spec item: count what comes before it.
    n_explicit = sum(1 for it in items if it is not None and it is not Ellipsis)
    axes = []
    axis = 0
    for i, item in enumerate(items):
        if item is Ellipsis:
            axis += rank - n_explicit
            continue
        is_gather = any(g[0] == i for g in gathers)
        if is_gather:
            axes.append((axis, dict(gathers)[i]))
        if item is None or isinstance(item, slice) or is_gather:
            axis += 1
        # a concrete integer index was shrunk away: no output axis
    for axis, index in sorted(axes, key=lambda a: -a[0]):
        out = _ops.gather(out, index, axis=axis)
    return out
