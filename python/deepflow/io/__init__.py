# SPDX-License-Identifier: Apache-2.0
"""tf.io: tf.train.Example parsing, TFRecord files, whole files, tf.io.gfile.

tf.train.Example / Features / Feature messages are not here (they are protobuf
classes): write Examples with TensorFlow or any protobuf library; deepflow reads and
parses them.
"""
from .. import _deepflow
from .. import dtypes
from ._util import to_tensor as _to_tensor
from . import gfile  # noqa: F401
from ._parsing import FixedLenFeature, VarLenFeature, parse_example, parse_single_example  # noqa: F401
from ._tfrecord import TFRecordOptions, TFRecordWriter  # noqa: F401

_core = _deepflow.data


def read_file(filename, name=None):
    """tf.io.read_file: a file's bytes as a string scalar (an op: works in traced functions)."""
    return _core.read_file(_to_tensor(filename, dtype=dtypes.string))


def write_file(filename, contents, name=None):
    """tf.io.write_file: writes contents to filename, creating its directories."""
    _core.write_file(_to_tensor(filename, dtype=dtypes.string), _to_tensor(contents, dtype=dtypes.string))


__all__ = ["FixedLenFeature", "VarLenFeature", "parse_example", "parse_single_example", "TFRecordWriter",
           "TFRecordOptions", "read_file", "write_file", "gfile"]
