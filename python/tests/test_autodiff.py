# SPDX-License-Identifier: Apache-2.0
"""tf.GradientTape in Python, against TensorFlow 2.21 where values are involved."""
import numpy as np
import pytest

import deepflow as tf
from tf_oracle import assert_same, to_oracle_form

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=np.float32)


def test_watches_trainable_variables_and_nested_sources(tf_oracle):
    code = """
w = tf.Variable(x)
b = tf.Variable([1.0, 2.0, 3.0])
with tf.GradientTape() as tape:
    y = tf.reduce_sum(tf.tanh(w * b) ** 2)
g = tape.gradient(y, {'w': w, 'b': [b]})
result = [g['w'], g['b'][0]]
"""
    env = {"tf": tf, "np": np, "x": X}
    exec(code, env)
    assert_same(to_oracle_form(env["result"]), tf_oracle.run(code, x=X))


def test_watch_persistent_and_nested_tapes(tf_oracle):
    code = """
x = tf.constant(3.0)
with tf.GradientTape(persistent=True) as outer:
    outer.watch(x)
    with tf.GradientTape() as inner:
        inner.watch(x)
        y = x * x * x
    dy = inner.gradient(y, x)
d2y = outer.gradient(dy, x)
dz = outer.gradient(y, x)
result = [dy, d2y, dz]
"""
    env = {"tf": tf}
    exec(code, env)
    assert_same(to_oracle_form(env["result"]), tf_oracle.run(code))


def test_non_persistent_tape_is_used_once():
    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = x * x
    t.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent GradientTape"):
        t.gradient(y, x)


def test_unconnected_and_stop_recording():
    x = tf.Variable(1.0)
    z = tf.Variable(5.0)
    with tf.GradientTape(persistent=True) as t:
        y = x * 2.0
        with t.stop_recording():
            w = x * 3.0
    assert t.gradient(y, z) is None
    assert float(t.gradient(y, z, unconnected_gradients=tf.UnconnectedGradients.ZERO)) == 0.0
    assert t.gradient(w, x) is None
    assert float(t.gradient(y, x)) == 2.0


def test_watch_accessed_variables_false():
    v = tf.Variable(2.0)
    with tf.GradientTape(watch_accessed_variables=False) as t:
        y = v * v
    assert t.gradient(y, v) is None


def test_jacobian_and_batch_jacobian(tf_oracle):
    code = """
x = tf.constant(x_in)
with tf.GradientTape(persistent=True) as t:
    t.watch(x)
    y = tf.sin(x) * 2.0
result = [t.jacobian(y, x), t.batch_jacobian(y, x)]
"""
    env = {"tf": tf, "x_in": X}
    exec(code, env)
    assert_same(to_oracle_form(env["result"]), tf_oracle.run(code, x_in=X))


def test_stop_gradient_and_custom_gradient(tf_oracle):
    code = """
@tf.custom_gradient
def clip_grad(x):
    def grad(dy):
        return tf.clip_by_value(dy, -0.1, 0.1)
    return tf.identity(x), grad
x = tf.constant([1.0, 2.0])
with tf.GradientTape(persistent=True) as t:
    t.watch(x)
    y = tf.reduce_sum(clip_grad(x) * 5.0)
    z = tf.reduce_sum(tf.stop_gradient(x) * x)
result = [t.gradient(y, x), t.gradient(z, x)]
"""
    env = {"tf": tf}
    exec(code, env)
    assert_same(to_oracle_form(env["result"]), tf_oracle.run(code))


def test_gradient_inside_tf_function_matches_eager():
    w = tf.Variable(X)

    @tf.function
    def step(x):
        with tf.GradientTape() as t:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w, transpose_b=True)))
        return t.gradient(loss, w)

    with tf.GradientTape() as t:
        loss = tf.reduce_mean(tf.square(tf.matmul(X, w, transpose_b=True)))
    np.testing.assert_allclose(step(tf.constant(X)).numpy(), t.gradient(loss, w).numpy(), rtol=1e-5)
