# SPDX-License-Identifier: Apache-2.0
"""The tensor operations AutoGraph's converted code calls (python/deepflow/autograph's
backend protocol), on deepflow's ops."""
from . import _deepflow

Tensor = _deepflow.Tensor


def is_tensor(x):
    return isinstance(x, (Tensor, _deepflow.Variable))


def is_dataset(x):
    return hasattr(x, "_df_dataset")


def cond(pred, true_fn, false_fn):
    from ._control_flow import cond as tf_cond
    return tf_cond(pred, true_fn, false_fn)


def while_loop(cond_fn, body_fn, loop_vars, maximum_iterations=None, shape_invariants=None):
    from ._control_flow import while_loop as tf_while
    return tuple(tf_while(cond_fn, body_fn, tuple(loop_vars), maximum_iterations=maximum_iterations))


def logical_and(a, b):
    from ._ops import logical_and as f
    return f(a, b)


def logical_or(a, b):
    from ._ops import logical_or as f
    return f(a, b)


def logical_not(a):
    from ._ops import logical_not as f
    return f(a)


def tensor_len(t):
    from ._array_ops import shape
    return shape(t)[0]


def getitem(t, i):
    return t[i]


def dataset_reduce(ds, initial_state, reduce_fn):
    return ds.reduce(initial_state, reduce_fn)


def dtype_of(x):
    if is_tensor(x):
        return x.dtype
    return None


def shape_of(x):
    if is_tensor(x):
        return tuple(x.shape)
    return None


def zeros_like(x):
    from ._array_ops import zeros_like as f
    return f(x)


def range(*args):  # noqa: A001
    from ._array_ops import range as f
    return f(*args)
