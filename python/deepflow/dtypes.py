# SPDX-License-Identifier: Apache-2.0
"""tf.dtypes: the element types, as TensorFlow names them.

Each DType wraps the number of the C++ enum deepflow::DType (deepflow/core/dtype.h), which
is what the extension module takes and returns.
"""
import builtins as _builtins

import numpy as np

__all__ = ["DType", "as_dtype", "float32", "float64", "float16", "bfloat16", "int8",
           "uint8", "int32", "int64", "bool", "string", "double", "half"]


class DType:
    """An element type (tf.dtypes.DType)."""

    __slots__ = ("_enum", "_name", "_np")

    def __init__(self, enum, name, np_type):
        self._enum = enum
        self._name = name
        self._np = np_type

    @property
    def name(self):
        return self._name

    @property
    def as_numpy_dtype(self):
        return self._np

    @property
    def base_dtype(self):
        return self

    @property
    def is_floating(self):
        return self._name in ("float32", "float64", "float16", "bfloat16")

    @property
    def is_integer(self):
        return self._name in ("int8", "uint8", "int32", "int64")

    @property
    def is_unsigned(self):
        return self._name == "uint8"

    @property
    def is_bool(self):
        return self._name == "bool"

    @property
    def is_complex(self):
        return False

    @property
    def is_numeric(self):
        return not (self.is_bool or self._name == "string")

    @property
    def size(self):
        return 1 if self._name == "string" else np.dtype(self._np).itemsize

    @property
    def min(self):
        return np.finfo(self._np).min if self.is_floating else np.iinfo(self._np).min

    @property
    def max(self):
        return np.finfo(self._np).max if self.is_floating else np.iinfo(self._np).max

    def is_compatible_with(self, other):
        return self == as_dtype(other)

    def __eq__(self, other):
        if other is None:
            return False
        try:
            return self._enum == as_dtype(other)._enum
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._enum

    def __repr__(self):
        return f"tf.{self._name}"

    def __reduce__(self):
        return as_dtype, (self._name,)


def _bfloat16_np():
    try:
        import ml_dtypes
        return ml_dtypes.bfloat16
    except ImportError:  # numpy has no bfloat16; ml_dtypes (as TF uses) is optional here
        return None


# The order is deepflow::DType's: Float32, Float64, Float16, BFloat16, Int8, UInt8,
# Int32, Int64, Bool, String.
float32 = DType(0, "float32", np.float32)
float64 = DType(1, "float64", np.float64)
float16 = DType(2, "float16", np.float16)
bfloat16 = DType(3, "bfloat16", _bfloat16_np())
int8 = DType(4, "int8", np.int8)
uint8 = DType(5, "uint8", np.uint8)
int32 = DType(6, "int32", np.int32)
int64 = DType(7, "int64", np.int64)
bool = DType(8, "bool", np.bool_)  # noqa: A001 - TensorFlow's name
string = DType(9, "string", np.object_)
double = float64
half = float16

_BY_ENUM = [float32, float64, float16, bfloat16, int8, uint8, int32, int64, bool, string]
_BY_NAME = {d.name: d for d in _BY_ENUM}
_BY_NAME.update({"double": float64, "half": float16, "float": float32})
_BY_NP = {np.dtype(d._np): d for d in _BY_ENUM if d._np is not None and d is not string}


def from_enum(enum):
    return _BY_ENUM[enum]


def as_dtype(type_value):
    """tf.as_dtype: a DType from a DType, a name, a numpy dtype or a Python type."""
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        if type_value in _BY_NAME:
            return _BY_NAME[type_value]
        raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType.")
    if type_value is float:
        return float32
    if type_value is int:
        return int32
    if type_value is _builtins.bool:
        return bool
    if type_value in (str, bytes):
        return string
    try:
        npd = np.dtype(type_value)
    except TypeError:
        raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType.") from None
    if npd.kind in "OSU":
        return string
    if npd in _BY_NP:
        return _BY_NP[npd]
    raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType: "
                    f"deepflow has no {npd} tensors")

