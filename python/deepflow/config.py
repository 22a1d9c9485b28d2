# SPDX-License-Identifier: Apache-2.0
"""tf.config: devices and threading (deepflow runs on the CPU; the CUDA backend is to come)."""
import types

import collections

from . import _deepflow
from ._function import functions_run_eagerly, run_functions_eagerly  # noqa: F401


class PhysicalDevice(collections.namedtuple("PhysicalDevice", ["name", "device_type"])):
    """A device deepflow runs on (TensorFlow's namedtuple)."""
    __slots__ = ()


def list_physical_devices(device_type=None):
    cpus = [PhysicalDevice("/physical_device:CPU:0", "CPU")]
    return cpus if device_type in (None, "CPU") else []


def list_logical_devices(device_type=None):
    return list_physical_devices(device_type)


def get_visible_devices(device_type=None):
    return list_physical_devices(device_type)


def set_visible_devices(devices, device_type=None):
    pass


_inter_op = [0]


def _set_inter(n):
    # Traced functions run sequentially (deepflow/function/function.h); kept for the getter.
    _inter_op[0] = int(n)


threading = types.SimpleNamespace(
    get_intra_op_parallelism_threads=_deepflow.intra_op_threads,
    set_intra_op_parallelism_threads=_deepflow.set_intra_op_threads,
    get_inter_op_parallelism_threads=lambda: _inter_op[0],
    set_inter_op_parallelism_threads=_set_inter,
)
experimental = types.SimpleNamespace(
    set_memory_growth=lambda device, enable: None,
    get_memory_growth=lambda device: False,
    list_physical_devices=list_physical_devices,
    enable_op_determinism=lambda: None,
)
