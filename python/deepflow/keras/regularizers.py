# SPDX-License-Identifier: Apache-2.0
"""tf.keras.regularizers: L1, L2, L1L2 (the C++ regularizers, from their Keras configs)."""
from ._serializable import KerasObject as _KerasObject


class Regularizer(_KerasObject):
    """A Keras regularizer: its penalty of a weight, and its config for the C++ side."""

    def __call__(self, x):
        from .. import _ops
        c = self._config
        out = 0.0
        if c.get("l1"):
            out = out + c["l1"] * _ops.reduce_sum(_ops.abs(x))
        if c.get("l2"):
            out = out + c["l2"] * _ops.reduce_sum(_ops.square(x))
        return out


class L1(Regularizer):
    _keras_class = "L1"

    def __init__(self, l1=0.01):
        super().__init__(l1=float(l1))


class L2(Regularizer):
    _keras_class = "L2"

    def __init__(self, l2=0.01):
        super().__init__(l2=float(l2))


class L1L2(Regularizer):
    _keras_class = "L1L2"

    def __init__(self, l1=0.0, l2=0.0):
        super().__init__(l1=float(l1), l2=float(l2))


l1, l2, l1_l2 = L1, L2, L1L2


def get(identifier):
    if identifier is None or isinstance(identifier, (str, Regularizer)):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}")
