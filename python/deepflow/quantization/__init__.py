# SPDX-License-Identifier: Apache-2.0
"""tf.quantization: TensorFlow's fake quantization ops, for quantization-aware training.

    y = tf.quantization.fake_quant_with_min_max_vars(x, min_var, max_var, num_bits=8)

FakeQuantWithMinMaxVars' semantics, as TensorFlow computes them:
- The range [min, max] is nudged so that 0 is exactly representable.
- x is clamped to the nudged range and rounded to one of its 2^num_bits levels
  (2^num_bits - 1 with narrow_range).
- Gradients: x gets the straight-through gradient (dy inside the nudged range, 0 outside).
  min gets the sum of dy where x < nudged_min, and max the sum where x > nudged_max.

Each op is a composition of deepflow primitives, written as the straight-through idiom
clamped + stop_gradient(quantized - clamped). deepflow's TF Lite converter recognizes that
idiom and turns the nudged range into the tensor's int8 parameters."""
from .. import _ops
from .. import _deepflow  # noqa: F401
from ..nest import flatten  # noqa: F401

__all__ = ["fake_quant_with_min_max_args", "fake_quant_with_min_max_vars",
           "fake_quant_with_min_max_vars_per_channel"]


def _check_bits(num_bits, what):
    if not 2 <= int(num_bits) <= 16:
        raise ValueError(f"[{what}] num_bits must be in [2, 16], got {num_bits}")


def _fake_quant(inputs, min, max, num_bits, narrow_range):  # noqa: A002 (TensorFlow's names)
    import deepflow as tf
    x = tf.convert_to_tensor(inputs, dtype=tf.float32)
    lo = tf.convert_to_tensor(min, dtype=tf.float32)
    hi = tf.convert_to_tensor(max, dtype=tf.float32)
    qmin = 1.0 if narrow_range else 0.0
    qmax = float(2 ** int(num_bits) - 1)
    sg = tf.stop_gradient
    # Nudging (TensorFlow's Nudge): the zero point rounded and clamped to [qmin, qmax].
    scale = sg((hi - lo) / (qmax - qmin))
    zero_point = tf.clip_by_value(tf.floor(qmin - sg(lo) / scale + 0.5), qmin, qmax)
    nudged_min = (qmin - zero_point) * scale
    nudged_max = (qmax - zero_point) * scale
    # The range's gradients as if no nudging happened: d/dmin and d/dmax reach lo and hi.
    nmin = lo + sg(nudged_min - lo)
    nmax = hi + sg(nudged_max - hi)
    clamped = tf.minimum(tf.maximum(x, nmin), nmax)
    inv_scale = 1.0 / scale
    quantized = tf.floor((clamped - nmin) * inv_scale + 0.5) * scale + nmin
    return clamped + sg(quantized - clamped)


def fake_quant_with_min_max_vars(inputs, min, max, num_bits=8, narrow_range=False, name=None):  # noqa: A002
    """Fake-quantizes a float tensor to [min, max] (scalar tensors or variables)."""
    _check_bits(num_bits, "fake_quant_with_min_max_vars")
    return _fake_quant(inputs, min, max, num_bits, narrow_range)


def fake_quant_with_min_max_vars_per_channel(inputs, min, max, num_bits=8, narrow_range=False, name=None):  # noqa: A002
    """Per channel: min and max are vectors over the last dimension of inputs."""
    _check_bits(num_bits, "fake_quant_with_min_max_vars_per_channel")
    return _fake_quant(inputs, min, max, num_bits, narrow_range)


def fake_quant_with_min_max_args(inputs, min=-6.0, max=6.0, num_bits=8, narrow_range=False, name=None):  # noqa: A002
    """Fake-quantizes to the constant range [min, max]."""
    _check_bits(num_bits, "fake_quant_with_min_max_args")
    if not min < max:
        raise ValueError(f"[fake_quant_with_min_max_args] min ({min}) must be below max ({max})")
    return _fake_quant(inputs, float(min), float(max), num_bits, narrow_range)


del _ops

from . import keras  # noqa: E402,F401  (tf.quantization.keras.quantize_model)
