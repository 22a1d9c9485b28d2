# SPDX-License-Identifier: Apache-2.0
"""tf.compat.v1 graphs and sessions, and tf.load_op_library."""
import os

import numpy as np
import pytest

import deepflow as tf

BUILD = os.environ.get("DEEPFLOW_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))


def test_placeholder_session_feed_dict():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=[None, 3])
        w = tf.Variable(tf.ones([3, 2]))
        y = tf.matmul(x, w) + 1.0
        init = tf.compat.v1.global_variables_initializer()
        assert not tf.executing_eagerly()
    with tf.compat.v1.Session(graph=g) as sess:
        sess.run(init)
        out = sess.run({"y": y, "both": [y, x]}, feed_dict={x: np.ones((2, 3))})
    np.testing.assert_array_equal(out["y"], np.full((2, 2), 4.0))
    np.testing.assert_array_equal(out["both"][1], np.ones((2, 3)))


def test_unfed_placeholder_is_a_clear_error():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=[2])
        y = x * 2.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="placeholder"):
        tf.compat.v1.Session(graph=g).run(y)


def test_symbolic_gradients_in_a_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=[3])
        y = tf.reduce_sum(x * x)
        (dx,) = tf.compat.v1.gradients(y, [x])
    out = tf.compat.v1.Session(graph=g).run(dx, feed_dict={x: [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(out, [2.0, 4.0, 6.0])


def _op_library():
    path = os.path.join(BUILD, "python", "time_two_op.so")
    if not os.path.exists(path):
        from tf_oracle import oracle_missing
        oracle_missing(f"{path} is not built (make python builds it)")  # a failure when CI is set
    return tf.load_op_library(path)


def test_custom_op_eager_traced_graph_and_gradient():
    lib = _op_library()
    assert "time_two" in lib.OP_LIST
    x = tf.constant([1.0, 2.0])
    np.testing.assert_array_equal(lib.time_two(x).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(lib.time_two(tf.constant([3]), factor=3.0).numpy(), [9])
    f = tf.function(lambda v: lib.time_two(v) + 1.0)
    np.testing.assert_array_equal(f(x).numpy(), [3.0, 5.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(lib.time_two(x, factor=5.0))
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), [5.0, 5.0])
    g = tf.Graph()
    with g.as_default():
        p = tf.compat.v1.placeholder(tf.float32, [2])
        q = lib.time_two(p)
    np.testing.assert_array_equal(tf.compat.v1.Session(graph=g).run(q, {p: [4.0, 5.0]}), [8.0, 10.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[time_two\] expects float32 or int32"):
        lib.time_two(tf.constant([1.0], dtype=tf.float64))
