# SPDX-License-Identifier: Apache-2.0
"""tf.keras.activations: functions on tensors, and by name for layers."""
from .. import _nn, _ops


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return _nn.relu(x)
    from .layers import ReLU
    return ReLU(max_value, negative_slope, threshold)(x)


def linear(x):
    return x


sigmoid, tanh, softplus, selu, elu = _nn.sigmoid, _nn.tanh, _nn.softplus, _nn.selu, _nn.elu
gelu, silu, swish, relu6, leaky_relu = _nn.gelu, _nn.silu, _nn.swish, _nn.relu6, _nn.leaky_relu
exponential = _ops.exp


def softmax(x, axis=-1):
    return _nn.softmax(x, axis)


def log_softmax(x, axis=-1):
    return _nn.log_softmax(x, axis)


def get(identifier):
    if identifier is None:
        return linear
    if callable(identifier):
        return identifier
    fn = globals().get(identifier)
    if fn is None or not callable(fn):
        raise ValueError(f"Could not interpret activation function identifier: {identifier!r}")
    return fn


def serialize(activation):
    return getattr(activation, "__name__", str(activation))
