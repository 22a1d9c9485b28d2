# SPDX-License-Identifier: Apache-2.0
"""Datasets inside tf.function: `for x in dataset` (AutoGraph) and Dataset.reduce run as
a loop in the graph over a new pass each call, compared with TensorFlow 2.21."""
import numpy as np
import pytest

import deepflow as tf
from tf_oracle import assert_same, to_oracle_form

CODE = """
ds = tf.data.Dataset.from_tensor_slices(np.arange(10, dtype=np.float32)).batch(4)

@tf.function
def total_and_count():
    s = tf.constant(0.0)
    n = tf.constant(0)
    for batch in ds:                       # the last batch has 2 elements
        s += tf.reduce_sum(batch * 2.0)
        n += tf.shape(batch)[0]
    return s, n

@tf.function
def first_over(limit):
    found = tf.constant(-1, tf.int64)
    for x in tf.data.Dataset.range(100).map(lambda v: v * 3):
        if x > limit:
            found = x
            break
    return found

@tf.function
def reduced():
    pairs = tf.data.Dataset.from_tensor_slices((np.arange(5, dtype=np.int32), np.ones(5, np.float32)))
    return pairs.reduce((tf.constant(0), tf.constant(0.0)), lambda st, e: (st[0] + e[0], st[1] + e[1]))

a = total_and_count()
b = total_and_count()                      # a new pass each call
result = [a, b, first_over(tf.constant(10, tf.int64)), first_over(tf.constant(1000, tf.int64)), reduced()]
"""


def test_dataset_loops_in_tf_function_match_tensorflow(tf_oracle, tmp_path):
    # From a file, so that AutoGraph reads the functions' source (as for any program).
    path = tmp_path / "loops.py"
    path.write_text(CODE)
    env = {"tf": tf, "np": np}
    exec(compile(CODE, str(path), "exec"), env)
    from_file = ("import os, tempfile\n_p = os.path.join(tempfile.mkdtemp(), 'loops.py')\n"
                 "open(_p, 'w').write(code)\nexec(compile(code, _p, 'exec'), globals())\n")
    assert_same(to_oracle_form(env["result"]), tf_oracle.run(from_file, code=CODE))


def test_reduce_in_a_graph_checks_the_state():
    @tf.function
    def bad():
        return tf.data.Dataset.range(3).reduce(tf.constant(0.0), lambda s, x: x)
    with pytest.raises(TypeError, match=r"\[Dataset.reduce\] The element types for the new state must match"):
        bad()
