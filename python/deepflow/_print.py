# SPDX-License-Identifier: Apache-2.0
"""tf.print: prints when the op runs (every call of a traced function), not when traced."""
import sys

import numpy as np

from . import _deepflow

Tensor = _deepflow.Tensor


def _format(value, summarize):
    if isinstance(value, Tensor):
        a = value.numpy()
        if isinstance(a, bytes):
            return a.decode(errors="replace")
        if isinstance(a, np.ndarray):
            if a.dtype == object:
                a = np.vectorize(lambda b: b.decode(errors="replace") if isinstance(b, bytes) else b)(a)
            edge = summarize if summarize is not None and summarize >= 0 else sys.maxsize
            return np.array2string(a, separator=" ", edgeitems=min(edge, 1000),
                                   threshold=0 if summarize is not None and summarize >= 0 else sys.maxsize)
        return str(a)
    return str(value)


def print(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):  # noqa: A001
    positions = [i for i, x in enumerate(inputs) if isinstance(x, (Tensor, _deepflow.Variable))]
    tensors = [inputs[i].value() if isinstance(inputs[i], _deepflow.Variable) else inputs[i] for i in positions]

    def write(values):
        parts = list(inputs)
        for i, v in zip(positions, values):
            parts[i] = v
        text = sep.join(_format(p, summarize) for p in parts) + end
        stream = output_stream
        if stream is None or stream == "stderr":
            stream = sys.stderr
        elif stream == "stdout":
            stream = sys.stdout
        stream.write(text)

    _deepflow.print_call(tensors, write)
