# SPDX-License-Identifier: Apache-2.0
"""tf.data.experimental: the aliases and helpers TensorFlow code still uses."""
from .. import dtypes
from ._dataset import AUTOTUNE, INFINITE, UNKNOWN, DatasetV2
from ._iterator import Optional  # noqa: F401
from ._options import AutotuneOptions, DistributeOptions, ThreadingOptions  # noqa: F401
from ._readers import CsvDatasetV2

INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN
CsvDataset = CsvDatasetV2


def cardinality(dataset):
    """tf.data.experimental.cardinality: dataset.cardinality()."""
    return dataset.cardinality()


def Counter(start=0, step=1, dtype=dtypes.int64, name=None):  # noqa: N802 - TensorFlow's name
    """tf.data.experimental.Counter: start, start + step, ... without end (infinite cardinality)."""
    from .._ops import cast
    dtype = dtypes.as_dtype(dtype)
    start, step = int(start), int(step)
    return (DatasetV2.from_tensors(0).repeat().enumerate()
            .map(lambda i, _: cast(i * step + start, dtype)))


def get_single_element(dataset):
    return dataset.get_single_element()


class AutoShardPolicy:
    """tf.data.experimental.AutoShardPolicy (kept for tf.distribute code)."""

    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "CsvDataset", "cardinality", "Counter",
           "get_single_element", "AutotuneOptions", "ThreadingOptions", "DistributeOptions", "AutoShardPolicy",
           "Optional"]
