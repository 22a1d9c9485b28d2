# SPDX-License-Identifier: Apache-2.0
"""Graph mode: tf.Graph, tf.compat.v1.placeholder and Session (python/src/function.cpp).

While `with graph.as_default():` is active every op call appends a node and returns a
symbolic tensor; Session.run feeds placeholders and fetches values. Variables are
initialized when they are created (their initializer subgraph runs at once), so
global_variables_initializer() has nothing left to do and returns a no-op."""
import contextlib
import threading

from . import _deepflow
from . import nest

Tensor = _deepflow.Tensor
_local = threading.local()


def _stack():
    if not hasattr(_local, "graphs"):
        _local.graphs = []
    return _local.graphs


class Operation:
    """What graph-mode code fetches as a target (an initializer, a train op)."""

    def __init__(self, name, run=None, inputs=()):
        self.name = name
        self._run = run
        self.inputs = list(inputs)

    def __repr__(self):
        return f"<tf.Operation '{self.name}'>"


class Graph:
    """tf.Graph: a graph that op calls build into while it is the default."""

    def __init__(self):
        self._graph = _deepflow._Graph()
        self._collections = {}
        self._finalized = False

    @contextlib.contextmanager
    def as_default(self):
        scope = _deepflow._GraphScope(self._graph)
        scope._enter()
        _stack().append(self)
        try:
            yield self
        finally:
            _stack().pop()
            scope._exit()

    def finalize(self):
        self._finalized = True

    @property
    def finalized(self):
        return self._finalized

    def add_to_collection(self, name, value):
        self._collections.setdefault(name, []).append(value)

    def get_collection(self, name, scope=None):
        return list(self._collections.get(name, []))

    def as_graph_text(self):
        return self._graph._text()

    @contextlib.contextmanager
    def name_scope(self, name):
        s = _deepflow._NameScope(name)
        s._enter()
        try:
            yield name
        finally:
            s._exit()


_default_graph = None


def get_default_graph():
    """The graph op calls build into: the innermost as_default() graph, else a global one."""
    s = _stack()
    if s:
        return s[-1]
    global _default_graph
    if _default_graph is None:
        _default_graph = Graph()
    return _default_graph


def reset_default_graph():
    global _default_graph
    _default_graph = None


def placeholder(dtype, shape=None, name=None):
    """tf.compat.v1.placeholder: a graph input to feed through Session.run's feed_dict."""
    from . import dtypes
    if not _deepflow._building_graph():
        raise RuntimeError("tf.placeholder() is not compatible with eager execution.")
    if shape is None:
        raise ValueError("[tf.compat.v1.placeholder] a placeholder of unknown rank is not supported here: give a "
                         "shape (None for unknown dims)")
    dims = [-1 if d is None else int(d) for d in shape]
    return _deepflow.placeholder(dtypes.as_dtype(dtype)._enum, dims)


def evaluate_initializer(t):
    """The value of a symbolic initializer (it must not depend on placeholders)."""
    graph = _deepflow._current_graph()
    if graph is None:
        raise ValueError("[tf.Variable] the initial value is symbolic outside any graph")
    return _deepflow._Session(graph)._run([], [t])[0]


def global_variables_initializer():
    return Operation("init")


def variables_initializer(var_list, name="init"):
    return Operation(name)


local_variables_initializer = global_variables_initializer


def symbolic_gradients(ys, xs, grad_ys, unconnected):
    from .backprop import UnconnectedGradients
    zero = UnconnectedGradients(unconnected) == UnconnectedGradients.ZERO
    flat_ys, flat_xs = nest.flatten(ys), nest.flatten(xs)
    g = None if grad_ys is None else nest.flatten(grad_ys)
    return _deepflow.gradients(flat_ys, flat_xs, g, zero)


class Session:
    """tf.compat.v1.Session: runs fetches (nested structures of tensors, operations and
    names) of a graph with feed_dict values for its placeholders."""

    def __init__(self, target="", graph=None, config=None):
        self._graph = graph or get_default_graph()
        self._session = _deepflow._Session(self._graph._graph)
        self._closed = False
        self._ctx = None

    @property
    def graph(self):
        return self._graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        flat = nest.flatten(fetches)
        for f in flat:
            if f is not None and not isinstance(f, (Tensor, str, Operation, _deepflow.Variable)):
                raise TypeError(f"Fetch argument {f!r} has invalid type {type(f)}, must be a string or Tensor.")
        tensors = [f for f in flat if isinstance(f, (Tensor, str))]
        ops = [f for f in flat if isinstance(f, Operation)]
        feeds = list((feed_dict or {}).items())
        values = iter(self._session._run(feeds, tensors) if tensors else [])
        for op in ops:
            if op._run is not None:
                op._run(self, feed_dict)
        out = []
        for f in flat:
            if isinstance(f, (Tensor, str)):
                out.append(next(values).numpy())
            elif isinstance(f, _deepflow.Variable):
                out.append(f.value().numpy())
            else:
                out.append(None)
        return nest.pack_sequence_as(fetches, out)

    def close(self):
        self._closed = True

    def __enter__(self):
        self._ctx = self._graph.as_default()
        self._ctx.__enter__()
        _sessions().append(self)
        return self

    def __exit__(self, *exc):
        _sessions().pop()
        self._ctx.__exit__(*exc)
        self.close()

    def as_default(self):
        return _SessionDefault(self)


class _SessionDefault:
    def __init__(self, s):
        self._s = s

    def __enter__(self):
        _sessions().append(self._s)
        return self._s

    def __exit__(self, *exc):
        _sessions().pop()


def _sessions():
    if not hasattr(_local, "sessions"):
        _local.sessions = []
    return _local.sessions


def get_default_session():
    s = _sessions()
    return s[-1] if s else None


InteractiveSession = Session
