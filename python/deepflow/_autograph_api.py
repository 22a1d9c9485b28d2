# SPDX-License-Identifier: Apache-2.0
"""tf.autograph: TensorFlow's public part of AutoGraph (to_graph, to_code, experimental,
set_verbosity, trace) over deepflow.autograph, whose other names are its internals."""
import sys
import types

from ._function import autograph_module


def _make():
    ag = autograph_module()
    module = types.ModuleType("deepflow.autograph", __doc__)
    module.experimental = ag.experimental
    module.to_graph = ag.to_graph
    module.to_code = ag.to_code
    state = {"level": 0}

    def set_verbosity(level, alsologtostdout=False):
        """Accepted (deepflow's AutoGraph logs nothing)."""
        state["level"] = int(level)

    def trace(*args):
        """Prints its arguments (TensorFlow prints them when the function is traced)."""
        print(*args, file=sys.stdout)

    module.set_verbosity = set_verbosity
    module.trace = trace
    return module


autograph = _make()
