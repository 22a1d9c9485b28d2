# SPDX-License-Identifier: Apache-2.0
"""tf.function's trace rules, concrete functions, control flow ops and tf.print."""
import warnings

import numpy as np
import pytest

import deepflow as tf


def test_python_side_effects_run_while_tracing_only():
    calls = []

    @tf.function
    def f(x):
        calls.append(1)
        return x * 2

    for _ in range(3):
        f(tf.constant([1.0, 2.0]))
    assert len(calls) == 1
    f(tf.constant([1, 2]))  # another dtype: a new trace
    assert len(calls) == 2


def test_python_values_are_part_of_the_key():
    @tf.function
    def f(x, n):
        return x * n

    assert float(f(tf.constant(2.0), 3)) == 6.0
    assert float(f(tf.constant(2.0), 4)) == 8.0
    assert f.experimental_get_tracing_count() == 2


def test_changing_batch_size_costs_one_retrace():
    @tf.function
    def f(x):
        return tf.reduce_sum(x, axis=1)

    for n in (1, 2, 3, 4, 5, 6):
        f(tf.zeros([n, 3]))
    assert f.experimental_get_tracing_count() == 2


def test_input_signature_and_concrete_function():
    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    def f(x):
        return tf.reduce_sum(x, 0)

    f(tf.zeros([3, 2]))
    f(tf.zeros([5, 2]))
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError):
        f(tf.zeros([3, 3]))
    cf = f.get_concrete_function()
    np.testing.assert_array_equal(cf(tf.ones([4, 2])).numpy(), [4.0, 4.0])
    assert "reduce_sum" in str(cf.graph)
    assert "float32" in cf.pretty_printed_signature()


def test_retracing_warning():
    @tf.function
    def f(x):
        return x + 1

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(6):
            f(i)  # a Python int: a trace per value
    assert any("triggered tf.function retracing" in str(x.message) for x in w)


def test_variables_are_captured_by_reference():
    v = tf.Variable(1.0)

    @tf.function
    def f():
        v.assign_add(1.0)
        return v.read_value()

    assert float(f()) == 2.0
    v.assign(10.0)
    assert float(f()) == 11.0


def test_methods_and_nested_structures():
    class M:
        def __init__(self):
            self.scale = tf.Variable(3.0)

        @tf.function
        def __call__(self, inputs):
            return {"a": inputs["x"] * self.scale, "b": [inputs["y"], 7]}

    out = M()({"x": tf.constant(2.0), "y": tf.constant(1)})
    assert float(out["a"]) == 6.0 and int(out["b"][0]) == 1 and out["b"][1] == 7


def test_cond_and_while_loop_in_a_trace():
    @tf.function
    def f(x, n):
        y = tf.cond(x > 0, lambda: x * 2.0, lambda: -x)
        i, s = tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + y), (tf.constant(0), tf.constant(0.0)))
        return s

    assert float(f(tf.constant(1.5), tf.constant(4))) == 12.0
    assert float(f(tf.constant(-2.0), tf.constant(3))) == 6.0


def test_case_and_switch_case():
    x = tf.constant(3)
    r = tf.case([(x < 2, lambda: tf.constant(1)), (x < 5, lambda: tf.constant(2))], default=lambda: tf.constant(3))
    assert int(r) == 2
    assert int(tf.switch_case(tf.constant(1), [lambda: tf.constant(10), lambda: tf.constant(20)])) == 20


def test_print_runs_every_call(capsys):
    @tf.function
    def f(x):
        tf.print("x =", x)
        return x

    f(tf.constant([1, 2]))
    f(tf.constant([3, 4]))
    err = capsys.readouterr().err
    assert "x = [1 2]" in err and "x = [3 4]" in err


def test_run_functions_eagerly():
    seen = []

    @tf.function
    def f(x):
        seen.append(x.numpy())
        return x

    tf.config.run_functions_eagerly(True)
    try:
        f(tf.constant(1))
        f(tf.constant(2))
    finally:
        tf.config.run_functions_eagerly(False)
    assert seen == [1, 2]


def test_numpy_arguments_are_keyed_as_tensors():
    @tf.function
    def f(x):
        return tf.reduce_sum(x)

    for i in range(4):
        f(np.full((3,), i, dtype=np.float32))
    assert f.experimental_get_tracing_count() == 1
