# SPDX-License-Identifier: Apache-2.0
"""deepflow: `import deepflow as tf` runs TensorFlow 2 code on deepflow's C++ core.

TensorFlow's names, signatures and semantics, over thin bindings (the extension
module _deepflow, python/src/): ops dispatch in C++, GradientTape records in C++,
tf.function traces into the core's graphs. What remains different from TensorFlow is
listed in the README's Python section.
"""
from . import _deepflow  # noqa: F401  (the extension module first: everything uses it)
from . import dtypes, errors, nest  # noqa: F401
from . import _tensor  # noqa: F401  (adds the Python half of tf.Tensor)
from ._deepflow import Tensor  # noqa: F401
from .dtypes import (DType, as_dtype, bfloat16, bool, double, float16, float32, float64, half,  # noqa: F401
                     int8, int32, int64, string, uint8)
from .tensor_shape import TensorShape  # noqa: F401
from ._ops import truncatediv  # noqa: F401
from ._ops import (abs, add, add_n, argmax, argmin, cast, clip_by_value, constant, convert_to_tensor,  # noqa: F401,E501
                   cos, cumsum, divide, equal, exp, floor, greater, greater_equal, identity, less,
                   less_equal, logical_and, logical_not, logical_or, matmul, maximum, minimum, multiply,
                   negative, not_equal, pow, reduce_all, reduce_any, reduce_logsumexp, reduce_max, reduce_mean,
                   reduce_min, reduce_prod, reduce_sum, round, saturate_cast,
                   sigmoid, sign, sin, sqrt, square, stop_gradient, subtract, tanh,
                   tensordot, truediv, where)
from ._array_ops import (boolean_mask, broadcast_to, concat, expand_dims, eye, fill, gather, gather_nd,  # noqa: F401
                         identity_n, linspace, meshgrid, newaxis, one_hot, ones, ones_like, pad, range, rank,
                         reshape, reverse, scatter_nd, sequence_mask, shape, size, slice, split, squeeze, stack,
                         strided_slice, tile, transpose, unstack, zeros, zeros_like)
from ._variables import Variable, VariableAggregation, VariableSynchronization  # noqa: F401
from .backprop import GradientTape, UnconnectedGradients, custom_gradient, gradients  # noqa: F401
from ._function import TensorSpec, function  # noqa: F401
from ._graph import Graph, Operation  # noqa: F401
from ._graph import get_default_graph as _get_default_graph
from ._control_flow import case, cond, switch_case, while_loop  # noqa: F401
from ._print import print  # noqa: F401,A001
from ._py_function import numpy_function, py_function  # noqa: F401
from . import math, nn, linalg, random, config, compat, experimental, keras  # noqa: F401,E402
from ._op_library import load_op_library  # noqa: F401
from . import data, io  # noqa: F401
from .io._sparse import SparseTensor, SparseTensorSpec  # noqa: F401,E402
from ._module import Module  # noqa: F401,E402
from . import debugging, lite, quantization, saved_model, train  # noqa: F401,E402
from ._autograph_api import autograph  # noqa: E402  (tf.autograph; deepflow's ops as its backend)

__version__ = "2.21.0"  # the TensorFlow API version this package follows


def executing_eagerly():
    """True unless a graph is being built (inside tf.function tracing or Graph.as_default())."""
    return not _deepflow._building_graph()


def is_tensor(x):
    return isinstance(x, (Tensor, _deepflow.Variable))


class init_scope:  # noqa: N801 - TensorFlow's name
    """tf.init_scope: ops inside run eagerly even while a function is traced (how a
    first call creates variables and optimizer state)."""

    def __enter__(self):
        self._scope = _deepflow._InitScope()
        self._scope._enter()
        return self

    def __exit__(self, *exc):
        self._scope._exit()
        return False


def name_scope(name):
    """tf.name_scope: prefixes node names while a graph is built."""
    return _get_default_graph().name_scope(name) if not executing_eagerly() else _NullScope(name)


class _NullScope:
    def __init__(self, name):
        self._name = name

    def __enter__(self):
        return self._name

    def __exit__(self, *exc):
        return False


def device(device_name):
    """tf.device: placement; everything runs on the CPU for now."""
    return _NullScope(device_name)


def no_op(name=None):
    return None
