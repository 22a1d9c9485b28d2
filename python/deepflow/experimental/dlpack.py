# SPDX-License-Identifier: Apache-2.0
"""tf.experimental.dlpack: tensors to and from other frameworks without a copy."""
import numpy as np

from .. import _deepflow


def to_dlpack(tf_tensor):
    """A DLPack capsule viewing the tensor's buffer (the tensor stays alive with it)."""
    # The exported view is writable, as TensorFlow's: DLPack 0.x cannot say read-only.
    return _deepflow.to_numpy(tf_tensor, True).__dlpack__()


def from_dlpack(dlcapsule):
    """A tensor viewing a DLPack capsule's (or a __dlpack__ object's) CPU buffer."""
    if hasattr(dlcapsule, "__dlpack__"):
        arr = np.from_dlpack(dlcapsule)
    else:
        arr = np.from_dlpack(_Capsule(dlcapsule))
    return _deepflow.to_tensor(arr)


class _Capsule:
    """np.from_dlpack takes objects with __dlpack__; a bare capsule gets this wrapper."""

    def __init__(self, capsule):
        self._c = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self._c

    def __dlpack_device__(self):
        return (1, 0)
