# SPDX-License-Identifier: Apache-2.0
"""Runtime operators for expressions, builtins and directives.

`and`, `or`, `not` and `a if c else b`: operands arrive as thunks so that
Python's short-circuit evaluation survives conversion; the second operand
runs only when Python would run it, unless the first is a tensor (then both
are staged, as in a traced graph).

range and len: converted_call routes calls of these builtins here, because
the Python versions cannot take a symbolic tensor; other builtins are called
as they are.

set_loop_options: a call of it as a statement directly in a loop body is
read and removed by the converter and becomes that loop's options; anywhere
else, including unconverted code and Python loops, it does nothing, as in
TensorFlow.
"""
from . import backend as backend_lib
from .control_flow import verify_single_cond_var
from .variables import assert_same_structure, map_structure


def not_(a):
    backend = backend_lib.get_backend()
    if backend.is_tensor(a):
        return backend.logical_not(a)
    return not a


def and_(a, b):
    a_val = a()
    backend = backend_lib.get_backend()
    if backend.is_tensor(a_val):
        return backend.logical_and(a_val, b())
    return a_val and b()


def or_(a, b):
    a_val = a()
    backend = backend_lib.get_backend()
    if backend.is_tensor(a_val):
        return backend.logical_or(a_val, b())
    return a_val or b()


def if_exp(cond, if_true, if_false, expr_repr):
    """Functional form of a conditional expression; expr_repr names it in errors."""
    backend = backend_lib.get_backend()
    if not backend.is_tensor(cond):
        return if_true() if cond else if_false()
    values = {}

    def branch(thunk, key, other):
        def run():
            values[key] = thunk()
            if other in values:
                _verify_if_exp(expr_repr, values['true'], values['false'])
            return (values[key],)
        return run

    result = backend.cond(cond, branch(if_true, 'true', 'false'),
                          branch(if_false, 'false', 'true'))
    return tuple(result)[0]


def _verify_if_exp(expr_repr, true_val, false_val):
    try:
        assert_same_structure(true_val, false_val)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f'conditional expression "{expr_repr}" must return the same nested'
            ' structure in both branches. If you only need side effects, use a'
            ' statement `if:` instead; otherwise, make both branches return the'
            ' same structure or use `tf.cond` explicitly.') from e
    map_structure(lambda t, f: verify_single_cond_var(expr_repr, t, f), true_val, false_val)


def range_(*args):
    """range(), or the backend's range when an argument is a tensor."""
    backend = backend_lib.get_backend()
    tensor_range = getattr(backend, 'range', None)
    if tensor_range is not None and any(backend.is_tensor(a) for a in args):
        return tensor_range(*args)
    return range(*args)


def len_(obj):
    """len(), with a tensor's dim 0 from its static shape or the backend."""
    backend = backend_lib.get_backend()
    if backend.is_tensor(obj):
        shape = backend.shape_of(obj)
        if shape is not None and len(shape) == 0:
            raise ValueError('len requires a non-scalar tensor, got one of shape []')
        if shape is not None and shape[0] is not None:
            return shape[0]
        return backend.tensor_len(obj)
    return len(obj)


# By identity: looking a callable up by value would hash and compare it.
OVERLOADS = {id(range): range_, id(len): len_}


UNSPECIFIED = object()


def set_loop_options(parallel_iterations=UNSPECIFIED, swap_memory=UNSPECIFIED,
                     maximum_iterations=UNSPECIFIED, shape_invariants=UNSPECIFIED):
    """Options for the enclosing loop when it is staged as a while_loop.

    maximum_iterations limits the iterations; shape_invariants is a list of
    (tensor, shape) pairs naming loop variables whose shape may change.
    parallel_iterations and swap_memory are accepted and ignored.
    """
    del parallel_iterations, swap_memory, maximum_iterations, shape_invariants
