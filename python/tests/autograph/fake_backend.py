# SPDX-License-Identifier: Apache-2.0
"""A pure-Python backend for testing AutoGraph without deepflow's tensors.

FakeTensor holds a concrete value (a Python scalar or nested lists) but acts
like a symbolic tensor towards Python: bool() and iteration raise
OperatorNotAllowedInGraphError, so a tensor condition that AutoGraph failed
to route to the backend makes the test fail.  FakeBackend runs cond and
while_loop faithfully: cond calls both branches (as tracing does) and
returns the selected one, while_loop runs the loop in Python, and each call
is counted in `calls`.  Side effects that graph execution would only perform
on the taken path (print_) are recorded only when every enclosing cond
branch is the taken one, so programs like fizzbuzz can be checked by output.
"""
import collections
import contextlib
import operator

import autograph


class FakeInvalidArgumentError(Exception):
    """What a failed staged assertion raises at run time."""


def _leaves_dtype(value):
    while isinstance(value, list):
        if not value:
            return 'float32'
        value = value[0]
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, int):
        return 'int32'
    return 'float32'


def _shape(value):
    if isinstance(value, list):
        return (len(value),) + (_shape(value[0]) if value else ())
    return ()


def _cast_value(value, dtype):
    if isinstance(value, list):
        return [_cast_value(v, dtype) for v in value]
    return {'bool': bool, 'int32': int}.get(dtype, float)(value)


class FakeTensor:
    __hash__ = None

    def __init__(self, value, dtype=None):
        if isinstance(value, FakeTensor):
            value = value.value
        self.dtype = dtype or _leaves_dtype(value)
        self.value = _cast_value(value, self.dtype)
        self.shape = _shape(self.value)

    def numpy(self):
        return self.value

    def __repr__(self):
        return f'<FakeTensor {self.value!r} dtype={self.dtype}>'

    def __bool__(self):
        raise autograph.operator_not_allowed(
            'Using a symbolic `tf.Tensor` as a Python `bool`')

    def __iter__(self):
        raise autograph.operator_not_allowed('Iterating over a symbolic `tf.Tensor`')

    def __index__(self):
        raise TypeError('a symbolic tensor cannot be used as a Python int')

    def __getitem__(self, index):
        if isinstance(index, FakeTensor):
            index = index.value
        return FakeTensor(self.value[index], self.dtype)

    def _binary(self, other, op, dtype=None, reverse=False):
        other_dtype = other.dtype if isinstance(other, FakeTensor) else None
        other_value = other.value if isinstance(other, FakeTensor) else other
        if dtype is None:
            kinds = {self.dtype, other_dtype or self.dtype}
            if isinstance(other, float) or any(k.startswith('float') for k in kinds):
                dtype = 'float32'
            else:
                dtype = 'int32' if 'bool' not in kinds or len(kinds) > 1 else 'bool'
        a, b = (other_value, self.value) if reverse else (self.value, other_value)
        return FakeTensor(_elementwise(op, a, b), dtype)

    def __add__(self, o): return self._binary(o, operator.add)
    def __radd__(self, o): return self._binary(o, operator.add, reverse=True)
    def __sub__(self, o): return self._binary(o, operator.sub)
    def __rsub__(self, o): return self._binary(o, operator.sub, reverse=True)
    def __mul__(self, o): return self._binary(o, operator.mul)
    def __rmul__(self, o): return self._binary(o, operator.mul, reverse=True)
    def __truediv__(self, o): return self._binary(o, operator.truediv, 'float32')
    def __floordiv__(self, o): return self._binary(o, operator.floordiv)
    def __mod__(self, o): return self._binary(o, operator.mod)
    def __rmod__(self, o): return self._binary(o, operator.mod, reverse=True)
    def __lt__(self, o): return self._binary(o, operator.lt, 'bool')
    def __le__(self, o): return self._binary(o, operator.le, 'bool')
    def __gt__(self, o): return self._binary(o, operator.gt, 'bool')
    def __ge__(self, o): return self._binary(o, operator.ge, 'bool')
    def __eq__(self, o): return self._binary(o, operator.eq, 'bool')
    def __ne__(self, o): return self._binary(o, operator.ne, 'bool')

    def __neg__(self):
        return FakeTensor(_elementwise(lambda a, _: -a, self.value, 0), self.dtype)

    def __abs__(self):
        return FakeTensor(_elementwise(lambda a, _: abs(a), self.value, 0), self.dtype)


def _elementwise(op, a, b):
    if isinstance(a, list) and isinstance(b, list):
        return [_elementwise(op, x, y) for x, y in zip(a, b)]
    if isinstance(a, list):
        return [_elementwise(op, x, b) for x in a]
    if isinstance(b, list):
        return [_elementwise(op, a, y) for y in b]
    return op(a, b)


class FakeDataset:
    def __init__(self, elements):
        self.elements = list(elements)

    def __iter__(self):  # eager iteration, as tf.data allows outside functions
        return iter(self.elements)


def _value(x):
    return x.value if isinstance(x, FakeTensor) else x


def _as_tensors(value):
    """Python scalars in a structure become tensors, as staged outputs do."""
    if isinstance(value, (bool, int, float)):
        return FakeTensor(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_as_tensors(v) for v in value)
    if isinstance(value, dict):
        return {k: _as_tensors(v) for k, v in value.items()}
    return value


class FakeBackend:

    def __init__(self, with_optional=True):
        self.calls = collections.Counter()
        self.printed = []
        self._active = [True]
        self._staging = 0
        if not with_optional:
            # Instance attributes shadow the methods: the operators see None.
            self.zeros_like = self.assert_true = self.staging_scope = None

    def _count(self, name):
        if not self._staging:
            self.calls[name] += 1

    @contextlib.contextmanager
    def _branch(self, taken):
        self._active.append(self._active[-1] and taken)
        try:
            yield
        finally:
            self._active.pop()

    def is_tensor(self, x):
        return isinstance(x, FakeTensor)

    def is_dataset(self, x):
        return isinstance(x, FakeDataset)

    def cond(self, pred, true_fn, false_fn):
        self._count('cond')
        taken = bool(_value(pred))
        with self._branch(taken):
            true_vals = tuple(true_fn())
        with self._branch(not taken):
            false_vals = tuple(false_fn())
        if len(true_vals) != len(false_vals):
            raise ValueError('cond branches returned different numbers of values')
        return _as_tensors(true_vals if taken else false_vals)

    def while_loop(self, cond_fn, body_fn, loop_vars, maximum_iterations=None,
                   shape_invariants=None):
        self._count('while_loop')
        self.last_while_options = {'maximum_iterations': maximum_iterations,
                                   'shape_invariants': shape_invariants}
        limit = _value(maximum_iterations)
        values = _as_tensors(tuple(loop_vars))
        iterations = 0
        while limit is None or iterations < limit:
            if not _value(cond_fn(*values)):
                break
            new_values = tuple(body_fn(*values))
            if len(new_values) != len(values):
                raise ValueError('while_loop body changed the number of loop vars')
            values = _as_tensors(new_values)
            iterations += 1
        return values

    def logical_and(self, a, b):
        self.calls['logical_and'] += 1
        return FakeTensor(_elementwise(lambda x, y: x and y, _value(a), _value(b)), 'bool')

    def logical_or(self, a, b):
        self.calls['logical_or'] += 1
        return FakeTensor(_elementwise(lambda x, y: x or y, _value(a), _value(b)), 'bool')

    def logical_not(self, a):
        self.calls['logical_not'] += 1
        return FakeTensor(_elementwise(lambda x, _: not x, _value(a), False), 'bool')

    def tensor_len(self, t):
        return FakeTensor(len(t.value), 'int32')

    def getitem(self, t, i):
        index = _value(i)
        if not 0 <= index < len(t.value):
            # Symbolic tracing reads no data; the fake stages such reads
            # (e.g. of an empty tensor) as a zero.
            return FakeTensor(0, t.dtype)
        return t[i]

    def dataset_reduce(self, ds, initial_state, reduce_fn):
        self._count('dataset_reduce')
        state = _as_tensors(tuple(initial_state))
        for element in ds.elements:
            state = _as_tensors(tuple(reduce_fn(state, element)))
        return state

    def dtype_of(self, x):
        return x.dtype if isinstance(x, FakeTensor) else None

    def shape_of(self, x):
        return x.shape if isinstance(x, FakeTensor) else None

    def zeros_like(self, x):
        return FakeTensor(_elementwise(lambda v, _: 0, x.value, 0), x.dtype)

    def assert_true(self, pred, message):
        if self._active[-1] and not self._staging and not _value(pred):
            raise FakeInvalidArgumentError(message)

    @contextlib.contextmanager
    def staging_scope(self):
        self._staging += 1
        self._active.append(False)
        try:
            yield
        finally:
            self._active.pop()
            self._staging -= 1

    def range(self, start, limit=None, delta=1):
        if limit is None:
            start, limit = 0, start
        return FakeTensor(list(range(_value(start), _value(limit), _value(delta))), 'int32')

    def print_(self, *args):
        if self._active[-1] and not self._staging:
            self.printed.append(' '.join(str(_value(a)) for a in args))


# The small "tf" that test programs call.

def current():
    backend = autograph.get_backend()
    assert isinstance(backend, FakeBackend), 'the fake backend is not installed'
    return backend


def constant(value, dtype=None):
    return FakeTensor(value, dtype)


def tf_range(start, limit=None, delta=1):
    return current().range(start, limit, delta)


def cast(x, dtype):
    return FakeTensor(_value(x), dtype)


def tf_print(*args):
    current().print_(*args)


def equal(a, b):
    return constant(a) == b


def greater(a, b):
    return constant(a) > b
