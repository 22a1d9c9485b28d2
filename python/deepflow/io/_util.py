# SPDX-License-Identifier: Apache-2.0
"""What tf.io and tf.data share: value conversion."""
from .. import _deepflow
from .. import dtypes
from .._op_util import convert_to_tensor


def to_tensor(value, dtype=None):
    """tf.convert_to_tensor, with bytes and str scalars made here (the shared conversion
    does not take a bare bytes object yet)."""
    if isinstance(value, (bytes, str)):
        if dtype is not None and dtypes.as_dtype(dtype) != dtypes.string:
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dtypes.as_dtype(dtype).name}")
        return _deepflow.string_tensor([value], [])
    return convert_to_tensor(value, dtype=dtype)
