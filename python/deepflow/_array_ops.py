# SPDX-License-Identifier: Apache-2.0
"""TensorFlow's array ops: creation, shape and layout, indexing (tf.*)."""
import numpy as np

from . import _deepflow
from . import dtypes
from ._convert import convert_to_tensor as _convert
from ._op_util import Tensor, _op, _t, _axes, _ints, convert_to_tensor

newaxis = None


def constant(value, dtype=None, shape=None, name="Const"):
    """tf.constant: a tensor of the value; Python and numpy values may be cast to dtype."""
    if isinstance(value, (Tensor, _deepflow.Variable)):
        t = convert_to_tensor(value)
        if dtype is not None and t.dtype != dtypes.as_dtype(dtype):
            t = cast(t, dtype)
    elif dtype is not None:
        want = dtypes.as_dtype(dtype)
        if isinstance(value, np.ndarray) and value.dtype.kind not in "OSU" and want != dtypes.string:
            t = _deepflow.to_tensor(value, want._enum)
        else:
            t = _convert(value, want._enum)
    else:
        t = convert_to_tensor(value)
    if shape is not None:
        shape = [int(d) for d in shape]
        n = int(np.prod(shape)) if shape else 1
        if t._num_elements == 1 and n != 1:
            t = fill(shape, t)
        elif t._num_elements != n:
            raise TypeError(f"Eager execution of tf.constant with unsupported shape. Tensor {t} "
                            f"(converted from {value!r}) has {t._num_elements} elements, but got "
                            f"`shape` {tuple(shape)} with {n} elements).")
        else:
            t = reshape(t, shape)
    return t


def _cast(x, dtype):
    from ._ops import cast
    return cast(x, dtype)


def zeros(shape, dtype=dtypes.float32, name=None, layout=None):
    return _deepflow.zeros(_ints(shape), dtypes.as_dtype(dtype)._enum)


def ones(shape, dtype=dtypes.float32, name=None, layout=None):
    return _deepflow.ones(_ints(shape), dtypes.as_dtype(dtype)._enum)


def fill(dims, value, name=None, layout=None):
    # broadcast_to keeps the value exact in every dtype (a round trip through double would
    # not, for large int64) and works while a graph is built.
    return broadcast_to(_t(value), _ints(dims))


def zeros_like(input, dtype=None, name=None, layout=None):  # noqa: A002
    x = _t(input)
    out = _op("zeros_like", [x])
    return out if dtype is None else _cast(out, dtype)


def ones_like(input, dtype=None, name=None, layout=None):  # noqa: A002
    x = _t(input)
    out = _op("ones_like", [x])
    return out if dtype is None else _cast(out, dtype)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    """tf.range: [start, limit) in steps of delta; int32 for integer arguments. With a
    symbolic bound (a trace) it is the range op, sized when the graph runs."""
    if limit is None:
        start, limit = 0, start
    args = (start, limit, delta)
    if dtype is None:
        kinds = [a.dtype if isinstance(a, (Tensor, _deepflow.Variable)) else None for a in args]
        tensor_dtypes = [k for k in kinds if k is not None]
        if tensor_dtypes:
            dtype = tensor_dtypes[0]
        else:
            dtype = dtypes.int32 if all(isinstance(a, (int, np.integer)) for a in args) else dtypes.float32
    dtype = dtypes.as_dtype(dtype)
    if any(isinstance(a, Tensor) and a._is_symbolic for a in args):
        ts = [_cast(_t(a), dtype) if isinstance(a, Tensor) else convert_to_tensor(a, dtype=dtype) for a in args]
        return _op("range", ts)
    vals = [a.numpy() if isinstance(a, (Tensor, _deepflow.Variable)) else a for a in args]
    return _deepflow.arange(float(vals[0]), float(vals[1]), float(vals[2]), dtype._enum)


def linspace(start, stop, num, name=None, axis=0):
    start, stop = _t(start), _t(stop)
    dt = start.dtype if start.dtype.is_floating else dtypes.float32
    vals = np.linspace(float(start.numpy()), float(stop.numpy()), int(num))
    return constant(vals.astype(dt.as_numpy_dtype))


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    e = np.eye(int(num_rows), int(num_columns or num_rows), dtype=dtypes.as_dtype(dtype).as_numpy_dtype)
    t = constant(e)
    if batch_shape:
        t = broadcast_to(t, list(batch_shape) + list(e.shape))
    return t


def shape(input, out_type=dtypes.int32, name=None):  # noqa: A002
    """tf.shape: the dims as a 1-D tensor; read when the graph runs where some are unknown."""
    x = _t(input)
    dims = x._shape
    out_type = dtypes.as_dtype(out_type)
    if all(d is not None for d in dims):
        return constant(np.array(dims, dtype=out_type.as_numpy_dtype).reshape([len(dims)]))
    return _op("shape", [x], {"out_type": out_type._enum})


def size(input, out_type=dtypes.int32, name=None):  # noqa: A002
    return _deepflow.size(_t(input), dtypes.as_dtype(out_type)._enum)


def rank(input, name=None):  # noqa: A002
    return constant(_t(input).ndim, dtype=dtypes.int32)


def reshape(tensor, shape, name=None):
    return _op("reshape", [_t(tensor)], {"shape": _ints(shape)})


def transpose(a, perm=None, conjugate=False, name="transpose"):
    return _op("transpose", [_t(a)], {"perm": [] if perm is None else _ints(perm)})


def expand_dims(input, axis, name=None):  # noqa: A002
    return _deepflow.expand_dims(_t(input), int(axis))


def squeeze(input, axis=None, name=None):  # noqa: A002
    return _deepflow.squeeze(_t(input), _axes(axis))


def concat(values, axis, name="concat"):
    return _deepflow.concat([_t(v) for v in values], int(axis))


def stack(values, axis=0, name="stack"):
    values = [_t(v) for v in values]
    return _deepflow.stack(values, int(axis))


def unstack(value, num=None, axis=0, name="unstack"):
    value = _t(value)
    n = value._shape[axis] if num is None else num
    if n is None:
        raise ValueError(f"Cannot infer argument `num` from shape {value.shape}")
    return [squeeze(p, [axis]) for p in _deepflow.split(value, int(n), int(axis))] if n else []


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    value = _t(value)
    if isinstance(num_or_size_splits, (int, np.integer)):
        return _deepflow.split(value, int(num_or_size_splits), int(axis))
    return _deepflow.split_sizes(value, _ints(num_or_size_splits), int(axis))


def slice(input_, begin, size, name=None):  # noqa: A001
    return _op("slice", [_t(input_)], {"begin": _ints(begin), "size": _ints(size)})


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    begin, end = _ints(begin), _ints(end)
    return _op("strided_slice", [_t(input_)], {
        "begin": begin, "end": end, "strides": _ints(strides) if strides is not None else [1] * len(begin),
        "begin_mask": begin_mask, "end_mask": end_mask, "ellipsis_mask": ellipsis_mask,
        "new_axis_mask": new_axis_mask, "shrink_axis_mask": shrink_axis_mask})


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    p = np.asarray(paddings.numpy() if isinstance(paddings, Tensor) else paddings, dtype=np.int64)
    pairs = [(int(a), int(b)) for a, b in p.reshape(-1, 2)]
    return _deepflow.pad(_t(tensor), pairs, mode.upper(), float(constant_values))


def tile(input, multiples, name=None):  # noqa: A002
    return _op("tile", [_t(input)], {"multiples": _ints(multiples)})


def broadcast_to(input, shape, name=None):  # noqa: A002
    return _op("broadcast_to", [_t(input)], {"shape": _ints(shape)})


def reverse(tensor, axis, name=None):
    return _op("reverse", [_t(tensor)], {"axes": _axes(axis)})


def _indices(x):
    x = x if isinstance(x, Tensor) else convert_to_tensor(x)
    if not x.dtype.is_integer:
        raise TypeError(f"indices must be an integer tensor, got {x.dtype.name}")
    return x


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    axis = 0 if axis is None else int(axis.numpy() if isinstance(axis, Tensor) else axis)
    return _op("gather", [_t(params), _indices(indices)], {"axis": axis, "batch_dims": int(batch_dims)})


def _check_policy(who, bad_indices_policy):
    if bad_indices_policy not in ("", "DEFAULT", "ERROR"):
        raise NotImplementedError(f"[{who}] bad_indices_policy={bad_indices_policy!r}: out-of-range indices are an "
                                  "error in deepflow (TensorFlow's CPU default)")


def gather_nd(params, indices, batch_dims=0, name=None, bad_indices_policy=""):
    _check_policy("tf.gather_nd", bad_indices_policy)
    if batch_dims != 0:
        raise NotImplementedError("[tf.gather_nd] batch_dims other than 0 is not supported yet")
    return _op("gather_nd", [_t(params), _indices(indices)])


def scatter_nd(indices, updates, shape, bad_indices_policy="", name=None):
    _check_policy("tf.scatter_nd", bad_indices_policy)
    return _op("scatter_nd", [_indices(indices), _t(updates)], {"shape": _ints(shape)})


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.float32
    return _deepflow.one_hot(_indices(indices), int(depth), 1.0 if on_value is None else float(on_value),
                             0.0 if off_value is None else float(off_value), -1 if axis is None else int(axis),
                             dt._enum)


def boolean_mask(tensor, mask, axis=None, name="boolean_mask"):
    """tensor[mask]: the rows where the bool mask is true (needs a concrete mask)."""
    x = _t(tensor)
    m = mask if isinstance(mask, Tensor) else convert_to_tensor(np.asarray(mask, dtype=bool))
    if m._is_symbolic:
        raise NotImplementedError("[tf.boolean_mask] needs a concrete mask here (its result's size depends on it)")
    axis = 0 if axis is None else int(axis)
    mv = np.asarray(m.numpy(), dtype=bool)
    flat_shape = list(x._shape[:axis]) + [-1] + [d for d in x._shape[axis + mv.ndim:]]
    xs = reshape(x, [d if d is not None else -1 for d in flat_shape])
    idx = np.nonzero(mv.ravel())[0].astype(np.int64)
    return gather(xs, constant(idx), axis=axis)


def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool, name=None):
    lengths = _t(lengths)
    if maxlen is None:
        from ._ops import reduce_max
        maxlen = int(reduce_max(lengths).numpy())
    r = range(int(maxlen), dtype=lengths.dtype)
    from ._ops import less
    return _cast(less(r, expand_dims(lengths, -1)), dtype)


def identity_n(input, name=None):  # noqa: A002
    from ._ops import identity
    return [identity(x) for x in input]


def meshgrid(*args, **kwargs):
    indexing = kwargs.get("indexing", "xy")
    grids = np.meshgrid(*[np.asarray(_t(a).numpy()) for a in args], indexing=indexing)
    return [constant(g) for g in grids]
