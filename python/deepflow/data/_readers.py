# SPDX-License-Identifier: Apache-2.0
"""File sources: TFRecordDataset, TextLineDataset, experimental.CsvDataset, list_files.

`filenames` is a string, a list of them, a string tensor, or a Dataset of file names
(then each file is read by flat_map, or by interleave with num_parallel_reads, as in
TensorFlow). Files are opened when iterated: a missing file is NotFoundError from
get_next, as in TensorFlow.
"""
import os

import numpy as np

from .. import _deepflow
from .. import dtypes
from .._function import TensorSpec
from .._op_util import convert_to_tensor
from ..io._util import to_tensor
from ._dataset import AUTOTUNE, DatasetV2, _int

_core = _deepflow.data
_STRING = TensorSpec([], dtypes.string)
_DEFAULT_BUFFER = 256 * 1024


def _names(filenames, where):
    """File names as a list of str, or the Dataset given."""
    if isinstance(filenames, DatasetV2):
        spec = filenames.element_spec
        if not (isinstance(spec, TensorSpec) and spec.dtype == dtypes.string and spec.shape.rank == 0):
            raise TypeError(f"`filenames` must be a `tf.data.Dataset` of scalar `tf.string` elements, got {spec}")
        return filenames
    if isinstance(filenames, (str, bytes, os.PathLike)):
        filenames = [filenames]
    if isinstance(filenames, _deepflow.Tensor):
        if filenames.dtype != dtypes.string:
            raise TypeError(f"[{where}] `filenames` must be string tensors, got {filenames.dtype.name}")
        filenames = np.asarray(filenames.numpy(), dtype=object).reshape(-1).tolist()
    out = []
    for f in filenames:
        f = os.fspath(f) if isinstance(f, os.PathLike) else f
        if isinstance(f, _deepflow.Tensor):
            f = f.numpy()
        if isinstance(f, bytes):
            f = f.decode()
        if not isinstance(f, str):
            raise TypeError(f"[{where}] `filenames` must be strings, got {f!r}")
        out.append(f)
    return out


def _compression(compression_type, where):
    c = "" if compression_type is None else compression_type
    if isinstance(c, _deepflow.Tensor):
        c = c.numpy()
    if isinstance(c, bytes):
        c = c.decode()
    if c not in ("", "ZLIB", "GZIP"):
        raise ValueError(f"[{where}] compression_type must be '', 'ZLIB' or 'GZIP', got {compression_type!r}")
    return c


def _empty_strings():
    return _core.Dataset.from_tensor_slices([convert_to_tensor(np.array([], dtype=object), dtype=dtypes.string)])


class _FileDataset(DatasetV2):
    """A source of string scalars read from files; one subclass per file format."""

    _where = "Dataset"

    def __init__(self, filenames, compression_type, num_parallel_reads, open_files, per_file):
        names = _names(filenames, self._where)
        reads = 1 if num_parallel_reads is None else _int(num_parallel_reads, "num_parallel_reads")
        if isinstance(names, DatasetV2):
            if num_parallel_reads is None:
                ds = names.flat_map(per_file)
            else:
                ds = names.interleave(per_file, cycle_length=reads, block_length=1, num_parallel_calls=reads)
            core = ds._ds
        elif not names:
            core = _empty_strings()
        else:
            core = open_files(names, _compression(compression_type, self._where), reads)
        super().__init__(core, _STRING)

    def __repr__(self):
        return f"<{type(self).__name__} element_spec={self._structure}>"  # TensorFlow's form for these


class TFRecordDatasetV2(_FileDataset):
    """tf.data.TFRecordDataset: the records of TFRecord files (string scalars)."""

    _where = "TFRecordDataset"

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None):
        size = _DEFAULT_BUFFER if buffer_size is None else _int(buffer_size, "buffer_size")
        if size == 0:
            size = _DEFAULT_BUFFER  # TensorFlow: 0 means its default buffering
        super().__init__(
            filenames, compression_type, num_parallel_reads,
            lambda names, c, reads: _core.Dataset.tfrecord(names, c, size, reads),
            lambda f: TFRecordDatasetV2(f, compression_type, buffer_size))


class TextLineDatasetV2(_FileDataset):
    """tf.data.TextLineDataset: the lines of text files, without their newline."""

    _where = "TextLineDataset"

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None):
        super().__init__(
            filenames, compression_type, num_parallel_reads,
            lambda names, c, reads: _core.Dataset.text_line(names, c, reads),
            lambda f: TextLineDatasetV2(f, compression_type, buffer_size))


class CsvDatasetV2(DatasetV2):
    """tf.data.experimental.CsvDataset: one tuple of scalars per CSV record.

    record_defaults: one entry per selected column: a dtype (the column is required) or
    a default value of one element (float32, float64, int32, int64 or string).
    """

    def __init__(self, filenames, record_defaults, compression_type=None, buffer_size=None, header=False,
                 field_delim=",", use_quote_delim=True, na_value="", select_cols=None, exclude_cols=None,
                 name=None):
        if exclude_cols is not None:
            raise NotImplementedError("[CsvDataset] exclude_cols is not supported by deepflow yet: use select_cols")
        if not use_quote_delim:
            raise NotImplementedError("[CsvDataset] use_quote_delim=False is not supported by deepflow yet")
        names = _names(filenames, "CsvDataset")
        if isinstance(names, DatasetV2):
            raise NotImplementedError("[CsvDataset] a Dataset of file names is not supported yet: pass a list")
        defaults, types = [], []
        for d in record_defaults:
            if isinstance(d, dtypes.DType) or (isinstance(d, type) and d in (int, float, str)):
                defaults.append(None)
                types.append(dtypes.as_dtype(d))
            else:
                t = to_tensor(d)
                defaults.append(t)
                types.append(t.dtype)
        spec = tuple(TensorSpec([], t) for t in types)
        core = _core.Dataset.csv(names, defaults, [t._enum for t in types], bool(header), field_delim, na_value,
                                 [int(c) for c in select_cols or []], _compression(compression_type, "CsvDataset"))
        super().__init__(core, spec, kind="Csv")


def list_files(file_pattern, shuffle=None, seed=None):
    """Dataset.list_files: the matching file names, sorted, then shuffled unless shuffle=False."""
    patterns = _names(file_pattern, "Dataset.list_files")
    if isinstance(patterns, DatasetV2):
        raise TypeError("[Dataset.list_files] file_pattern must be a string or a list of strings")
    seed = None if seed is None else _int(seed, "seed")
    if len(patterns) == 1:
        return DatasetV2(_core.Dataset.list_files(patterns[0], shuffle, seed), _STRING, kind="ListFiles")
    core = _core.Dataset.list_files(patterns[0], False, None)
    for p in patterns[1:]:
        core = core.concatenate(_core.Dataset.list_files(p, False, None))
    if shuffle is None or shuffle:
        core = core.shuffle(max(core.cardinality(), 1), seed, True)
    return DatasetV2(core, _STRING, kind="ListFiles")


__all__ = ["TFRecordDatasetV2", "TextLineDatasetV2", "CsvDatasetV2", "list_files", "AUTOTUNE"]
