# SPDX-License-Identifier: Apache-2.0
"""The Python half of tf.Tensor: what is not on the hot path of the C++ class
(python/src/tensor.cpp): dtype and shape objects, numpy access, repr, indexing with
TensorFlow's strided-slice semantics, truth value and conversion protocols."""
import numpy as np

from . import _deepflow
from . import dtypes
from .tensor_shape import TensorShape

Tensor = _deepflow.Tensor


from .autograph.errors import OperatorNotAllowedInGraphError  # noqa: E402 - one class, AutoGraph's

def _symbolic_error(what):
    from .autograph import operator_not_allowed
    return operator_not_allowed(what)


def _numpy(self):
    """A copy of the value as a numpy array (a numpy scalar for rank 0), as TF's .numpy()."""
    if self._is_symbolic:
        raise NotImplementedError("numpy() is only available when eager execution is enabled.")
    if self._dtype == dtypes.string._enum:
        a = self._numpy_view()
        return a[()] if a.ndim == 0 else a
    if self._dtype == dtypes.bfloat16._enum:
        return _bfloat16_numpy(self)
    a = np.array(self._numpy_view())
    return a[()] if a.ndim == 0 else a


def _bfloat16_numpy(t):
    bf = dtypes.bfloat16.as_numpy_dtype
    from . import _ops
    f = np.array(_ops.cast(t, dtypes.float32)._numpy_view())
    return f.astype(bf) if bf is not None else f


def _array(self, dtype=None, copy=None):
    """numpy's protocol: np.asarray(t) views the tensor's buffer without a copy."""
    if self._is_symbolic:
        raise NotImplementedError(
            f"Cannot convert a symbolic tf.Tensor ({self._to_string()}) to a numpy array. "
            "This error may indicate that you're trying to pass a Tensor to a NumPy call, "
            "which is not supported.")
    if self._dtype == dtypes.bfloat16._enum:
        a = _bfloat16_numpy(self)
    else:
        a = self._numpy_view()
    if dtype is not None and np.dtype(dtype) != a.dtype:
        return a.astype(dtype)
    if copy:
        return np.array(a)
    return a


def _repr(self):
    if self._is_symbolic:
        return f"<tf.Tensor '{self.name}' shape={self.shape} dtype={self.dtype.name}>"
    return f"<tf.Tensor: shape={self.shape}, dtype={self.dtype.name}, numpy={_np_repr(self)}>"


def _np_repr(t):
    a = t.numpy()
    if isinstance(a, np.ndarray):
        return np.array_repr(a)
    return repr(a)


def _str(self):
    if self._is_symbolic:
        return f"Tensor(\"{self.name}\", shape={self.shape}, dtype={self.dtype.name})"
    return f"tf.Tensor({str(np.asarray(self.numpy()))}, shape={self.shape}, dtype={self.dtype.name})"


def _bool(self):
    if self._is_symbolic:
        raise _symbolic_error("Using a symbolic `tf.Tensor` as a Python `bool`")
    return bool(self.numpy())


def _scalar_protocol(kind):
    def convert(self):
        if self._is_symbolic:
            raise TypeError(f"Cannot convert a symbolic tf.Tensor to a Python {kind.__name__}")
        return kind(self.numpy())
    return convert


def _index(self):
    if self._is_symbolic or not dtypes.from_enum(self._dtype).is_integer:
        raise TypeError("Only integer scalar tensors can be converted to a scalar index")
    return int(self.numpy())


def _iter(self):
    if self._is_symbolic:
        raise _symbolic_error("Iterating over a symbolic `tf.Tensor`")
    if self.ndim == 0:
        raise TypeError("Cannot iterate over a scalar tensor.")
    from . import _ops
    return iter(_ops.unstack(self))


def _eq(self, other):
    from . import _ops
    if other is None:
        return False
    if isinstance(other, Tensor):
        o = other
    else:  # a Python or numpy value takes this tensor's dtype, as in TensorFlow
        from ._convert import try_convert_to_tensor
        o = try_convert_to_tensor(other, self._dtype)
        if o is None:
            return False
    if o._dtype != self._dtype:
        return False
    try:
        return _ops.equal(self, o)
    except ValueError:  # shapes that do not broadcast: False, as in TF 2
        return False


def _ne(self, other):
    from . import _ops
    r = _eq(self, other)
    return _ops.logical_not(r) if isinstance(r, Tensor) else not r


class _Ref:
    """t.ref(): a hashable handle comparing by identity (tf.Tensor.ref)."""

    __slots__ = ("_t",)

    def __init__(self, t):
        self._t = t

    def deref(self):
        return self._t

    def __hash__(self):
        return id(self._t)

    def __eq__(self, other):
        return isinstance(other, _Ref) and other._t is self._t


def _binary(name, reflected=False):
    def op(self, other):
        from . import _ops
        try:
            o = other if isinstance(other, Tensor) else _ops.convert_to_tensor(other, dtype=self.dtype)
        except (TypeError, ValueError):
            return NotImplemented
        fn = getattr(_ops, name)
        return fn(o, self) if reflected else fn(self, o)
    op.__name__ = f"__{'r' if reflected else ''}{name}__"
    return op


def _getitem(self, key):
    from ._slicing import getitem
    return getitem(self, key)


def _install():
    T = Tensor
    T.dtype = property(lambda self: dtypes.from_enum(self._dtype))
    T.shape = property(lambda self: TensorShape(self._shape))
    T.get_shape = lambda self: TensorShape(self._shape)
    T.numpy = _numpy
    T.__array__ = _array
    T.__repr__ = _repr
    T.__str__ = _str
    T.__bool__ = _bool
    T.__nonzero__ = _bool
    T.__float__ = _scalar_protocol(float)
    T.__int__ = _scalar_protocol(int)
    T.__complex__ = _scalar_protocol(complex)
    T.__index__ = _index
    T.__iter__ = _iter
    T.__eq__ = _eq
    T.__ne__ = _ne
    T.__getitem__ = _getitem
    T.__copy__ = lambda self: self
    T.__deepcopy__ = lambda self, memo: self
    T.__reduce__ = lambda self: (_ops_constant, (self.numpy(),))
    T.__format__ = lambda self, spec: format(self.numpy(), spec) if not self._is_symbolic else str(self)
    T.ref = lambda self: _Ref(self)
    T.experimental_ref = T.ref
    T.device = property(lambda self: "/job:localhost/replica:0/task:0/device:CPU:0")
    T.name = property(lambda self: "Tensor" if not self._is_symbolic else "tensor:0")
    T.graph = property(lambda self: None)
    T.rank = property(lambda self: self.ndim)
    T.is_symbolic = property(lambda self: self._is_symbolic)
    for name, op in (("floordiv", "floordiv"), ("mod", "floormod"), ("and", "logical_and_or_bitwise"),
                     ("or", "logical_or_or_bitwise"), ("xor", "logical_xor_or_bitwise")):
        setattr(T, f"__{name}__", _binary(op))
        setattr(T, f"__r{name}__", _binary(op, reflected=True))
    T.__invert__ = _invert
    T.eval = _eval


def _invert(self):
    from . import _ops
    return _ops.invert(self)


def _ops_constant(value):
    from . import _ops
    return _ops.constant(value)


def _eval(self, feed_dict=None, session=None):
    from .compat import v1
    sess = session or v1.get_default_session()
    if sess is None:
        raise ValueError("Cannot evaluate tensor using `eval()`: No default session is registered.")
    return sess.run(self, feed_dict=feed_dict)


_install()
