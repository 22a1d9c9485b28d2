# SPDX-License-Identifier: Apache-2.0
"""tf.random: seeded random tensors (TensorFlow's global-seed / op-seed rules live in
deepflow/core/random.h)."""
import numpy as np

from . import _deepflow
from . import dtypes
from ._op_util import _ints, _t


def set_seed(seed):
    """tf.random.set_seed: makes later random ops repeatable."""
    _deepflow.set_random_seed(None if seed is None else int(seed))


def uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    dtype = dtypes.as_dtype(dtype)
    if dtype.is_integer:
        if maxval is None:
            raise ValueError("Must specify maxval for integer dtype " + repr(dtype))
        from . import _ops
        u = _deepflow.random_uniform(_ints(shape), float(minval), float(maxval), dtypes.float64._enum, seed)
        return _ops.cast(_ops.floor(u), dtype)
    return _deepflow.random_uniform(_ints(shape), float(minval), 1.0 if maxval is None else float(maxval),
                                    dtype._enum, seed)


def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    return _deepflow.random_normal(_ints(shape), float(mean), float(stddev), dtypes.as_dtype(dtype)._enum, seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    return _deepflow.truncated_normal(_ints(shape), float(mean), float(stddev), dtypes.as_dtype(dtype)._enum,
                                      seed)


def shuffle(value, seed=None, name=None):
    """Shuffles along dim 0 (a permutation drawn from the op's random stream)."""
    from . import _ops
    value = _t(value)
    n = value._shape[0]
    keys = uniform([n], seed=seed)
    perm = _ops.top_k(keys, k=n).indices
    return _ops.gather(value, perm)


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """Samples class indices from unnormalized log-probabilities [batch, classes]."""
    from . import _ops
    logits = _t(logits)
    b, c = logits._shape
    u = uniform([b, int(num_samples), c], minval=1e-20, maxval=1.0, seed=seed)
    gumbel = -_ops.log(-_ops.log(u))
    scores = _ops.expand_dims(logits, 1) + gumbel
    out = _ops.argmax(scores, axis=-1)
    return _ops.cast(out, dtype or dtypes.int64)


class Generator:
    """tf.random.Generator (from_seed): draws from its own seed sequence."""

    def __init__(self, copy_from=None, state=None, alg=None):
        # TensorFlow's constructor takes another generator or a raw state; a state here is
        # the seed (from_seed and from_non_deterministic_state are how users make one).
        if copy_from is not None:
            self._seed, self._count = copy_from._seed, copy_from._count
            return
        if state is None:
            raise ValueError("[tf.random.Generator] give copy_from or state, or use Generator.from_seed(seed)")
        self._seed = int(np.asarray(state).reshape(-1)[0])
        self._count = 0

    @classmethod
    def from_seed(cls, seed, alg=None):
        return cls(state=int(seed))

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        import os
        return cls(state=int.from_bytes(os.urandom(4), "little"))

    def _next(self):
        self._count += 1
        return int(np.uint32(self._seed * 1000003 + self._count))

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None):
        return normal(shape, mean, stddev, dtype, seed=self._next())

    def uniform(self, shape, minval=0, maxval=None, dtype=dtypes.float32, name=None):
        return uniform(shape, minval, maxval, dtype, seed=self._next())

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None):
        return truncated_normal(shape, mean, stddev, dtype, seed=self._next())
