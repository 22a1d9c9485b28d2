# SPDX-License-Identifier: Apache-2.0
"""tf.io.TFRecordWriter and TFRecordOptions over the core's RecordWriter
(deepflow/data/tfrecord.h): files byte-compatible with TensorFlow's, plain or ZLIB / GZIP.

The core writes to a temporary file and renames it over the path at close(), so a
reader never sees half a file. As in TensorFlow, a writer that is garbage-collected
without close() still finishes its file; unlike TensorFlow, leaving a `with` block by
an exception discards what was written (the path keeps its old content): an error path
must not publish a partial file under the real name.
"""
import os
import warnings

from .. import _deepflow

_core = _deepflow.data


class TFRecordCompressionType:
    NONE = 0
    ZLIB = 1
    GZIP = 2


_BY_ENUM = {0: "", 1: "ZLIB", 2: "GZIP"}


class TFRecordOptions:
    """tf.io.TFRecordOptions: compression_type ('', 'ZLIB', 'GZIP') and compression_level;
    the zlib tuning options are accepted and left at zlib's defaults."""

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None, output_buffer_size=None,
                 window_bits=None, compression_level=None, compression_method=None, mem_level=None,
                 compression_strategy=None):
        self.compression_type = compression_type
        self.compression_level = compression_level

    @classmethod
    def get_compression_type_string(cls, options):
        if options is None:
            return ""
        if isinstance(options, TFRecordOptions):
            return cls.get_compression_type_string(options.compression_type)
        if isinstance(options, int):
            if options not in _BY_ENUM:
                raise ValueError(f"Unknown compression type: {options!r}")
            return _BY_ENUM[options]
        if options in ("", "NONE", "ZLIB", "GZIP"):
            return "" if options == "NONE" else options
        raise ValueError(f'Unsupported compression type: {options!r}; expected "", "ZLIB" or "GZIP"')


class TFRecordWriter:
    """tf.io.TFRecordWriter(path, options=None): write(record) appends one record."""

    def __init__(self, path, options=None):
        compression = TFRecordOptions.get_compression_type_string(options)
        level = options.compression_level if isinstance(options, TFRecordOptions) else None
        self._w = _core.RecordWriter(os.fspath(path), compression, -1 if level is None else int(level))
        self._closed = False

    def write(self, record):
        if self._closed:
            raise ValueError("[TFRecordWriter] write() after close()")
        if isinstance(record, _deepflow.Tensor):
            record = record.numpy()
        if isinstance(record, str):
            record = record.encode()
        self._w.write(bytes(record))

    def flush(self):
        self._w.flush()

    def close(self):
        if not self._closed:
            self._closed = True
            self._w.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self._closed = True
            self._w = None  # the core discards the temporary file
        return False

    def __del__(self):
        if getattr(self, "_closed", True) or getattr(self, "_w", None) is None:
            return
        try:
            self.close()
        except Exception as e:  # noqa: BLE001 - a destructor cannot raise
            warnings.warn(f"[TFRecordWriter] closing {self._w.path} at garbage collection failed: {e}")
