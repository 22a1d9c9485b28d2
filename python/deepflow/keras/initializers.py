# SPDX-License-Identifier: Apache-2.0
"""tf.keras.initializers: initializer objects, given to layers by name or object (the C++
initializers are made from their Keras configs); calling one makes a tensor."""
from ._serializable import KerasObject as _KerasObject, keras_class as _keras_class


class Initializer(_KerasObject):
    """A Keras initializer: a name and a config (the C++ initializer is made from them)."""

    def __call__(self, shape, dtype=None):
        from .layers import Dense  # noqa: F401 - keep the registry loaded
        from .. import dtypes
        from ._layer import Layer
        holder = Layer(name="initializer")
        dt = dtypes.as_dtype(dtype or "float32")
        v = holder._add_weight("value", [int(d) for d in shape], self, False, None, dt._enum)
        return v.value()


def _init(cls_name, names):
    return _keras_class(Initializer, cls_name, names, __name__)


Zeros = _init("Zeros", [])
Ones = _init("Ones", [])
Constant = _init("Constant", ["value"])
RandomNormal = _init("RandomNormal", ["mean", "stddev", "seed"])
RandomUniform = _init("RandomUniform", ["minval", "maxval", "seed"])
TruncatedNormal = _init("TruncatedNormal", ["mean", "stddev", "seed"])
GlorotUniform = _init("GlorotUniform", ["seed"])
GlorotNormal = _init("GlorotNormal", ["seed"])
HeUniform = _init("HeUniform", ["seed"])
HeNormal = _init("HeNormal", ["seed"])
LecunUniform = _init("LecunUniform", ["seed"])
LecunNormal = _init("LecunNormal", ["seed"])
Orthogonal = _init("Orthogonal", ["gain", "seed"])
zeros, ones = Zeros, Ones
glorot_uniform, glorot_normal, he_normal, he_uniform = GlorotUniform, GlorotNormal, HeNormal, HeUniform


def get(identifier):
    if identifier is None or isinstance(identifier, (str, Initializer)):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")
