# SPDX-License-Identifier: Apache-2.0
"""tf.function: a Python function traced into a graph, with TensorFlow's trace rules.

The trace key of a call is the structure of its arguments with each tensor replaced by
its dtype and rank (dims are deepflow::Function's business: it generalizes a dim that
changed to unknown, so a changing batch size costs one retrace) and every other value
by itself (by value when hashable, by identity otherwise), as TensorFlow's TraceType.
Each key has its own C++ Function (python/src/function.cpp) whose callable rebuilds the
arguments from the symbolic tensors and runs the (AutoGraph-converted) Python function.
Python side effects therefore happen while tracing only, as in TensorFlow.
"""
import functools
import inspect
import warnings
import weakref

import numpy as np

from . import _deepflow
from . import _traceback
from . import dtypes
from . import nest
from .tensor_shape import TensorShape

Tensor = _deepflow.Tensor
_run_eagerly = False
_RETRACE_WARN = 5


_autograph = None


def autograph_module():
    """deepflow.autograph, with its backend set (on first use)."""
    global _autograph
    if _autograph is None:
        from . import autograph
        from . import _autograph_backend
        autograph.set_backend(_autograph_backend)
        autograph.register_allowlisted_module_prefix("deepflow")
        _autograph = autograph
    return _autograph


def _autograph_run(converted):
    """Runs converted code with AutoGraph's status ENABLED (what tf.function does)."""
    ag = autograph_module()

    @functools.wraps(converted)
    def run(*args, **kwargs):
        with ag.ControlStatusCtx(ag.Status.ENABLED):
            return converted(*args, **kwargs)
    return run


class TensorSpec:
    """tf.TensorSpec(shape, dtype=tf.float32, name=None): a tensor's dtype and shape."""

    def __init__(self, shape, dtype=dtypes.float32, name=None):
        self.shape = TensorShape(shape)
        self.dtype = dtypes.as_dtype(dtype)
        self.name = name

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, tensor.dtype, name)

    def is_compatible_with(self, spec_or_tensor):
        x = spec_or_tensor
        return self.dtype == x.dtype and self.shape.is_compatible_with(x.shape)

    def _sig(self):
        if self.shape.rank is None:
            raise ValueError("[tf.function] a TensorSpec of unknown rank is not supported here")
        return (self.dtype._enum, [-1 if d is None else d for d in self.shape.as_list()])

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and (self.shape, self.dtype, self.name) == (
            other.shape, other.dtype, other.name)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.name))

    def __repr__(self):
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype!r}, name={self.name!r})"


def run_functions_eagerly(run_eagerly):
    """tf.config.run_functions_eagerly: run tf.function bodies as plain Python (debugging)."""
    global _run_eagerly
    _run_eagerly = bool(run_eagerly)


def functions_run_eagerly():
    return _run_eagerly


def _deepflow_errors():
    from .errors import OpError
    return OpError


class _Marker:
    """Where a tensor sat in the arguments (the trace key holds dtype and rank)."""

    __slots__ = ("dtype", "rank")

    def __init__(self, dtype, rank):
        self.dtype, self.rank = dtype, rank

    def __eq__(self, o):
        return isinstance(o, _Marker) and (self.dtype, self.rank) == (o.dtype, o.rank)

    def __hash__(self):
        return hash((self.dtype, self.rank))


def _key_of(value):
    if isinstance(value, Tensor):
        return _Marker(value._dtype, value.ndim)
    if isinstance(value, _deepflow.Variable):
        return ("variable", id(value))
    try:
        hash(value)
        return ("value", type(value), value)
    except TypeError:
        return ("id", id(value))


class ConcreteFunction:
    """One trace of a tf.function: call it with tensors, print it, read its graph."""

    def __init__(self, cfunc, owner, key, arguments=None):
        self._cfunc = cfunc
        self._owner = owner
        self._key = key
        self._arguments = arguments  # (positional args, kwargs) it was made for: TensorSpecs

    @property
    def graph(self):
        return _FuncGraph(self._cfunc)

    @property
    def name(self):
        return self._cfunc.name

    @property
    def structured_outputs(self):
        return self._owner._out_struct.get(self._key)

    @property
    def inputs(self):
        return [TensorSpec([None if d < 0 else d for d in dims], dtypes.from_enum(dt))
                for dt, dims in self._cfunc._inputs]

    @property
    def outputs(self):
        return [TensorSpec([None if d < 0 else d for d in dims], dtypes.from_enum(dt))
                for dt, dims in self._cfunc._outputs]

    @_traceback.filter_traceback
    def __call__(self, *args):
        from ._op_util import convert_to_tensor
        flat = [convert_to_tensor(a) for a in nest.flatten(list(args))]
        out = self._cfunc(flat)
        return self._owner._pack_outputs(self._key, out)

    def pretty_printed_signature(self, verbose=True):
        ins = ", ".join(f"{s.dtype.name}{list(s.shape) if s.shape.rank else '[]'}" for s in self.inputs)
        outs = ", ".join(f"{s.dtype.name}{list(s.shape) if s.shape.rank else '[]'}" for s in self.outputs)
        return f"{self.name}({ins}) -> ({outs})"

    def __repr__(self):
        return f"<ConcreteFunction {self.pretty_printed_signature()} at 0x{id(self):X}>"

    def __str__(self):
        return f"ConcreteFunction {self.pretty_printed_signature()}"


class _FuncGraph:
    """What concrete_function.graph offers: its text form and its optimized form."""

    def __init__(self, cfunc):
        self._cfunc = cfunc

    def as_text(self):
        return self._cfunc._graph_text()

    def optimized_text(self):
        return self._cfunc._optimized_graph_text()

    def __str__(self):
        return self.as_text()


class Function:
    """The object @tf.function returns."""

    def __init__(self, python_function, name=None, input_signature=None, autograph=True,
                 jit_compile=None, reduce_retracing=False, experimental_autograph_options=None,
                 experimental_relax_shapes=None, experimental_follow_type_hints=None,
                 experimental_attributes=None, experimental_implements=None):
        self._python_function = python_function
        self._name = name or getattr(python_function, "__name__", "function")
        self._input_signature = list(input_signature) if input_signature is not None else None
        self._autograph = autograph
        self._reduce_retracing = reduce_retracing or bool(experimental_relax_shapes)
        self._jit_compile = jit_compile
        self._traced = {}      # key -> C++ _Function
        self._out_struct = {}  # key -> output structure, set while tracing
        self._trace_count = 0
        self._warned = False
        self._converted = None
        self._instances = weakref.WeakKeyDictionary()
        self._origins = {}     # node name -> (file, line, function) of the user's code
        self._tracing_failed = False
        functools.update_wrapper(self, python_function)

    # --- descriptor: @tf.function on methods ---
    def __get__(self, instance, owner):
        if instance is None:
            return self
        bound = self._instances.get(instance)
        if bound is None:
            bound = Function(functools.partial(self._python_function, instance), self._name,
                             self._input_signature, self._autograph, self._jit_compile, self._reduce_retracing)
            functools.update_wrapper(bound, self._python_function)
            bound._original = self._python_function
            self._instances[instance] = bound
        return bound

    @property
    def python_function(self):
        return self._python_function

    @property
    def input_signature(self):
        return self._input_signature

    def experimental_get_tracing_count(self):
        return self._trace_count

    def _callable(self):
        if self._converted is None:
            fn = self._python_function
            if self._autograph:
                fn = _autograph_run(autograph_module().to_graph(fn))
            self._converted = fn
        return self._converted

    def _canonical(self, args, kwargs):
        """Positional arguments (defaults filled), as TensorFlow binds them."""
        fn = self._python_function
        try:
            sig = inspect.signature(fn)
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            return bound.args, bound.kwargs
        except (TypeError, ValueError):
            return args, kwargs

    @_traceback.filter_traceback
    def __call__(self, *args, **kwargs):
        if _run_eagerly:
            return self._python_function(*args, **kwargs)
        if _deepflow._building_graph():
            # Inside another trace (or a graph): the body is simply inlined there.
            return self._callable()(*args, **kwargs)
        args, kwargs = self._canonical(args, kwargs)
        if self._input_signature is not None:
            args = self._check_signature(args)
        structure = (list(args), dict(kwargs))
        # numpy arrays are tensors to tf.function (TensorFlow converts them): keyed by dtype
        # and shape, not by identity, so a new array of the same kind does not retrace.
        flat = [_deepflow.to_tensor(x) if isinstance(x, np.ndarray) else x for x in nest.flatten(structure)]
        tensors = []
        for x in flat:
            if isinstance(x, Tensor):
                tensors.append(x)
        key = (repr(nest.pack_sequence_as(structure, [0] * len(flat))), tuple(_key_of(x) for x in flat))
        cfunc = self._traced.get(key)
        if cfunc is None:
            cfunc = self._make(key, structure, flat)
        before = cfunc.trace_count
        self._tracing_failed = False
        try:
            out = cfunc(tensors)
        except _deepflow_errors() as e:
            if not self._tracing_failed:  # it failed running, not tracing: say where
                _traceback.note_function(e, self._python_function, self._name, self._origins)
            raise
        if cfunc.trace_count != before:
            self._count_trace()
        return self._pack_outputs(key, out)

    def _check_signature(self, args):
        from ._op_util import convert_to_tensor
        spec = self._input_signature
        flat_spec = nest.flatten(spec)
        flat_args = nest.flatten(list(args))
        if len(flat_args) != len(flat_spec):
            raise TypeError(f"{self._name}() takes {len(flat_spec)} tensor arguments as its input_signature "
                            f"says, got {len(flat_args)}")
        out = []
        for a, s in zip(flat_args, flat_spec):
            t = convert_to_tensor(a, dtype=s.dtype) if not isinstance(a, Tensor) else a
            if not s.is_compatible_with(t):
                raise TypeError(f"Binding inputs to tf.function `{self._name}` failed due to `Can not cast "
                                f"{TensorSpec.from_tensor(t)!r} to {s!r}`. Received args: {args}")
            out.append(t)
        return tuple(nest.pack_sequence_as(list(args), out))

    def _make(self, key, structure, flat):
        positions = [i for i, x in enumerate(flat) if isinstance(x, Tensor)]
        fn = self._callable()

        def trace(symbolic):
            new_flat = list(flat)
            for i, t in zip(positions, symbolic):
                new_flat[i] = t
            a, kw = nest.pack_sequence_as(structure, new_flat)
            try:
                with _traceback.recording_origins(self._origins):
                    result = fn(*a, **kw)
            except BaseException:
                self._tracing_failed = True
                raise
            out_flat = nest.flatten(result)
            self._out_struct[key] = (result, [isinstance(x, (Tensor, _deepflow.Variable)) for x in out_flat])
            return [x.value() if isinstance(x, _deepflow.Variable) else x
                    for x in out_flat if isinstance(x, (Tensor, _deepflow.Variable))]

        sig = None
        if self._input_signature is not None:
            sig = [s._sig() for s in nest.flatten(self._input_signature)]
        cfunc = _deepflow._Function(trace, self._name, sig, True)
        self._traced[key] = cfunc
        return cfunc

    def _pack_outputs(self, key, out):
        result, is_tensor = self._out_struct[key]
        flat = nest.flatten(result)
        it = iter(out)
        packed = [next(it) if t else v for v, t in zip(flat, is_tensor)]
        return nest.pack_sequence_as(result, packed)

    def _count_trace(self):
        self._trace_count += 1
        if self._trace_count >= _RETRACE_WARN and not self._warned:
            self._warned = True
            warnings.warn(
                f"{self._trace_count} out of the last {self._trace_count} calls to {self._python_function} "
                "triggered tf.function retracing. Tracing is expensive and the excessive number of "
                "tracings could be due to (1) creating @tf.function repeatedly in a loop, (2) passing "
                "tensors with different shapes, (3) passing Python objects instead of tensors. For (1), "
                "please define your @tf.function outside of the loop. For (2), @tf.function has "
                "reduce_retracing=True option that can avoid unnecessary retracing. For (3), please "
                "refer to https://www.tensorflow.org/guide/function#controlling_retracing and "
                "https://www.tensorflow.org/api_docs/python/tf/function for  more details.",
                stacklevel=3)

    def get_concrete_function(self, *args, **kwargs):
        """The trace for these arguments (tensors or TensorSpecs), tracing it if new."""
        if not args and not kwargs and self._input_signature is not None:
            args = tuple(self._input_signature)
        args, kwargs = self._canonical(args, kwargs)
        structure = (list(args), dict(kwargs))
        flat = nest.flatten(structure)
        specs = []
        example = []
        from ._array_ops import zeros
        for x in flat:
            if isinstance(x, TensorSpec):
                specs.append(x._sig())
                example.append(zeros([1 if d < 0 else d for d in x._sig()[1]], x.dtype))
            elif isinstance(x, Tensor):
                specs.append((x._dtype, [-1 if d is None else d for d in x._shape]))
                example.append(x)
            else:
                example.append(x)
        key = (repr(nest.pack_sequence_as(structure, [0] * len(flat))), tuple(_key_of(x) for x in example))
        cfunc = self._traced.get(key) or self._make(key, structure, example)
        before = cfunc.trace_count
        concrete = cfunc.get_concrete_function(specs)
        if cfunc.trace_count != before:
            self._count_trace()
        return ConcreteFunction(concrete, self, key, structure)

    def __repr__(self):
        return f"<deepflow.function {self._name} at 0x{id(self):X}>"


def function(func=None, input_signature=None, autograph=True, jit_compile=None, reduce_retracing=False,
             experimental_implements=None, experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None, experimental_follow_type_hints=None,
             name=None):
    """tf.function, as a decorator (with or without arguments) or a call."""
    def decorate(f):
        return Function(f, name=name, input_signature=input_signature, autograph=autograph,
                        jit_compile=jit_compile if jit_compile is not None else experimental_compile,
                        reduce_retracing=reduce_retracing, experimental_relax_shapes=experimental_relax_shapes)
    if func is None:
        return decorate
    return decorate(func)
