# SPDX-License-Identifier: Apache-2.0
"""tf.Variable: state that ops read and assign, over deepflow::Variable. Reads inside a
tf.function or a graph are read_variable nodes, so later assigns are seen; a GradientTape
watches trainable variables when they are read."""
import numpy as np

from . import _deepflow
from . import dtypes
from ._op_util import convert_to_tensor
from .tensor_shape import TensorShape

Tensor = _deepflow.Tensor


class VariableSynchronization:
    AUTO, NONE, ON_WRITE, ON_READ = range(4)


class VariableAggregation:
    NONE, SUM, MEAN, ONLY_FIRST_REPLICA = range(4)


def _initial_tensor(initial_value, dtype):
    if callable(initial_value):
        initial_value = initial_value()
    if dtype is not None:
        from . import _array_ops
        t = _array_ops.constant(initial_value, dtype=dtype) if not isinstance(initial_value, Tensor) \
            else initial_value
        if t.dtype != dtypes.as_dtype(dtype):
            from . import _ops
            t = _ops.cast(t, dtype)
    else:
        t = convert_to_tensor(initial_value)
    if t._is_symbolic:
        # tf.compat.v1 code creates variables from initializer ops in a graph; run them
        # now (deepflow initializes variables when they are created).
        from . import _graph
        t = _graph.evaluate_initializer(t)
    return t


class Variable(_deepflow.Variable):
    """tf.Variable(initial_value, trainable=True, name=None, dtype=None, shape=None, ...)."""

    _uid = 0

    def __init__(self, initial_value=None, trainable=None, validate_shape=True, caching_device=None,
                 name=None, variable_def=None, dtype=None, import_scope=None, constraint=None,
                 synchronization=VariableSynchronization.AUTO, aggregation=VariableAggregation.NONE,
                 shape=None, experimental_enable_variable_lifting=True):
        if initial_value is None:
            raise ValueError("The `initial_value` arg (None) must be specified")
        t = _initial_tensor(initial_value, dtype)
        if synchronization == VariableSynchronization.ON_READ and trainable:
            raise ValueError("Synchronization value can be set to VariableSynchronization.ON_READ only "
                             "for non-trainable variables.")
        if trainable is None:
            trainable = synchronization != VariableSynchronization.ON_READ
        base = name if name is not None else "Variable"
        super().__init__(t, base, bool(trainable))
        self._constraint = constraint
        self._shape_override = TensorShape(shape) if shape is not None else None
        self._aggregation = aggregation
        self._synchronization = synchronization

    @classmethod
    def _share(cls, cpp_variable):
        """A tf.Variable object over an existing C++ variable's state (a layer's weight)."""
        v = cls.__new__(cls)
        _deepflow.Variable.__init__(v, cpp_variable, True)
        v._constraint = None
        v._shape_override = None
        v._aggregation = VariableAggregation.NONE
        v._synchronization = VariableSynchronization.AUTO
        return v

    # --- attributes ---
    @property
    def name(self):
        return f"{self._name}:0"

    @property
    def dtype(self):
        return dtypes.from_enum(self._dtype)

    @property
    def shape(self):
        return self._shape_override or TensorShape(self._shape_list)

    def get_shape(self):
        return self.shape

    @property
    def trainable(self):
        return self._trainable

    @property
    def constraint(self):
        return self._constraint

    @property
    def aggregation(self):
        return self._aggregation

    @property
    def synchronization(self):
        return self._synchronization

    @property
    def device(self):
        return "/job:localhost/replica:0/task:0/device:CPU:0"

    @property
    def ndim(self):
        return len(self._shape_list)

    @property
    def initial_value(self):
        return self.value()

    def read_value(self):
        return self.value()

    def numpy(self):
        return self.value().numpy()

    # --- writes: TensorFlow returns the variable (read_value) or None ---
    def assign(self, value, use_locking=None, name=None, read_value=True):
        self._assign(self._coerce(value))
        return self if read_value else None

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        self._assign_add(self._coerce(delta))
        return self if read_value else None

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        self._assign_sub(self._coerce(delta))
        return self if read_value else None

    def _coerce(self, value):
        if isinstance(value, Variable):
            value = value.value()
        return value if isinstance(value, Tensor) else convert_to_tensor(value, dtype=self.dtype)

    # --- tensor protocol ---
    def __array__(self, dtype=None, copy=None):
        return np.array(self.value().numpy(), dtype=dtype)

    def __repr__(self):
        v = self.value()
        if v._is_symbolic:
            return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"
        a = v.numpy()
        shown = np.array_repr(a) if isinstance(a, np.ndarray) else repr(a)
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, numpy={shown}>"

    def __hash__(self):
        raise TypeError("Variable is unhashable. Instead, use variable.ref() as the key.")

    def ref(self):
        from ._tensor import _Ref
        return _Ref(self)

    experimental_ref = ref

    def __len__(self):
        return len(self.value())

    def __iter__(self):
        return iter(self.value())

    def __bool__(self):
        return bool(self.value())

    def __float__(self):
        return float(self.value())

    def __int__(self):
        return int(self.value())

    def __index__(self):
        return self.value().__index__()

    def __getitem__(self, key):
        return self.value()[key]

    def __deepcopy__(self, memo):
        return Variable(self.value(), trainable=self.trainable, name=self._name)

    def __copy__(self):
        return self


def _delegate(name):
    def f(self, *args):
        return getattr(self.value(), name)(*args)
    f.__name__ = name
    return f


for _n in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
           "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__",
           "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__lt__", "__le__", "__gt__", "__ge__",
           "__eq__", "__ne__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__",
           "__invert__", "__format__"):
    setattr(Variable, _n, _delegate(_n))
Variable.__array_priority__ = 100
