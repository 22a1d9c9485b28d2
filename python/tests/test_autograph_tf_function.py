# SPDX-License-Identifier: Apache-2.0
"""AutoGraph inside tf.function with deepflow's ops (the tf.function guide's examples)."""
import numpy as np
import pytest

import deepflow as tf


def test_tensor_if_becomes_cond_and_python_if_stays_python():
    @tf.function
    def square_if_positive(x):
        if x > 0:
            x = x * x
        else:
            x = 0.0
        return x

    assert float(square_if_positive(tf.constant(3.0))) == 9.0
    assert float(square_if_positive(tf.constant(-2.0))) == 0.0
    assert square_if_positive.experimental_get_tracing_count() == 1


def test_for_over_tf_range_with_continue():
    @tf.function
    def sum_even(items):
        s = 0
        for c in items:
            if c % 2 > 0:
                continue
            s += c
        return s

    assert int(sum_even(tf.constant([10, 12, 15, 20]))) == 42


def test_fizzbuzz_with_tf_range_and_tf_print(capsys):
    @tf.function
    def fizzbuzz(n):
        for i in tf.range(1, n + 1):
            if i % 15 == 0:
                tf.print("FizzBuzz")
            elif i % 3 == 0:
                tf.print("Fizz")
            elif i % 5 == 0:
                tf.print("Buzz")
            else:
                tf.print(i)

    fizzbuzz(tf.constant(15))
    lines = capsys.readouterr().err.split()
    assert lines == ["1", "2", "Fizz", "4", "Buzz", "Fizz", "7", "8", "Fizz", "Buzz", "11", "Fizz", "13", "14",
                     "FizzBuzz"]


def test_while_with_break():
    @tf.function
    def first_power_over(x, limit):
        while True:
            x = x * 2
            if x > limit:
                break
        return x

    # TF refuses a tensor break in a Python loop, with this error and text.
    with pytest.raises(NotImplementedError, match="condition of while loop started as non-Tensor, then changed"):
        first_power_over(tf.constant(1), tf.constant(100))

    @tf.function
    def doubling(x, limit):
        while x < limit:
            x = x * 2
        return x

    assert int(doubling(tf.constant(1), tf.constant(100))) == 128


def test_one_branch_definition_is_an_error():
    @tf.function
    def f(x):
        if x > 0:
            y = x
        return y  # noqa: F821

    with pytest.raises(ValueError, match="must also be initialized in the else branch"):
        f(tf.constant(1.0))


def test_loop_gradients_through_autograph():
    v = tf.Variable(2.0)

    @tf.function
    def f(n):
        with tf.GradientTape() as t:
            y = tf.constant(1.0)
            for _ in tf.range(n):
                y = y * v
        return t.gradient(y, v)

    assert float(f(tf.constant(3))) == pytest.approx(12.0)


def test_do_not_convert_and_to_code():
    @tf.autograph.experimental.do_not_convert
    def plain(x):
        return x

    def branchy(x):
        if x > 0:
            x = x + 1
        return x

    code = tf.autograph.to_code(branchy)
    assert "def " in code and "if_stmt" in code
    np.testing.assert_array_equal(tf.function(plain)(tf.constant([1])).numpy(), [1])
