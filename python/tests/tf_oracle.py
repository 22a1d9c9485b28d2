# SPDX-License-Identifier: Apache-2.0
"""TensorFlow 2.21 as the oracle of the Python tests: one worker process per test session
(.venv-peers/bin/python tf_worker.py), asked to evaluate the same expression the test
evaluates with deepflow. Missing TensorFlow skips the comparison off CI and fails on CI
(tests/oracle.h's rule for the C++ tests)."""
import os
import pickle
import struct
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEERS_PYTHON = os.environ.get("DEEPFLOW_PEERS_PYTHON",
                              os.path.join(os.environ.get("DEEPFLOW_PEERS_VENV", os.path.join(ROOT, ".venv-peers")),
                                           "bin", "python"))


def oracle_missing(why):
    if os.environ.get("CI"):
        pytest.fail(f"oracle missing on CI: {why}")
    pytest.skip(why)


class TensorFlowOracle:
    def __init__(self):
        self._proc = None
        self._error = None

    def _start(self):
        if self._proc is not None or self._error is not None:
            return
        if not os.path.exists(PEERS_PYTHON):
            self._error = f"no TensorFlow: {PEERS_PYTHON} is missing (make peers)"
            return
        env = dict(os.environ)
        # A peer runs with its own threading defaults; the answers do not depend on them.
        env.pop("OPENBLAS_CORETYPE", None)
        self._proc = subprocess.Popen([PEERS_PYTHON, os.path.join(os.path.dirname(__file__), "tf_worker.py")],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def run(self, expr, **variables):
        """The value of expr in TensorFlow: ("tensor", dtype, array), plain values, or
        raises OracleError with TF's exception class name."""
        self._start()
        if self._error:
            oracle_missing(self._error)
        data = pickle.dumps((expr, variables))
        self._proc.stdin.write(struct.pack("<Q", len(data)) + data)
        self._proc.stdin.flush()
        header = self._proc.stdout.read(8)
        if len(header) < 8:
            self._error = "the TensorFlow worker died (import failed?)"
            oracle_missing(self._error)
        (n,) = struct.unpack("<Q", header)
        reply = pickle.loads(self._proc.stdout.read(n))
        if reply[0] == "error":
            raise OracleError(reply[1], reply[2])
        return reply[1]

    def close(self):
        if self._proc:
            self._proc.stdin.close()
            self._proc.wait(timeout=30)


class OracleError(Exception):
    def __init__(self, cls, message):
        super().__init__(f"{cls}: {message}")
        self.cls = cls
        self.message = message


def to_oracle_form(v):
    """A deepflow result in the worker's form, for comparison."""
    import deepflow as tf
    if isinstance(v, (tf.Tensor, tf.Variable)):
        return ("tensor", v.dtype.name, np.asarray(v.numpy()))
    if isinstance(v, tf.TensorShape):
        return ("shape", v.as_list() if v.rank is not None else None)
    if isinstance(v, tf.DType):
        return ("dtype", v.name)
    if isinstance(v, (list, tuple)):
        return (tuple if isinstance(v, tuple) else list)(to_oracle_form(x) for x in v)
    if isinstance(v, dict):
        return {k: to_oracle_form(x) for k, x in v.items()}
    return v


def assert_same(ours, theirs, rtol=1e-5, atol=1e-6, path="result"):
    if isinstance(theirs, tuple) and theirs and theirs[0] == "tensor":
        assert isinstance(ours, tuple) and ours[0] == "tensor", f"{path}: TF gives a tensor, we give {ours!r}"
        assert ours[1] == theirs[1], f"{path}: dtype {ours[1]} vs TensorFlow's {theirs[1]}"
        a, b = np.asarray(ours[2]), np.asarray(theirs[2])
        assert a.shape == b.shape, f"{path}: shape {a.shape} vs TensorFlow's {b.shape}"
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=path)
        else:
            np.testing.assert_array_equal(a, b, err_msg=path)
        return
    if isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(theirs), f"{path}: {ours!r} vs {theirs!r}"
        for i, (x, y) in enumerate(zip(ours, theirs)):
            assert_same(x, y, rtol, atol, f"{path}[{i}]")
        return
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and sorted(ours) == sorted(theirs), f"{path}: {ours!r} vs {theirs!r}"
        for k in theirs:
            assert_same(ours[k], theirs[k], rtol, atol, f"{path}[{k!r}]")
        return
    if isinstance(theirs, float):
        assert np.isclose(ours, theirs, rtol=rtol, atol=atol), f"{path}: {ours!r} vs {theirs!r}"
        return
    assert ours == theirs, f"{path}: {ours!r} vs TensorFlow's {theirs!r}"


