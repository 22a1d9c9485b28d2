# SPDX-License-Identifier: Apache-2.0
"""The values converted control flow passes around.

Undefined / UndefinedReturnValue stand for symbols without a value, and the
structure helpers (a small tf.nest) compare a variable's nesting in two
branches or across a loop iteration: lists, tuples (namedtuples included)
and dicts nest, anything else is a leaf.
"""


class Undefined:
    """The value of a variable that has not been assigned yet.

    Converted control flow passes every modified variable through get_state /
    set_state; one that Python would leave unbound travels as an Undefined so
    the operators can report "'x' must also be initialized in the else branch"
    instead of a NameError from generated code.
    """

    __slots__ = ('symbol_name',)

    def __init__(self, symbol_name):
        self.symbol_name = symbol_name

    def read(self):
        raise UnboundLocalError(f"'{self.symbol_name}' is used before assignment")

    def __repr__(self):
        return self.symbol_name


class UndefinedReturnValue:
    """The return value of a function that has not executed a return yet."""

    __slots__ = ()

    def __repr__(self):
        return 'UndefinedReturnValue()'


def ld(value):
    """A read of a variable that may hold Undefined: raise as Python would."""
    if isinstance(value, Undefined):
        return value.read()
    return value


def ldu(load, name):
    """Evaluate load(), giving Undefined(name) when the symbol is unbound."""
    try:
        return load()
    except (NameError, AttributeError, KeyError):
        return Undefined(name)


def retval(value):
    """The function's result: None when no return statement ran."""
    if isinstance(value, UndefinedReturnValue):
        return None
    return value


def is_undefined(value):
    return isinstance(value, (Undefined, UndefinedReturnValue))


def _is_nested(x):
    return isinstance(x, (list, tuple, dict))


def _children(x):
    if isinstance(x, dict):
        # tf.nest orders dict values by sorted key.
        return [x[k] for k in sorted(x, key=repr)]
    return list(x)


def _kind(x):
    if isinstance(x, dict):
        return ('dict', tuple(sorted(map(repr, x))))
    if isinstance(x, tuple) and hasattr(x, '_fields'):
        return ('namedtuple', type(x).__name__, tuple(x._fields))
    return ('list' if isinstance(x, list) else 'tuple', len(x))


def assert_same_structure(a, b):
    """Raises ValueError/TypeError when a and b nest differently."""
    if _is_nested(a) != _is_nested(b):
        raise ValueError(
            "The two structures don't have the same nested structure.\n\n"
            f'First structure: {a!r}\n\nSecond structure: {b!r}')
    if not _is_nested(a):
        return
    if _kind(a) != _kind(b):
        if type(a) is not type(b) and len(a) == len(b):
            raise TypeError(
                "The two structures don't have the same sequence type. "
                f'First structure has type {type(a)}, while second structure'
                f' has type {type(b)}.')
        raise ValueError(
            "The two structures don't have the same nested structure.\n\n"
            f'First structure: {a!r}\n\nSecond structure: {b!r}')
    for ca, cb in zip(_children(a), _children(b)):
        assert_same_structure(ca, cb)


def map_structure(fn, first, *rest):
    """fn applied leaf-wise; the result has `first`'s structure."""
    if not _is_nested(first):
        return fn(first, *rest)
    mapped = [map_structure(fn, *items)
              for items in zip(_children(first), *map(_children, rest))]
    if isinstance(first, dict):
        return dict(zip(sorted(first, key=repr), mapped))
    if isinstance(first, tuple) and hasattr(first, '_fields'):
        return type(first)(*mapped)
    return type(first)(mapped)
