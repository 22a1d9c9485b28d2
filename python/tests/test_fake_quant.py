# SPDX-License-Identifier: Apache-2.0
"""tf.quantization.fake_quant_with_min_max_vars / _args / _per_channel against TensorFlow 2.21:
the same outputs (nudging, rounding, num_bits, narrow_range) and the same gradients (the
straight-through dx, dmin and dmax summed over the values below / above the nudged range)."""
import numpy as np
import pytest

import deepflow as tf

_TF = """
x = tf.constant(x_np); lo = tf.Variable(lo_np); hi = tf.Variable(hi_np)
with tf.GradientTape() as t:
    t.watch(x)
    if per_channel:
        y = tf.quantization.fake_quant_with_min_max_vars_per_channel(x, lo, hi, num_bits=bits, narrow_range=narrow)
    else:
        y = tf.quantization.fake_quant_with_min_max_vars(x, lo, hi, num_bits=bits, narrow_range=narrow)
    loss = tf.reduce_sum(y * w_np)
result = [y] + t.gradient(loss, [x, lo, hi])
"""


@pytest.mark.parametrize("bits,narrow,per_channel", [(8, False, False), (8, True, False), (4, False, False),
                                                     (3, True, False), (8, False, True), (6, True, True)])
def test_matches_tensorflow(tf_oracle, bits, narrow, per_channel):
    rng = np.random.default_rng(bits * 7 + narrow)
    x_np = (rng.standard_normal((4, 5, 3)) * 2).astype(np.float32)
    w_np = rng.standard_normal((4, 5, 3)).astype(np.float32)
    if per_channel:
        lo_np = np.array([-1.3, -0.2, 0.4], np.float32)
        hi_np = np.array([1.1, 2.5, 3.0], np.float32)
    else:
        lo_np, hi_np = np.float32(-1.7), np.float32(2.2)
    want = tf_oracle.run(_TF, x_np=x_np, w_np=w_np, lo_np=lo_np, hi_np=hi_np, bits=bits, narrow=narrow,
                         per_channel=per_channel)
    x = tf.constant(x_np)
    lo, hi = tf.Variable(lo_np), tf.Variable(hi_np)
    fq = (tf.quantization.fake_quant_with_min_max_vars_per_channel if per_channel
          else tf.quantization.fake_quant_with_min_max_vars)
    with tf.GradientTape() as t:
        t.watch(x)
        y = fq(x, lo, hi, num_bits=bits, narrow_range=narrow)
        loss = tf.reduce_sum(y * w_np)
    got = [y] + t.gradient(loss, [x, lo, hi])
    for g, (_, _, w) in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=1e-6)


def test_args_and_bad_bits():
    y = tf.quantization.fake_quant_with_min_max_args(np.array([-7.0, 0.1, 5.99], np.float32), min=-6.0, max=6.0)
    assert np.asarray(y)[0] == pytest.approx(-6.0, abs=0.03)
    with pytest.raises(ValueError, match="num_bits"):
        tf.quantization.fake_quant_with_min_max_vars(np.zeros(3, np.float32), -1.0, 1.0, num_bits=1)
