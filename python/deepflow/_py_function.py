# SPDX-License-Identifier: Apache-2.0
"""tf.py_function and tf.numpy_function: arbitrary Python inside a graph, a tf.function or
a traced tf.data map. Eagerly, func simply runs (and a GradientTape sees its ops). In a
graph the call is an op whose kernel runs func with the GIL held only while func runs, so
the rest of a tf.data pipeline keeps running without it.

deepflow's graphs need each output's rank, so in a graph or a trace Tout gives each
output as a tf.TensorSpec (dims may be None; TensorFlow's Tout takes TensorSpecs too);
a plain dtype there is a ValueError saying so. Eagerly, dtypes are enough."""
import numpy as np

from . import _deepflow
from . import dtypes
from . import nest
from ._function import TensorSpec
from ._op_util import convert_to_tensor, type_code

Tensor = _deepflow.Tensor


def _specs(Tout):
    single = not isinstance(Tout, (list, tuple))
    flat = [Tout] if single else list(Tout)
    specs = [t if isinstance(t, TensorSpec) else TensorSpec(None, t) for t in flat]
    return specs, single


def _encode(specs):
    for s in specs:
        if s.shape.rank is None:
            raise ValueError(f"[tf.py_function] inside a graph deepflow needs the rank of each output: give Tout as "
                             f"tf.TensorSpec(shape, {s.dtype.name}) (dims may be None)")
    return type_code(s._sig() for s in specs)


def _call(func, inp, Tout, to_python):
    specs, single = _specs(Tout)
    flat_in = [convert_to_tensor(x) for x in nest.flatten(inp)]

    def run(values):
        args = [to_python(v) for v in values]
        result = func(*args)
        flat = [] if result is None else nest.flatten(result)
        if len(flat) != len(specs):
            raise ValueError(f"[tf.py_function] func returned {len(flat)} values, Tout has {len(specs)}")
        return [convert_to_tensor(x, dtype=s.dtype) for x, s in zip(flat, specs)]

    if not _deepflow._building_graph():
        outs = run(flat_in)
    else:
        outs = list(_deepflow.py_function_call(run, flat_in, _encode(specs)))
    if not specs:
        return None
    return outs[0] if single else outs


def py_function(func=None, inp=None, Tout=None, name=None):
    """tf.py_function(func, inp, Tout): func gets eager tensors and returns values of Tout."""
    return _call(func, inp or [], Tout if Tout is not None else [], lambda t: t)


def numpy_function(func=None, inp=None, Tout=None, stateful=True, name=None):
    """tf.numpy_function(func, inp, Tout): func gets and returns numpy arrays."""
    return _call(func, inp or [], Tout if Tout is not None else [], lambda t: np.asarray(t))
