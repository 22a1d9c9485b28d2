# SPDX-License-Identifier: Apache-2.0
"""tf.io.parse_example / parse_single_example: tf.train.Example protos to tensors.

The parsing is one op of the core (python/src/data.cpp over deepflow/data/example.h),
so it works eagerly and inside traced functions alike: a TFRecordDataset(...).map(
lambda r: tf.io.parse_single_example(r, features)) parses in the C++ pipeline, in
parallel with num_parallel_calls, without Python.
"""
import collections

import numpy as np

from .. import _deepflow
from .. import dtypes
from ._util import to_tensor
from ..tensor_shape import TensorShape
from ._sparse import SparseTensor

_core = _deepflow.data
_KINDS = (dtypes.float32, dtypes.int64, dtypes.string)


class FixedLenFeature(collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """tf.io.FixedLenFeature(shape, dtype, default_value=None): the same number of values
    in every example, parsed to a dense tensor of `shape`."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """tf.io.VarLenFeature(dtype): any number of values per example, parsed to a SparseTensor."""


def _entries(features, where):
    if not isinstance(features, collections.abc.Mapping) or not features:
        raise ValueError(f"[{where}] features must be a non-empty dict of feature name -> FixedLenFeature or "
                         f"VarLenFeature, got {features!r}")
    out = []
    for name, f in features.items():
        if not isinstance(f, (FixedLenFeature, VarLenFeature)):
            raise ValueError(f"[{where}] feature '{name}' is a {type(f).__name__}: deepflow parses "
                             "FixedLenFeature and VarLenFeature (not FixedLenSequenceFeature, SparseFeature or "
                             "RaggedFeature yet)")
        dtype = dtypes.as_dtype(f.dtype)
        if dtype not in _KINDS:
            raise ValueError(f"[{where}] feature '{name}' has dtype {dtype.name}; a tf.train.Example holds "
                             "float32, int64 or string values")
        if isinstance(f, VarLenFeature):
            out.append((name, False, dtype._enum, [], None))
            continue
        shape = TensorShape(f.shape)
        if shape.rank is None or not shape.is_fully_defined():
            raise ValueError(f"[{where}] First dimension of shape for feature {name} unknown. Consider using "
                             f"FixedLenSequenceFeature. (FixedLenFeature shape {shape} must be fully known)")
        default = None
        if f.default_value is not None:
            v = f.default_value
            if dtype != dtypes.string and not isinstance(v, _deepflow.Tensor):
                v = np.asarray(v, dtype=dtype.as_numpy_dtype)
            default = to_tensor(v, dtype=dtype)
        out.append((name, True, dtype._enum, shape.as_list(), default))
    return sorted(out, key=lambda e: e[0])


def _parse(serialized, features, single, where):
    entries = _entries(features, where)
    serialized = to_tensor(serialized, dtype=dtypes.string)
    flat = iter(_core.parse_example(serialized, entries, single))
    out = {}
    for name, fixed, *_ in entries:
        if fixed:
            out[name] = next(flat)
    for name, fixed, *_ in entries:
        if not fixed:
            out[name] = SparseTensor(next(flat), next(flat), next(flat))
    return {name: out[name] for name in features}


def parse_single_example(serialized, features, example_names=None, name=None):
    """tf.io.parse_single_example: one serialized Example (a string scalar) -> a dict of
    dense tensors (FixedLenFeature) and SparseTensors (VarLenFeature)."""
    return _parse(serialized, features, True, "parse_single_example")


def parse_example(serialized, features, example_names=None, name=None):
    """tf.io.parse_example: a vector of serialized Examples -> a dict of batched tensors."""
    return _parse(serialized, features, False, "parse_example")
