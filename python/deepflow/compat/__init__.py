# SPDX-License-Identifier: Apache-2.0
"""tf.compat: v1 (graphs and sessions) and v2 (this module's parent)."""
from . import v1  # noqa: F401


def __getattr__(name):
    if name == "v2":
        import deepflow
        return deepflow
    raise AttributeError(name)
