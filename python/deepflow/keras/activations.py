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


sigmoid, tanh = _nn.sigmoid, _nn.tanh
exponential = _ops.exp


# Keras 3's argument names (x, negative_slope), over tf.nn's.
def elu(x, alpha=1.0):
    if alpha == 1.0:
        return _nn.elu(x)
    x = _ops.convert_to_tensor(x)
    return _ops.where(x > 0, x, alpha * (_ops.exp(x) - 1))


def selu(x):
    return _nn.selu(x)


def softplus(x):
    return _nn.softplus(x)


def gelu(x, approximate=False):
    return _nn.gelu(x, approximate)


def silu(x):
    return _nn.silu(x)


swish = silu


def relu6(x):
    return _nn.relu6(x)


def leaky_relu(x, negative_slope=0.2):
    return _nn.leaky_relu(x, negative_slope)


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
