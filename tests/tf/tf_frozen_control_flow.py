# SPDX-License-Identifier: Apache-2.0
"""Frozen GraphDefs with TF1 control flow for tests/tf/tf1_control_flow_test.cpp, written by
TensorFlow 2.21: convert_variables_to_constants_v2 lowers If and While to Switch, Merge,
Enter, Exit, NextIteration and LoopCond (lower_control_flow=True, its default).

  .venv-peers/bin/python tests/tf/tf_frozen_control_flow.py OUT

Writes OUT/<model>/frozen.pb, OUT/<model>/case<k>.in.<i>.npy and case<k>.out.<j>.npy (the
frozen function's outputs in TensorFlow), and OUT/cases.json: {model: {inputs: [names],
outputs: [names], cases: n}}.
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

RNG = np.random.default_rng(7)
W = tf.constant(RNG.normal(0, 0.6, (3, 3)).astype(np.float32))


@tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([], tf.int32)])
def nested(x, n):
    """A cond inside a while loop, a while loop inside a cond, and a cond inside a cond."""
    def body(i, h):
        h = tf.cond(tf.reduce_sum(h) > 0.0, lambda: tf.matmul(h, W) * 0.5 - 1.0, lambda: tf.tanh(h) + 1.0)
        return i + 1, h

    i, h = tf.while_loop(lambda i, h: i < n, body, [tf.constant(0), x])

    def long_way():
        _, s = tf.while_loop(lambda k, s: k < 3, lambda k, s: (k + 1, s * 0.9 + tf.reduce_mean(h)), [0, h])
        return s

    y = tf.cond(n > 2, long_way, lambda: tf.cond(tf.reduce_max(h) > 1.0, lambda: h - 1.0, lambda: -h))
    return {"y": y, "steps": i}


def main():
    out = sys.argv[1]
    index = {}
    frozen = convert_variables_to_constants_v2(nested.get_concrete_function())
    ops = {n.op for n in frozen.graph.as_graph_def().node}
    assert {"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"} <= ops, sorted(ops)
    root = os.path.join(out, "nested")
    os.makedirs(root, exist_ok=True)
    tf.io.write_graph(frozen.graph.as_graph_def(), root, "frozen.pb", as_text=False)
    cases = [(RNG.normal(0, 1, (b, 3)).astype(np.float32), np.int32(n)) for b, n in ((2, 0), (1, 1), (3, 2), (2, 4))]
    for k, args in enumerate(cases):
        result = frozen(*[tf.constant(a) for a in args])
        for i, a in enumerate(args):
            np.save(os.path.join(root, "case%d.in.%d.npy" % (k, i)), a)
        for j, v in enumerate(result):
            np.save(os.path.join(root, "case%d.out.%d.npy" % (k, j)), v.numpy())
    index["nested"] = {"inputs": [t.name for t in frozen.inputs], "outputs": [t.name for t in frozen.outputs],
                       "cases": len(cases)}
    with open(os.path.join(out, "cases.json"), "w") as fh:
        json.dump(index, fh, indent=1)


if __name__ == "__main__":
    main()
