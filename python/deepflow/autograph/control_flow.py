# SPDX-License-Identifier: Apache-2.0
"""Runtime operators for converted if / while / for statements.

Converted code calls if_stmt, while_stmt and for_stmt with the statement's
blocks as closures plus get_state/set_state, which read and write the
variables the block modifies (see _lowering.py).  Each operator dispatches on
the runtime type of the condition or iterable: a tensor or dataset goes to the
backend (cond, while_loop, dataset_reduce), anything else runs as the Python
statement it came from.  The checks and their messages follow TensorFlow's
operators/control_flow.py so users see the same errors.
"""
import math

from . import backend as backend_lib
from .variables import (Undefined, UndefinedReturnValue, assert_same_structure, is_undefined,
                        map_structure)

_LIMITATIONS = ('https://github.com/tensorflow/tensorflow/blob/master/tensorflow/'
                'python/autograph/g3doc/reference/limitations.md'
                '#consistency-of-control-flow-types')

# The loop-variable types TensorFlow can carry (its error text).
LEGAL_LOOP_TYPES = 'Tensor, int, float, bool or a list, tuple or dict thereof'


def _dtype_name(dtype):
    return getattr(dtype, 'name', None) or str(dtype)


def _format_shape(shape):
    return 'None' if shape is None else str(tuple(shape))


def _verify_tf_condition(backend, cond, tag):
    """Rejects conditions that are not boolean scalars, as tf.cond would."""
    hint = 'to check for None, use `is not None`'
    dtype = backend.dtype_of(cond)
    if dtype is not None and _dtype_name(dtype) != 'bool':
        raise ValueError(
            f'condition of {tag} expected to be `tf.bool` scalar, got {cond}'
            f'; to use as boolean Tensor, use `tf.cast`; {hint}')
    shape = backend.shape_of(cond)
    if shape:
        known = [d for d in shape if d is not None]
        if math.prod(known) > 1:
            raise ValueError(
                f'condition of {tag} expected to be `tf.bool` scalar, got {cond}; {hint}')
    return cond


# ---------------------------------------------------------------------------
# if


def if_stmt(cond, body, orelse, get_state, set_state, symbol_names, nouts):
    """Functional form of `if`; the first `nouts` symbols are its outputs."""
    backend = backend_lib.get_backend()
    if backend.is_tensor(cond):
        _tf_if_stmt(backend, cond, body, orelse, get_state, set_state,
                    symbol_names, nouts)
    elif cond:
        body()
    else:
        orelse()


def _verify_branch_vars(values, symbol_names, branch):
    for name, value in zip(symbol_names, values):
        if isinstance(value, Undefined):
            raise ValueError(f"'{name}' must also be initialized in the {branch} branch")
        if isinstance(value, UndefinedReturnValue):
            raise ValueError(f'the {branch} branch must also have a return statement.')


def verify_single_cond_var(name, body_var, orelse_var):
    if body_var is None:
        raise ValueError(f"'{name}' is None at the end of the main branch.")
    if orelse_var is None:
        raise ValueError(f"'{name}' is None at the end of the else branch.")
    backend = backend_lib.get_backend()
    if not (backend.is_tensor(body_var) and backend.is_tensor(orelse_var)):
        return
    body_dtype, orelse_dtype = backend.dtype_of(body_var), backend.dtype_of(orelse_var)
    if body_dtype is not None and orelse_dtype is not None and body_dtype != orelse_dtype:
        raise TypeError(
            f"'{name}' has dtype {_dtype_name(body_dtype)} in the main branch, but"
            f' dtype {_dtype_name(orelse_dtype)} in the else branch')


def _verify_cond_vars(body_vars, orelse_vars, symbol_names):
    for name, body_var, orelse_var in zip(symbol_names, body_vars, orelse_vars):
        try:
            assert_same_structure(body_var, orelse_var)
        except (ValueError, TypeError) as e:
            raise TypeError(
                f"'{name}' must have the same nested structure in the main and"
                f' else branches:\n\n{e}') from e
        map_structure(lambda b, o: verify_single_cond_var(name, b, o), body_var, orelse_var)


def _tf_if_stmt(backend, cond, body, orelse, get_state, set_state, symbol_names, nouts):
    cond = _verify_tf_condition(backend, cond, 'if statement')
    init_vars = tuple(get_state())
    outputs = {}

    def branch(block, name, other):
        def run():
            # Both branches are traced one after the other: start each from
            # the values the statement saw on entry.
            set_state(init_vars)
            block()
            values = tuple(get_state())[:nouts]
            _verify_branch_vars(values, symbol_names, name)
            outputs[name] = values
            if other in outputs:
                main = values if name == 'main' else outputs[other]
                alt = outputs[other] if name == 'main' else values
                _verify_cond_vars(main, alt, symbol_names)
            return values
        return run

    final = backend.cond(cond, branch(body, 'main', 'else'), branch(orelse, 'else', 'main'))
    set_state(tuple(final) + init_vars[nouts:])


# ---------------------------------------------------------------------------
# loop variable checks


def verify_loop_init_vars(init_vars, symbol_names, first_iter_vars=None,
                          extra_message=None):
    """Ensures every loop variable has a value a tensor loop can carry."""
    if first_iter_vars is None:
        first_iter_vars = (None,) * len(symbol_names)
    for name, value, first in zip(symbol_names, init_vars, first_iter_vars):
        if isinstance(value, UndefinedReturnValue):
            if first is not None and not is_undefined(first):
                raise ValueError(
                    'the return value from a TensorFlow loop may only be a'
                    f' {LEGAL_LOOP_TYPES}; got {type(first)}')
            raise NotImplementedError(
                'a return statement cannot be placed inside this TensorFlow loop;'
                ' this may happen if a return statement depends on a'
                ' static Python condition such as a hyperparameter')
        message = None
        if value is None:
            message = f"'{name}' is not allowed to be None before the loop"
        elif isinstance(value, Undefined):
            message = f"'{name}' must be defined before the loop"
            if extra_message:
                message += '\n' + extra_message
        if message is not None:
            raise ValueError(message)


def _is_subshape(left, right):
    """True when shape `left` is at least as specific as `right`."""
    if right is None:
        return True
    if left is None or len(left) != len(right):
        return False
    return all(r is None or l == r for l, r in zip(left, right))


def _verify_single_loop_var(backend, name, init, entry, exit_, invariant):
    if exit_ is None:
        raise ValueError(f"'{name}' is None at the end of the iteration.")
    if not (backend.is_tensor(entry) and backend.is_tensor(exit_)):
        return
    entry_dtype, exit_dtype = backend.dtype_of(entry), backend.dtype_of(exit_)
    if entry_dtype is not None and exit_dtype is not None and entry_dtype != exit_dtype:
        raise TypeError(
            f"'{name}' has dtype {_dtype_name(entry_dtype)} before the loop, but"
            f' dtype {_dtype_name(exit_dtype)} after one iteration')
    exit_shape = backend.shape_of(exit_)
    if invariant is None:
        entry_shape = backend.shape_of(entry)
        if entry_shape is not None and not _is_subshape(exit_shape, entry_shape):
            raise ValueError(
                f"'{name}' has shape {_format_shape(entry_shape)} before the loop,"
                f' but shape {_format_shape(exit_shape)} after one iteration. Use'
                ' tf.autograph.experimental.set_loop_options to set shape'
                ' invariants.')
        return
    invariant = _as_shape(invariant)
    init_shape = backend.shape_of(init) if backend.is_tensor(init) else None
    if init_shape is not None and not _is_subshape(init_shape, invariant):
        raise ValueError(
            f"'{name}' has shape {_format_shape(init_shape)} before the loop, which"
            f' does not conform with the shape invariant {_format_shape(invariant)}.')
    if not _is_subshape(exit_shape, invariant):
        raise ValueError(
            f"'{name}' has shape {_format_shape(exit_shape)} after one iteration,"
            ' which does not conform with the shape invariant'
            f' {_format_shape(invariant)}.')


def _as_shape(shape):
    """A shape invariant as a tuple (None for unknown rank)."""
    if shape is None:
        return None
    dims = getattr(shape, 'dims', shape)
    if dims is None:
        return None
    return tuple(getattr(d, 'value', d) for d in dims)


def verify_tf_loop_vars(backend, init_vars, entry_vars, exit_vars, symbol_names,
                        shape_invariants=None):
    """Checks that each loop variable keeps its structure, dtype and shape."""
    if shape_invariants is None:
        shape_invariants = (None,) * len(symbol_names)
    for name, init, entry, exit_, invariant in zip(
            symbol_names, init_vars, entry_vars, exit_vars, shape_invariants):
        for first, second in ((init, entry), (entry, exit_)):
            try:
                assert_same_structure(first, second)
            except (ValueError, TypeError) as e:
                raise TypeError(
                    f"'{name}' does not have the same nested structure after one"
                    f' iteration.\n\n{e}') from e
        if invariant is None:
            map_structure(
                lambda i, en, ex: _verify_single_loop_var(backend, name, i, en, ex, None),
                init, entry, exit_)
        else:
            _verify_single_loop_var(backend, name, init, entry, exit_, invariant)


def _positional_invariants(opts, init_vars):
    """set_loop_options' [(var, shape)] pairs, matched to loop vars by identity."""
    pairs = opts.get('shape_invariants')
    if not pairs:
        return None
    by_id = {id(var): shape for var, shape in pairs}
    return tuple(by_id.get(id(v)) for v in init_vars)


# ---------------------------------------------------------------------------
# while


def while_stmt(test, body, get_state, set_state, symbol_names, opts):
    """Functional form of `while`."""
    backend = backend_lib.get_backend()
    # The first test only decides the dispatch; a tensor loop evaluates it
    # again inside while_loop, as TensorFlow does.
    with backend_lib.staging(backend):
        init_test = test()
    if backend.is_tensor(init_test):
        _tf_while_stmt(backend, test, body, get_state, set_state, symbol_names, opts)
        return
    # Python loop: that evaluation of the test counts, so run one body first.
    if not init_test:
        return
    body()
    _py_while_stmt(backend, test, body)


def _py_while_stmt(backend, test, body):
    while True:
        result = test()
        if backend.is_tensor(result):
            raise NotImplementedError(
                'The condition of while loop started as non-Tensor, then changed to'
                ' Tensor. This may happen either because variables changed type, or'
                ' when a break or return statement inside the loop depends on a'
                ' Tensor condition. In both cases, changing to a TF loop should'
                f' remove the error.\nSee {_LIMITATIONS} for more info.')
        if not result:
            return
        body()


def _placeholder_value(backend, like, original):
    """A zero of `like`'s type standing in for a loop var first set in the loop."""
    if like is None or is_undefined(like):
        return original
    if isinstance(like, (bool, int, float)):
        return type(like)(0)
    if backend.is_tensor(like):
        zeros_like = getattr(backend, 'zeros_like', None)
        return original if zeros_like is None else zeros_like(like)
    if isinstance(like, (list, tuple, dict)):
        return map_structure(lambda v: _placeholder_value(backend, v, original), like)
    raise TypeError(
        f"Found an unsupported type '{type(like).__name__}' while creating"
        f' placeholder for {like}. Supported types include Tensor, int, float,'
        ' bool, list, tuple or dict.')


def _try_handling_undefineds(backend, body, get_state, set_state, init_vars, nulls,
                             symbol_names):
    """Stages one iteration to give variables first defined in the loop a value.

    Needs the optional backend.zeros_like; without it the loop variables must
    be defined before the loop.  Returns (success, new_init_vars).
    """
    first_iter_vars = None
    failure = None
    success = False
    if getattr(backend, 'zeros_like', None) is not None:
        state_modified = False
        try:
            with backend_lib.staging(backend):
                set_state(init_vars)
                state_modified = True
                body()
                first_iter_vars = tuple(get_state())
            init_vars = tuple(
                _placeholder_value(backend, first, value) if null else value
                for value, null, first in zip(init_vars, nulls, first_iter_vars))
            success = True
        except (UnboundLocalError, TypeError, ValueError, KeyError) as e:
            failure = ('Note: AutoGraph tried to define it automatically, but ran'
                       f' into a {type(e).__name__}: {e}')
        finally:
            if state_modified:
                set_state(init_vars)
    verify_loop_init_vars(init_vars, symbol_names, first_iter_vars, failure)
    return success, init_vars


def _zero_iterations_message(symbol_names, nulls, init_vars):
    names = ['the function return value' if isinstance(v, UndefinedReturnValue) else n
             for n, null, v in zip(symbol_names, nulls, init_vars) if null]
    return f'loop must iterate at least once to initialize {", ".join(names)}'


def _tf_while_stmt(backend, test, body, get_state, set_state, symbol_names, opts):
    init_vars = tuple(get_state())
    orig_init_vars = init_vars
    invariants = _positional_invariants(opts, init_vars)
    nulls = tuple(v is None or is_undefined(v) for v in init_vars)
    once = False
    if any(nulls):
        once, init_vars = _try_handling_undefineds(
            backend, body, get_state, set_state, init_vars, nulls, symbol_names)
    # With placeholders, a leading flag records that the body ran at least once.
    skip = 1 if once else 0

    def cond_fn(*loop_vars):
        set_state(loop_vars[skip:])
        return _verify_tf_condition(backend, test(), 'while loop')

    def body_fn(*loop_vars):
        loop_vars = loop_vars[skip:]
        set_state(loop_vars)
        body()
        new_vars = tuple(get_state())
        verify_tf_loop_vars(backend, init_vars, loop_vars, new_vars, symbol_names,
                            invariants)
        return (True,) + new_vars if once else new_vars

    kwargs = {'maximum_iterations': opts.get('maximum_iterations')}
    if invariants is not None:
        kwargs['shape_invariants'] = ((None,) if once else ()) + invariants
    loop_vars = ((False,) if once else ()) + init_vars
    final = tuple(backend.while_loop(cond_fn, body_fn, loop_vars, **kwargs))
    if once:
        assert_true = getattr(backend, 'assert_true', None)
        if assert_true is not None:
            assert_true(final[0], _zero_iterations_message(symbol_names, nulls,
                                                           orig_init_vars))
        final = final[1:]
    set_state(final)


# ---------------------------------------------------------------------------
# for


def for_stmt(iter_, extra_test, body, get_state, set_state, symbol_names, opts):
    """Functional form of `for`; body(x) runs one iteration with target x.

    extra_test (or None) is the loop's break/return condition: iteration stops
    when it becomes false.
    """
    backend = backend_lib.get_backend()
    if backend.is_tensor(iter_):
        _tf_tensor_for_stmt(backend, iter_, extra_test, body, get_state, set_state,
                            symbol_names, opts)
    elif backend.is_dataset(iter_):
        _tf_dataset_for_stmt(backend, iter_, extra_test, body, get_state, set_state,
                             symbol_names, opts)
    else:
        _py_for_stmt(backend, iter_, extra_test, body)


def _py_for_stmt(backend, iter_, extra_test, body):
    if extra_test is None:
        for target in iter_:
            body(target)
        return

    def guarded_test():
        result = extra_test()
        if backend.is_tensor(result):
            raise NotImplementedError(
                'break and return statements which depend on a TF condition are not'
                ' supported in Python for loops. Did you intend to make it a TF'
                f' loop?\nSee {_LIMITATIONS} for more info.')
        return result

    if guarded_test():
        for target in iter_:
            body(target)
            if not guarded_test():
                break


def _tf_tensor_for_stmt(backend, iter_, extra_test, body, get_state, set_state,
                        symbol_names, opts):
    """Iterates a tensor along dimension 0 with an index carried in a while_loop."""
    from .operators import and_  # operators imports this module
    n = backend.tensor_len(iter_)
    index = 0

    def aug_get_state():
        return (index,) + tuple(get_state())

    def aug_set_state(values):
        nonlocal index
        index = values[0]
        set_state(tuple(values[1:]))

    def aug_body():
        nonlocal index
        body(backend.getitem(iter_, index))
        index += 1

    def aug_test():
        if extra_test is None:
            return index < n
        return and_(lambda: index < n, extra_test)

    opts = dict(opts)
    if opts.get('maximum_iterations') is None:
        opts['maximum_iterations'] = n
    _tf_while_stmt(backend, aug_test, aug_body, aug_get_state, aug_set_state,
                   ('<internal iterate>',) + tuple(symbol_names), opts)


def _tf_dataset_for_stmt(backend, ds, extra_test, body, get_state, set_state,
                         symbol_names, opts):
    init_vars = tuple(get_state())
    verify_loop_init_vars(init_vars, symbol_names)
    invariants = _positional_invariants(opts, init_vars)

    def reduce_fn(state, element):
        state = tuple(state)
        set_state(state)
        if extra_test is None:
            body(element)
        else:
            # A reduce cannot stop early: after a break the rest of the
            # elements skip the body instead.
            if_stmt(extra_test(), lambda: body(element), lambda: None, get_state,
                    set_state, symbol_names, len(symbol_names))
        new_state = tuple(get_state())
        verify_tf_loop_vars(backend, init_vars, state, new_state, symbol_names,
                            invariants)
        return new_state

    set_state(tuple(backend.dataset_reduce(ds, init_vars, reduce_fn)))
