# SPDX-License-Identifier: Apache-2.0
"""The TensorFlow oracle: runs in .venv-peers (TensorFlow 2.21), evaluates expressions
sent by the tests (tf_oracle.py) and sends back numpy results or the error's class.

Protocol on stdin/stdout: 8-byte little-endian length, then a pickle. A request is
(expression, variables); a reply ("ok", value) or ("error", class name, message)."""
import os
import pickle
import struct
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def to_numpy(v):
    if isinstance(v, (tf.Tensor, tf.Variable)):
        return ("tensor", v.dtype.name, v.numpy())
    if isinstance(v, tf.TensorShape):
        return ("shape", v.as_list() if v.rank is not None else None)
    if isinstance(v, tf.dtypes.DType):
        return ("dtype", v.name)
    if isinstance(v, (list, tuple)):
        return (tuple if isinstance(v, tuple) else list)(to_numpy(x) for x in v)
    if isinstance(v, dict):
        return {k: to_numpy(x) for k, x in v.items()}
    return v


def main():
    out = sys.stdout.buffer
    inp = sys.stdin.buffer
    sys.stdout = sys.stderr  # prints of the evaluated code must not corrupt the channel
    while True:
        header = inp.read(8)
        if len(header) < 8:
            return
        (n,) = struct.unpack("<Q", header)
        expr, variables = pickle.loads(inp.read(n))
        env = {"tf": tf, "np": np}
        env.update(variables)
        try:
            if "\n" in expr or expr.startswith(("def ", "import ")):
                exec(expr, env)
                value = env.get("result")
            else:
                value = eval(expr, env)
            reply = ("ok", to_numpy(value))
        except Exception as e:  # noqa: BLE001 - the class is the answer
            reply = ("error", type(e).__name__, str(e)[:2000])
        data = pickle.dumps(reply)
        out.write(struct.pack("<Q", len(data)) + data)
        out.flush()


if __name__ == "__main__":
    main()
