# SPDX-License-Identifier: Apache-2.0
"""Dataset.reduce inside a traced function (and so `for x in dataset` in a tf.function):
a while loop whose state is the reduce state plus the next element of a pass over the
dataset, made by py_make_iterator each time the graph runs and advanced by
py_iterator_next (python/src/data_graph.cpp). The pass runs in C++: its elements never
go through Python."""
from .. import _deepflow
from .. import nest
from .._op_util import type_code
from . import _structure as structure

_core = _deepflow.data


def graph_reduce(dataset, initial_state, reduce_func):
    from .._control_flow import while_loop
    spec = dataset.element_spec
    code = type_code(structure.signature(spec))
    n_elem = len(structure.flat_specs(spec))
    state = structure.normalize(initial_state, "Dataset.reduce")
    flat_state = nest.flatten(state)
    handle = _core.make_iterator_op(dataset._ds)
    first = list(_core.iterator_next_op(handle, code))

    def cond(handle, has, *rest):
        return has

    def body(handle, has, *rest):
        element = structure.pack(spec, list(rest[:n_elem]))
        current = nest.pack_sequence_as(state, list(rest[n_elem:]))
        new = reduce_func(current, element)
        if isinstance(new, list) and not isinstance(state, list):
            new = tuple(new)
        new = structure.normalize(new, "Dataset.reduce")
        flat_new = nest.flatten(new)
        if len(flat_new) != len(flat_state) or any(a.dtype != b.dtype for a, b in zip(flat_new, flat_state)):
            raise TypeError(f"[Dataset.reduce] The element types for the new state must match the initial state. "
                            f"Expected {structure.spec_of(state)}; got {structure.spec_of(new)}.")
        nxt = list(_core.iterator_next_op(handle, code))
        return [handle] + nxt + flat_new

    out = while_loop(cond, body, [handle] + first + flat_state)
    return nest.pack_sequence_as(state, list(out[2 + n_elem:]))
