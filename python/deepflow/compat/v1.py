# SPDX-License-Identifier: Apache-2.0
"""tf.compat.v1: graph building with placeholders and sessions."""
from .._graph import (Graph, InteractiveSession, Session, get_default_graph, get_default_session,  # noqa: F401
                      global_variables_initializer, local_variables_initializer, placeholder,
                      reset_default_graph, variables_initializer)
from ..backprop import gradients  # noqa: F401


def disable_eager_execution():
    """Accepted: graph code still builds into a tf.Graph under as_default() (or a Session)."""


def enable_eager_execution(config=None, device_policy=None, execution_mode=None):
    pass


def executing_eagerly():
    from .. import _deepflow
    return not _deepflow._building_graph()


def __getattr__(name):
    # Everything else of tf.compat.v1 that TF 2 also has at the top level.
    import deepflow
    return getattr(deepflow, name)
